"""The invocation a Service Bus message (or batch) becomes: trigger value and metadata as the host sends them.

Binding data follows the extension's `ServiceBusTriggerBindingStrategy` (v5): single dispatch
adds the plain names, batch dispatch `<Name>Array` in batch order, including the back-compat
`Label`, `UserProperties`, `ExpiresAtUtc`, `EnqueuedTimeUtc` and the QUIRK that
`TransactionPartitionKeyArray` holds the partition keys. Null values are not sent. The
`MessageActions` / `Client` objects mean nothing to a Python worker and are not sent. Keys the
real host does not send (`LockedUntil`, `DeadLetterReason`, `TimeToLive`, ...) are not sent,
so `func.ServiceBusMessage` gives None for them exactly as on Azure.

Encoding (host `RpcMessageConversionExtensions.ToRpc` with the Python worker's capabilities):
string -> `string`; int, long, DateTime, DateTimeOffset, dictionaries and int[] / DateTime[] /
dictionary[] -> `json` through Json.NET (a DateTime from `DateTimeOffset.DateTime` has no
offset); string[] -> `collection_string` *without* its null or empty entries (the worker does
not declare `IncludeEmptyEntriesInMessagePayload`, so e.g. `ContentTypeArray` shifts: a QUIRK
the library then reads by position); long[] -> `collection_sint64`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from azure.functions.meta import Datum

from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.invocation.metadata import LazyMetadata
from funchost.invocation.native import LazyDatum, LazyMapping
from funchost.storage.servicebus import ReceivedMessage
from funchost.triggers.servicebus.native import NEVER, ServiceBusBatchDatum, ServiceBusMessageDatum

MAX_DATETIME = "9999-12-31T23:59:59.9999999"


def dotnet_datetime(value: datetime | None, *, offset: bool) -> str:
    """Json.NET's rendering of a DateTime (offset=False, Kind Unspecified) or DateTimeOffset."""
    if value is None or value >= NEVER:
        text = MAX_DATETIME
    else:
        value = value.astimezone(UTC)
        # Four-digit years as .NET writes them ("0001-01-01T00:00:00" for the admin API's
        # message); strftime writes "1-01-01", which the library cannot parse.
        text = (f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
                f"T{value.hour:02d}:{value.minute:02d}:{value.second:02d}")
        if value.microsecond:
            text += "." + f"{value.microsecond:06d}0".rstrip("0")
    return text + "+00:00" if offset else text


def reason(path: str) -> str:
    return f"New ServiceBus message detected on '{path}'."


def _json(value: Any) -> Datum:
    return Datum(json.dumps(value, separators=(",", ":")), "json")


def _fields(m: ReceivedMessage) -> dict[str, tuple[str, Any]]:
    """name -> (kind, value) for one message, in the extension's order."""
    return {
        "DeliveryCount": ("int", m.delivery_count),
        "DeadLetterSource": ("string", m.dead_letter_source),
        "LockToken": ("string", m.lock_token),
        "ExpiresAtUtc": ("datetime", m.expires_at or NEVER),
        "ExpiresAt": ("offset", m.expires_at or NEVER),
        "EnqueuedTimeUtc": ("datetime", m.enqueued_time),
        "EnqueuedTime": ("offset", m.enqueued_time),
        "MessageId": ("string", m.message_id),
        "ContentType": ("string", m.content_type),
        "ReplyTo": ("string", m.reply_to),
        "SequenceNumber": ("long", m.sequence_number),
        "To": ("string", m.to),
        "Subject": ("string", m.subject),
        "Label": ("string", m.subject),
        "CorrelationId": ("string", m.correlation_id),
        "ApplicationProperties": ("dict", dict(m.application_properties)),
        "UserProperties": ("dict", dict(m.application_properties)),
        "SessionId": ("string", m.session_id),
        "ReplyToSessionId": ("string", m.reply_to_session_id),
        "PartitionKey": ("string", m.partition_key),
        "TransactionPartitionKey": ("string", m.transaction_partition_key),
    }


