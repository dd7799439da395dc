"""`func.EventHubEvent` (one, or a batch's list) built straight from the received events.

`EventHubTriggerConverter.decode` rebuilds each event from the trigger metadata: it parses the
`SystemProperties(Array)` JSON and tries up to 16 `strptime` formats on every `EnqueuedTimeUtc`
(over 75 % of a batch invocation). The datums here give the same objects from the
`ReceivedEvent`s, reproducing what the converter reads out of the metadata events.py sends:

* `enqueued_time`: Json.NET's zone-less text parsed by the library = the UTC time without tzinfo;
* body: the bytes, or for a string trigger the body decoded with replacement and encoded again;
* one event: `offset` as text (the converter coerces the JSON number to `str`), the sequence
  number as int, `partition_key` None when the event has none;
* a batch: `offset` as the int of `SystemPropertiesArray` (the converter's own asymmetry);
* `iothub_metadata` empty: no metadata key or system property this host sends starts with
  `iothub-`.

A string batch with an empty body takes the converter's way: collection_string drops empty
entries, so the library finds fewer bodies than system properties and raises, as on Azure.
Tests in `tests/unit/core/test_lean_path_identity_messaging.py` compare both ways on generated events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from azure.functions._eventhub import EventHubEvent
from azure.functions.eventhub import EventHubTriggerConverter
from azure.functions.meta import Datum

from funchost.invocation.native import NativeDatum
from funchost.storage.eventhubs import ReceivedEvent


def utc_naive(when: datetime) -> datetime:
    """What the library's `_parse_datetime` gives for `events.dotnet_datetime(when)`."""
    return when.astimezone(UTC).replace(tzinfo=None, fold=0)


def _body(event: ReceivedEvent, binary: bool) -> bytes:
    if binary:
        return event.body
    return event.body.decode("utf-8", errors="replace").encode("utf-8")


class EventHubEventDatum(NativeDatum):
    """The trigger value of one event (a string or bytes Datum for the generic way)."""

    converter = EventHubTriggerConverter

    def __init__(self, generic: Datum, event: ReceivedEvent, metadata: Mapping[str, Datum]) -> None:
        super().__init__(str(generic.type), lambda: generic.value)
        self.event = event
        self.metadata = metadata

    def decode(self) -> EventHubEvent:
        event = self.event
        return EventHubEvent(
            body=_body(event, self.type == "bytes"), trigger_metadata=self.metadata,
            enqueued_time=utc_naive(event.enqueued_time), partition_key=event.partition_key,
            sequence_number=int(event.sequence_number), offset=str(event.offset), iothub_metadata={})


class EventHubBatchDatum(NativeDatum):
    """The trigger value of a batch (collection_string / collection_bytes for the generic way)."""

    converter = EventHubTriggerConverter

    def __init__(self, generic: Datum, events: Sequence[ReceivedEvent], metadata: Mapping[str, Datum]) -> None:
        super().__init__(str(generic.type), lambda: generic.value)
        self.events = events
        self.metadata = metadata

    def decode(self) -> list[EventHubEvent]:
        binary = self.type == "collection_bytes"
        if not binary and any(not event.body for event in self.events):
            return EventHubTriggerConverter.decode_multiple_events(self, self.metadata)
        return [EventHubEvent(
            body=_body(event, binary), trigger_metadata=self.metadata,
            enqueued_time=utc_naive(event.enqueued_time), partition_key=event.partition_key,
            sequence_number=event.sequence_number, offset=event.offset,  # type: ignore[arg-type] # an int, as the converter gives
            iothub_metadata={})
            for event in self.events]
