"""What all blob-triggered functions of a host share (the extension's shared listeners).

One per host, created by the first blob trigger's listener and found through
``runtime.services``: the discovery strategy (stage A) in a poll loop that runs on one host per host
ID (the singleton lock ``azure-webjobs-hosts/locks/{hostId}/WebJobs.Internal.Blobs.Listener``), the
queue listener on ``azure-webjobs-blobtrigger-{hostId}`` (stage B, on every host) and the Event Grid
source's webhook ``/runtime/webhooks/blobs``. Functions register as their listeners start; the hub
stops when the first of them stops (the host is stopping), so no message is taken for a function
that is already gone.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from funchost.listeners.delays import FixedDelay
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime.contracts import Listener, Runtime
from funchost.runtime.services import HttpMount
from funchost.storage.blobs import BlobChange
from funchost.triggers.blob.executor import BlobTriggerExecutor
from funchost.triggers.blob.messages import host_queue_name
from funchost.triggers.blob.options import BlobTriggerOptions, blob_trigger_options
from funchost.triggers.blob.processor import BlobQueueProcessor, Registration, shared_listener_spec
from funchost.triggers.blob.scan import (
    ContainerScanStrategy,
    DiscoveryStrategy,
    HybridScanStrategy,
    JournalStrategy,
)
from funchost.triggers.blob.urls import blob_service_url, is_path_style
from funchost.triggers.blob.webhook import deliver, mount_webhook
from funchost.triggers.queue.listener import QueueListener
from funchost.triggers.queue.options import receive_visibility
from funchost.triggers.timer.singleton import SingletonListener, parse_singleton_options

log = logging.getLogger("funchost.blobs")

SCOPE_ID = "WebJobs.Internal.Blobs"


def choose_strategy(runtime: Runtime) -> DiscoveryStrategy:
    """From the host storage, as SharedBlobListenerFactory chooses from the host blob client."""
    storage = runtime.storage
    if storage.kind == "embedded":
        return JournalStrategy(storage.blob_changes)
    url = blob_service_url(storage.connection(None, "blob"), storage.kind)
    if is_path_style(url):
        return ContainerScanStrategy()
    return HybridScanStrategy(storage.blobs(None), runtime.host_id)


class ScanLoop:
    """Stage A as a listener: the strategy's iterations on the shared poll loop, woken by the
    embedded store's in-process writes."""

    def __init__(self, strategy: DiscoveryStrategy, runtime: Runtime) -> None:
        self.strategy = strategy
        self.runtime = runtime
        self.loop = PollLoop("blob-discovery", self._poll, FixedDelay(strategy.interval), runtime.clock,
                             on_error=self._on_error)
        self._unsubscribe: list[Callable[[], None]] = []

    async def start(self) -> None:
        if isinstance(self.strategy, JournalStrategy):
            for journal in {id(j): j for j in self.strategy.journals.values() if j is not None}.values():
                self._unsubscribe.append(journal.subscribe(self._changed))
        self.loop.start()

    async def stop(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        await self.loop.stop()

    def _changed(self, change: BlobChange) -> None:
        if change.kind == "BlobCreated" and (change.account, change.container) in self.strategy.watches:
            self.loop.notify()

    async def _poll(self) -> bool:
        await self.strategy.execute()
        return False  # the strategy's interval, whatever was found

    def _on_error(self, exc: BaseException) -> bool:
        log.warning("blob discovery failed (%s: %s); trying again", type(exc).__name__, exc)
        return True


class DiscoverySingleton(SingletonListener):
    """The timer's singleton listener lock, under the blob listener's scope ID."""

    def __init__(self, factory: Callable[[], Listener], runtime: Runtime) -> None:
        super().__init__(factory, runtime.storage.blobs(None), runtime.host_id, SCOPE_ID,
                         parse_singleton_options(runtime.options.singleton), runtime.clock)
        self.lock_id = f"{SCOPE_ID}.Listener"
        self.blob_name = f"locks/{runtime.host_id}/{SCOPE_ID}.Listener"


class BlobTriggerHub:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.options: BlobTriggerOptions = blob_trigger_options(runtime)
        self.host_queues = runtime.storage.queues(None)
        self.host_queue = host_queue_name(runtime.host_id)
        self.strategy = choose_strategy(runtime)
        visibility = receive_visibility(runtime.settings)
        self.processor = BlobQueueProcessor(runtime, self.host_queues, self.host_queue, self.options, visibility)
        self.queue_listener = QueueListener(shared_listener_spec(), runtime, self.host_queues, self.host_queue,
                                            self.processor, self.options.queue_options(), visibility)
        self.discovery: DiscoverySingleton | None = None
        self.functions: set[str] = set()
        self._mounts: list[HttpMount] = []
        self._lock = asyncio.Lock()
        self._stopped = False

    @classmethod
    def of(cls, runtime: Runtime) -> BlobTriggerHub:
        hub = runtime.services.find(BlobTriggerHub)
        if hub is None or hub._stopped:
            hub = cls(runtime)
            runtime.services.provide(hub)
        return hub

    def service_url(self, connection: str | None) -> str:
        storage = self.runtime.storage
        served = storage.blob_origin  # the embedded storage's Blob endpoint, while it is served
        return blob_service_url(storage.connection(connection, "blob"), storage.kind, served)

    async def add(self, function_id: str, registration: Registration, executor: BlobTriggerExecutor | None) -> None:
        """Register a function (an executor for the polling source) and start what is not running yet."""
        async with self._lock:
            name = registration.target.function.name
            self.processor.register(function_id, name, registration)
            self.functions.add(name)
            if not self._mounts:
                self._mounts = mount_webhook(self)
                self._receive_event_grid_deliveries()
            if not self.queue_listener.loop.running:
                await self.queue_listener.start()
            if executor is not None:
                await self.strategy.register(executor)
                if self.discovery is None:
                    self.discovery = DiscoverySingleton(lambda: ScanLoop(self.strategy, self.runtime), self.runtime)
                    await self.discovery.start()

    def _receive_event_grid_deliveries(self) -> None:
        """The embedded Event Grid's storage topics deliver to Event Grid-sourced blob functions."""
        from funchost.eventgrid.service import EventGridService

        service = self.runtime.services.find(EventGridService)
        if service is not None:
            service.function_sender.deliveries["blobTrigger"] = functools.partial(deliver, self)

    def rediscover(self, account: str, container: str, blob_name: str) -> None:
        self.strategy.notify(account, container, blob_name)

    async def stop(self) -> None:
        """Everything at once, in-flight invocations finished: the host is stopping."""
        async with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for mounted in self._mounts:
                self.runtime.services.unmount(mounted)
            if self.discovery is not None:
                await self.discovery.stop()
            await self.queue_listener.stop()
            self.runtime.services.withdraw(self)
            log.debug("blob trigger listeners stopped (%s)", ", ".join(sorted(self.functions)))
