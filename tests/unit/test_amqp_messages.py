"""Messages between AMQP and the brokers' types, and the Event Hubs selector grammar."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from funchost.amqp.codec import encode
from funchost.amqp.codec.decode import decode_payload
from funchost.amqp.codec.message import Message, Properties
from funchost.amqp.eventhubs_consumer import parse_selector
from funchost.amqp.sb_messages import BATCH_FORMAT, lock_tag, to_amqp, to_outgoing, unpack
from funchost.storage.eventhubs import EventPosition
from funchost.storage.servicebus import ReceivedMessage

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def payload(message: Message) -> bytes:
    return bytes(encode.encode_payload(bytearray(), message))


def test_a_batch_delivery_unpacks_into_its_messages() -> None:
    inner = [payload(Message(properties=Properties(message_id=f"m{i}"), data=[f"b{i}".encode()])) for i in range(3)]
    envelope = payload(Message(properties=Properties(message_id="m0"), data=inner))
    messages = unpack(envelope, BATCH_FORMAT)
    assert [to_outgoing(m).body for m in messages] == [b"b0", b"b1", b"b2"]
    assert len(unpack(envelope, 0)) == 1


def test_properties_annotations_and_a_value_body_become_the_outgoing_message() -> None:
    message = Message(properties=Properties(message_id=uuid.UUID(int=7), group_id="s1", subject="sub"),
                      message_annotations={"x-opt-partition-key": "pk",
                                           "x-opt-scheduled-enqueue-time": {"TYPE": "TIMESTAMP", "VALUE": 1_000}},
                      application_properties={"k": "v", "n": 3}, value="text body")
    out = to_outgoing(decode_payload(memoryview(payload(message))))
    assert (out.body, out.message_id, out.session_id, out.subject) == (b"text body", str(uuid.UUID(int=7)), "s1",
                                                                       "sub")
    assert out.partition_key == "pk" and out.scheduled_enqueue_time == datetime.fromtimestamp(1, UTC)
    assert out.application_properties == {"k": "v", "n": 3}


def test_a_received_message_carries_what_the_sdk_reads() -> None:
    token = str(uuid.uuid4())
    received = ReceivedMessage(body=b"x", message_id="m1", sequence_number=5, enqueued_time=WHEN, expires_at=None,
                               delivery_count=1, lock_token=token, locked_until=WHEN, state="active",
                               dead_letter_reason="bad", application_properties={"big": 2 ** 40})
    decoded = decode_payload(memoryview(payload(to_amqp(received, locked=True))))
    assert decoded.header.delivery_count == 0  # the broker's first delivery: no earlier failed attempt
    annotations = decoded.message_annotations
    assert annotations[b"x-opt-sequence-number"] == 5
    assert annotations[b"x-opt-locked-until"] == int(WHEN.timestamp() * 1000)
    assert decoded.application_properties[b"DeadLetterReason"] == b"bad"
    assert decoded.application_properties[b"big"] == 2 ** 40
    assert uuid.UUID(bytes_le=lock_tag(token)) == uuid.UUID(token)


def test_selectors_as_the_sdks_write_them() -> None:
    assert parse_selector("amqp.annotation.x-opt-offset > '-1'") == EventPosition.earliest()
    assert parse_selector("amqp.annotation.x-opt-offset > '@latest'") == EventPosition.latest()
    assert parse_selector("amqp.annotation.x-opt-offset >= '3000'") == EventPosition("offset", 3000, True)
    assert parse_selector("amqp.annotation.x-opt-sequence-number > '41'") == EventPosition.after_sequence(41)
    assert parse_selector("amqp.annotation.x-opt-enqueued-time > '1767323045000'") == EventPosition(
        "enqueued", WHEN, False)
    assert parse_selector(None) == EventPosition.latest()
