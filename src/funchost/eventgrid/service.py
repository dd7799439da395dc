"""The Event Grid service of a running host: `start(runtime)` at host start, `stop()` at shutdown.

A host-wide service (`runtime.registry.HOST_SERVICE_MODULES`). It loads eventgrid.json (or the
defaults), uses the backend's durable Event Grid store, creates topic keys, mounts the HTTP
endpoints, watches the blob change journal for the storage system topics and runs the delivery
engine. Other code finds it with ``runtime.services.find(EventGridService)``.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence
from typing import Any

from funchost.clock import Clock, SystemClock
from funchost.eventgrid import SCHEMA_EVENTGRID
from funchost.eventgrid.auth import KeyRing, TopicKeys
from funchost.eventgrid.blobevents import BlobEventWatcher
from funchost.eventgrid.config import BlobEventFunction, EventGridConfig, TopicConfig, load_config
from funchost.eventgrid.deadletter import DeadLetterWriter
from funchost.eventgrid.delivery import DeliveryEngine
from funchost.eventgrid.destinations import FunctionSender, QueueSender, WebhookSender
from funchost.eventgrid.endpoints import mount, topic_path
from funchost.eventgrid.routing import route
from funchost.eventgrid.schema import (
    PublishError,
    parse_events,
    validate_cloud_event,
    validate_eventgrid_event,
)
from funchost.runtime.contracts import Runtime
from funchost.runtime.services import HttpMount
from funchost.storage.eventgrid import EventGridStore

log = logging.getLogger("funchost.eventgrid")

CROSS_PROCESS_POLL = 1.0  # seconds: how soon writes by other processes are noticed (real clock)


def eventgrid_functions(runtime: Runtime) -> list[str]:
    return [f.name for f in runtime.functions.values() if f.trigger_type == "eventGridTrigger"]


def blob_event_functions(runtime: Runtime) -> list[BlobEventFunction]:
    """Blob triggers with the Event Grid source: subscribed to their account's storage topic."""
    found = []
    for f in runtime.functions.values():
        if f.trigger_type == "blobTrigger" and str(f.trigger.get("source") or "").strip().lower() == "eventgrid":
            found.append(BlobEventFunction(f.name, str(f.trigger.get("path") or "").partition("/")[0],
                                           f.trigger.get("connection")))
    return found


def uses_event_grid(runtime: Runtime, config: EventGridConfig) -> bool:
    """An Event Grid function or output binding, or an eventgrid.json: then the topic endpoints
    are worth a line at start; otherwise the default topics exist quietly (debug level)."""
    return config.from_file or any(
        f.trigger_type == "eventGridTrigger" or any(b.type == "eventGrid" for b in f.bindings)
        for f in runtime.functions.values())


