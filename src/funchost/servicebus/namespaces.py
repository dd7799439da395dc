"""A Service Bus namespace as triggers, the output binding, the CLI and tests use it.

The embedded namespace is the data folder's SQLite broker (`EmbeddedStorage.servicebus`). When
the app has a Config.json its entities are applied once per process and only they exist
(an unknown entity is MessagingEntityNotFound, as with the emulator); without one, entities are
created on first use with the service's defaults. A real namespace is reached through the
official SDK (`funchost.servicebus.sdk`), where entities are managed in Azure.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from pathlib import Path
from typing import Any

from funchost.servicebus.config import DEFAULT_NAMESPACE, ServiceBusConfig, load_config
from funchost.settings.app_settings import AppSettings
from funchost.settings.messaging_connections import (
    EMBEDDED_ABSENT,
    MessagingConnection,
    is_running_locally,
    resolve_messaging_connection,
)
from funchost.storage.host_storage import HostStorage
from funchost.storage.servicebus import (
    MessagingEntityAlreadyExists,
    MessagingEntityNotFound,
    ServiceBusBroker,
    split_dead_letter,
)

log = logging.getLogger("funchost.servicebus")

DEFAULT_CONNECTION = "AzureWebJobsServiceBus"
_announced: set[tuple[int, str]] = set()


class ServiceBusNamespace:
    def __init__(self, broker: ServiceBusBroker, config: ServiceBusConfig | None, *, embedded: bool) -> None:
        self.broker = broker
        self.config = config
        self.embedded = embedded
        self._prepared = False
        self._lock = asyncio.Lock()
        self._known: set[str] = set()

    @property
    def creates_on_first_use(self) -> bool:
        return self.embedded and self.config is None

    async def prepare(self) -> None:
        """Apply Config.json's entities (once per process; idempotent across processes)."""
        if self._prepared or self.config is None or not self.embedded:
            self._prepared = True
            return
        async with self._lock:
            if not self._prepared:
                await self.broker.apply_entities(self.config.queues, self.config.topics)
                self._prepared = True

    async def ensure_queue(self, name: str) -> None:
        await self._ensure(name, "queue")

    async def ensure_topic(self, name: str) -> None:
        await self._ensure(name, "topic")

    async def ensure_subscription(self, topic: str, subscription: str) -> None:
        await self._ensure(topic, "topic")
        await self._ensure(f"{topic}/Subscriptions/{subscription}", "subscription", topic, subscription)

    async def ensure_entity(self, path: str) -> None:
        """For a send target or a receive path: create it if this namespace creates on first use,
        else check it exists (MessagingEntityNotFound)."""
        name, _ = split_dead_letter(path)
        parts = name.split("/")
        if len(parts) == 3 and parts[1].lower() == "subscriptions":
            await self.ensure_subscription(parts[0], parts[2])
        else:
            await self._ensure(name, "queue")

    async def _ensure(self, path: str, kind: str, topic: str | None = None, subscription: str | None = None) -> None:
        await self.prepare()
        key = path.lower()
        if key in self._known:
            return
        if not self.creates_on_first_use:
            if self.embedded:
                await self.broker.get_entity(path)  # MessagingEntityNotFound names it
            self._known.add(key)
            return
        try:
            await self.broker.get_entity(path)
        except MessagingEntityNotFound:
            try:
                if kind == "queue":
                    await self.broker.create_queue(path)
                elif kind == "topic":
                    await self.broker.create_topic(path)
                else:
                    assert topic is not None and subscription is not None
                    await self.broker.create_subscription(topic, subscription)
            except MessagingEntityAlreadyExists:
                pass  # created concurrently by another host
        self._known.add(key)


_embedded: weakref.WeakKeyDictionary[Any, ServiceBusNamespace] = weakref.WeakKeyDictionary()


def embedded_namespace(storage: HostStorage, app_dir: Path, settings: AppSettings) -> ServiceBusNamespace:
    """The data folder's embedded namespace (one per storage backend object)."""
    config = load_config(app_dir, settings)
    broker = storage.servicebus(config.namespace if config else DEFAULT_NAMESPACE)
    namespace = _embedded.get(broker)
    if namespace is None:
        namespace = _embedded[broker] = ServiceBusNamespace(broker, config, embedded=True)
    return namespace


def resolve_connection(name: str | None, settings: AppSettings) -> MessagingConnection:
    return resolve_messaging_connection(
        name, settings, default_setting=DEFAULT_CONNECTION, local=is_running_locally(settings),
        missing="Microsoft Azure WebJobs SDK ServiceBus connection string '{setting}' is missing or empty.")


def announce(connection: MessagingConnection, owner: object, data_dir: Path, where: str | None = None) -> None:
    """Say once per host and setting that an absent setting means the embedded broker (in the data
    folder, or `where` it is kept instead)."""
    key = (id(owner), connection.setting_name.lower())
    if connection.embedded_reason == EMBEDDED_ABSENT and key not in _announced:
        _announced.add(key)
        log.info("Service Bus connection setting '%s' is not set: using the embedded Service Bus in '%s'",
                 connection.setting_name, where or data_dir / "servicebus")


def open_namespace(connection: MessagingConnection, storage: HostStorage, app_dir: Path, settings: AppSettings
                   ) -> ServiceBusNamespace:
    """Embedded namespace, or a real one through azure-servicebus (one client per caller)."""
    if connection.embedded:
        return embedded_namespace(storage, app_dir, settings)
    from funchost.servicebus.sdk import SdkServiceBusBroker

    return ServiceBusNamespace(SdkServiceBusBroker(connection), None, embedded=False)
