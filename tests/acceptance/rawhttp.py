"""A raw-socket HTTP/1.1 client for tests that send what well-behaved clients never would.

    response = exchange(port, b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    response.status, response.headers, response.body

Responses are parsed with httptools (uvicorn's own parser); interim 1xx responses are skipped.
`None` means the server closed the connection without answering.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

import httptools


@dataclass
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class ResponseReader:
    """Responses read from one socket, in order (pipelined responses may share a read)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.parser = httptools.HttpResponseParser(self)
        self.current: Response | None = None
        self.done: list[Response] = []
        self.head_done = False

    def on_message_begin(self) -> None:
        self.current = Response(0)
        self.head_done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        assert self.current is not None
        self.current.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        assert self.current is not None
        self.current.status = self.parser.get_status_code()
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        assert self.current is not None
        self.current.body += body

    def on_message_complete(self) -> None:
        if self.current is not None and self.current.status >= 200:  # 1xx are interim
            self.done.append(self.current)
        self.current = None

    def next(self, *, head_only: bool = False, timeout: float = 10.0) -> Response | None:
        """The next final response (headers only for a HEAD request), or None on close."""
        deadline = time.monotonic() + timeout
        while not self.done:
            current = self.current
            if head_only and self.head_done and current is not None and current.status >= 200:
                self.current = None
                return current
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                if self.head_done and current is not None and current.status >= 200:
                    self.current = None
                    return current  # a body delimited by the close
                return None
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                break
        return self.done.pop(0) if self.done else None


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_response(sock: socket.socket, *, head_only: bool = False, timeout: float = 10.0) -> Response | None:
    """One response from `sock` (for pipelined responses use one `ResponseReader` for all)."""
    return ResponseReader(sock).next(head_only=head_only, timeout=timeout)


def exchange(port: int, request: bytes, *, head_only: bool = False, half_close: bool = False,
             timeout: float = 10.0) -> Response | None:
    """Send `request` on a new connection and read one response."""
    with connect(port, timeout) as sock:
        try:
            sock.sendall(request)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server answered (and closed) before reading everything: read its answer
        return read_response(sock, head_only=head_only, timeout=timeout)


def request_bytes(method: str, target: str, headers: list[tuple[str, str]] | None = None,
                  body: bytes = b"", *, chunked: bool = False, chunk_size: int = 0) -> bytes:
    """A well-framed request: Content-Length (or chunked) matches the body; chunked bodies go in
    one chunk, or in chunks of `chunk_size` bytes."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in headers or ()]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
        size = chunk_size or len(body) or 1
        pieces = [body[i:i + size] for i in range(0, len(body), size)]
        framed = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
    else:
        if body or method not in ("GET", "HEAD"):
            lines.append(f"Content-Length: {len(body)}")
        framed = body
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + framed
