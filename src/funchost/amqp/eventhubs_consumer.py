"""Event Hubs consumer links: a starting position from the selector filter, owner levels, delivery.

The SDKs send `amqp.annotation.x-opt-offset > '<offset>'` (also `x-opt-sequence-number`,
`x-opt-enqueued-time` in ms, `>=` when inclusive; offset `-1` = start, `@latest` = end), see
azure-eventhub `_utils.event_position_selector`. Events go out pre-settled with the annotations
the SDKs read (sequence number, offset as a string, enqueued time, partition key) and, when the
link desires `com.microsoft:enable-receiver-runtime-metric`, the partition's last-enqueued
properties as delivery annotations. Owner level (`com.microsoft:epoch`): a higher level takes a
partition's links over (`amqp:link:stolen` to the others); a lower one, or none while an owner
holds the partition, is refused with the same condition.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from funchost.amqp.codec.message import Message, Properties
from funchost.amqp.links import Delivery, Link
from funchost.amqp.values import long, simple, text, timestamp
from funchost.errors import StorageError
from funchost.storage.eventhubs import EventPosition, ReceivedEvent

if TYPE_CHECKING:
    from funchost.amqp.eventhubs_links import EventHubsNodes

SELECTOR = "apache.org:selector-filter:string"
EPOCH = "com.microsoft:epoch"
RUNTIME_METRIC = "com.microsoft:enable-receiver-runtime-metric"
STOLEN = "amqp:link:stolen"
POLL_SECONDS = 1.0
READ_BATCH = 100
_EXPRESSION = re.compile(r"amqp\.annotation\.x-opt-(offset|sequence-number|enqueued-time)\s*(>=|>)\s*'([^']*)'")


def parse_selector(expression: str | None) -> EventPosition:
    """The position a selector names (no selector: the end of the stream, the SDKs' default)."""
    match = _EXPRESSION.search(expression or "")
    if match is None:
        return EventPosition.latest()
    field, operator, value = match.groups()
    inclusive = operator == ">="
    if field == "offset":
        if value == "-1":
            return EventPosition.earliest()
        if value == "@latest":
            return EventPosition.latest()
        return EventPosition("offset", int(value), inclusive)
    if field == "sequence-number":
        return EventPosition("sequence", int(value), inclusive)
    return EventPosition("enqueued", datetime.fromtimestamp(int(value) / 1000, UTC), inclusive)


class Epochs:
    """Owner levels per (hub, consumer group, partition) across the endpoint's connections."""

    def __init__(self) -> None:
        self._links: dict[tuple[str, str, str], dict[Link, int | None]] = {}

    async def claim(self, key: tuple[str, str, str], link: Link, epoch: int | None) -> str | None:
        """None when the link may read; else why not. Takes lower owners' links over."""
        held = self._links.setdefault(key, {})
        levels = [e for e in held.values() if e is not None]
        top = max(levels) if levels else None
        if top is not None and (epoch is None or epoch < top):
            return f"a receiver with owner level {top} holds this partition"
        if epoch is not None:
            for other, level in list(held.items()):
                if level is None or level < epoch:
                    held.pop(other, None)
                    await other.detach(STOLEN, f"a receiver with a higher owner level ({epoch}) took over")
        held[link] = epoch
        return None

    def release(self, key: tuple[str, str, str], link: Link) -> None:
        self._links.get(key, {}).pop(link, None)


class EhConsumer:
    def __init__(self, nodes: EventHubsNodes, hub: str, group: str, partition: str, position: EventPosition,
                 metric: bool) -> None:
        self.nodes = nodes
        self.hub, self.group, self.partition = hub, group, partition
        self.position = position
        self.metric = metric
        self._wake = asyncio.Event()
        self._unsubscribe: Any = None

    @classmethod
    async def create(cls, nodes: EventHubsNodes, link: Link, hub: str, group: str, partition: str
                     ) -> EhConsumer | tuple[str, str]:
        try:
            position = parse_selector(text(link.filters.get(SELECTOR)))
        except ValueError:
            return ("com.microsoft:argument-error", f"cannot read the selector {link.filters.get(SELECTOR)!r}")
        if position.kind == "latest":
            last = (await nodes.broker.partition_properties(hub, partition)).last_enqueued_sequence_number
            position = EventPosition.after_sequence(last) if last >= 0 else EventPosition.earliest()
        epoch = link.properties.get(EPOCH)
        refused = await nodes.epochs.claim((hub.lower(), group.lower(), partition), link,
                                           int(epoch) if isinstance(epoch, int) else None)
        if refused:
            return (STOLEN, refused)
        return cls(nodes, hub, group, partition, position, RUNTIME_METRIC in link.desired_capabilities)

    async def attached(self, link: Link) -> None:
        from funchost.eventhubs.namespaces import hub_topic

        self._unsubscribe = self.nodes.signals.subscribe(hub_topic(self.hub), self._wake.set)
        link.session.connection.spawn(self._deliver(link))

    async def received(self, link: Link, delivery: Delivery) -> Any:
        return None

    def credit_changed(self, link: Link) -> None:
        self._wake.set()

    async def _deliver(self, link: Link) -> None:
        while not link.closed:
            await link.wait_for_credit()
            if link.closed:
                return
            self._wake.clear()
            try:
                events = await self.nodes.broker.read(self.hub, self.partition, self.position,
                                                      min(link.credit, READ_BATCH), consumer_group=self.group)
                annotations = await self._runtime_info() if events and self.metric else None
            except StorageError as exc:
                await link.detach("amqp:internal-error", str(exc))
                return
            for event in events:
                await link.send(_message(event, annotations), event.sequence_number.to_bytes(8, "big"),
                                settled=True)
                self.position = EventPosition.after_sequence(event.sequence_number)
            if not events:
                if link.drain:
                    await link.finish_drain()
                    continue
                try:
                    await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)
                except TimeoutError:
                    pass

    async def _runtime_info(self) -> dict[str | bytes, Any]:
        p = await self.nodes.broker.partition_properties(self.hub, self.partition)
        return {"last_enqueued_sequence_number": long(p.last_enqueued_sequence_number),
                "last_enqueued_offset": str(p.last_enqueued_offset),
                "last_enqueued_time_utc": timestamp(p.last_enqueued_time or 0.0),
                "runtime_info_retrieval_time_utc": timestamp(datetime.now(UTC))}

    async def settled(self, link: Link, state: Any, item: Any) -> Any:
        return None

    async def detached(self, link: Link) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.nodes.epochs.release((self.hub.lower(), self.group.lower(), self.partition), link)


def _message(event: ReceivedEvent, runtime: dict[str | bytes, Any] | None) -> Message:
    annotations: dict[str | bytes, Any] = {
        "x-opt-sequence-number": long(event.sequence_number),
        "x-opt-offset": str(event.offset),
        "x-opt-enqueued-time": timestamp(event.enqueued_time),
    }
    if event.partition_key is not None:
        annotations["x-opt-partition-key"] = event.partition_key
    properties = None
    if event.content_type or event.correlation_id or event.message_id:
        properties = Properties(message_id=event.message_id, correlation_id=event.correlation_id,
                                content_type=event.content_type)
    application: dict[str | bytes, Any] = {k: simple(v) for k, v in event.properties.items()}
    return Message(delivery_annotations=runtime, message_annotations=annotations, properties=properties,
                   application_properties=application or None, data=[event.body])
