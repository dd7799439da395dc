"""Where the management API answers and how clients are told about it.

The API is served twice, as the extension does: on the host's port under
``/runtime/webhooks/durabletask`` (the ``durabletask_extension`` system key or the master key)
and on the local RPC listener the Python SDK's client calls (``rpcBaseUrl``, no key). The
``durableClient`` binding's value and every instance's management URLs carry the host's base
URL and the system key, read from `HostServices` when they are needed (the HTTP surface and its
keys exist only once the host has bound its port).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from funchost.durable.client import DurableClient
from funchost.durable.http_api import ManagementApi
from funchost.durable.rpc import RPC_PATH, RpcApp, RpcListener
from funchost.durable.webhooks import management_urls, request_from_scope
from funchost.runtime.services import HostServices
from funchost.triggers.http.asgi import ClientGone, Receive, Scope, Send, read_body, respond
from funchost.triggers.http.keys import authorized, presented_key

WEBHOOK_PATH = "/runtime/webhooks/durabletask"
SYSTEM_KEY = "durabletask_extension"  # the extension's name ("DurableTask") lower-cased + "_extension"
DEFAULT_CONNECTION = "Storage"  # the Azure Storage provider's default connection name in the URLs
INSTANCE_PLACEHOLDER = "INSTANCEID"
MAX_BODY = 100 * 1024 * 1024


class DurableEndpoints:
    def __init__(self, services: HostServices, client: DurableClient, *, rpc_enabled: bool) -> None:
        self.services = services
        self.hub_name = client.hub.name
        self.api = ManagementApi(client, client.hub.clock, links=self.management_links)
        self.rpc = RpcListener(RpcApp(self._rpc)) if rpc_enabled else None

    async def start(self) -> None:
        if self.rpc is not None:
            await self.rpc.start()

    async def stop(self) -> None:
        if self.rpc is not None:
            await self.rpc.stop()

    # -- keys and URLs -----------------------------------------------------------------------------

    def base_url(self) -> str:
        return self.services.base_url.rstrip("/")

    def system_key(self) -> str | None:
        keys = self.services.keys
        return keys.system_key(SYSTEM_KEY) if keys is not None else None

    def query_suffix(self, task_hub: str | None = None, connection: str | None = None) -> str:
        suffix = f"taskHub={task_hub or self.hub_name}&connection={connection or DEFAULT_CONNECTION}"
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
            "taskHubName": self.hub_name,
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

    async def webhook(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The API on the host's port (mounted at `WEBHOOK_PATH`), behind the system key."""
        if scope["type"] != "http":
            return
        if not self._authorized(scope):
            await respond(send, 401)
            return
        await self._serve(scope, receive, send, WEBHOOK_PATH)

    async def _rpc(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._serve(scope, receive, send, RPC_PATH.rstrip("/"))

    def _authorized(self, scope: Scope) -> bool:
        keys = self.services.keys
        if keys is None:  # no HTTP key store (in-process tests): nothing to check against
            return True
        keys.system_key(SYSTEM_KEY)  # created on first use, as the host does
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        query: dict[str, str] = {}
        for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            query.setdefault(name, value)  # the first value of each name, as the host reads `code`
        return authorized("system", keys.resolve(presented_key(headers, query)), SYSTEM_KEY)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, base: str) -> None:
        try:
            body = await read_body(scope, receive, MAX_BODY)
        except ClientGone:
            return
        response = await self.api.handle(request_from_scope(dict(scope), body, base))
        await respond(send, response.status, response.body, response.headers)
