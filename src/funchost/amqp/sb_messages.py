"""Service Bus messages between AMQP and the broker's types.

In: the AMQP message's properties, annotations (`x-opt-partition-key`, `x-opt-scheduled-enqueue-time`)
and body (data sections joined; an amqp-value string as UTF-8) to an `OutgoingMessage`. Out: a
`ReceivedMessage` with the annotations the SDKs read (sequence number, enqueued time, locked-until,
message state, dead-letter source), `DeadLetterReason` / `DeadLetterErrorDescription` as
application properties, and the header's delivery count as the broker's count minus one (AMQP
counts earlier failed attempts; the Python SDK reports the raw value). The delivery tag is the lock
token's GUID in .NET byte order (`uuid.UUID(bytes_le=tag)` in the SDK).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from funchost.amqp.codec.decode import decode_payload
from funchost.amqp.codec.message import Header, Message, Properties
from funchost.amqp.values import from_timestamp_ms, keyed, long, message_id_text, simple, text, timestamp
from funchost.storage.servicebus import OutgoingMessage, ReceivedMessage

BATCH_FORMAT = 0x80013700
STATES = {"active": 0, "deferred": 1, "scheduled": 2}


def unpack(payload: bytes, message_format: int) -> list[Message]:
    """The messages of one delivery (a batch carries each as a data section)."""
    envelope = decode_payload(memoryview(payload))
    if message_format != BATCH_FORMAT:
        return [envelope]
    return [decode_payload(memoryview(bytes(section))) for section in (envelope.data or [])]


def body_bytes(message: Message) -> bytes:
    if message.data is not None:
        return b"".join(bytes(d) for d in message.data)
    value = message.value if message.value is not None else message.sequence
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(_plain(value), default=str).encode("utf-8")


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def application_properties(message: Message) -> dict[str, Any]:
    values = keyed(message.application_properties)
    return {k: text(v) if isinstance(v, bytes) else (str(v) if isinstance(v, uuid.UUID) else v)
            for k, v in values.items()}


def to_outgoing(message: Message) -> OutgoingMessage:
    p = message.properties or Properties()
    annotations = keyed(message.message_annotations)
    ttl = message.header.ttl if message.header is not None else None
    return OutgoingMessage(
        body=body_bytes(message), message_id=message_id_text(p.message_id), content_type=text(p.content_type),
        correlation_id=message_id_text(p.correlation_id), subject=text(p.subject), to=text(p.to),
        reply_to=text(p.reply_to), reply_to_session_id=text(p.reply_to_group_id), session_id=text(p.group_id),
        partition_key=text(annotations.get("x-opt-partition-key")),
        transaction_partition_key=text(annotations.get("x-opt-via-partition-key")),
        application_properties=application_properties(message),
        time_to_live=ttl / 1000 if ttl else None,
        scheduled_enqueue_time=from_timestamp_ms(annotations.get("x-opt-scheduled-enqueue-time")))


def to_amqp(m: ReceivedMessage, *, locked: bool) -> Message:
    annotations: dict[str | bytes, Any] = {
        "x-opt-sequence-number": long(m.sequence_number),
        "x-opt-enqueued-time": timestamp(m.enqueued_time),
        "x-opt-message-state": STATES.get(m.state, 0),
    }
    if locked and m.locked_until is not None:
        annotations["x-opt-locked-until"] = timestamp(m.locked_until)
    if m.partition_key:
        annotations["x-opt-partition-key"] = m.partition_key
    if m.scheduled_enqueue_time is not None:
        annotations["x-opt-scheduled-enqueue-time"] = timestamp(m.scheduled_enqueue_time)
    if m.dead_letter_source:
        annotations["x-opt-deadletter-source"] = m.dead_letter_source
    application: dict[str | bytes, Any] = {k: simple(v) for k, v in m.application_properties.items()}
    if m.dead_letter_reason is not None:
        application["DeadLetterReason"] = m.dead_letter_reason
    if m.dead_letter_error_description is not None:
        application["DeadLetterErrorDescription"] = m.dead_letter_error_description
    ttl = int(m.time_to_live * 1000) if m.time_to_live else None
    expiry = _ms(m.expires_at) if m.expires_at is not None else None
    properties = Properties(
        message_id=m.message_id, to=m.to, subject=m.subject, reply_to=m.reply_to,
        correlation_id=m.correlation_id, content_type=m.content_type,
        absolute_expiry_time=expiry, creation_time=_ms(m.enqueued_time), group_id=m.session_id,
        reply_to_group_id=m.reply_to_session_id)
    return Message(header=Header(durable=True, ttl=ttl, delivery_count=max(m.delivery_count - 1, 0)),
                   message_annotations=dict(annotations), properties=properties,
                   application_properties=dict(application) or None, data=[m.body])


def _ms(value: datetime) -> int:
    return int(round(value.timestamp() * 1000))


def lock_tag(lock_token: str) -> bytes:
    return uuid.UUID(lock_token).bytes_le


def token_text(value: Any) -> str:
    """A lock token from a management request (an AMQP uuid) as the broker's GUID text."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes) and len(value) == 16:
        return str(uuid.UUID(bytes_le=value))
    return text(value) or ""


def when(value: datetime | None) -> Any:
    return timestamp(value) if value is not None else None
