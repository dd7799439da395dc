"""The ASGI lifespan of an `AsgiFunctionApp` (FastAPI, Starlette): shut it down at host stop.

The library starts the lifespan on the app's first request (`AsgiMiddleware.notify_startup`
creates a task on the event loop that runs the function, the host's loop here) and notifies
the shutdown only from `AsgiFunctionApp.__del__`, with `asyncio.run()` on a fresh loop that
cannot reach that task. Left alone, the app's shutdown handlers never run and the interpreter's
exit cancels the lifespan task (a `CancelledError` traceback, "coroutine ... was never
awaited"). So the HTTP trigger gives the app's function a listener whose stop, which the host
calls after the HTTP server has drained, awaits `notify_shutdown()` on the host's loop and
marks the app stopped so `__del__` has nothing left to do.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import azure.functions as func

from funchost.indexing.spec import FunctionSpec
from funchost.runtime.contracts import Runtime

log = logging.getLogger("funchost.host")

SHUTDOWN_TIMEOUT = 30.0  # seconds the app's shutdown handlers get before the host stops without them


def asgi_app_of(function: FunctionSpec) -> func.AsgiFunctionApp | None:
    """The `AsgiFunctionApp` whose generated function this is (its closure holds the app)."""
    try:
        owner = inspect.getclosurevars(function.func).nonlocals.get("self")
    except TypeError:  # not a Python function (a callable object)
        return None
    return owner if isinstance(owner, func.AsgiFunctionApp) else None


class AsgiLifespanListener:
    """Nothing to start (the library starts the lifespan on the first request); stop shuts it down."""

    def __init__(self, app: func.AsgiFunctionApp, runtime: Runtime, function_name: str) -> None:
        self.app = app
        self.runtime = runtime
        self.function_name = function_name

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        app: Any = self.app
        if not app.startup_task_done:
            return  # never started (no request came), as on Azure: no shutdown either
        app.startup_task_done = False  # `__del__` would notify the shutdown again
        deadline = self.runtime.clock.timeout(SHUTDOWN_TIMEOUT)
        try:
            async with deadline:
                await app.middleware.notify_shutdown()
        except TimeoutError:
            log.warning("The ASGI app of function '%s' did not finish its shutdown within %gs; stopping without it",
                        self.function_name, SHUTDOWN_TIMEOUT)


def listener_for(function: FunctionSpec, runtime: Runtime) -> AsgiLifespanListener | None:
    app = asgi_app_of(function)
    return AsgiLifespanListener(app, runtime, function.name) if app is not None else None
