"""A Service Bus delivery's message sections written straight to bytes.

`encode_payload(to_amqp(m))` (the vendored codec) builds a tree of typed dicts per field and walks
it recursively: most of the endpoint's CPU per delivered message. `message_bytes` writes the same
bytes directly for the five sections a broker message has (header, message annotations,
properties, application properties, one data section). The output is byte for byte the codec's
(tests/unit/test_amqp_sb_encode.py checks it over generated messages), so clients see no change;
application property values, which may be of any simple type, still go through the codec.
"""

from __future__ import annotations

from funchost.amqp import direct_encode as put
from funchost.amqp.codec import encode
from funchost.amqp.sb_messages import STATES
from funchost.amqp.values import simple
from funchost.storage.servicebus import ReceivedMessage


def message_bytes(m: ReceivedMessage, *, locked: bool) -> bytes:
    """The sections of `m` as `encode_payload(bytearray(), to_amqp(m, locked=locked))` writes them."""
    ttl = int(m.time_to_live * 1000) if m.time_to_live else None
    header = put.list_of([put.TRUE, put.NULL, put.NULL if ttl is None else put.uint(ttl), put.NULL,
                          put.uint(max(m.delivery_count - 1, 0))])
    out = bytearray(b"\x00\x53\x70")
    out += header
    out += b"\x00\x53\x72"
    out += _annotations(m, locked)
    out += b"\x00\x53\x73"
    out += _properties(m)
    application = _application(m)
    if application is not None:
        out += b"\x00\x53\x74"
        out += application
    out += b"\x00\x53\x75"
    out += put.binary(m.body)
    return bytes(out)


def _annotations(m: ReceivedMessage, locked: bool) -> bytes:
    items = [put.symbol("x-opt-sequence-number"), put.long(m.sequence_number),
             put.symbol("x-opt-enqueued-time"), put.timestamp(m.enqueued_time),
             put.symbol("x-opt-message-state"), put.int32(STATES.get(m.state, 0))]
    if locked and m.locked_until is not None:
        items += [put.symbol("x-opt-locked-until"), put.timestamp(m.locked_until)]
    if m.partition_key:
        items += [put.symbol("x-opt-partition-key"), put.string(m.partition_key)]
    if m.scheduled_enqueue_time is not None:
        items += [put.symbol("x-opt-scheduled-enqueue-time"), put.timestamp(m.scheduled_enqueue_time)]
    if m.dead_letter_source:
        items += [put.symbol("x-opt-deadletter-source"), put.string(m.dead_letter_source)]
    return put.map_of(items)


def _properties(m: ReceivedMessage) -> bytes:
    expiry = put.NULL if m.expires_at is None else put.timestamp(m.expires_at)
    content_type = put.NULL if m.content_type is None else put.symbol(m.content_type)
    return put.list_of([put.text(m.message_id), put.NULL, put.text(m.to), put.text(m.subject), put.text(m.reply_to),
                        put.text(m.correlation_id), content_type, put.NULL, expiry, put.timestamp(m.enqueued_time),
                        put.text(m.session_id), put.NULL, put.text(m.reply_to_session_id)])


def _application(m: ReceivedMessage) -> bytes | None:
    values = {k: simple(v) for k, v in m.application_properties.items()}
    if m.dead_letter_reason is not None:
        values["DeadLetterReason"] = m.dead_letter_reason
    if m.dead_letter_error_description is not None:
        values["DeadLetterErrorDescription"] = m.dead_letter_error_description
    if not values:
        return None
    items: list[bytes] = []
    for key, value in values.items():
        items.append(put.string(key))
        written = bytearray()
        encode.encode_value(written, value)
        items.append(bytes(written))
    return put.map_of(items)
