"""`funchost start --reload`: restart the app in this process when its files change.

The port is bound once, here, and kept for the whole session: each host generation serves it
through a duplicate (`HostConfig.listen_fd`), so between two generations connections wait in
the socket's backlog instead of being refused. A save (`watch`) stops the running host
gracefully first (HTTP requests and messages in flight finish, as at Ctrl+C), then the
environment is put back as it was when the command started (local.settings.json is read
afresh), the app's modules are forgotten (`app_modules`), and a new host loads and starts on the
same port and data folder. An app that no longer loads prints its error, its port answers 503
(`unavailable`) and the next save tries again; the command itself does not exit.

Why in-process and not a supervisor process: docs/dev-loop.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path

from funchost import logs
from funchost.cli.start import StopRequests, _banner
from funchost.devloop import app_modules, watch
from funchost.devloop.unavailable import UnavailableResponder
from funchost.errors import FunchostError
from funchost.host import DEFAULT_PORT, Host, HostConfig
from funchost.settings.local_settings import load_local_settings


def run_reloading(config: HostConfig, output: str, started: float) -> int:
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is part of uvicorn[standard]
        runner = asyncio.Runner()
    with runner:
        return runner.run(ReloadingHost(config, output).serve(started))


def listen(bind: str, port: int) -> socket.socket:
    """The session's listening socket (SO_REUSEADDR, as asyncio and uvicorn bind)."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    try:
        sock = socket.create_server((bind, port), family=family, reuse_port=False, backlog=2048)
    except OSError as exc:
        raise FunchostError(f"cannot listen on {bind}:{port} ({exc.strerror}); is the port in use?") from exc
    sock.setblocking(False)
    return sock


class ReloadingHost:
    def __init__(self, config: HostConfig, output: str) -> None:
        self.config = config
        self.output = output
        self.app_dir = Path(config.app_dir).resolve()
        self.data_dir = Path(config.data_dir).resolve() if config.data_dir else self.app_dir / ".funchost"
        self.environment = dict(os.environ)  # what every generation starts from
        self.stop = asyncio.Event()
        self.host: Host | None = None
        self.unavailable: UnavailableResponder | None = None
        self.sock: socket.socket | None = None  # the session's listening socket

    async def serve(self, started: float) -> int:
        self._handle_signals()
        try:
            sock = listen(self.config.bind, self._port())
        except FunchostError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1
        config = replace(self.config, port=sock.getsockname()[1], listen_fd=sock.fileno())
        self.sock = sock
        saves: asyncio.Queue[list[tuple[str, Path]]] = asyncio.Queue()
        watcher = asyncio.get_running_loop().create_task(self._watch(saves))
        try:
            await self._generation(config, started)
            while not self.stop.is_set():
                found = await self._next_save(saves)
                if found is None:
                    break
                self._say(f"Detected changes in {watch.describe(found, self.app_dir)}. Reloading...",
                          "HostReloading", changes=[{"path": str(p), "change": c} for c, p in found])
                await self._end_generation()
                self._reset(found)
                await self._generation(config, time.perf_counter())
        finally:
            self.stop.set()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            self._say("Stopping host: in-flight work finishes, new work is refused...", "HostStopping")
            await self._end_generation()
            sock.close()
            self._say("Host stopped.", "HostStopped")
        return 0

    def _port(self) -> int:
        if self.config.port is not None:
            return self.config.port
        try:
            return load_local_settings(self.app_dir).local_http_port or DEFAULT_PORT
        except FunchostError:
            return DEFAULT_PORT  # the load reports the file's error; the port stays for the session

    async def _generation(self, config: HostConfig, started: float) -> None:
        """Load and start a host; on failure, say why and answer 503 until the next save."""
        logs.configure(self.output)
        host = Host(config)
        try:
            runtime = host.load()
            if not host.functions:
                raise FunchostError(f"no functions are defined in {runtime.app_dir / 'function_app.py'}")
            logs.configure(self.output, runtime.options.log_levels)
            await host.start()
        except FunchostError as exc:
            await host.stop()
            self._say(f"error: {exc}", "HostError", error=str(exc))
            self._say("Waiting for a change to reload (the port answers 503 meanwhile)...", "HostWaiting")
            assert self.sock is not None
            self.unavailable = UnavailableResponder(self.sock, str(exc))
            await self.unavailable.start()
            return
        self.host = host
        _banner(host, self.output, started)

    async def _end_generation(self) -> None:
        host, self.host = self.host, None
        if host is not None:
            await host.stop()  # graceful: in-flight invocations finish first
        responder, self.unavailable = self.unavailable, None
        if responder is not None:
            await responder.stop()

    def _reset(self, found: list[tuple[str, Path]]) -> None:
        """As a fresh process would find things: the environment, and no app module cached."""
        for name in [name for name in os.environ if name not in self.environment]:
            del os.environ[name]
        os.environ.update(self.environment)
        app_modules.forget(self.app_dir, [path for _, path in found])

    async def _watch(self, saves: asyncio.Queue[list[tuple[str, Path]]]) -> None:
        async for found in watch.changes(self.app_dir, self.data_dir, self.stop):
            saves.put_nowait(found)

    async def _next_save(self, saves: asyncio.Queue[list[tuple[str, Path]]]) -> list[tuple[str, Path]] | None:
        """The next group of changes (with any that queued up meanwhile), or None at stop."""
        get = asyncio.ensure_future(saves.get())
        stopped = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait({get, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not get.done():
            get.cancel()
            return None
        found = get.result()
        while not saves.empty():
            found = sorted({*found, *saves.get_nowait()}, key=lambda c: c[1])
        return found

    def _handle_signals(self) -> None:
        loop = asyncio.get_running_loop()
        requests = StopRequests()

        def on_signal() -> None:
            if requests.on_signal(time.monotonic()) == "force":
                self._say("Forced stop.", "HostForcedStop")
                raise SystemExit(130)
            self.stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)

    def _say(self, text: str, event: str, **fields: object) -> None:
        logs.print_line(text, output=self.output, event=event, **fields)
