"""A response's head written together with its first body bytes: one socket write, not two.

uvicorn's request cycle writes the status line and headers as soon as the application sends
``http.response.start``, and the body when it sends ``http.response.body``: two writes, so two
`send` system calls per response, each about as costly as all of a bare ASGI hello's Python
(py-spy of a served hello: the two writes are a third of the process's samples). Kestrel sends
the headers with the first body write instead (or when the response completes). `HeldHead` is
the transport as one request's cycle sees it: it holds the head and writes it with the next
write of that cycle. A head with no body bytes after it (HEAD, 204, a stream that waits for its
first chunk) is written at the end of the event loop's turn, and before the cycle closes the
connection, so nothing waits longer than one turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

_SEPARATE = 64 * 1024  # a body at least this large is written after the head, not copied onto it


class HeldHead:
    __slots__ = ("_cycle", "_head", "_loop", "_state", "transport")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._cycle = cycle
        self._loop = loop
        self._head: bytes | None = None
        self._state = 0  # 0: no response written yet; 1: its head is held; 2: written through

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._state = 2
            if len(data) < _SEPARATE:
                self.transport.write(head + data)
            else:
                self.transport.write(head)
                self.transport.write(data)
        elif self._state == 0 and self._cycle.response_started and not self._cycle.response_complete:
            self._head = data  # the head: uvicorn writes it first, when the response starts
            self._state = 1
            self._loop.call_soon(self.flush)
        else:
            self.transport.write(data)  # "100 Continue" (before the response), or later body bytes

    def flush(self) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._state = 2
            if not self.transport.is_closing():
                self.transport.write(head)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def hold_heads(cycle: RequestResponseCycle, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
    """Give a new request's cycle the holding transport (before its application runs)."""
    cycle.transport = HeldHead(transport, cycle, loop)  # type: ignore[assignment]
