"""One HTTP/1.1 connection: uvicorn's httptools protocol plus the limits Kestrel enforces.

uvicorn parses requests and runs the ASGI cycle; this subclass adds what Kestrel does and uvicorn
does not (the numbers are in `limits.py`):

* the request line (414) as the parser reports it, the header count and header bytes (431)
  once the head is complete, and a bound on the bytes held for a head that is not complete
  (a header value is buffered by the parser until it ends), so a flood costs at most one
  socket read beyond the limits;
* the keep-alive timeout before a request's first byte, the request headers timeout (408) and
  the minimum request body data rate (408), checked by a once-a-second heartbeat as Kestrel's
  `Heartbeat` does, so the per-request path arms no timer;
* a cap on concurrent connections: beyond it a connection gets 503 and is closed;
* a malformed request that follows pipelined valid ones is answered after their responses, and
  a client that half-closes after its request still gets the response.

Rejections are written as Kestrel writes them: the status, an empty body, ``Connection: close``.
"""

from __future__ import annotations

import asyncio
import http
import logging
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from funchost.triggers.http.limits import HEARTBEAT_SECONDS, ServerLimits
from funchost.triggers.http.whole_response import adopt

log = logging.getLogger("funchost.http")

# What the connection is waiting for; the heartbeat applies the matching timeout.
IDLE = 0  # the first byte of a request (keep-alive timeout)
HEAD = 1  # the rest of the request line and headers (request headers timeout)
BODY = 2  # the rest of the body (minimum data rate)
APP = 3  # the application's response (no timeout: functionTimeout governs the function)

_VERSION_AND_CRLF = len(b" HTTP/1.1\r\n")


