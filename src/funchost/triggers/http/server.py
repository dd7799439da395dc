"""The HTTP server: the host's ASGI app on uvicorn, inside the host's running event loop.

`start()` returns once the socket listens; `stop()` is graceful: the listening socket closes
(new connections are refused), idle keep-alive connections close, requests in flight finish and
their responses are sent, admin-started invocations complete, then it returns.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import uvicorn

from funchost.errors import ConfigError
from funchost.runtime.contracts import Runtime
from funchost.triggers.http.app import FunctionsApp, create_asgi_app
from funchost.triggers.http.keys import KeyStore

__all__ = ["HttpServer", "create_asgi_app"]
log = logging.getLogger("funchost.http")


class HttpServer:
    def __init__(self, runtime: Runtime, keys: KeyStore, host: str = "127.0.0.1", port: int = 7071) -> None:
        self.runtime = runtime
        self.keys = keys
        self.host = host
        self.port = port
        self.app: FunctionsApp = create_asgi_app(runtime, keys)
        self._server: uvicorn.Server | None = None
        self._main: asyncio.Task[Any] | None = None

    @property
    def base_url(self) -> str:
        host = "localhost" if self.host in ("127.0.0.1", "0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        config = uvicorn.Config(
            self.app, host=self.host, port=self.port, lifespan="off", log_level="warning",
            log_config=None,  # funchost configures logging; dictConfig would close its handlers
            access_log=False, server_header=False, date_header=True,
        )
        if not config.loaded:
            config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup()
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
        await server.shutdown()
        await self.app.admin.drain()
