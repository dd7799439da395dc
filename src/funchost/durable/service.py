"""The Durable Functions service of a running host: `start(runtime)` at host start, `stop()` at the end.

Started only when the app has durable functions. It opens the task hub named by host.json
(``extensions.durableTask.hubName``) in the embedded storage, runs the dispatchers, mounts the
management API under ``/runtime/webhooks/durabletask`` on the host's port and opens the local
RPC endpoint the SDK's client uses. `service_for(runtime)` finds it (the client binding does).
"""

from __future__ import annotations

import logging
import sys
from typing import Any
from urllib.parse import parse_qsl

from funchost.durable.client import DurableClient
from funchost.durable.dispatcher import Dispatcher
from funchost.durable.functions import CLIENT_BINDING, DurableFunctions, uses_durable
from funchost.durable.http_api import ManagementApi
from funchost.durable.hub import NotifyingHub
from funchost.durable.options import DurableTaskOptions, default_options, resolved_hub_name
from funchost.durable.rpc import RpcApp, RpcListener
from funchost.durable.webhooks import management_urls, request_from_scope
from funchost.errors import ConfigError
from funchost.runtime.contracts import Runtime
from funchost.triggers.http.asgi import ClientGone, Receive, Scope, Send, read_body, respond

log = logging.getLogger("funchost.durable")

WEBHOOK_PATH = "/runtime/webhooks/durabletask"
SYSTEM_KEY = "durabletask_extension"  # the extension's name ("DurableTask") lower-cased + "_extension"
DEFAULT_CONNECTION = "Storage"  # the Azure Storage provider's default connection name in the URLs
INSTANCE_PLACEHOLDER = "INSTANCEID"
MAX_BODY = 100 * 1024 * 1024

_services: dict[int, DurableService] = {}


def service_for(runtime: Runtime) -> DurableService | None:
    return _services.get(id(runtime))


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
        self.api = ManagementApi(self.client, hub.clock, links=self.management_links)
        self.dispatcher = Dispatcher(hub, functions, runtime.invoker, options)
        self.rpc = RpcListener(RpcApp(self.handle)) if options.local_rpc_enabled else None
        self._mounts: list[tuple[str, Any]] = []

    async def _start(self) -> None:
        await self.dispatcher.start()
        if self.rpc is not None:
            await self.rpc.start()
        self._mounts = [(WEBHOOK_PATH, self._webhook)]
        self._host("http.mounts", []).extend(self._mounts)
        log.info("Durable Functions task hub '%s'%s", self.hub.name,
                 f"; local RPC endpoint {self.rpc.base_url}" if self.rpc is not None else "")

    async def stop(self) -> None:
        mounts = self.runtime.services.get("http.mounts", [])
        for entry in self._mounts:
            if entry in mounts:
                mounts.remove(entry)
        if self.rpc is not None:
            await self.rpc.stop()
        await self.dispatcher.stop()
        _services.pop(id(self.runtime), None)
        await _close_sdk_session()

    # -- the host's HTTP surface (the one place that reads the runtime's shared services) ---------

    def _host(self, key: str, default: Any = None) -> Any:
        if key == "http.mounts":
            return self.runtime.services.setdefault(key, default)
        return self.runtime.services.get(key, default)

    def base_url(self) -> str:
        return str(self._host("http.base_url", "http://localhost:7071")).rstrip("/")

    def system_key(self) -> str | None:
        keys = self._host("http.keys")
        return keys.system_key(SYSTEM_KEY) if keys is not None else None

    def _authorized(self, scope: Scope) -> bool:
        keys = self._host("http.keys")
        if keys is None:  # no HTTP key store (in-process tests): nothing to check against
            return True
        keys.system_key(SYSTEM_KEY)  # created on first use, as the host does
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        presented = headers.get("x-functions-key") or next(
            (value for name, value in query if name.lower() == "code"), None)
        if not presented:
            return False
        match = keys.resolve(presented)
        level = getattr(match.level, "name", "")
        return level == "ADMIN" or (level == "SYSTEM" and match.key_name == SYSTEM_KEY)

    # -- URLs --------------------------------------------------------------------------------------

    def query_suffix(self, task_hub: str | None = None, connection: str | None = None) -> str:
        suffix = f"taskHub={task_hub or self.hub.name}&connection={connection or DEFAULT_CONNECTION}"
        key = self.system_key()
        return f"{suffix}&code={key}" if key else suffix

    def management_links(self, origin: str, instance_id: str) -> dict[str, str]:
        return management_urls(origin or self.base_url(), WEBHOOK_PATH, instance_id, self.query_suffix())

    def client_payload(self, task_hub: str | None, connection: str | None) -> dict[str, Any]:
        """The durableClient binding's value (DurableOrchestrationClientToString, legacy protocol)."""
        base = self.base_url() + WEBHOOK_PATH
        key = self.system_key()
        universal = f"code={key}" if key else ""
        create = base + "/orchestrators/{functionName}[/{instanceId}]"
        payload: dict[str, Any] = {
            "taskHubName": self.hub.name,
            "connectionName": connection,
            "creationUrls": {
                "createNewInstancePostUri": f"{create}?{universal}",
                "createAndWaitOnNewInstancePostUri":
                    f"{create}?timeout={{timeoutInSeconds}}&pollingInterval={{intervalInSeconds}}&{universal}",
            },
            "managementUrls": management_urls(self.base_url(), WEBHOOK_PATH, INSTANCE_PLACEHOLDER,
                                              self.query_suffix(task_hub, connection)),
            "baseUrl": base,
            "requiredQueryStringParameters": universal,
            "httpBaseUrl": None,
        }
        if self.rpc is not None:
            payload["rpcBaseUrl"] = self.rpc.base_url
        return payload

    # -- requests ----------------------------------------------------------------------------------

    async def _webhook(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await self.handle(scope, receive, send, WEBHOOK_PATH, True)

    async def handle(self, scope: Scope, receive: Receive, send: Send, base: str, public: bool) -> None:
        if public and not self._authorized(scope):
            await respond(send, 401)
            return
        try:
            body = await read_body(scope, receive, MAX_BODY)
        except ClientGone:
            return
        response = await self.api.handle(request_from_scope(dict(scope), body, base))
        await respond(send, response.status, response.body, response.headers)


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


async def start(runtime: Runtime) -> DurableService | None:
    functions = list(runtime.functions.values())
    if not uses_durable(functions):
        return None
    options = durable_options(runtime)
    hub_name = resolved_hub_name(options, lambda value: runtime.settings.resolve_tokens(value, where="hubName"))
    factory = getattr(runtime.storage, "durable", None)
    if factory is None:
        raise ConfigError(f"Durable Functions need the embedded task hub; --storage {runtime.storage.kind} has none "
                          "(run with --storage embedded)")
    for function in functions:
        for binding in function.bindings:
            hub = binding.get("taskHub")
            if binding.type == CLIENT_BINDING and hub and str(hub).lower() != hub_name.lower():
                log.warning("durable client '%s' names task hub '%s'; funchost serves the app's hub '%s' only",
                            function.name, hub, hub_name)
    disabled = [f.name for f in functions if runtime.settings.is_function_disabled(f.name)]
    hub = NotifyingHub(factory(hub_name), runtime.signals, runtime.clock)
    service = DurableService(runtime, options, hub, DurableFunctions.of(functions, disabled))
    _services[id(runtime)] = service
    try:
        await service._start()
    except BaseException:
        await service.stop()
        raise
    return service