def _single_datum(entry: tuple[str, Any]) -> Datum:
    kind, value = entry
    if kind in ("int", "long"):
        return Datum(str(int(value)), "json")
    if kind == "string":
        return Datum(value, "string")
    if kind in ("datetime", "offset"):
        return _json(dotnet_datetime(value, offset=kind == "offset"))
    return _json(value)


def _array_datum(entry: tuple[str, list[Any]]) -> Datum:
    kind, values = entry
    if kind == "long":
        return Datum(SimpleNamespace(sint64=list(values)), "collection_sint64")
    if kind == "string":
        return Datum(SimpleNamespace(string=[v for v in values if v]), "collection_string")
    if kind in ("datetime", "offset"):
        return _json([dotnet_datetime(v, offset=kind == "offset") for v in values])
    return _json(values)


def _trigger_value(body: bytes, data_type: str) -> Datum:
    if data_type == "binary":
        return Datum(body, "bytes")
    try:
        return Datum(body.decode("utf-8"), "string")
    except UnicodeDecodeError:
        return Datum(body, "bytes")  # not text: the library still builds a ServiceBusMessage


def _binding_data_from_body(body: bytes) -> dict[str, Any]:
    if body[:1] != b"{":
        return {}
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _single_fields(message: ReceivedMessage) -> dict[str, tuple[str, Any]]:
    return {k: v for k, v in _fields(message).items() if v[1] is not None}


def _single_binding_data(message: ReceivedMessage, fields: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    binding_data: dict[str, Any] = _binding_data_from_body(message.body)
    binding_data.update({k: v[1] for k, v in fields.items()})
    return binding_data


def build_single(function: FunctionSpec, message: ReceivedMessage, path: str) -> InvocationRequest:
    """Metadata Datums and binding data are built only when read (native.py builds the message)."""
    fields = LazyMapping(lambda: _single_fields(message))
    metadata = LazyMetadata(fields, _single_datum)
    generic = _trigger_value(message.body, (function.trigger.data_type or "").lower())
    return InvocationRequest(
        function=function,
        trigger_value=ServiceBusMessageDatum(generic, message, metadata),
        trigger_metadata=metadata,
        binding_data=LazyMapping(lambda: _single_binding_data(message, fields)),
        reason=reason(path),
        details={"MessageId": message.message_id, "SequenceNumber": message.sequence_number,
                 "DeliveryCount": message.delivery_count, "EnqueuedTimeUtc": message.enqueued_time,
                 "LockedUntilUtc": message.locked_until, "SessionId": message.session_id},
    )


def _batch_arrays(messages: Sequence[ReceivedMessage]) -> dict[str, tuple[str, list[Any]]]:
    per_message = [_fields(m) for m in messages]
    arrays: dict[str, tuple[str, list[Any]]] = {}
    for name, (kind, _) in per_message[0].items():
        values = [fields[name][1] for fields in per_message]
        if name == "TransactionPartitionKey":
            values = [fields["PartitionKey"][1] for fields in per_message]  # QUIRK of the extension
        arrays[f"{name}Array"] = (kind, values)
    return arrays


def build_batch(function: FunctionSpec, messages: Sequence[ReceivedMessage], path: str) -> InvocationRequest:
    """Metadata arrays and binding data are built only when read (native.py builds the messages)."""
    arrays = LazyMapping(lambda: _batch_arrays(messages))
    metadata = LazyMetadata(arrays, _array_datum)
    binary = (function.trigger.data_type or "").lower() == "binary"
    bodies = [m.body for m in messages]
    if binary:
        trigger = LazyDatum("collection_bytes", lambda: SimpleNamespace(bytes=bodies))
    else:
        trigger = LazyDatum("collection_string", lambda: SimpleNamespace(
            string=[b.decode("utf-8", errors="replace") for b in bodies]))
    return InvocationRequest(
        function=function,
        trigger_value=ServiceBusBatchDatum(trigger, messages, metadata, binary),
        trigger_metadata=metadata,
        binding_data=LazyMapping(lambda: {name: values for name, (_, values) in arrays.items()}),
        reason=reason(path),
        details={"MessageIds": [m.message_id for m in messages], "Count": len(messages)},
    )
