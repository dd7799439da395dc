"""A real Event Hubs namespace behind the broker Protocol, through the official `azure-eventhub`.

Used for a connection string of a real namespace or `<Name>__fullyQualifiedNamespace` (identity,
`DefaultAzureCredential`). The trigger above it is the same code as for the embedded broker
(load balancing, checkpoints in AzureWebJobsStorage, batches, failure rules), so the semantics
are the same; only the log's transport differs. The translation layer (positions, events,
partition properties, client arguments) is what this module owns and what its tests cover; it
cannot be exercised against Azure here.

Reads are pulls over the SDK's push API: per partition a background `receive_batch` fills a
queue from the requested position; a read at the position where the previous one ended drains
the queue, a read elsewhere restarts the receiver there. Hubs and consumer groups are managed in
Azure (ARM), so `create_hub` only looks the hub up and `ensure_consumer_group` checks nothing:
a missing group fails the first receive.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from funchost.errors import ConfigError
from funchost.settings.messaging_connections import MessagingConnection
from funchost.storage.eventhubs import (
    DEFAULT_CONSUMER_GROUP,
    DEFAULT_RETENTION_SECONDS,
    EventPosition,
    EventToSend,
    HubProperties,
    PartitionProperties,
    ReceivedEvent,
    check_publish_size,
)

RECEIVE_WAIT = 1.0  # seconds the SDK waits before handing over a partial (or empty) batch


def _sdk() -> Any:
    try:
        import azure.eventhub.aio as aio
    except ModuleNotFoundError:  # pragma: no cover - depends on the installation
        raise ConfigError("a real Event Hubs namespace needs the azure-eventhub package: "
                          "pip install 'funchost[eventhubs]'") from None
    return aio


def client_arguments(connection: MessagingConnection, hub: str) -> dict[str, Any]:
    """Keyword arguments for `EventHub{Producer,Consumer}Client` (connection string or identity)."""
    if connection.connection_string is not None:
        return {"conn_str": connection.connection_string, "eventhub_name": hub}
    from azure.identity.aio import DefaultAzureCredential

    client_id = connection.identity.get("clientId")
    credential = DefaultAzureCredential(managed_identity_client_id=client_id) if client_id else DefaultAzureCredential()
    return {"fully_qualified_namespace": connection.fully_qualified_namespace, "eventhub_name": hub,
            "credential": credential}


def sdk_position(position: EventPosition) -> tuple[Any, bool]:
    """`EventPosition` -> the SDK's (starting_position, starting_position_inclusive)."""
    if position.kind == "earliest":
        return "-1", False
    if position.kind == "latest":
        return "@latest", False
    if position.kind == "sequence":
        return int(position.value), position.inclusive  # type: ignore[arg-type]
    if position.kind == "offset":
        return str(position.value), position.inclusive
    if position.kind == "enqueued" and isinstance(position.value, datetime):
        return position.value, True
    raise ValueError(f"unknown event position {position!r}")


def sdk_event(event: EventToSend) -> Any:
    from azure.eventhub import EventData

    data: Any = EventData(event.body)  # Any: the SDK types these setters narrower than it accepts
    if event.properties:
        data.properties = dict(event.properties)
    for name in ("content_type", "correlation_id", "message_id"):
        if getattr(event, name) is not None:
            setattr(data, name, getattr(event, name))
    return data


