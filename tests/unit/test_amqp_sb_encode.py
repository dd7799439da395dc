"""The direct writer of a Service Bus delivery's sections (`amqp/sb_encode.py`) writes exactly the
bytes the vendored codec writes for the same message (`encode_payload(to_amqp(m))`), for messages
of every shape the broker hands out; and a transfer is encoded into frames as before."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from funchost.amqp.codec import encode
from funchost.amqp.codec.performatives import TransferFrame
from funchost.amqp.frames import frame_bytes, transfer_frames
from funchost.amqp.sb_encode import message_bytes
from funchost.amqp.sb_messages import to_amqp
from funchost.storage.servicebus import ReceivedMessage

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
texts = st.one_of(st.none(), st.text(max_size=300))
times = st.floats(min_value=0, max_value=10 ** 9, allow_nan=False).map(lambda s: EPOCH + timedelta(seconds=s))
simple_values = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 63, max_value=2 ** 63 - 1),
                          st.floats(allow_nan=False), st.text(max_size=40), st.binary(max_size=40), st.uuids())


@st.composite
def messages(draw: st.DrawFn) -> ReceivedMessage:
    locked = draw(st.booleans())
    return ReceivedMessage(
        body=draw(st.binary(max_size=600)), message_id=draw(st.text(max_size=80)),
        sequence_number=draw(st.integers(min_value=0, max_value=2 ** 62)), enqueued_time=draw(times),
        expires_at=draw(st.one_of(st.none(), times)), delivery_count=draw(st.integers(min_value=0, max_value=3000)),
        lock_token=str(uuid.uuid4()) if locked else None, locked_until=draw(times) if locked else None,
        state=draw(st.sampled_from(["active", "deferred", "scheduled"])), content_type=draw(texts),
        correlation_id=draw(texts), subject=draw(texts), to=draw(texts), reply_to=draw(texts),
        reply_to_session_id=draw(texts), session_id=draw(texts), partition_key=draw(texts),
        application_properties=draw(st.dictionaries(st.text(max_size=30), simple_values, max_size=12)),
        time_to_live=draw(st.one_of(st.none(), st.floats(min_value=0.001, max_value=10 ** 6))),
        scheduled_enqueue_time=draw(st.one_of(st.none(), times)), dead_letter_reason=draw(texts),
        dead_letter_error_description=draw(texts), dead_letter_source=draw(texts))


@settings(max_examples=400, deadline=None)
@given(messages(), st.booleans())
def test_the_direct_writer_writes_the_codecs_bytes(message: ReceivedMessage, locked: bool) -> None:
    expected = bytes(encode.encode_payload(bytearray(), to_amqp(message, locked=locked)))
    assert message_bytes(message, locked=locked) == expected


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=3000), st.integers(min_value=0, max_value=2 ** 32 - 1), st.booleans())
def test_a_transfer_is_the_codecs_frames(payload: bytes, delivery_id: int, settled: bool) -> None:
    fields = [3, delivery_id, uuid.uuid4().bytes, 0, settled, False, None, None, None, None, None]
    frames = transfer_frames(5, fields, payload, 1024)
    if len(frame_bytes(5, TransferFrame._make([*fields, payload]))) <= 1024:
        assert frames == [frame_bytes(5, TransferFrame._make([*fields, payload]))]
    else:
        assert len(frames) > 1 and all(len(frame) <= 1024 for frame in frames)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2 ** 32 - 1), st.integers(min_value=0, max_value=2 ** 32 - 1),
       st.binary(max_size=300), st.integers(min_value=0, max_value=2 ** 32 - 1), st.one_of(st.none(), st.booleans()),
       st.booleans(), st.integers(min_value=0, max_value=65535))
def test_a_plain_transfer_frame_is_written_as_the_codec_writes_it(handle: int, delivery_id: int, tag: bytes,
                                                                  message_format: int, settled: bool | None,
                                                                  more: bool, channel: int) -> None:
    fields = [handle, delivery_id, tag, message_format, settled, more, None, None, None, None, None]
    payload = b"payload"
    assert transfer_frames(channel, fields, payload, 1 << 20) == [
        frame_bytes(channel, TransferFrame._make([*fields, payload]))]
