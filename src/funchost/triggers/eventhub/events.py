"""Events -> the invocation the host hands the Python worker (servicebus-eventhubs 2.6, 2.7).

Binding data are the extension's (`EventHubTriggerBindingStrategy.GetBindingData`), converted to
the worker's TypedData as the host's `RpcMessageConversionExtensions.ToRpc` does:

* strings stay strings, `long` / `DateTime` / dictionaries / `DateTime[]` become JSON, a `null`
  value is not sent at all (so a single event without partition key has no `PartitionKey`);
* with the worker's TypedDataCollection capability, `string[]` becomes collection_string with
  null and empty elements dropped (QUIRK, also for the event bodies of a batch), `long[]`
  collection_sint64, `byte[][]` collection_bytes;
* `EnqueuedTimeUtc` is `EnqueuedTime.DateTime`, whose Kind is Unspecified: Json.NET writes it
  without a zone ("2024-10-18T12:34:56.789"); `x-opt-enqueued-time` is a DateTimeOffset
  ("...+00:00").

`SystemProperties` holds the event's AMQP annotations plus `SequenceNumber`, `Offset`,
`PartitionKey` and `EnqueuedTimeUtc`, which is how `func.EventHubEvent` tells one event
(`SystemProperties`) from a batch (`SystemPropertiesArray`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from azure.functions.meta import Datum

from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.invocation.metadata import LazyMetadata
from funchost.invocation.native import LazyDatum, LazyMapping
from funchost.storage.eventhubs import ReceivedEvent
from funchost.triggers.eventhub.native import EventHubBatchDatum, EventHubEventDatum

# The executing log line of Event Hubs invocations: the extension passes no reason.
REASON = "(null)"


@dataclass(frozen=True)
class Collection:
    """The value of a collection_* Datum, shaped like the worker's protobuf collections."""

    string: list[str] = field(default_factory=list)
    bytes: list[bytes] = field(default_factory=list)
    sint64: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PartitionInfo:
    fully_qualified_namespace: str
    event_hub: str
    consumer_group: str
    partition_id: str
    checkpointing_after_invocation: bool = True

    def as_json(self) -> dict[str, Any]:
        """`TriggerPartitionContext` as Json.NET serializes it."""
        return {"IsCheckpointingAfterInvocation": self.checkpointing_after_invocation,
                "FullyQualifiedNamespace": self.fully_qualified_namespace, "EventHubName": self.event_hub,
                "ConsumerGroup": self.consumer_group, "PartitionId": self.partition_id}


def dotnet_datetime(when: datetime) -> str:
    """A DateTime of Kind Unspecified as Json.NET writes it: no zone, trailing zeros trimmed."""
    when = when.astimezone(UTC)
    text = f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:{when.minute:02d}:{when.second:02d}"
    fraction = f"{when.microsecond:06d}".rstrip("0")
    return f"{text}.{fraction}" if fraction else text


def dotnet_datetimeoffset(when: datetime) -> str:
    return dotnet_datetime(when) + "+00:00"


def system_properties(event: ReceivedEvent) -> dict[str, Any]:
    props: dict[str, Any] = {
        "x-opt-sequence-number": event.sequence_number,
        "x-opt-offset": str(event.offset),
        "x-opt-enqueued-time": dotnet_datetimeoffset(event.enqueued_time),
    }
    if event.partition_key is not None:
        props["x-opt-partition-key"] = event.partition_key
    for name, value in (("message-id", event.message_id), ("correlation-id", event.correlation_id),
                        ("content-type", event.content_type)):
        if value is not None:
            props[name] = value
    props["SequenceNumber"] = event.sequence_number
    props["Offset"] = event.offset
    props["PartitionKey"] = event.partition_key
    props["EnqueuedTimeUtc"] = dotnet_datetime(event.enqueued_time)
    return props


def _json(value: Any) -> Datum:
    return Datum(json.dumps(value), "json")


def _metadata_datum(entry: tuple[str, Any]) -> Datum:
    kind, value = entry
    if kind == "string":
        return Datum(value, "string")
    if kind == "collection_string":
        return Datum(Collection(string=[v for v in value if v]), "collection_string")
    if kind == "collection_sint64":
        return Datum(Collection(sint64=list(value)), "collection_sint64")
    return _json(value)


def _binary(function: FunctionSpec) -> bool:
    return (function.trigger.data_type or "").lower() == "binary"


