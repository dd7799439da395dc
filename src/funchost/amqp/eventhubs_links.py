"""Event Hubs nodes: producers (to the hub or a partition), consumers, `$management` READ.

A name goes to Event Hubs when the address says so (`/ConsumerGroups/`, `/Partitions/`,
`$management`), when an event hub of that name exists (or the app's Event Hubs Config.json
defines it), or when the client names itself an Event Hubs client (its `open` properties) and no
Service Bus entity has the name. Without a Config.json hubs are created on first use, as the
triggers and bindings do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from funchost.amqp.codec.outcomes import Accepted, Rejected
from funchost.amqp.eventhubs_consumer import EhConsumer, Epochs
from funchost.amqp.eventhubs_management import eventhubs_management_node
from funchost.amqp.links import Delivery, Link, LinkHandler, ReceivingHandler
from funchost.amqp.sas import covers
from funchost.amqp.sb_messages import application_properties, body_bytes, unpack
from funchost.amqp.values import error, keyed, message_id_text, text
from funchost.errors import InvalidResourceName, StorageError
from funchost.eventhubs.config import EventHubsConfig, find_config
from funchost.eventhubs.namespaces import hub_topic
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.messaging_connections import EMBEDDED_NAMESPACE
from funchost.storage.eventhubs import (
    EventHubBroker,
    EventHubNotFound,
    EventToSend,
    HubProperties,
    MessageSizeExceeded,
    validate_hub_name,
)
from funchost.storage.host_storage import HostStorage

EVENT_MAX_BYTES = 1024 * 1024
Refusal = tuple[str, str]


def condition_of(exc: Exception) -> str:
    if isinstance(exc, EventHubNotFound):
        return "amqp:not-found"
    if isinstance(exc, MessageSizeExceeded):
        return "amqp:link:message-size-exceeded"
    if isinstance(exc, InvalidResourceName):
        return "com.microsoft:argument-error"
    return "amqp:internal-error"


class EventHubsNodes:
    def __init__(self, storage: HostStorage, app_dir: Path, settings: AppSettings, signals: Signals) -> None:
        self.broker: EventHubBroker = storage.eventhubs(EMBEDDED_NAMESPACE)
        self.app_dir = app_dir
        self.settings = settings
        self.signals = signals
        self.epochs = Epochs()
        self._config: EventHubsConfig | None = None
        self._config_loaded = False

    def config(self) -> EventHubsConfig | None:
        if not self._config_loaded:
            self._config = find_config(self.app_dir, self.settings)
            self._config_loaded = True
        return self._config

    async def open_hub(self, name: str) -> HubProperties:
        config = self.config()
        if config is None:
            validate_hub_name(name)
            return await self.broker.create_hub(name, exist_ok=True)
        definition = config.find(name)
        if definition is None:
            raise EventHubNotFound(f"The messaging entity 'sb://{EMBEDDED_NAMESPACE}/{name}' could not be found.")
        return await self.broker.create_hub(definition.name, partition_count=definition.partition_count,
                                            consumer_groups=definition.consumer_groups, exist_ok=True)

    def notify(self, hub: str) -> None:
        self.signals.publish(hub_topic(hub))

    async def claims(self, link: Link) -> bool:
        parts = link.node.split("/")
        if link.node.lower() == "$management" or (len(parts) > 1 and parts[1].lower() in ("consumergroups",
                                                                                          "partitions")):
            return True
        if len(parts) != 1:
            return False
        config = self.config()
        if config is not None:
            return config.find(parts[0]) is not None
        try:
            await self.broker.hub(parts[0])
            return True
        except (EventHubNotFound, StorageError):
            pass
        product = " ".join(str(v) for v in link.session.connection.peer_properties.values()).lower()
        return ("eventhub" in product or "event-hubs" in product) and not link.sends

    async def resolve(self, link: Link, authorized: set[str]) -> LinkHandler | Refusal:
        if link.node.lower() == "$management":
            return eventhubs_management_node(self)
        if not covers(authorized, link.node):
            return ("amqp:unauthorized-access", f"no token authorises '{link.node}': put one on $cbs first")
        parts = link.node.split("/")
        try:
            hub = await self.open_hub(parts[0])
            if link.sends:
                return await self._consumer(link, hub, parts)
            partition = parts[2] if len(parts) == 3 and parts[1].lower() == "partitions" else None
            if partition is not None and partition not in hub.partition_ids:
                return ("amqp:not-found", f"the event hub '{hub.name}' has no partition '{partition}'")
            link.max_message_size = EVENT_MAX_BYTES
            return EhProducer(self, hub.name, partition)
        except StorageError as exc:
            return (condition_of(exc), str(exc))

    async def _consumer(self, link: Link, hub: HubProperties, parts: list[str]) -> LinkHandler | Refusal:
        if len(parts) != 5 or parts[1].lower() != "consumergroups" or parts[3].lower() != "partitions":
            return ("amqp:not-found", f"'{link.node}' is not <hub>/ConsumerGroups/<group>/Partitions/<id>")
        group, partition = parts[2], parts[4]
        if partition not in hub.partition_ids:
            return ("amqp:not-found", f"the event hub '{hub.name}' has no partition '{partition}'")
        await self.broker.ensure_consumer_group(hub.name, group)
        link.reply_properties = {}
        return await EhConsumer.create(self, link, hub.name, group, partition)


class EhProducer(ReceivingHandler):
    """Each delivery (an event or a batch) is one send to one partition, atomically."""

    def __init__(self, nodes: EventHubsNodes, hub: str, partition: str | None) -> None:
        self.nodes = nodes
        self.hub = hub
        self.partition = partition

    async def attached(self, link: Link) -> None:
        return None

    async def received(self, link: Link, delivery: Delivery) -> Any:
        try:
            messages = unpack(delivery.payload, delivery.message_format)
            envelope_key = _partition_key(unpack(delivery.payload, 0)[0])
        except Exception:
            return Rejected(error("amqp:decode-error", "the message is not a valid AMQP message"))
        key = envelope_key or (_partition_key(messages[0]) if messages else None)
        events = [_event(m) for m in messages]
        try:
            await self.nodes.broker.send(self.hub, events, partition_key=None if self.partition else key,
                                         partition_id=self.partition)
        except StorageError as exc:
            return Rejected(error(condition_of(exc), str(exc)))
        self.nodes.notify(self.hub)
        return Accepted()


def _partition_key(message: Any) -> str | None:
    return text(keyed(message.message_annotations).get("x-opt-partition-key"))


def _event(message: Any) -> EventToSend:
    p = message.properties
    return EventToSend(body=body_bytes(message), properties=application_properties(message),
                       content_type=text(p.content_type) if p else None,
                       correlation_id=message_id_text(p.correlation_id) if p else None,
                       message_id=message_id_text(p.message_id) if p else None)
