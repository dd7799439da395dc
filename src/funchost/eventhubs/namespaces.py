"""From a binding's `connection` and `eventHubName` to a broker and a hub.

One `EventHubsService` per running host (`eventhubs_for(runtime)`): it resolves connections
(`settings/messaging_connections.py`: the emulator's connection string or an absent setting means
the embedded broker, anything else the real service through azure-eventhub), applies the
emulator `Config.json` when the app has one, opens hubs (creating them on first use without a
config) and wakes this host's listeners after a send.
"""

from __future__ import annotations

import logging
import sys
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from funchost.errors import ConfigError
from funchost.eventhubs.config import EventHubsConfig, find_config
from funchost.settings.messaging_connections import (
    EMBEDDED_NAMESPACE,
    MessagingConnection,
    resolve_messaging_connection,
)
from funchost.storage.eventhubs import (
    EventHubBroker,
    EventHubNotFound,
    EventToSend,
    HubProperties,
    ReceivedEvent,
    validate_consumer_group_name,
    validate_hub_name,
)
from funchost.storage.host_storage import HostStorage


class HostView(Protocol):
    """What the service needs of a host: `Runtime` has it, and so does the CLI's view of an app."""

    @property
    def app_dir(self) -> Path: ...

    @property
    def settings(self) -> Mapping[str, str]: ...

    @property
    def storage(self) -> HostStorage: ...

    @property
    def signals(self) -> Any: ...

    @property
    def is_development(self) -> bool: ...

log = logging.getLogger("funchost.eventhubs")

MISSING = ("EventHub account connection string with name '{setting}' does not exist in the settings. "
           "Make sure that it is a defined App Setting.")


def _amqp_served(settings: Mapping[str, str]) -> bool:
    value = (settings.get("FUNCHOST_AMQP_ENDPOINT") or "").strip().lower()
    return value not in ("", "off", "false", "no", "none")


def hub_topic(hub: str) -> tuple[str, str]:
    """Signals topic published after a send to an embedded hub by this process."""
    return ("eventhub", hub.lower())


@dataclass(frozen=True)
class HubTarget:
    connection: MessagingConnection
    hub: str  # EntityPath of the connection string when it has one, else the binding's eventHubName

    @property
    def fully_qualified_namespace(self) -> str:
        return self.connection.fully_qualified_namespace


class EventHubsService:
    def __init__(self, runtime: HostView) -> None:
        self._runtime = weakref.ref(runtime)  # the registry below must not keep a stopped host alive
        self._config: EventHubsConfig | None = None
        self._config_loaded = False
        self._announced: set[str] = set()
        self._brokers: dict[str, EventHubBroker] = {}

    @property
    def runtime(self) -> HostView:
        runtime = self._runtime()
        if runtime is None:
            raise RuntimeError("the host of this Event Hubs service is gone")
        return runtime

    # -- configuration ---------------------------------------------------------------------------

    def config(self) -> EventHubsConfig | None:
        if not self._config_loaded:
            self._config = find_config(self.runtime.app_dir, self.runtime.settings)
            self._config_loaded = True
        return self._config

    def connection(self, name: str | None) -> MessagingConnection:
        connection = resolve_messaging_connection(name, self.runtime.settings, missing=MISSING,
                                                  local=self.runtime.is_development)
        if connection.is_embedded and connection.setting_name not in self._announced:
            self._announced.add(connection.setting_name)
            why = ("is not defined" if connection.absent else "names the Event Hubs emulator")
            log.info("Event Hubs connection '%s' %s: its functions use funchost's embedded Event Hubs broker.",
                     connection.setting_name, why)
            if "azure.eventhub" in sys.modules and "azure.eventhub" not in self._announced and not \
                    _amqp_served(self.runtime.settings):
                self._announced.add("azure.eventhub")  # the app imported the SDK: its clients cannot reach us
                log.warning("The app imports azure-eventhub: its own clients (EventHubProducerClient, ...) need an "
                            "AMQP endpoint, and funchost's is off (--no-amqp or FUNCHOST_AMQP_ENDPOINT=off). "
                            "Bindings work.")
        return connection

    def target(self, connection_name: str | None, hub: str | None) -> HubTarget:
        connection = self.connection(connection_name)
        name = connection.entity_path or (hub or "").strip()
        if not name:
            raise ConfigError("no event hub name: set 'eventHubName' (or EntityPath in the connection string)")
        validate_hub_name(name)
        return HubTarget(connection, name)

    def check(self, target: HubTarget, consumer_group: str | None = None) -> None:
        """Load-time checks that need no broker: names, and the hub and group in Config.json."""
        if consumer_group is not None:
            validate_consumer_group_name(consumer_group)
        config = self.config() if target.connection.is_embedded else None
        if config is None:
            return
        definition = config.find(target.hub)
        if definition is None:
            raise ConfigError(f"the event hub '{target.hub}' is not defined in {config.path.name} "
                              f"(defined: {', '.join(sorted(d.name for d in config.hubs.values()))})")
        if consumer_group is not None and consumer_group.lower() != "$default" and consumer_group.lower() not in {
                g.lower() for g in definition.consumer_groups}:
            raise ConfigError(f"the consumer group '{consumer_group}' of event hub '{target.hub}' is not defined in "
                              f"{config.path.name}")

    # -- brokers ---------------------------------------------------------------------------------

    def broker(self, connection: MessagingConnection) -> EventHubBroker:
        if connection.is_embedded:
            return self.runtime.storage.eventhubs(EMBEDDED_NAMESPACE)
        key = connection.setting_name
        if key not in self._brokers:
            from funchost.eventhubs.sdk import SdkEventHubBroker

            self._brokers[key] = SdkEventHubBroker(connection)
        return self._brokers[key]

    async def open_hub(self, target: HubTarget) -> tuple[EventHubBroker, HubProperties]:
        broker = self.broker(target.connection)
        if not target.connection.is_embedded:
            return broker, await broker.hub(target.hub)
        config = self.config()
        if config is None:
            return broker, await broker.create_hub(target.hub, exist_ok=True)
        definition = config.find(target.hub)
        if definition is None:
            raise EventHubNotFound(f"The messaging entity 'sb://{target.fully_qualified_namespace}/{target.hub}' "
                                   f"could not be found (not defined in {config.path.name}).")
        return broker, await broker.create_hub(definition.name, partition_count=definition.partition_count,
                                               consumer_groups=definition.consumer_groups, exist_ok=True)

    async def send(self, target: HubTarget, events: Sequence[EventToSend], *,
                   partition_key: str | None = None, partition_id: str | None = None) -> list[ReceivedEvent]:
        broker, hub = await self.open_hub(target)
        sent = await broker.send(hub.name, events, partition_key=partition_key, partition_id=partition_id)
        if target.connection.is_embedded:
            self.runtime.signals.publish(hub_topic(hub.name))
        return sent

    async def aclose(self) -> None:
        for broker in list(self._brokers.values()):
            await broker.aclose()
        self._brokers.clear()


_services: dict[int, tuple[Any, EventHubsService]] = {}


def eventhubs_for(runtime: HostView) -> EventHubsService:
    """The host's Event Hubs service (one per host, created on first use)."""
    entry = _services.get(id(runtime))
    if entry is not None and entry[0]() is runtime:
        return entry[1]
    service = EventHubsService(runtime)
    key = id(runtime)
    _services[key] = (weakref.ref(runtime, lambda _: _services.pop(key, None)), service)
    return service
