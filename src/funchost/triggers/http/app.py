"""The host's ASGI application: extension mounts, admin API, home page, function routes.

A raw ASGI callable (no framework) because it sits on every request's path. The pipeline follows
the host's middleware order: extension webhooks and admin first, then the home page, then the
function router (404 when nothing matches), authorization (401), the request queue (429), the
body size limit (413), the invocation, and the response from the function's http output.
"""

from __future__ import annotations

import logging
from typing import Any

from azure.functions.meta import Datum

from funchost.errors import StorageError
from funchost.invocation.contracts import InvocationRequest
from funchost.invocation.native import LazyMapping
from funchost.runtime.contracts import Runtime
from funchost.triggers.http import conversion
from funchost.triggers.http.admin import AdminApi
from funchost.triggers.http.asgi import (
    DEFAULT_BODY_LIMIT,
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body,
    respond,
)
from funchost.triggers.http.keys import AuthLevel, KeyMatch, KeyStore, authorized
from funchost.triggers.http.native_request import HttpRequestDatum
from funchost.triggers.http.options import HttpOptions
from funchost.triggers.http.routing import HttpRoute, RouteTable
from funchost.triggers.http.throttle import SCALE_OUT_HEADER, QueueFull, RequestQueue

log = logging.getLogger("funchost.http")
REASON = "This function was programmatically called via the host APIs."
HOME_PAGE = (
    b"<!DOCTYPE html><html><head><meta charset='utf-8'><title>funchost</title></head><body>"
    b"<h1>Your Functions app is up and running</h1>"
    b"<p>Served by funchost, a local host for Azure Functions Python apps.</p></body></html>"
)
_HTML = [(b"content-type", b"text/html; charset=utf-8")]
_ANONYMOUS = KeyMatch(AuthLevel.ANONYMOUS)
RETRY_AFTER = b"1"  # seconds: a storage server that went away is usually back within a few


def storage_unavailable(error: BaseException | None) -> bool:
    """The invocation failed because storage was unreachable or busy (ServerBusy, 503), however
    the binding or the retry policy wrapped that error: answer 503, not 500."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, StorageError) and error.status == 503:
            return True
        error = error.__cause__ or error.__context__
    return False


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1")


def http_output_name(function: Any) -> str | None:
    """The name of the function's http output binding (``$return`` by default)."""
    if function.return_binding is not None and function.return_binding.type == "http":
        return str(function.return_binding.name)
    for binding in function.output_bindings():
        if binding.type == "http":
            return str(binding.name)
    return None


