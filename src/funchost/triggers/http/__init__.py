"""HTTP trigger: routes, keys, admin API and the server that drives HTTP functions.

Unlike other triggers there is no listener per function: the host starts one `HttpServer`
(see `server.py`) that routes requests to functions and invokes them through `Runtime.invoker`.
The one exception is an `AsgiFunctionApp`'s function, whose listener shuts the ASGI app's
lifespan down at stop (`lifespan.py`).
"""

from __future__ import annotations

from typing import Any

from funchost.errors import AppLoadError, ConfigError, InvalidInput
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport
from funchost.triggers.http import lifespan
from funchost.triggers.http.options import HttpOptions
from funchost.triggers.http.routing import (
    full_template,
    function_methods,
    function_route,
    validate_route,
)


class HttpTriggerSupport:
    trigger_type = "httpTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        try:
            validate_route(function, runtime.functions.values())
        except ConfigError as exc:
            raise AppLoadError(str(exc), file=function.script_file, line=function.source_line,
                               function=function.name) from exc

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        return lifespan.listener_for(function, runtime)  # the HttpServer drives every HTTP function

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        options = runtime.options.extensions.get("http") or HttpOptions()
        base = runtime.services.base_url.rstrip("/")
        methods = function_methods(function)
        listed = ",".join(sorted(methods)) if methods else "*"
        return f"[{listed}] {base}/{full_template(options.route_prefix, function_route(function))}"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        raise InvalidInput("An HttpRequest is required: call the function's own route instead")


SUPPORT: TriggerSupport = HttpTriggerSupport()