def trigger_details(partition: PartitionInfo, events: Sequence[ReceivedEvent], single: bool) -> dict[str, Any]:
    """`EventHubTriggerInput.GetTriggerDetails`, including its historic misspelling 'PartionId'."""
    first, last = events[0], events[-1]
    if single:
        offset = str(first.offset)
        enqueued = dotnet_datetimeoffset(first.enqueued_time)
        sequence = str(first.sequence_number)
    else:
        offset = f"{first.offset}-{last.offset}"
        enqueued = f"{dotnet_datetimeoffset(first.enqueued_time)}-{dotnet_datetimeoffset(last.enqueued_time)}"
        sequence = f"{first.sequence_number}-{last.sequence_number}"
    return {"PartitionId": partition.partition_id, "OffsetString": offset, "EnqueueTimeUtc": enqueued,
            "SequenceNumber": sequence, "Count": str(len(events)), "Offset": offset,
            "PartionId": partition.partition_id}


def _single_raw(partition: PartitionInfo | None, event: ReceivedEvent) -> dict[str, tuple[str, Any]]:
    raw: dict[str, tuple[str, Any]] = {}
    if partition is not None:
        raw["PartitionContext"] = ("json", partition.as_json())
    if event.partition_key is not None:
        raw["PartitionKey"] = ("string", event.partition_key)
    raw["Offset"] = ("json", event.offset)
    raw["SequenceNumber"] = ("json", event.sequence_number)
    raw["EnqueuedTimeUtc"] = ("json", dotnet_datetime(event.enqueued_time))
    raw["Properties"] = ("json", dict(event.properties))
    raw["SystemProperties"] = ("json", system_properties(event))
    return raw


def _single_binding_data(event: ReceivedEvent) -> dict[str, Any]:
    return {"PartitionKey": event.partition_key, "Offset": event.offset, "SequenceNumber": event.sequence_number,
            "EnqueuedTimeUtc": event.enqueued_time, "Properties": dict(event.properties),
            "SystemProperties": system_properties(event)}


def single_request(function: FunctionSpec, partition: PartitionInfo | None, event: ReceivedEvent) -> InvocationRequest:
    """One event; `partition` None for an event made from the admin API's input (no context is sent).

    Metadata Datums and binding data are built only when read (native.py builds the event)."""
    body = event.body
    generic = Datum(body, "bytes") if _binary(function) else LazyDatum(
        "string", lambda: body.decode("utf-8", errors="replace"))
    metadata = LazyMetadata(LazyMapping(lambda: _single_raw(partition, event)), _metadata_datum)
    return InvocationRequest(function=function, trigger_value=EventHubEventDatum(generic, event, metadata),
                             trigger_metadata=metadata,
                             binding_data=LazyMapping(lambda: _single_binding_data(event)), reason=REASON,
                             details=trigger_details(partition, [event], single=True) if partition else {})


def _batch_raw(partition: PartitionInfo | None, events: Sequence[ReceivedEvent]) -> dict[str, tuple[str, Any]]:
    context: dict[str, tuple[str, Any]] = {} if partition is None else {"PartitionContext": ("json", partition.as_json())}
    return {
        **context,
        "PartitionKeyArray": ("collection_string", [e.partition_key for e in events]),
        "OffsetArray": ("collection_string", [str(e.offset) for e in events]),
        "SequenceNumberArray": ("collection_sint64", [e.sequence_number for e in events]),
        "EnqueuedTimeUtcArray": ("json", [dotnet_datetime(e.enqueued_time) for e in events]),
        "PropertiesArray": ("json", [dict(e.properties) for e in events]),
        "SystemPropertiesArray": ("json", [system_properties(e) for e in events]),
    }


def _batch_binding_data(events: Sequence[ReceivedEvent]) -> dict[str, Any]:
    return {
        "PartitionKeyArray": [e.partition_key for e in events], "OffsetArray": [str(e.offset) for e in events],
        "SequenceNumberArray": [e.sequence_number for e in events],
        "EnqueuedTimeUtcArray": [e.enqueued_time for e in events],
        "PropertiesArray": [dict(e.properties) for e in events],
        "SystemPropertiesArray": [system_properties(e) for e in events]}


def batch_request(function: FunctionSpec, partition: PartitionInfo | None,
                  events: Sequence[ReceivedEvent]) -> InvocationRequest:
    """Metadata arrays and binding data are built only when read (native.py builds the events);
    `partition` None for the admin API's input (no context is sent)."""
    generic: Datum
    if _binary(function):
        generic = LazyDatum("collection_bytes", lambda: Collection(bytes=[e.body for e in events]))
    else:
        generic = LazyDatum("collection_string", lambda: Collection(string=[
            t for t in (e.body.decode("utf-8", errors="replace") for e in events) if t]))
    metadata = LazyMetadata(LazyMapping(lambda: _batch_raw(partition, events)), _metadata_datum)
    return InvocationRequest(function=function, trigger_value=EventHubBatchDatum(generic, events, metadata),
                             trigger_metadata=metadata, binding_data=LazyMapping(lambda: _batch_binding_data(events)),
                             reason=REASON,
                             details=trigger_details(partition, events, single=False) if partition else {})
