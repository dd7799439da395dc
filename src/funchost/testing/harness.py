"""The in-process host for tests: ManualClock, HTTP without a socket, idle detection."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from funchost.clock import Clock, ManualClock
from funchost.errors import FunchostError
from funchost.host import Host, HostConfig
from funchost.invocation.contracts import InvocationResult
from funchost.runtime import activity, registry
from funchost.runtime.contracts import Runtime
from funchost.runtime.faults import FaultInjector
from funchost.settings.exported import exported_settings
from funchost.settings.local_settings import load_local_settings

RUNNING_GRACE = 0.2  # real seconds a running function may take before time moves on without it
HARNESS_PORT = 7071  # the port of the in-process client's base URL (no socket is opened)


def write_app(folder: Path, code: str, *, host_json: Mapping[str, Any] | None = None,
              settings: Mapping[str, str] | None = None, files: Mapping[str, str] | None = None) -> Path:
    """Write a function app (function_app.py, host.json, local.settings.json) into `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "function_app.py").write_text(textwrap.dedent(code), encoding="utf-8")
    (folder / "host.json").write_text(json.dumps(host_json or {"version": "2.0"}), encoding="utf-8")
    values = {"FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}
    values.update(settings or {})
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": values}),
                                                encoding="utf-8")
    for name, content in (files or {}).items():
        (folder / name).write_text(textwrap.dedent(content), encoding="utf-8")
    return folder


async def settle(timeout: float = 10.0) -> None:
    """Until no storage work is in flight (bounded real time).

    For tests that drive a listener or store directly on a ManualClock, without a harness:
    `await clock.advance(seconds, settle=settle)`.
    """
    started = time.monotonic()
    stable = 0
    while stable < 3 and time.monotonic() - started < timeout:
        for _ in range(5):
            await asyncio.sleep(0)
        if activity.in_flight() == 0:
            stable += 1
        else:
            stable = 0
            await asyncio.sleep(0.001)


class HostHarness:
    """A host running in this process and event loop, driven by a `ManualClock`.

    Pass `clock=SystemClock()` to run on real time instead (e.g. against Azurite, whose
    visibility timeouts the ManualClock cannot move); `advance()` then is not available.
    """

    def __init__(
        self,
        app_dir: Path | str,
        *,
        data_dir: Path | str | None = None,
        clock: Clock | None = None,
        settings: Mapping[str, str] | None = None,
        storage: str = "embedded",
        faults: FaultInjector | None = None,
    ) -> None:
        self.app_dir = Path(app_dir)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="funchost-test-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        self.clock: Clock = clock or ManualClock()
        self.settings = dict(settings or {})
        # The dashboard (and its invocation history) is `funchost start`'s; a test turns it on
        # with settings={"FUNCHOST_DASHBOARD": "true"}.
        self.settings.setdefault("FUNCHOST_DASHBOARD", "false")
        self.faults = faults or FaultInjector()
        self.host = Host(HostConfig(
            app_dir=self.app_dir, data_dir=self.data_dir, storage=storage, serve_http=False,
            clock=self.clock, settings_override=self.settings, apply_environment=False, faults=self.faults,
        ))
        self._saved_environ: dict[str, str | None] = {}
        self._graced: set[str] = set()
        self._client: httpx.AsyncClient | None = None
        self.queues: Any = None
        self.eventhubs: Any = None
        self.servicebus: Any = None
        self.blobs: Any = None
        self.durable: Any = None

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> HostHarness:
        self._export_environment()
        try:
            self.host.load()
            await self.host.start()
        except BaseException:
            self._restore_environment()
            raise
        self.queues = _optional_tool("funchost.testing.queues", "QueueTools", self.runtime)
        self.eventhubs = _optional_tool("funchost.testing.eventhubs", "EventHubTools", self.runtime)
        self.servicebus = _optional_tool("funchost.testing.servicebus", "ServiceBusTools", self.runtime)
        self.blobs = _optional_tool("funchost.testing.blobs", "BlobTools", self.runtime)
        self.durable = _optional_tool("funchost.testing.durable", "DurableTools", self.runtime)
        if self.durable is not None:
            self.durable.idle = self.wait_until_idle
        await self.wait_until_idle()
        return self

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await self.host.stop()
        self._restore_environment()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def __aenter__(self) -> HostHarness:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def runtime(self) -> Runtime:
        assert self.host.runtime is not None, "call start() first"
        return self.host.runtime

    # -- time and idleness -----------------------------------------------------------------------

    async def advance(self, seconds: float) -> None:
        """Move the clock forward, letting the host react at every deadline on the way."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs the harness's ManualClock; with a real clock, wait instead")
        await self.clock.advance(seconds, settle=self._settle)

    async def _settle(self) -> None:
        await self._quiesce(running_grace=RUNNING_GRACE, timeout=30.0)

    async def wait_until_idle(self, timeout: float = 30.0) -> None:
        """Until no storage work is in flight and no function is running (bounded, real time)."""
        self._graced.clear()
        if not await self._quiesce(running_grace=None, timeout=timeout):
            raise TimeoutError(f"host not idle after {timeout}s: {activity.in_flight()} operations in flight, "
                               f"functions running: {sorted(activity.running_functions())}")

    async def _quiesce(self, *, running_grace: float | None, timeout: float) -> bool:
        started = time.monotonic()
        stable = 0
        while True:
            for _ in range(5):
                await asyncio.sleep(0)
            busy = activity.in_flight()
            running = activity.running_functions() - self._graced
            if busy == 0 and not running:
                stable += 1
                if stable >= 3:
                    return True
                continue
            stable = 0
            elapsed = time.monotonic() - started
            if running_grace is not None and busy == 0 and elapsed > running_grace:
                self._graced |= running  # a function blocked on purpose: let time move around it
                continue
            if elapsed > timeout:
                return False
            await asyncio.sleep(0.001)

    # -- calling functions -----------------------------------------------------------------------

    async def http(self, method: str, path: str, *, key: str | None = None, **kwargs: Any) -> httpx.Response:
        """Call the host's HTTP surface in-process. `key="master"` sends the master key."""
        client = self._http_client()
        headers = dict(kwargs.pop("headers", None) or {})
        if key is not None:
            self._http_client()  # creates the key store when no server runs
            keys = self.runtime.services.keys
            assert keys is not None
            headers["x-functions-key"] = keys.master_key if key == "master" else key
        response = await client.request(method, path, headers=headers, **kwargs)
        return response

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is None:
            from funchost.triggers.http.keys import KeyStore
            from funchost.triggers.http.server import create_asgi_app

            runtime = self.runtime
            keys = runtime.services.keys
            if keys is None:
                keys = runtime.services.keys = KeyStore.load_or_create(self.data_dir, runtime.settings,
                                                                       list(runtime.functions),
                                                                       runtime.storage.secrets())
            app = create_asgi_app(runtime, keys)
            self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                             base_url=f"http://localhost:{HARNESS_PORT}")
        return self._client

    async def invoke(self, function_name: str, input: Any = None) -> InvocationResult:
        """Run a non-HTTP function now, as `POST /admin/functions/{name}` does, and wait for it."""
        runtime = self.runtime
        function = runtime.functions.get(function_name)
        if function is None:
            raise FunchostError(f"no function named {function_name!r}")
        support = registry.require_trigger(function.trigger_type)
        request = await support.admin_request(function, runtime, {"input": input})
        return await runtime.invoker.invoke(request)

    # -- environment -----------------------------------------------------------------------------

    def _export_environment(self) -> None:
        """Apps read settings from os.environ; set them for the test and restore afterwards."""
        values = exported_settings(load_local_settings(self.app_dir), HARNESS_PORT)
        values.update(self.settings)
        for name, value in values.items():
            if name in os.environ and name not in self.settings:
                continue  # the real environment wins, as in `funchost start`
            self._saved_environ.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _restore_environment(self) -> None:
        for name, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_environ.clear()


def _optional_tool(module_name: str, attribute: str, runtime: Runtime) -> Any:
    try:
        module = __import__(module_name, fromlist=[attribute])
    except ModuleNotFoundError:
        return None
    return getattr(module, attribute)(runtime)