class Rejected(Exception):
    """A request refused before it reaches the application (raised inside parser callbacks)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def rejection_bytes(status: int, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    phrase = http.HTTPStatus(status).phrase.encode("ascii")
    head = [b"HTTP/1.1 %d %s\r\n" % (status, phrase)]
    head.extend(name + b": " + value + b"\r\n" for name, value in default_headers)
    head.append(b"content-length: 0\r\nconnection: close\r\n\r\n")
    return b"".join(head)


def header_bytes(headers: list[tuple[bytes, bytes]]) -> int:
    """The size of the header lines: name, ": ", value, CRLF."""
    return sum(len(name) + len(value) + 4 for name, value in headers)


class ConnectionBoard:
    """What the connections of one server share: the limits, the heartbeat's clock, the open
    connections (for the heartbeat, the connection cap and the graceful stop)."""

    def __init__(self, limits: ServerLimits, now: float) -> None:
        self.limits = limits
        self.now = now
        self.connection_limit = limits.connection_limit
        self.connections: set[GuardedHttpProtocol] = set()
        self.refused = 0  # connections refused since the count last fell below the limit

    def tick(self, now: float) -> None:
        # Like Kestrel, time lost to a starved process (a long gap between beats) is not held
        # against a client's data rate.
        elapsed = min(max(now - self.now, 0.0), HEARTBEAT_SECONDS)
        self.now = now
        for connection in list(self.connections):
            try:
                connection.tick(now, elapsed)
            except Exception:  # one connection's bug must not stop the heartbeat for all
                log.exception("HTTP connection heartbeat failed")

    def admit(self) -> bool:
        if len(self.connections) < self.connection_limit:
            if self.refused:
                log.warning("Accepting connections again (%d refused at the limit of %d).",
                            self.refused, self.connection_limit)
                self.refused = 0
            return True
        if not self.refused:
            log.warning("Connection refused: the maximum of %d concurrent connections is reached "
                        "(Kestrel__Limits__MaxConcurrentConnections).", self.connection_limit)
        self.refused += 1
        return False

    def abort_all(self) -> None:
        """End every remaining connection now (the graceful stop's grace period is over)."""
        for connection in list(self.connections):
            connection.abort()


class GuardedHttpProtocol(HttpToolsProtocol):
    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, board: ConnectionBoard) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.board = board
        limits = self.limits = board.limits
        self._max_head_bytes = limits.max_request_line_size + limits.max_request_headers_total_size + 2
        self._max_header_bytes = limits.max_request_headers_total_size
        self._max_header_count = limits.max_request_header_count
        # Below this target length no method can make the line too long (llhttp's longest is 11).
        self._long_target = limits.max_request_line_size - _VERSION_AND_CRLF - 1 - 16
        self._phase = IDLE
        self._deadline = board.now + limits.keep_alive_timeout
        self._read_size = 0  # bytes of the read being parsed
        self._head_bytes = 0  # bytes read while the current head was unfinished (after its first read)
        self._head_bound = 0  # at least the head's size: the reads it came in
        self._body_bytes = 0
        self._body_seconds = 0.0
        self._drained = 0  # body bytes read by the last look at a body being dropped
        self._refused = False
        self._rejection: Rejected | None = None  # answered once the earlier responses are sent
        self._deaf = False  # refused or rejected: what the client sends now is not read

    # --- connection ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self.board.admit():
            self._refused = self._deaf = True
            self.transport = transport
            transport.write(rejection_bytes(503, self.server_state.default_headers))
            transport.close()
            return
        super().connection_made(transport)
        self.board.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.board.connections.discard(self)
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deaf:
            return  # the connection is being closed: the rest is not read
        self._unset_keepalive_if_required()
        size = self._read_size = len(data)
        if self._phase == HEAD:
            self._head_bytes += size
            self._head_bound += size
        elif self._phase == BODY:
            self._body_bytes += size
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            self.reject(cause if isinstance(cause, Rejected) else Rejected(400, f"malformed request: {exc}"))
            return
        if self._phase == HEAD and self._head_bytes > self._max_head_bytes:
            self.reject(Rejected(431, "request headers too large"))

    def handle_websocket_upgrade(self) -> None:
        self.board.connections.discard(self)  # the connection now belongs to the WebSocket protocol
        super().handle_websocket_upgrade()

    def eof_received(self) -> bool | None:  # type: ignore[override]  # asyncio allows a bool
        """The client closed its sending side: requests it finished still get their responses,
        then the connection closes (uvicorn closes at once and drops them)."""
        if self._phase == APP and self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False  # the last request: close after its response
            return True  # keep the transport open for writing
        return None

    # --- parser callbacks -----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._phase = HEAD
        self._deadline = self.board.now + self.limits.request_headers_timeout
        self._head_bytes = 0
        self._head_bound = self._read_size

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > self._long_target:
            method = self.parser.get_method() or b""
            if len(method) + 1 + len(self.url) + _VERSION_AND_CRLF > self.limits.max_request_line_size:
                raise Rejected(414, "request line too long")

    def on_headers_complete(self) -> None:
        # Checked once per request rather than per header (the hot path); the headers of an
        # unfinished head are bounded by the bytes check in data_received meanwhile.
        headers = self.headers
        if len(headers) > self._max_header_count:
            raise Rejected(431, "too many request headers")
        if self._head_bound > self._max_header_bytes and header_bytes(headers) > self._max_header_bytes:
            raise Rejected(431, "request headers too large")
        super().on_headers_complete()
        adopt(self.cycle)
        self._phase = BODY
        self._body_bytes = 0
        self._body_seconds = 0.0

    def on_message_complete(self) -> None:
        self._phase = APP
        super().on_message_complete()

    def on_response_complete(self) -> None:
        # uvicorn's, without the keep-alive timer it arms after every response (and cancels at the
        # next request's first bytes): the heartbeat closes idle connections (`tick`).
        queued = bool(self.pipeline)
        self.server_state.total_requests += 1
        if not self.transport.is_closing():
            self.flow.resume_reading()
            if queued:
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)  # the next pipelined request
        if queued:
            return  # the next pipelined request is running now
        if self._rejection is not None:
            if not self.transport.is_closing():
                self._send_rejection(self._rejection)
        elif self._phase == APP:
            self._phase = IDLE
            self._deadline = self.board.now + self.limits.keep_alive_timeout
        elif self._phase == BODY:  # answered before its body ended: the rest is read and dropped
            self._deadline = self.board.now + self.limits.keep_alive_timeout
            self._drained = self._body_bytes

    # --- timeouts (heartbeat) -------------------------------------------------------------------

    def tick(self, now: float, elapsed: float) -> None:
        if self._deaf:
            return  # being closed
        phase = self._phase
        if phase == BODY:
            rate = self.limits.min_body_bytes_per_second
            # Not timed while the application is not reading: reads paused (its buffer is full),
            # or a client waiting for "100 Continue", which is sent when the application reads.
            if rate > 0 and not self.flow.read_paused and not self.cycle.waiting_for_100_continue:
                self._body_seconds += elapsed
                seconds = self._body_seconds
                if seconds > self.limits.min_body_grace_period and self._body_bytes / seconds < rate:
                    self.reject(Rejected(408, "request body data rate below the minimum"))
                    return
            if self.cycle.response_complete and now >= self._deadline:
                # The response is sent and the rest of the body is only being dropped: a client
                # that sends nothing of it for the keep-alive timeout is closed (as an idle one).
                if self._body_bytes == self._drained:
                    self.transport.close()
                    return
                self._drained = self._body_bytes
                self._deadline = now + self.limits.keep_alive_timeout
        elif phase == HEAD and now >= self._deadline:
            self.reject(Rejected(408, "request headers not received in time"))
        elif phase == IDLE and now >= self._deadline:
            self.transport.close()  # keep-alive timeout: no request was started, nothing to answer

    # --- rejections -----------------------------------------------------------------------------

    def reject(self, rejection: Rejected) -> None:
        """Answer `rejection` and close, after the responses still owed to earlier requests."""
        if self._rejection is not None or self.transport.is_closing():
            return
        log.debug("HTTP request rejected with %d: %s", rejection.status, rejection.reason)
        cycle = self.cycle
        if cycle is not None and cycle.more_body and not cycle.response_complete:
            # The latest request is the broken one (the error cut its body).
            if not self.pipeline:
                self._send_rejection(rejection)  # and it is the one running
                return
            self.pipeline.popleft()  # it was queued last, behind a running one: it never runs
        elif not self.pipeline and (cycle is None or cycle.response_complete):
            self._send_rejection(rejection)  # nothing is owed to earlier requests
            return
        self._rejection = rejection  # sent by on_response_complete once the others are answered
        self._deaf = True
        self.flow.pause_reading()

    def _send_rejection(self, rejection: Rejected) -> None:
        self._rejection = rejection
        self._deaf = True
        answered = False
        cycle = self.cycle if self._phase in (BODY, APP) else None  # the request being received
        if cycle is not None:
            answered = cycle.response_started  # e.g. a 404 sent before the body arrived
            if not cycle.response_complete:
                cycle.disconnected = True  # the application's receive() now returns http.disconnect
                cycle.message_event.set()
        if not answered:
            self.transport.write(rejection_bytes(rejection.status, self.server_state.default_headers))
        self.transport.close()

    def abort(self) -> None:
        """Close now, without waiting for the write buffer (graceful stop after the grace period)."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.abort()
