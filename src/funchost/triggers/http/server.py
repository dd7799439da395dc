"""The HTTP server: the host's ASGI app on uvicorn, inside the host's running event loop.

`start()` returns once the socket listens; `stop()` is graceful: the listening socket closes
(new connections are refused), idle keep-alive connections close, requests in flight finish and
their responses are sent within the shutdown timeout (connections still open after it are
closed), admin-started invocations complete, then it returns. Connections carry Kestrel's
limits and timeouts (`protocol.py`), checked by uvicorn's once-a-second tick.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
from typing import Any

import uvicorn

from funchost.errors import ConfigError
from funchost.runtime.contracts import Runtime
from funchost.triggers.http.app import FunctionsApp, create_asgi_app
from funchost.triggers.http.keys import KeyStore
from funchost.triggers.http.limits import ServerLimits
from funchost.triggers.http.protocol import ConnectionBoard, GuardedHttpProtocol

__all__ = ["HttpServer", "create_asgi_app"]
log = logging.getLogger("funchost.http")
STOP_POLL_SECONDS = 0.05


class _Server(uvicorn.Server):
    """uvicorn's server whose once-a-second tick (the Date header refresh) is also the
    connections' heartbeat."""

    def __init__(self, config: uvicorn.Config, board: ConnectionBoard) -> None:
        super().__init__(config)
        self.board = board

    async def on_tick(self, counter: int) -> bool:
        if counter % 10 == 0:
            self.board.tick(asyncio.get_running_loop().time())
        return await super().on_tick(counter)


class HttpServer:
    def __init__(self, runtime: Runtime, keys: KeyStore, host: str = "127.0.0.1", port: int = 7071,
                 listen_fd: int | None = None) -> None:
        """`listen_fd`: a socket already listening (shared by worker processes, kept by `--reload`),
        served through a duplicate: closing the server leaves it open, so connections wait in its
        backlog for the next server."""
        self.runtime = runtime
        self.listen_fd = listen_fd
        self.keys = keys
        self.host = host
        self.port = port
        self.app: FunctionsApp = create_asgi_app(runtime, keys)
        self.limits = ServerLimits.from_settings(runtime.settings)
        self.board: ConnectionBoard | None = None
        self._server: uvicorn.Server | None = None
        self._main: asyncio.Task[Any] | None = None

    @property
    def stopping(self) -> bool:
        """`stop()` has begun: long-lived responses (the dashboard's event streams) end now."""
        return self._server is None and self._main is not None

    @property
    def base_url(self) -> str:
        host = "localhost" if self.host in ("127.0.0.1", "0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        board = self.board = ConnectionBoard(self.limits, asyncio.get_running_loop().time())
        config = uvicorn.Config(
            self.app, host=self.host, port=self.port, lifespan="off", log_level="warning",
            log_config=None,  # funchost configures logging; dictConfig would close its handlers
            access_log=False, server_header=False, date_header=True,
            http=functools.partial(GuardedHttpProtocol, board=board),  # type: ignore[arg-type]
            timeout_keep_alive=self.limits.keep_alive_timeout,  # type: ignore[arg-type]
        )
        if not config.loaded:
            config.load()
        server = _Server(config, board)
        server.lifespan = config.lifespan_class(config)
        sockets = None
        if self.listen_fd is not None:
            sockets = [socket.socket(fileno=os.dup(self.listen_fd))]
        try:
            await server.startup(sockets=sockets)
        except SystemExit as exc:  # uvicorn exits the process when it cannot bind
            raise ConfigError(f"cannot listen on {self.host}:{self.port} (address in use?)") from exc
        if server.should_exit:
            raise ConfigError(f"cannot listen on {self.host}:{self.port}")
        self._server = server
        for listener in server.servers:
            for sock in listener.sockets:
                self.port = sock.getsockname()[1]
                break
        self._main = asyncio.get_running_loop().create_task(server.main_loop())

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.should_exit = True
        if self._main is not None:
            await self._main
        await self._shutdown(server)
        await self.app.admin.drain()

    async def _shutdown(self, server: uvicorn.Server) -> None:
        """uvicorn's shutdown, bounded: connections get the shutdown timeout to finish, then they
        are closed (an application still reading a body gets http.disconnect)."""
        for listener in server.servers:
            listener.close()
        board = self.board
        assert board is not None
        for connection in list(board.connections):
            connection.shutdown()  # idle ones close now; busy ones close after their response
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.shutdown_timeout
        while board.connections and loop.time() < deadline:
            await asyncio.sleep(STOP_POLL_SECONDS)
        if board.connections:
            log.warning("Closing %d HTTP connection(s) still open after the shutdown timeout of %gs.",
                        len(board.connections), self.limits.shutdown_timeout)
            board.abort_all()
        tasks = server.server_state.tasks
        while tasks:  # applications finish once they see the disconnect (functions: functionTimeout)
            await asyncio.wait(list(tasks))
