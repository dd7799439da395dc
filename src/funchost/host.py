"""The host: load an app, start its listeners and HTTP server, stop gracefully.

Start order: storage and runtime, host services (Event Grid), trigger listeners, then the HTTP
server (so the admin status endpoint answering means everything is running). Stop order is the
reverse: HTTP first (in-flight requests finish, new ones are refused), then listeners (in-flight
messages finish and are completed), then services, executor and storage.
"""

from __future__ import annotations

import asyncio
import importlib
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
from funchost.errors import AppLoadError, ConfigError, FunchostError
from funchost.indexing.indexer import index_app
from funchost.indexing.spec import FunctionSpec
from funchost.invocation import retry as retry_rules
from funchost.invocation.executor import Executor, thread_count_from
from funchost.runtime import registry
from funchost.runtime.contracts import Listener, Runtime
from funchost.runtime.current import get_current, set_current
from funchost.runtime.fault_storage import FaultInjectingStorage
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.host_json import load_host_json
from funchost.settings.local_settings import load_local_settings
from funchost.storage.backend import create_backend

log = logging.getLogger("funchost.host")

DEFAULT_PORT = 7071
# Host-wide services started with every host, whatever functions the app has.
HOST_SERVICES = ("funchost.eventgrid.service", "funchost.storage_endpoints.service")


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


class Host:
    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.app_dir = Path(config.app_dir).resolve()
        self.data_dir = Path(config.data_dir).resolve() if config.data_dir else self.app_dir / ".funchost"
        self.runtime: Runtime | None = None
        self.functions: list[FunctionSpec] = []
        self.listeners: dict[str, Listener] = {}
        self.http_server: Any = None
        self.keys: Any = None
        self.port: int | None = None
        self.state = "Created"
        self._started_at = time.monotonic()
        self._services: list[Any] = []
        self._executor: Executor | None = None

    # -- load ------------------------------------------------------------------------------------

    def load(self) -> Runtime:
        """Read configuration and index the app. Raises AppLoadError / ConfigError."""
        local = load_local_settings(self.app_dir)
        if self.config.apply_environment:
            for name, value in local.values.items():
                os.environ.setdefault(name, value)
        environ = dict(os.environ)
        environ.update(self.config.settings_override)
        settings = AppSettings(local.values, environ=environ)
        options = load_host_json(self.app_dir, settings)
        self.functions = index_app(self.app_dir, settings, options.retry)
        clock = self.config.clock or SystemClock()
        self._executor = Executor(thread_count=thread_count_from(settings.get("PYTHON_THREADPOOL_THREAD_COUNT")))
        faults = self.config.faults or FaultInjector()
        storage = FaultInjectingStorage(create_backend(self.config.storage, self.data_dir, settings, clock), faults)
        runtime = Runtime(
            app_dir=self.app_dir,
            data_dir=self.data_dir,
            clock=clock,
            settings=settings,
            options=options,
            storage=storage,
            invoker=self._executor,
            signals=Signals(),
            faults=faults,
            functions={f.name: f for f in self.functions},
            host_id=host_id_for(self.app_dir, settings),
        )
        self._executor.runtime = runtime
        if self.config.port is not None:
            self.port = self.config.port  # 0 = pick a free port
        else:
            self.port = local.local_http_port or DEFAULT_PORT
        runtime.services["http.base_url"] = f"http://localhost:{self.port}"
        runtime.services["host.status"] = self.status
        runtime.services["host"] = self
        self.runtime = runtime
        self._validate(runtime)
        return runtime

    def _validate(self, runtime: Runtime) -> None:
        for function in self.functions:
            try:
                trigger = registry.require_trigger(function.trigger_type)
                trigger.validate(function, runtime)
                for binding in function.bindings:
                    if not binding.is_trigger:
                        registry.require_binding(binding.type).validate(binding, function, runtime)
            except AppLoadError:
                raise
            except (ConfigError, FunchostError, ValueError) as exc:
                raise AppLoadError(str(exc), file=function.script_file, line=function.source_line,
                                   function=function.name) from exc
            if function.retry is not None:
                warning = retry_rules.unsupported_trigger_warning(function.name, function.trigger_type)
                if warning:
                    log.warning(warning)

    # -- run -------------------------------------------------------------------------------------

    async def start(self) -> None:
        runtime = self.runtime or self.load()
        runtime.signals.bind_loop(asyncio.get_running_loop())
        runtime.services["loop"] = asyncio.get_running_loop()
        set_current(runtime)
        self.state = "Initialized"
        try:
            await self._start_services(runtime)
            for function in self.functions:
                if runtime.settings.is_function_disabled(function.name):
                    log.info("Function 'Functions.%s' is disabled (AzureWebJobs.%s.Disabled)",
                             function.name, function.name)
                    continue  # no listener: its trigger never fires (HTTP answers 404)
                support = registry.require_trigger(function.trigger_type)
                listener = support.create_listener(function, runtime)
                if listener is not None:
                    await listener.start()
                    self.listeners[function.name] = listener
            if self.config.serve_http:
                await self._start_http(runtime)
        except BaseException:
            await self.stop()
            raise
        self.state = "Running"

    async def _start_services(self, runtime: Runtime) -> None:
        for module_name in HOST_SERVICES:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name is not None and module_name.startswith(exc.name):
                    continue
                raise
            service = await module.start(runtime)
            if service is not None:
                self._services.append(service)

    async def _start_http(self, runtime: Runtime) -> None:
        from funchost.triggers.http.keys import KeyStore
        from funchost.triggers.http.server import HttpServer

        self.keys = KeyStore.load_or_create(self.data_dir, runtime.settings, [f.name for f in self.functions])
        runtime.services["http.keys"] = self.keys
        self.http_server = HttpServer(runtime, self.keys, host=self.config.bind, port=self.port if self.port is not None else DEFAULT_PORT)
        await self.http_server.start()
        self.port = self.http_server.port
        runtime.services["http.base_url"] = f"http://localhost:{self.port}"

    async def stop(self) -> None:
        """Graceful: HTTP in-flight finish, listeners finish their work, then close storage."""
        if self.state in ("Stopping", "Stopped"):
            return
        self.state = "Stopping"
        if self.http_server is not None:
            await _quietly(self.http_server.stop(), "HTTP server")
        for name, listener in reversed(list(self.listeners.items())):
            await _quietly(listener.stop(), f"listener of {name}")
        for service in reversed(self._services):
            await _quietly(service.stop(), "host service")
        if self._executor is not None:
            await _quietly(self._executor.stop(), "executor")
        if self.runtime is not None:
            await _quietly(self.runtime.storage.aclose(), "storage")
            if get_current() is self.runtime:
                set_current(None)
        self.state = "Stopped"

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

    def describe_functions(self) -> list[tuple[str, str]]:
        runtime = self.runtime
        assert runtime is not None
        rows = []
        for function in sorted(self.functions, key=lambda f: f.name.lower()):
            support = registry.require_trigger(function.trigger_type)
            description = support.describe(function, runtime)
            if runtime.settings.is_function_disabled(function.name):
                description += " (disabled)"
            rows.append((function.name, description))
        return rows


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
    name = re.sub(r"[^a-z0-9-]", "-", Path(app_dir).name.lower()).strip("-") or "app"
    return name[:32]
