"""One socket write for a response whose head and whole body are sent back to back.

uvicorn writes the status line and headers when `http.response.start` arrives and the body when
`http.response.body` does: two writes, two system calls per response. A sender that knows the
body follows at once (the function router, `asgi.respond`) hands both to `send_whole` when the
server is uvicorn's cycle (`WholeResponseCycle`): the head and body are checked and framed as
uvicorn's two sends would, and written together, with no ASGI messages built or awaited. The
bytes on the wire, the cycle's state and the errors are the same; only their grouping into
writes changes (`tests/unit/http/test_whole_response.py` compares them). Where that path does not
apply (the transport asked the writer to pause, an access log, a response already started), the
start message is marked `BODY_FOLLOWS` instead and its head is held until the body comes.
Unmarked messages (streamed responses, other ASGI applications) are sent exactly as uvicorn sends
them.

The request's side is the same: a reader that wants the whole body (`asgi.read_body`) takes it
with `whole_body` once it has all arrived, as `receive` would return it in one message.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    RequestResponseCycle,
)

from funchost.triggers.http.asgi import BODY_FOLLOWS

_NO_CHUNKS = (204, 304)  # uvicorn frames no body for these when no length is given
_LAST_CHUNK = b"0\r\n\r\n"


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

    def whole_body(self) -> bytes | None:
        """The request's body when all of it has arrived, taken as uvicorn's `receive` would take
        it in one `http.request` message without waiting; None where `receive` has to run (more
        body to come, a client waiting for "100 Continue", a disconnect, a response already sent)."""
        if self.more_body or self.waiting_for_100_continue or self.disconnected or self.response_complete:
            return None
        self.flow.resume_reading()
        self.message_event.clear()
        body = bytes(self.body)
        self.body = bytearray()
        return body

    def send_whole(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
        """Send a whole response now, as `http.response.start` then `http.response.body` (no
        `more_body`) through uvicorn's `send` would; False (nothing done) where that `send` has
        to run instead: the writer must wait for the transport to drain, the access log is on,
        or the response has started."""
        if self.response_started or self.access_log or self.flow.write_paused:
            return False
        if self.disconnected:
            return True  # uvicorn's send drops it too
        # The start, as uvicorn's send checks and frames it.
        self.response_started = True
        self.waiting_for_100_continue = False
        content = [STATUS_LINE[status]]
        has_connection_close = False
        for name, value in (*self.default_headers, *headers):
            if HEADER_RE.search(name):
                raise RuntimeError("Invalid HTTP header name.")
            if HEADER_VALUE_RE.search(value):
                raise RuntimeError("Invalid HTTP header value.")
            name = name.lower()
            if name == b"content-length" and self.chunked_encoding is None:
                self.expected_content_length = int(value.decode())
                self.chunked_encoding = False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_content_length = 0
                self.chunked_encoding = True
            elif name == b"connection":
                if b"close" in [token.lower().strip() for token in value.split(b",")]:
                    self.keep_alive = False
                    has_connection_close = True
            content += (name, b": ", value, b"\r\n")
        if not self.keep_alive and not has_connection_close:
            content.append(b"connection: close\r\n")
        head_request = self.scope["method"] == "HEAD"
        if self.chunked_encoding is None and not head_request and status not in _NO_CHUNKS:
            self.chunked_encoding = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        # The body, as uvicorn's send of the last body message frames it.
        if head_request:
            self.expected_content_length = 0
        elif self.chunked_encoding:
            if body:
                content += (b"%x\r\n" % len(body), body, b"\r\n")
            content.append(_LAST_CHUNK)
        elif len(body) > self.expected_content_length:
            self.transport.write(b"".join(content))  # uvicorn wrote the head before it refused the body
            raise RuntimeError("Response content longer than Content-Length")
        else:
            self.expected_content_length -= len(body)
            content.append(body)
        self.transport.write(b"".join(content))
        if self.expected_content_length != 0:
            raise RuntimeError("Response content shorter than Content-Length")
        self.response_complete = True
        self.message_event.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()
        return True

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
