"""The local RPC listener the Python SDK's client talks to (LocalHttpListener).

``http://127.0.0.1:17071/durabletask/`` as on Azure; when that port is taken (a second host on
the machine), a random port between 30000 and 31000, as the extension tries. It serves the same
management API as the public webhook, without a key: only this machine can reach it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
from typing import Any

import uvicorn

from funchost.triggers.http.asgi import ASGIApp, Receive, Scope, Send

log = logging.getLogger("funchost.durable")

DEFAULT_PORT = 17071
MIN_PORT, MAX_PORT = 30000, 31000
ATTEMPTS = 8
RPC_PATH = "/durabletask/"


class RpcListener:
    def __init__(self, app: Any, host: str = "127.0.0.1") -> None:
        self.app = app
        self.host = host
        self.port: int | None = None
        self._server: uvicorn.Server | None = None
        self._main: asyncio.Task[Any] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{RPC_PATH}"

    async def start(self, first_port: int = DEFAULT_PORT) -> None:
        tried: set[int] = set()
        port = first_port
        for _ in range(ATTEMPTS):
            tried.add(port)
            if await self._listen(port):
                return
            log.info("durable: failed to open local port %d for the RPC endpoint; trying another", port)
            port = random.choice([p for p in range(MIN_PORT, MAX_PORT) if p not in tried])
        if not await self._listen(0):
            raise OSError("could not open a local port for the Durable Functions RPC endpoint")

    async def _listen(self, port: int) -> bool:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((self.host, port))
        except OSError:
            sock.close()
            return False
        config = uvicorn.Config(self.app, host=self.host, port=port, lifespan="off", log_level="warning",
                                log_config=None, access_log=False, server_header=False)
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup(sockets=[sock])
        except SystemExit:
            sock.close()
            return False
        self._server = server
        self.port = sock.getsockname()[1]
        self._main = asyncio.get_running_loop().create_task(server.main_loop())
        return True

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.should_exit = True
        if self._main is not None:
            await self._main
        await server.shutdown()


class RpcApp:
    """ASGI adapter: HTTP requests go to the management API (which answers 404 outside it)."""

    def __init__(self, handler: ASGIApp) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await self.handler(scope, receive, send)
