"""While the app does not load, its port answers 503 with the reason instead of hanging.

The listening socket stays open between reloads (connections wait in its backlog); with no app
to serve them this small responder answers every request ``503 Service Unavailable`` (what the
Functions host answers when it is not running), naming the error, until the next save loads.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

HEAD_LIMIT = 64 * 1024
READ_TIMEOUT = 5.0


class UnavailableResponder:
    def __init__(self, sock: socket.socket, reason: str) -> None:
        self.sock = sock
        self.body = (f"The function app failed to load and is waiting for a change: {reason}\n").encode()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._answer, sock=self.sock.dup())

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), READ_TIMEOUT)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         b"Connection: close\r\nContent-Length: " + str(len(self.body)).encode() + b"\r\n\r\n"
                         + self.body)
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