def _offset(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1  # a non-numeric offset: positions fall back to sequence numbers


def received_event(data: Any, partition_id: str) -> ReceivedEvent:
    """A received `EventData` -> `ReceivedEvent` (application properties decoded to str keys)."""
    props = {(k.decode() if isinstance(k, bytes) else str(k)): (v.decode() if isinstance(v, bytes) else v)
             for k, v in (data.properties or {}).items()}
    key = data.partition_key
    enqueued = data.enqueued_time or datetime.fromtimestamp(0, UTC)
    return ReceivedEvent(
        partition_id=partition_id, sequence_number=int(data.sequence_number), offset=_offset(data.offset),
        enqueued_time=enqueued if enqueued.tzinfo else enqueued.replace(tzinfo=UTC),
        body=b"".join(bytes(b) for b in data.body) if not isinstance(data.body, bytes) else data.body,
        partition_key=key.decode() if isinstance(key, bytes) else key, properties=props,
        content_type=data.content_type, correlation_id=data.correlation_id,
        message_id=str(data.message_id) if data.message_id is not None else None)


def partition_properties(hub: str, raw: dict[str, Any]) -> PartitionProperties:
    empty = bool(raw.get("is_empty"))
    first, last = int(raw.get("beginning_sequence_number", -1)), int(raw.get("last_enqueued_sequence_number", -1))
    return PartitionProperties(
        hub=hub, partition_id=str(raw["id"]), beginning_sequence_number=-1 if empty else first,
        last_enqueued_sequence_number=last, last_enqueued_offset=_offset(raw.get("last_enqueued_offset")),
        last_enqueued_time=raw.get("last_enqueued_time_utc"), retained_events=0 if empty else max(0, last - first + 1))


@dataclass
class _Reader:
    """One partition's background receive, from `start` on."""

    start: EventPosition
    queue: asyncio.Queue[ReceivedEvent] = field(default_factory=asyncio.Queue)
    next: EventPosition | None = None
    task: asyncio.Task[None] | None = None
    error: BaseException | None = None


class SdkEventHubBroker:
    def __init__(self, connection: MessagingConnection) -> None:
        self.connection = connection
        self.namespace = connection.fully_qualified_namespace
        self._producers: dict[str, Any] = {}
        self._consumers: dict[tuple[str, str], Any] = {}
        self._readers: dict[tuple[str, str, str], _Reader] = {}

    def _producer(self, hub: str) -> Any:
        if hub not in self._producers:
            aio = _sdk()
            args = client_arguments(self.connection, hub)
            if "conn_str" in args:
                self._producers[hub] = aio.EventHubProducerClient.from_connection_string(**args)
            else:
                self._producers[hub] = aio.EventHubProducerClient(**args)
        return self._producers[hub]

    def _consumer(self, hub: str, group: str) -> Any:
        key = (hub, group)
        if key not in self._consumers:
            aio = _sdk()
            args = client_arguments(self.connection, hub)
            if "conn_str" in args:
                self._consumers[key] = aio.EventHubConsumerClient.from_connection_string(consumer_group=group, **args)
            else:
                self._consumers[key] = aio.EventHubConsumerClient(consumer_group=group, **args)
        return self._consumers[key]

    async def hub(self, name: str) -> HubProperties:
        props = await self._producer(name).get_eventhub_properties()
        created = props.get("created_at") or datetime.fromtimestamp(0, UTC)
        return HubProperties(props.get("eventhub_name", name), tuple(str(p) for p in props["partition_ids"]),
                             created, DEFAULT_RETENTION_SECONDS, (DEFAULT_CONSUMER_GROUP,))

    async def create_hub(self, name: str, *, partition_count: int | None = None, consumer_groups: Sequence[str] = (),
                         retention_seconds: float | None = None, exist_ok: bool = True) -> HubProperties:
        return await self.hub(name)  # hubs of a real namespace are created in Azure, not by the host

    async def list_hubs(self) -> list[HubProperties]:
        return []  # listing needs the management plane (ARM), which the data-plane SDK does not offer

    async def ensure_consumer_group(self, hub: str, name: str) -> None:
        return None

    async def send(self, hub: str, events: Sequence[EventToSend], *, partition_key: str | None = None,
                   partition_id: str | None = None) -> list[ReceivedEvent]:
        check_publish_size(events, partition_key)
        producer = self._producer(hub)
        batch = await producer.create_batch(partition_key=partition_key, partition_id=partition_id)
        for event in events:
            batch.add(sdk_event(event))
        await producer.send_batch(batch)
        return []  # the service does not report the sequence numbers it assigned

    async def read(self, hub: str, partition_id: str, position: EventPosition, max_events: int, *,
                   consumer_group: str = DEFAULT_CONSUMER_GROUP) -> list[ReceivedEvent]:
        key = (hub, consumer_group, partition_id)
        reader = self._readers.get(key)
        if reader is None or (position != reader.start and position != reader.next):
            if reader is not None:
                await self._stop_reader(reader)
            reader = self._readers[key] = self._start_reader(hub, consumer_group, partition_id, position, max_events)
        if reader.error is not None:
            error, reader.error = reader.error, None
            del self._readers[key]
            raise error
        events: list[ReceivedEvent] = []
        while len(events) < max_events and not reader.queue.empty():
            events.append(reader.queue.get_nowait())
        if events:
            reader.next = EventPosition.after_sequence(events[-1].sequence_number)
            reader.start = reader.next
        return events

    def _start_reader(self, hub: str, group: str, partition_id: str, position: EventPosition,
                      max_events: int) -> _Reader:
        reader = _Reader(position)
        starting, inclusive = sdk_position(position)
        consumer = self._consumer(hub, group)

        async def on_batch(context: Any, batch: list[Any]) -> None:
            for data in batch:
                reader.queue.put_nowait(received_event(data, partition_id))

        async def on_error(context: Any, error: Exception) -> None:
            reader.error = error

        async def run() -> None:
            await consumer.receive_batch(on_batch, partition_id=partition_id, starting_position=starting,
                                         starting_position_inclusive=inclusive, max_batch_size=max_events,
                                         max_wait_time=RECEIVE_WAIT, on_error=on_error)

        reader.task = asyncio.get_running_loop().create_task(run(), name=f"eventhub-sdk:{hub}/{partition_id}")
        return reader

    async def _stop_reader(self, reader: _Reader) -> None:
        if reader.task is not None:
            reader.task.cancel()
            with contextlib.suppress(BaseException):
                await reader.task

    async def partition_properties(self, hub: str, partition_id: str) -> PartitionProperties:
        return partition_properties(hub, await self._producer(hub).get_partition_properties(partition_id))

    async def aclose(self) -> None:
        for reader in list(self._readers.values()):
            await self._stop_reader(reader)
        self._readers.clear()
        for client in [*self._producers.values(), *self._consumers.values()]:
            with contextlib.suppress(Exception):
                await client.close()
        self._producers.clear()
        self._consumers.clear()
