"""`func.ServiceBusMessage` (one, or a batch's list) built straight from the received messages.

`ServiceBusMessageInConverter.decode` rebuilds every message from the trigger metadata: for a
batch it parses each JSON metadata array once per message and field (quadratic in the batch
size) and tries up to 16 `strptime` formats on every `EnqueuedTimeUtcArray` /
`ExpiresAtUtcArray` entry; that was over 80 % of a batch invocation. The datums here give the
same objects from the `ReceivedMessage`s they were built from, reproducing what the converter
reads out of the metadata this host sends (messages.py):

* times: Json.NET's zone-less text parsed by the library = the UTC time without tzinfo; a
  message without expiry (or with an unrepresentable one) reads as 9999-12-31 23:59:59.999999;
* batch string arrays travel as collection_string without their null or empty entries, so the
  library reads entry *i* of the shortened list (the positional QUIRK of messages.py);
* counts and sequence numbers as ints; application properties (also as `user_properties`)
  as fresh dicts, as a JSON round trip gives them;
* fields the host does not send (`LockedUntil`, `State`, `TimeToLive`, ...) as None.

Tests in `tests/unit/core/test_lean_path_identity_messaging.py` compare both ways on generated
messages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from azure.functions._jsonutils import json as library_json
from azure.functions.meta import Datum
from azure.functions.servicebus import ServiceBusMessage, ServiceBusMessageInConverter

from funchost.invocation.native import NativeDatum
from funchost.storage.servicebus import ReceivedMessage

NEVER = datetime.max.replace(tzinfo=UTC)  # ExpiresAt of a message without TTL: DateTimeOffset.MaxValue
# What the library parses "9999-12-31T23:59:59.9999999" into (seven fraction digits cut to six).
_MAX_NAIVE = datetime(9999, 12, 31, 23, 59, 59, 999999)
_PLAIN = frozenset({str, int, float, bool, type(None)})
_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1


def utc_naive(value: datetime | None) -> datetime:
    """What the library's `_parse_datetime` gives for `messages.dotnet_datetime(value, offset=False)`."""
    if value is None or value >= NEVER:
        return _MAX_NAIVE
    return value.astimezone(UTC).replace(tzinfo=None, fold=0)


def json_copy(properties: Mapping[str, Any]) -> dict[str, Any]:
    """What the library's JSON reader gives for messages.py's JSON of `properties`.

    A plain copy when every value survives any JSON reader unchanged (the library may use orjson,
    which rejects NaN and integers beyond 64 bits); otherwise the same round trip."""
    for key, value in properties.items():
        kind = type(value)
        if type(key) is not str or kind not in _PLAIN or (kind is int and not _INT64_MIN <= value <= _UINT64_MAX) \
                or (kind is float and not math.isfinite(value)):
            return library_json.loads(json.dumps(dict(properties), separators=(",", ":")))  # type: ignore[no-any-return]
    return dict(properties)


class ServiceBusMessageDatum(NativeDatum):
    """The trigger value of one message (a string or bytes Datum for the generic way)."""

    converter = ServiceBusMessageInConverter

    def __init__(self, generic: Datum, message: ReceivedMessage, metadata: Mapping[str, Datum]) -> None:
        super().__init__(str(generic.type), lambda: generic.value)
        self.message = message
        self.metadata = metadata

    def decode(self) -> ServiceBusMessage:
        return _single(self.message, self.metadata)


class ServiceBusBatchDatum(NativeDatum):
    """The trigger value of a batch (collection_string / collection_bytes for the generic way)."""

    converter = ServiceBusMessageInConverter

    def __init__(self, generic: Datum, messages: Sequence[ReceivedMessage], metadata: Mapping[str, Datum],
                 binary: bool) -> None:
        super().__init__(str(generic.type), lambda: generic.value)
        self.messages = messages
        self.metadata = metadata
        self.binary = binary

    def decode(self) -> list[ServiceBusMessage]:
        return _batch(self.messages, self.metadata, self.binary)


def _single(m: ReceivedMessage, metadata: Mapping[str, Datum]) -> ServiceBusMessage:
    properties = m.application_properties
    return ServiceBusMessage(
        body=m.body,  # a string Datum encodes back to the same bytes; a bytes Datum is them
        trigger_metadata=metadata,
        application_properties=json_copy(properties),
        content_type=m.content_type, correlation_id=m.correlation_id,
        dead_letter_source=m.dead_letter_source, delivery_count=int(m.delivery_count),
        enqueued_time_utc=None if m.enqueued_time is None else utc_naive(m.enqueued_time),
        expires_at_utc=utc_naive(m.expires_at), label=m.subject, lock_token=m.lock_token,
        message_id=m.message_id, partition_key=m.partition_key, reply_to=m.reply_to,
        reply_to_session_id=m.reply_to_session_id, sequence_number=int(m.sequence_number),
        session_id=m.session_id, subject=m.subject, to=m.to,
        transaction_partition_key=m.transaction_partition_key,
        user_properties=json_copy(properties),
    )


def _positional(values: list[str | None]) -> list[str | None]:
    """Entry i as the library reads it from a collection_string without null or empty entries."""
    kept: list[str | None] = [v for v in values if v]
    return kept + [None] * (len(values) - len(kept))


def _strings(messages: Sequence[ReceivedMessage], name: str) -> list[str | None]:
    return _positional([getattr(m, name) for m in messages])


def _batch(messages: Sequence[ReceivedMessage], metadata: Mapping[str, Datum],
           binary: bool) -> list[ServiceBusMessage]:
    if binary:
        bodies = [m.body for m in messages]
    else:  # collection_string of the bodies decoded with replacement, encoded again by the library
        bodies = [m.body.decode("utf-8", errors="replace").encode("utf-8") for m in messages]
    content_type, correlation_id, dead_letter_source, subject, lock_token, message_id, partition_key, \
        reply_to_session_id, session_id, to, reply_to = (
            _strings(messages, name) for name in (
                "content_type", "correlation_id", "dead_letter_source", "subject", "lock_token", "message_id",
                "partition_key", "reply_to_session_id", "session_id", "to", "reply_to"))
    expires = [utc_naive(m.expires_at) for m in messages]
    enqueued = [utc_naive(m.enqueued_time) for m in messages]
    result = []
    for i, m in enumerate(messages):
        properties = m.application_properties
        result.append(ServiceBusMessage(
            body=bodies[i], trigger_metadata=metadata, application_properties=json_copy(properties),
            content_type=content_type[i], correlation_id=correlation_id[i],
            dead_letter_source=dead_letter_source[i], delivery_count=int(m.delivery_count),
            enqueued_time_utc=enqueued[i], expires_at_utc=expires[i], label=subject[i],
            lock_token=lock_token[i], message_id=message_id[i],  # type: ignore[arg-type]
            partition_key=partition_key[i], reply_to_session_id=reply_to_session_id[i],
            sequence_number=m.sequence_number, session_id=session_id[i], subject=subject[i], to=to[i],
            transaction_partition_key=partition_key[i],  # QUIRK: the extension sends the partition keys
            reply_to=reply_to[i], user_properties=json_copy(properties),
        ))
    return result
