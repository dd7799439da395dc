"""`harness.eventhubs`: send events and look at partitions, checkpoints and ownership from a test.

    await host.eventhubs.send("telemetry", ["a", "b"], partition_key="device-1")
    await host.advance(1)
    assert (await host.eventhubs.checkpoints("telemetry"))["0"].sequence_number == 1

Sends go through the same path as the output binding (the app's Config.json applies, hubs are
created on first use without one) and wake the host's listeners at once. `connection` names an
app setting as a binding's `connection` does; by default the embedded broker (namespace
"localhost", the emulator's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from funchost.eventhubs.namespaces import HostView, HubTarget, eventhubs_for
from funchost.settings.messaging_connections import embedded_connection
from funchost.storage.eventhubs import (
    DEFAULT_CONSUMER_GROUP,
    EventPosition,
    EventToSend,
    HubProperties,
    ReceivedEvent,
)
from funchost.triggers.eventhub.checkpoints import BlobCheckpointStore, Checkpoint

Body = str | bytes | Mapping[str, Any] | Sequence[Any]


def _bytes(body: Body) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")


class EventHubTools:
    def __init__(self, runtime: HostView) -> None:
        self.runtime = runtime
        self.service = eventhubs_for(runtime)

    def target(self, hub: str, connection: str | None = None) -> HubTarget:
        if connection is None:
            return HubTarget(embedded_connection(), hub)
        return self.service.target(connection, hub)

    async def hub(self, hub: str, connection: str | None = None) -> HubProperties:
        return (await self.service.open_hub(self.target(hub, connection)))[1]

    async def send(self, hub: str, bodies: Body | list[Body], *, partition_key: str | None = None,
                   partition_id: str | None = None, properties: Mapping[str, Any] | None = None,
                   connection: str | None = None) -> list[ReceivedEvent]:
        """Send one batch (a list is several events, all to one partition, as one send)."""
        items = bodies if isinstance(bodies, list) else [bodies]
        events = [EventToSend(_bytes(b), dict(properties or {})) for b in items]
        return await self.service.send(self.target(hub, connection), events, partition_key=partition_key,
                                       partition_id=partition_id)

    async def events(self, hub: str, partition_id: str | None = None, connection: str | None = None,
                     max_events: int = 10_000) -> list[ReceivedEvent]:
        """Every retained event (of one partition, or of all, partition by partition)."""
        broker, props = await self.service.open_hub(self.target(hub, connection))
        found: list[ReceivedEvent] = []
        for pid in [partition_id] if partition_id is not None else list(props.partition_ids):
            found.extend(await broker.read(props.name, pid, EventPosition.earliest(), max_events))
        return found

    def _store(self) -> BlobCheckpointStore:
        return BlobCheckpointStore(self.runtime.storage.blobs(None))

    async def checkpoints(self, hub: str, consumer_group: str = DEFAULT_CONSUMER_GROUP,
                          connection: str | None = None) -> dict[str, Checkpoint]:
        target = self.target(hub, connection)
        if not await self.runtime.storage.blobs(None).container_exists(self._store().container):
            return {}
        found = await self._store().list_checkpoints(target.fully_qualified_namespace, target.hub, consumer_group)
        return {c.partition_id: c for c in found}

    async def owners(self, hub: str, consumer_group: str = DEFAULT_CONSUMER_GROUP,
                     connection: str | None = None) -> dict[str, str]:
        """partition -> owner identifier ("" when relinquished), as recorded in the ownership blobs."""
        target = self.target(hub, connection)
        if not await self.runtime.storage.blobs(None).container_exists(self._store().container):
            return {}
        found = await self._store().list_ownership(target.fully_qualified_namespace, target.hub, consumer_group)
        return {o.partition_id: o.owner_id for o in found}
