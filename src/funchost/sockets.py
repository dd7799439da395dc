"""The listening sockets of the endpoints funchost serves beside its HTTP port (storage, AMQP)."""

from __future__ import annotations

import socket


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A non-blocking TCP socket bound and listening on host:port (OSError when it cannot be).

    IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on accepted sockets of that protocol,
    and without it every response waits for the peer's delayed ACK (~40 ms)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