class EventGridService:
    def __init__(self, runtime: Runtime, config: EventGridConfig, store: EventGridStore,
                 keys: dict[str, TopicKeys]) -> None:
        self.runtime = runtime
        self.config = config
        self.store = store
        self.keys = keys
        self.clock: Clock = runtime.clock
        real_time = isinstance(runtime.clock, SystemClock)
        self._webhooks = WebhookSender(store, runtime.clock)
        self.function_sender = FunctionSender(runtime.invoker, runtime.functions.get, runtime.clock)
        self.engine = DeliveryEngine(
            store, config,
            {"function": self.function_sender,
             "webhook": self._webhooks,
             "storageQueue": QueueSender(runtime.storage.queues, runtime.faults)},
            runtime.clock,
            dead_letters=DeadLetterWriter(runtime.storage.blobs),
            owner=f"{socket.gethostname()}-{id(self):x}",
            idle_poll=CROSS_PROCESS_POLL if real_time else None,
        )
        self.watchers: list[BlobEventWatcher] = []
        self._mounts: list[HttpMount] = []
        self._poll_interval = CROSS_PROCESS_POLL if real_time else 3600.0
        self._detail_level = logging.INFO if uses_event_grid(runtime, config) else logging.DEBUG

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        self._mounts = mount(self, self.runtime.services)
        for topic in self.config.topics.values():
            if topic.kind == "storage":
                await self._watch(topic)
        await self.engine.start()
        for line in self.describe():
            log.log(self._detail_level, line)

    async def _watch(self, topic: TopicConfig) -> None:
        storage = self.runtime.storage
        journal = storage.blob_changes(topic.connection)
        if journal is None:
            log.log(logging.WARNING if self._detail_level == logging.INFO else logging.DEBUG,
                    "eventgrid: system topic '%s' needs the embedded blob store's change journal; blob "
                    "events are not emulated with --storage %s", topic.name, storage.kind)
            return
        account = storage.connection(topic.connection, "blob").account_name
        watcher = BlobEventWatcher(topic, journal, account, self.store, self.config, self.clock,
                                   self.engine.notify, self._poll_interval)
        await watcher.start()
        self.watchers.append(watcher)

    async def drain(self) -> None:
        """Host stopping: no new event is read from the blob journal, no delivery (first attempt
        or retry) starts; the deliveries in flight finish. Failed ones keep their next attempt in
        the store, for the next start."""
        for watcher in self.watchers:
            await watcher.stop()
        await self.engine.stop()
        await self.function_sender.drain()

    async def stop(self) -> None:
        """The store stays open: it is the storage backend's, closed with it."""
        for mounted in self._mounts:
            self.runtime.services.unmount(mounted)
        await self.drain()
        await self._webhooks.aclose()
        self.runtime.services.withdraw(self)

    # -- publishing ------------------------------------------------------------------------------

    def topic_endpoint(self, topic: str) -> str:
        base = self.runtime.services.base_url.rstrip("/")
        return base + topic_path(topic)

    def topic_id(self, topic: TopicConfig) -> str:
        return topic.resource_id(self.runtime.storage.connection(topic.connection, "blob").account_name
                                 if topic.kind == "storage" else None)

    async def publish_body(self, topic_name: str, body: bytes, content_type: str | None) -> int:
        """Validate a publish request's body and store its events (PublishError on bad input)."""
        topic = self._custom_topic(topic_name)
        events = parse_events(body, content_type, topic.input_schema, self.topic_id(topic))
        return await self._store(topic, events)

    async def publish(self, topic_name: str, events: Sequence[dict[str, Any]]) -> int:
        """In-process publishing (output binding, tests): same validation as the endpoint."""
        topic = self._custom_topic(topic_name)
        if topic.input_schema == SCHEMA_EVENTGRID:
            checked = [validate_eventgrid_event(e, i, self.topic_id(topic)) for i, e in enumerate(events)]
        else:
            checked = [validate_cloud_event(e, i) for i, e in enumerate(events)]
        return await self._store(topic, checked)

    def _custom_topic(self, name: str) -> TopicConfig:
        topic = self.config.topic(name)
        if topic is None or topic.kind != "custom":
            raise PublishError(404, f"There is no custom topic named '{name}'.", code="NotFound",
                               detail_code="NotFound")
        return topic

    async def _store(self, topic: TopicConfig, events: list[dict[str, Any]]) -> int:
        routed = route(self.config, topic.name, events, topic.input_schema)
        await self.store.append(topic.name, topic.input_schema, routed, self.clock.now().timestamp())
        self.engine.notify()
        matched = sum(len(r.targets) for r in routed)
        log.debug("Published %d event(s) to Event Grid topic '%s' (%d deliveries)",
                  len(events), topic.name, matched, extra={"event": "EventGridPublished", "topic": topic.name, "events": len(events),
                         "deliveries": matched})
        return len(events)

    def describe(self) -> list[str]:
        lines = []
        for topic in self.config.topics.values():
            where = self.topic_endpoint(topic.name) if topic.kind == "custom" else "blob store events"
            lines.append(f"Event Grid topic '{topic.name}' ({topic.input_schema}): {where}")
        for sub in self.config.subscriptions:
            lines.append(f"Event Grid subscription '{sub.name}': {sub.topic} -> {sub.destination.describe()}")
        return lines


async def start(runtime: Runtime) -> EventGridService:
    config = load_config(runtime.app_dir, eventgrid_functions(runtime), blob_event_functions(runtime))
    keys = KeyRing(runtime.storage.secrets()).ensure([t.name for t in config.topics.values()
                                                          if t.kind == "custom"])
    service = EventGridService(runtime, config, runtime.storage.eventgrid_store(), keys)
    return await runtime.services.start_service(service)
