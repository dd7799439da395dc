"""The admin API (``/admin/...``), callable with the master key only.

- ``GET  /admin/host/status``          host state (from the status provider the host sets)
- ``GET  /admin/host/ping``            200, anonymous, as on Azure
- ``GET  /admin/functions/{name}/status`` ``{"errors": [...]}`` for a function in error, ``{}``
  otherwise, 404 for an unknown function (FunctionsController.GetFunctionStatus)
- ``POST /admin/functions/{name}``     body ``{"input": ...}``: 202 and the function runs in the
  background (FunctionsController.Invoke); 400 without a JSON object body, 404 for an unknown
  function. For an HTTP function the host accepts the call and then fails to bind the string
  input ("An HttpRequest is required"): funchost does the same.
- ``GET  /admin/functions/{name}/keys`` the function's keys.
- ``/admin/warmup``                   any method, no key: runs the warmup function (if there is one)
  and answers 200, or 500 when it fails (docs in `funchost.triggers.warmup`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import time
from typing import Any

from funchost import __version__
from funchost.errors import FunchostError, InvalidInput
from funchost.indexing.spec import FunctionSpec
from funchost.runtime import registry
from funchost.runtime.contracts import Runtime
from funchost.triggers.http.asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body,
    respond,
    respond_json,
)
from funchost.triggers.http.keys import AuthLevel, KeyMatch, KeyStore
from funchost.triggers.warmup import is_warmup_function, warmup_request

log = logging.getLogger("funchost.http.admin")
ADMIN_BODY_LIMIT = 4 * 1024 * 1024
_STARTED = time.monotonic()


class AdminApi:
    def __init__(self, runtime: Runtime, keys: KeyStore) -> None:
        self.runtime = runtime
        self.keys = keys
        self.background: set[asyncio.Task[Any]] = set()

    def _function(self, name: str) -> FunctionSpec | None:
        lowered = name.lower()
        for function in self.runtime.functions.values():
            if function.name.lower() == lowered:
                return function
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send, caller: KeyMatch) -> None:
        method = scope["method"]
        # ASP.NET routes are case-insensitive (function names are looked up case-insensitively).
        parts = [p for p in scope["path"].lower().split("/") if p]
        if parts == ["admin", "host", "ping"] and method in ("GET", "POST"):
            await respond(send, 200)
            return
        if parts == ["admin", "warmup"]:
            await self.warmup(send)
            return
        if caller.level is not AuthLevel.ADMIN:
            await respond(send, 401)
            return
        if parts == ["admin", "host", "status"] and method == "GET":
            await respond_json(send, 200, await self.host_status())
        elif len(parts) == 3 and parts[1] == "functions" and method == "POST":
            await self.invoke(parts[2], scope, receive, send)
        elif len(parts) == 4 and parts[1] == "functions" and parts[3] == "keys" and method == "GET":
            await self.function_keys(parts[2], send)
        elif len(parts) == 4 and parts[1] == "functions" and parts[3] == "status" and method == "GET":
            await self.function_status(parts[2], send)
        else:
            await respond(send, 404)

    async def host_status(self) -> Any:
        provider = self.runtime.services.status
        if provider is not None:
            status = provider()
            return await status if inspect.isawaitable(status) else status
        return {
            "id": self.runtime.host_id,
            "state": "Running",
            "version": __version__,
            "processUptime": int((time.monotonic() - _STARTED) * 1000),
            "pid": os.getpid(),
        }

    async def function_status(self, name: str, send: Send) -> None:
        """Errors of a function in error (left out of `runtime.functions`, or whose listener has
        not started); a function without errors answers ``{}``, as the host's FunctionStatus."""
        errors = self.runtime.function_errors.of(name)
        if errors:
            await respond_json(send, 200, {"errors": errors})
        elif self._function(name) is None:
            await respond(send, 404)
        else:
            await respond_json(send, 200, {})

    async def function_keys(self, name: str, send: Send) -> None:
        function = self._function(name)
        if function is None:
            await respond(send, 404)
            return
        keys = self.keys.ensure_function(function.name)
        await respond_json(send, 200, {"keys": [{"name": k, "value": v} for k, v in keys.items()]})

    async def invoke(self, name: str, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            raw = await read_body(scope, receive, ADMIN_BODY_LIMIT)
        except BodyTooLarge:
            await respond(send, 413)
            return
        except ClientGone:
            return
        body = _invocation_body(raw)
        if body is None:
            await respond(send, 400)
            return
        function = self._function(name)
        if function is None:
            await respond(send, 404)
            return
        if function.is_http:
            log.error("Executed 'Functions.%s' (Failed): An HttpRequest is required "
                      "(an HTTP function cannot be run through the admin API)", function.name)
            await respond(send, 202)
            return
        support = registry.trigger_support(function.trigger_type)
        if support is None:
            await respond(send, 404)
            return
        try:
            request = await support.admin_request(function, self.runtime, body)
        except InvalidInput as exc:
            log.warning("admin invoke of '%s' rejected: %s", function.name, exc)
            await respond(send, 400)
            return
        except FunchostError as exc:
            log.error("admin invoke of '%s' failed: %s", function.name, exc)
            await respond(send, 500)
            return
        task = asyncio.ensure_future(self.runtime.invoker.invoke(request))
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        await respond(send, 202)

    async def warmup(self, send: Send) -> None:
        function = next((f for f in self.runtime.functions.values() if is_warmup_function(f)), None)
        if function is None:
            await respond(send, 200)  # the host's default warmup route
            return
        result = await self.runtime.invoker.invoke(warmup_request(function))
        await respond(send, 200 if result.succeeded else 500)

    async def drain(self) -> None:
        """Wait for admin-started invocations (graceful stop)."""
        if self.background:
            await asyncio.gather(*list(self.background), return_exceptions=True)


def _invocation_body(raw: bytes) -> dict[str, Any] | None:
    """``{"input": ...}`` as ASP.NET model binding reads it; None where it would be null (400)."""
    if not raw.strip():
        return None
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python can parse
        return None
    return parsed if isinstance(parsed, dict) else None
