"""One socket write for a response whose head and whole body are sent back to back.

uvicorn writes the status line and headers when `http.response.start` arrives and the body when
`http.response.body` does: two writes, two system calls per response. A sender that knows the
body follows at once (the function router, `asgi.respond`) marks the start message with
`BODY_FOLLOWS`; the head is then held and written together with the body. The bytes on the wire
are the same; only their grouping into writes changes. Unmarked messages (streamed responses,
other ASGI applications) are sent exactly as uvicorn sends them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from funchost.triggers.http.asgi import BODY_FOLLOWS


class _HeadHolder:
    """Stands in for the transport while uvicorn builds the head: keeps what it writes."""

    __slots__ = ("head",)

    def __init__(self) -> None:
        self.head = b""

    def write(self, data: bytes) -> None:
        self.head += data


class _Prefixed:
    """Stands in for the transport while uvicorn sends the body: the held head goes first."""

    __slots__ = ("head", "transport")

    def __init__(self, transport: asyncio.Transport, head: bytes) -> None:
        self.transport = transport
        self.head = head

    def write(self, data: bytes) -> None:
        head = self.head
        if head:
            self.head = b""
            data = head + data
        self.transport.write(data)

    def flush(self) -> None:
        if self.head:
            self.write(b"")

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


class WholeResponseCycle(RequestResponseCycle):
    """uvicorn's request/response cycle, holding a marked head until the body (no new state
    beyond `_held_head`, so a cycle's class can be switched after uvicorn creates it)."""

    _held_head: bytes | None = None

    async def send(self, message: Any) -> None:
        held = self._held_head
        if held is None:
            if message.get(BODY_FOLLOWS) is not True or message["type"] != "http.response.start":
                await super().send(message)
                return
            transport = self.transport
            holder = self.transport = _HeadHolder()  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = transport
            if holder.head:
                self._held_head = holder.head
            return
        self._held_head = None
        transport = self.transport
        prefixed = self.transport = _Prefixed(transport, held)  # type: ignore[assignment]
        try:
            await super().send(message)
        finally:
            self.transport = transport
            if not transport.is_closing():
                prefixed.flush()  # nothing written after the head (a HEAD request, an error)


def adopt(cycle: RequestResponseCycle | None) -> None:
    """Give a cycle uvicorn just created the held-head behaviour."""
    if type(cycle) is RequestResponseCycle:
        cycle.__class__ = WholeResponseCycle
