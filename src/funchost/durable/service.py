"""The Durable Functions service of a running host (one line in `registry.HOST_SERVICE_MODULES`).

Started when the app has durable functions or durable clients. It opens the task hub named by
host.json (``extensions.durableTask.hubName``) through the storage port
(`runtime.storage.task_hub`), mounts the management API under ``/runtime/webhooks/durabletask``
on the host's port, opens the local RPC endpoint the SDK's client uses, and registers itself
(`runtime.services.find(DurableService)`).

The dispatchers are the extension's task hub worker: the first durable trigger's listener
starts them (`start_worker`, after creating the hub's storage) and the last one to stop stops
them, as `DurableTaskListener` does (`triggers/durable/listener.py`). A task hub that cannot be
opened is therefore a listener failure: those functions are in error and the start is retried.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from funchost.durable import sdk_executor, sdk_timestamps
from funchost.durable.client import DurableClient
from funchost.durable.dispatcher import Dispatcher
from funchost.durable.endpoints import WEBHOOK_PATH, DurableEndpoints
from funchost.durable.functions import CLIENT_BINDING, DurableFunctions, uses_durable
from funchost.durable.hub import NotifyingHub
from funchost.durable.options import DurableTaskOptions, default_options, resolved_hub_name
from funchost.runtime.contracts import Runtime
from funchost.runtime.services import HttpMount

log = logging.getLogger("funchost.durable")


def durable_options(runtime: Runtime) -> DurableTaskOptions:
    options = runtime.options.extensions.get("durableTask")
    return options if isinstance(options, DurableTaskOptions) else default_options()


class DurableService:
    def __init__(self, runtime: Runtime, options: DurableTaskOptions, hub: NotifyingHub,
                 functions: DurableFunctions) -> None:
        self.runtime = runtime
        self.options = options
        self.hub = hub
        self.functions = functions
        self.client = DurableClient(hub, functions, options.overridable_states, options.default_version)
        self.endpoints = DurableEndpoints(runtime.services, self.client, rpc_enabled=options.local_rpc_enabled)
        self._mount: HttpMount | None = None
        self._dispatcher: Dispatcher | None = None
        self._listening: set[str] = set()
        self._worker_lock = asyncio.Lock()

    async def start(self) -> None:
        await self.endpoints.start()
        self._mount = self.runtime.services.mount(WEBHOOK_PATH, self.endpoints.webhook)
        rpc = self.endpoints.rpc
        log.info("Durable Functions task hub '%s'%s", self.hub.name,
                 f"; local RPC endpoint {rpc.base_url}" if rpc is not None else "")

    async def stop(self) -> None:
        if self._mount is not None:
            self.runtime.services.unmount(self._mount)
            self._mount = None
        await self.endpoints.stop()
        await self._stop_worker()
        self.runtime.services.withdraw(self)
        await _close_sdk_session()

    # -- the task hub worker, started and stopped by the durable triggers' listeners ---------------

    @property
    def worker_started(self) -> bool:
        return self._dispatcher is not None

    async def listener_started(self, function: str) -> None:
        """StartTaskHubWorkerIfNotStartedAsync: create the hub's storage, then run the dispatchers.
        Raises when the hub cannot be opened (the listener's start fails and is retried)."""
        async with self._worker_lock:
            if self._dispatcher is None:
                await self.hub.store.create_if_not_exists()
                dispatcher = Dispatcher(self.hub, self.functions, self.runtime.invoker, self.options)
                await dispatcher.start()
                self._dispatcher = dispatcher
                log.info("Task hub worker started (task hub '%s')", self.hub.name)
            self._listening.add(function)

    async def listener_stopped(self, function: str) -> None:
        """StopTaskHubWorkerIfIdleAsync: the dispatchers stop with the last durable listener."""
        async with self._worker_lock:
            self._listening.discard(function)
            if not self._listening:
                await self._stop_worker()

    async def _stop_worker(self) -> None:
        dispatcher, self._dispatcher = self._dispatcher, None
        if dispatcher is not None:
            await dispatcher.stop()
            log.info("Task hub worker stopped (task hub '%s')", self.hub.name)


async def _close_sdk_session() -> None:
    """The SDK's client keeps one aiohttp session per process, made on first use and never closed
    (the worker process ends with the host). A host that stops inside a longer-lived process (tests)
    closes it, so the next event loop does not inherit a session bound to this one."""
    module = sys.modules.get("azure.durable_functions.models.utils.http_utils")
    close = getattr(module, "_close_session", None)
    if close is not None:
        try:
            await close()
        except Exception:  # noqa: BLE001 - best effort at shutdown
            log.debug("closing the Durable SDK's HTTP session failed", exc_info=True)


def _warn_about_other_hubs(runtime: Runtime, hub_name: str) -> None:
    for function in runtime.functions.values():
        for binding in function.bindings:
            hub = binding.get("taskHub")
            if binding.type == CLIENT_BINDING and hub and str(hub).lower() != hub_name.lower():
                log.warning("durable client '%s' names task hub '%s'; funchost serves the app's hub '%s' only",
                            function.name, hub, hub_name)


async def start(runtime: Runtime) -> DurableService | None:
    functions = list(runtime.functions.values())
    if not uses_durable(functions):
        return None
    sdk_timestamps.install()  # the SDK reads the host's history timestamps quickly (same results)
    sdk_executor.install()  # and makes its executor's namedtuple class once, not per episode
    options = durable_options(runtime)
    hub_name = resolved_hub_name(options, lambda value: runtime.settings.resolve_tokens(value, where="hubName"))
    _warn_about_other_hubs(runtime, hub_name)
    disabled = [f.name for f in functions if runtime.settings.is_function_disabled(f.name)]
    hub = NotifyingHub(runtime.storage.task_hub(hub_name), runtime.signals, runtime.clock)
    service = DurableService(runtime, options, hub, DurableFunctions.of(functions, disabled))
    return await runtime.services.start_service(service)
