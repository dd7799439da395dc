"""The host: load an app, start its listeners and HTTP server, stop gracefully.

Start order: storage and runtime, host services (Event Grid), trigger listeners, then the HTTP
server (so the admin status endpoint answering means everything is running). Stop: the HTTP
server, every listener and every service that delivers work stop together (new work is refused,
work in flight finishes with storage and endpoints up), for at most the stop timeout, after which
what still runs is cancelled (runtime/stopping.py); then services (the storage endpoints among
them) close in reverse order, then the executor and storage.

One broken function does not stop the app (docs/isolation.md): a function the host cannot set
up, or whose listener cannot start, is listed in error and the rest runs. Only app-level
failures (the app does not import, has no or two apps, the worker refuses its functions, a
host.json error) stop the start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funchost import __version__
from funchost.clock import Clock, SystemClock
from funchost.indexing.indexer import index_app
from funchost.indexing.spec import FunctionSpec
from funchost.invocation import retry as retry_rules
from funchost.invocation.executor import Executor
from funchost.listeners.function_listener import MAX_RETRY_INTERVAL, FunctionListener
from funchost.private_files import private_directory
from funchost.runtime import registry, stopping
from funchost.runtime.contracts import Draining, HostService, Runtime
from funchost.runtime.current import get_current, set_current
from funchost.runtime.faults import FaultInjector
from funchost.runtime.function_checks import function_error
from funchost.runtime.services import HostServices
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.exported import HOSTNAME, export, exported_settings, hostname
from funchost.settings.host_json import load_host_json
from funchost.settings.local_settings import load_local_settings
from funchost.settings.timespan import parse_timespan
from funchost.storage_endpoints.peer import open_app_storage

log = logging.getLogger("funchost.host")
startup_log = logging.getLogger("funchost.startup")

DEFAULT_PORT = 7071
LISTENER_RETRY_SETTING = "FUNCHOST_LISTENER_RETRY_MAX_INTERVAL"
HTTP_TRIGGER = "httpTrigger"  # its functions' listeners stop after the HTTP server has drained


@dataclass
class HostConfig:
    app_dir: Path
    data_dir: Path | None = None
    storage: str = "embedded"
    port: int | None = None  # None: local.settings.json Host.LocalHttpPort, else 7071
    bind: str = "127.0.0.1"
    serve_http: bool = True
    clock: Clock | None = None
    # Settings that win over the process environment (the test harness uses this).
    settings_override: Mapping[str, str] = field(default_factory=dict)
    apply_environment: bool = True  # export local.settings.json Values into os.environ
    faults: FaultInjector | None = None
    # An inherited listening socket to serve instead of binding `bind`:`port` (worker processes;
    # `--reload` keeps one across host restarts). The host serves a duplicate and never closes it.
    listen_fd: int | None = None


@dataclass(frozen=True)
class FunctionRow:
    """One line of the start-up listing."""

    name: str
    description: str
    errors: list[str]
    file: str | None = None
    line: int | None = None


class Host:
    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.app_dir = Path(config.app_dir).resolve()
        self.data_dir = Path(config.data_dir).resolve() if config.data_dir else self.app_dir / ".funchost"
        self.runtime: Runtime | None = None
        self.functions: list[FunctionSpec] = []  # every indexed function, in error or not
        self.listeners: dict[str, FunctionListener] = {}
        self.http_server: Any = None
        self.keys: Any = None
        self.port: int | None = None
        self.state = "Created"
        self._started_at = time.monotonic()
        self._services: list[HostService] = []
        self.stop_timeout = stopping.DEFAULT_SHUTDOWN_TIMEOUT  # ASPNETCORE_SHUTDOWNTIMEOUTSECONDS, read at load
        self.stopped_in_time = True  # False: the stop timeout passed and running work was cancelled

    # -- load ------------------------------------------------------------------------------------

    def load(self) -> Runtime:
        """Read configuration and index the app. Raises AppLoadError / ConfigError."""
        local = load_local_settings(self.app_dir)
        self.port = self.config.port if self.config.port is not None else local.local_http_port or DEFAULT_PORT
        exported = exported_settings(local, self.port, warn=True)  # port 0: hostname exported once bound
        if self.config.apply_environment:
            export(exported, os.environ)
        environ = dict(os.environ)
        environ.update(self.config.settings_override)
        settings = AppSettings(exported, environ=environ)
        options = load_host_json(self.app_dir, settings)
        self.stop_timeout = stopping.shutdown_timeout(settings)
        self.functions = index_app(self.app_dir, settings, options.retry)
        clock = self.config.clock or SystemClock()
        faults = self.config.faults or FaultInjector()
        signals = Signals()
        private_directory(self.data_dir)  # 0700: messages, blobs, jobs and keys are for this user only
        runtime = Runtime(
            app_dir=self.app_dir,
            data_dir=self.data_dir,
            clock=clock,
            settings=settings,
            options=options,
            storage=open_app_storage(self.config.storage, self.data_dir, settings, clock, faults=faults,
                                     signals=signals),
            signals=signals,
            faults=faults,
            functions={f.name: f for f in self.functions},
            host_id=host_id_for(self.app_dir, settings),
            services=HostServices(base_url=f"http://localhost:{self.port}", status=self.status),
        )
        self.runtime = runtime
        self._check_functions(runtime)
        return runtime

    def _check_functions(self, runtime: Runtime) -> None:
        """Leave out of `runtime.functions` every function the host cannot set up (in name
        order, which is the order HTTP routes are registered and checked for conflicts)."""
        for function in sorted(self.functions, key=lambda f: f.name.upper()):
            reason = function_error(function, runtime)
            if reason is not None:
                runtime.function_errors.add(function.name, reason)
                del runtime.functions[function.name]
                continue
            if function.retry is not None:
                warning = retry_rules.unsupported_trigger_warning(function.name, function.trigger_type)
                if warning:
                    log.warning(warning)

    # -- run -------------------------------------------------------------------------------------

    async def start(self) -> None:
        runtime = self.runtime or self.load()
        loop = asyncio.get_running_loop()
        runtime.signals.bind_loop(loop)
        runtime.services.loop = loop
        set_current(runtime)
        self.state = "Initialized"
        try:
            await self._start_services(runtime)
            for function in runtime.functions.values():
                if runtime.settings.is_function_disabled(function.name):
                    log.info("Function 'Functions.%s' is disabled (AzureWebJobs.%s.Disabled)",
                             function.name, function.name)
                    continue  # no listener: its trigger never fires (HTTP answers 404)
                await self._start_listener(function, runtime)
            if self.config.serve_http:
                await self._start_http(runtime)
        except BaseException:
            await self.stop()
            raise
        for name, reasons in runtime.function_errors.items():
            for reason in reasons:  # as ScriptHost.LogHostFunctionErrors after the start
                startup_log.error("The '%s' function is in error: %s", name, reason,
                                  extra={"event": "FunctionError", "function": name, "error": reason})
        self.state = "Running"

    async def _start_services(self, runtime: Runtime) -> None:
        for start in registry.host_service_starts():
            service = await start(runtime)
            if service is not None:
                self._services.append(service)

    async def _start_listener(self, function: FunctionSpec, runtime: Runtime) -> None:
        support = registry.require_trigger(function.trigger_type)
        listener = FunctionListener(function.name, lambda: support.create_listener(function, runtime),
                                    runtime.function_errors, runtime.clock,
                                    max_retry_interval=self._listener_retry_cap(runtime.settings))
        await listener.start()
        if listener.started and listener.listener is None:
            return  # nothing to listen to: the HTTP server or a host service drives it
        self.listeners[function.name] = listener

    @staticmethod
    def _listener_retry_cap(settings: AppSettings) -> float:
        value = settings.get(LISTENER_RETRY_SETTING)
        if not value:
            return MAX_RETRY_INTERVAL
        try:
            seconds = parse_timespan(value)
        except ValueError:
            log.warning("%s=%r is not a TimeSpan; using %s", LISTENER_RETRY_SETTING, value, "00:02:00")
            return MAX_RETRY_INTERVAL
        return max(0.1, min(seconds, MAX_RETRY_INTERVAL))

    async def _start_http(self, runtime: Runtime) -> None:
        from funchost.triggers.http.keys import KeyStore
        from funchost.triggers.http.server import HttpServer

        self.keys = KeyStore.load_or_create(self.data_dir, runtime.settings, [f.name for f in self.functions],
                                            runtime.storage.secrets())
        runtime.services.keys = self.keys
        self.http_server = HttpServer(runtime, self.keys, host=self.config.bind,
                                      port=self.port if self.port is not None else DEFAULT_PORT,
                                      listen_fd=self.config.listen_fd)
        await self.http_server.start()
        self.port = self.http_server.port
        runtime.services.base_url = f"http://localhost:{self.port}"
        runtime.services.provide(self.http_server)
        if self.config.apply_environment:
            export({HOSTNAME: hostname(self.port)}, os.environ)  # when the port was picked at bind

    async def stop(self) -> None:
        """Ordered and bounded (runtime/stopping.py): intake ends and in-flight work finishes,
        all together, with storage and endpoints up, for at most the stop timeout; what is still
        running then is cancelled. Then host services close, the executor, the storage."""
        if self.state in ("Stopping", "Stopped"):
            return
        self.state = "Stopping"
        runtime = self.runtime
        executor = runtime.invoker if runtime is not None and isinstance(runtime.invoker, Executor) else None
        if executor is not None:
            executor.end_retries()
        served = {name for name, function in (runtime.functions.items() if runtime else ())
                  if function.trigger_type == HTTP_TRIGGER}
        work: list[tuple[str, Any]] = [("HTTP server", self._stop_http(served))]
        work += [(f"listener of {name}", listener.stop()) for name, listener in self.listeners.items()
                 if name not in served]
        work += [(type(service).__name__, service.drain()) for service in self._services
                 if isinstance(service, Draining)]
        cancel = executor.cancel_running if executor is not None else _none
        self.stopped_in_time = await stopping.drain_within(work, self.stop_timeout, cancel)
        if self.http_server is not None and runtime is not None:
            runtime.services.withdraw(self.http_server)
        deadline = asyncio.get_running_loop().time() + stopping.CLOSE_TIMEOUT
        for service in reversed(self._services):
            await stopping.close_within(service.stop(), type(service).__name__, deadline)
        if runtime is not None:
            if executor is not None:
                await stopping.close_within(executor.stop(), "executor", deadline)
            await _quietly(runtime.storage.aclose(), "storage")
            if get_current() is runtime:
                set_current(None)
        self.state = "Stopped"

    async def _stop_http(self, served: set[str]) -> None:
        """The server drains first; then the listeners of HTTP functions (an ASGI app's lifespan
        shutdown), which must not run while requests are in flight."""
        if self.http_server is not None:
            await self.http_server.stop()
        for name in served & self.listeners.keys():
            await _quietly(self.listeners[name].stop(), f"listener of {name}")

    def status(self) -> dict[str, Any]:
        runtime = self.runtime
        return {
            "id": runtime.host_id if runtime else None,
            "state": self.state,
            "version": __version__,
            "processId": os.getpid(),
            "processUptime": int((time.monotonic() - self._started_at) * 1000),
            "functions": [f.name for f in self.functions],
            "storage": self.config.storage,
        }

    def describe_functions(self) -> list[FunctionRow]:
        """Every indexed function by name: its trigger's description, and its errors if any."""
        runtime = self.runtime
        assert runtime is not None
        rows = []
        for function in sorted(self.functions, key=lambda f: f.name.lower()):
            errors = runtime.function_errors.of(function.name)
            support = registry.trigger_support(function.trigger_type)
            if function.name in runtime.functions and support is not None:
                description = support.describe(function, runtime)
            else:
                description = function.trigger_type
            if runtime.settings.is_function_disabled(function.name):
                description += " (disabled)"
            rows.append(FunctionRow(function.name, description, errors, function.script_file, function.source_line))
        return rows


def _none() -> int:
    return 0


async def _quietly(awaitable: Any, what: str) -> None:
    try:
        await awaitable
    except Exception:
        log.exception("error while stopping the %s", what)


def host_id_for(app_dir: Path, settings: AppSettings) -> str:
    """`AzureFunctionsWebHost__hostid` if set, else derived from the app folder's name.

    Hosts sharing a data folder and an app therefore share an id, which is what makes timer
    singletons and lease ownership work across them (as instances of one app on Azure).
    """
    configured = settings.get("AzureFunctionsWebHost__hostid")
    if configured:
        return configured
    # The host ID rules (lowercase letters, digits and single dashes, no dash at either end, at most
    # 32 characters): names derived from it (the blob trigger's queue, lock blobs) must be valid.
    name = re.sub(r"[^a-z0-9]+", "-", Path(app_dir).name.lower()).strip("-")
    return name[:32].rstrip("-") or "app"