class FunctionsApp:
    def __init__(self, runtime: Runtime, keys: KeyStore) -> None:
        self.runtime = runtime
        self.keys = keys
        options = runtime.options.extensions.get("http") or HttpOptions()
        self.options: HttpOptions = options
        self.table, self.route_errors = RouteTable.build(runtime.functions.values(), options.route_prefix)
        self.admin = AdminApi(runtime, keys)
        self.queue = RequestQueue.from_options(options)
        settings = runtime.settings
        limit = settings.get("FUNCTIONS_REQUEST_BODY_SIZE_LIMIT")
        self.body_limit = int(limit) if limit and limit.strip().isdigit() else DEFAULT_BODY_LIMIT
        self.homepage_disabled = _truthy(settings.get("AzureWebJobsDisableHomepage"))
        self.custom_headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                               for k, v in options.custom_headers.items()]
        self.outputs = {route.function.name: http_output_name(route.function) for route in self.table.routes}
        # App settings are fixed for the host's life (a change restarts the host on Azure).
        self.disabled = {route.function.name for route in self.table.routes
                         if settings.is_function_disabled(route.function.name)}

    # --- entry point ----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1000})
            return
        path: str = scope["path"]
        services = self.runtime.services
        if path.startswith(services.mount_prefixes):  # a path under a mount starts with its prefix
            for mounted in services.http_mounts:
                if mounted.matches(path):
                    await mounted.app(scope, receive, send)
                    return
        if self.custom_headers:
            send = self._with_custom_headers(send)
        lowered = path.lower()
        if lowered == "/admin" or lowered.startswith("/admin/"):
            await self.admin(scope, receive, send, self._caller(scope, None))
            return
        raw_path = scope.get("raw_path")
        found = self.table.match(scope["method"], raw_path.decode("latin-1") if raw_path else path)
        if found is None:
            # The home page only when no function took "/" (a catch-all route with routePrefix ""
            # does): the host's HomepageMiddleware answers after routing, if no function ran.
            if path == "/" and scope["method"] == "GET":
                await (respond(send, 204) if self.homepage_disabled else respond(send, 200, HOME_PAGE, _HTML))
            else:
                await respond(send, 404)
            return
        route, values = found
        await self._function_request(route, values, scope, receive, send)

    def _with_custom_headers(self, send: Send) -> Send:
        extra = self.custom_headers

        async def wrapped(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", ())) + extra
            await send(message)

        return wrapped

    def _caller(self, scope: Scope, function_name: str | None) -> KeyMatch:
        # The header wins even when empty; else the first `code` value (query names are
        # case-insensitive), as the host's AuthenticationLevelHandler reads them.
        presented = None
        for name, value in scope.get("headers", ()):
            if name == b"x-functions-key":
                presented = value.decode("latin-1")
                break
        if presented is None and scope.get("query_string"):
            query = conversion.query_values(scope["query_string"].decode("latin-1"))
            codes = next((values for name, values in query.items() if name.lower() == "code"), None)
            presented = codes[0] if codes else None
        if not presented:
            return _ANONYMOUS
        return self.keys.resolve(presented, function_name)

    # --- function requests --------------------------------------------------------------------

    async def _function_request(self, route: HttpRoute, values: dict[str, str], scope: Scope,
                                receive: Receive, send: Send) -> None:
        function = route.function
        disabled = function.name in self.disabled
        if route.auth_level != "anonymous" or disabled:
            caller = self._caller(scope, function.name)
            if disabled and caller.level is not AuthLevel.ADMIN:
                await respond(send, 404)
                return
            if not authorized(route.auth_level, caller):
                await respond(send, 401)
                return
        if self.queue is None:
            await self._execute(route, values, scope, receive, send)
            return
        try:
            async with self.queue.admit():
                await self._execute(route, values, scope, receive, send)
        except QueueFull:
            await respond(send, 429, b"", [SCALE_OUT_HEADER])

    async def _execute(self, route: HttpRoute, values: dict[str, str], scope: Scope,
                       receive: Receive, send: Send) -> None:
        try:
            body = await read_body(scope, receive, self.body_limit)
        except BodyTooLarge:
            await respond(send, 413)
            return
        except ClientGone:
            return
        request = self._incoming(scope, values, body)
        query = conversion.query_values(request.query_string) if request.query_string else {}
        # Binding data and metadata are built only if a binding expression or converter reads them.
        data = LazyMapping(lambda: conversion.binding_data(request, query))
        invocation = InvocationRequest(
            function=route.function,
            trigger_value=HttpRequestDatum(request, query),
            trigger_metadata=LazyMapping(lambda: conversion.trigger_metadata(data)),
            binding_data=data,
            reason=REASON,
            trace_parent=request.headers.get("traceparent"),
            trace_state=request.headers.get("tracestate"),
            details={"Method": request.method, "Path": request.raw_path},
        )
        result = await self.runtime.invoker.invoke(invocation)
        if not result.succeeded:
            if storage_unavailable(result.error):  # the server is away: the caller may retry
                await respond(send, 503, b"", [(b"retry-after", RETRY_AFTER)])
            else:
                await respond(send, 500)
            return
        output_name = self.outputs.get(route.function.name)
        datum: Datum | None = result.outputs.get(output_name) if output_name else None
        response = conversion.response_from_output(datum)
        await respond(send, response.status, response.body, response.asgi_headers())

    @staticmethod
    def _incoming(scope: Scope, values: dict[str, str], body: bytes) -> conversion.IncomingRequest:
        headers = conversion.join_headers(scope.get("headers", ()))
        raw_path = scope.get("raw_path")
        server = scope.get("server")
        host = headers.get("host") or (f"{server[0]}:{server[1]}" if server else "localhost")
        length = headers.get("content-length")
        declared = int(length) if length and length.strip().isdigit() else None
        return conversion.IncomingRequest(
            method=scope["method"],
            scheme=scope.get("scheme", "http"),
            host=host,
            raw_path=raw_path.decode("latin-1") if raw_path else scope["path"],
            query_string=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=body,
            content_length=declared,
            route_values=values,
        )


def create_asgi_app(runtime: Runtime, keys: KeyStore) -> FunctionsApp:
    return FunctionsApp(runtime, keys)
