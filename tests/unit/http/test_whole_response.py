"""A response sent with `asgi.respond` leaves in one socket write, byte for byte what uvicorn
writes in two; unmarked (streamed) responses keep uvicorn's writes."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.unit.http.test_http_protocol import FakeTransport, server_with

from funchost.triggers.http.asgi import respond


class CountingTransport(FakeTransport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: Any) -> None:
        super().write(data)
        self.writes.append(bytes(data))


class Whole:
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await respond(send, 200, b"Hello, world!", [(b"content-type", b"text/plain")])


class Streamed:
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def connect(app: Any) -> tuple[Any, CountingTransport]:
    server = server_with(app)  # type: ignore[arg-type]
    protocol = server.protocol(config=server.config, server_state=server.state, app_state={})
    transport = CountingTransport()
    protocol.connection_made(transport)
    return protocol, transport


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def without_date(data: bytes) -> bytes:
    return b"\r\n".join(line for line in data.split(b"\r\n") if not line.startswith(b"date: "))


async def test_head_and_body_leave_in_one_write_with_uvicorns_bytes():
    protocol, transport = connect(Whole())
    protocol.data_received(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
    for _ in range(3):
        await settle()
    assert len(transport.writes) == 2  # one per response
    assert [without_date(write) for write in transport.writes] == [
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n\r\n"
        b"Hello, world!"] * 2
    assert not transport.closed


async def test_a_head_request_gets_the_head_alone():
    protocol, transport = connect(Whole())
    protocol.data_received(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n")
    await settle()
    assert [without_date(write) for write in transport.writes] == [
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n\r\n"]


async def test_connection_close_writes_the_response_before_closing():
    protocol, transport = connect(Whole())
    protocol.data_received(b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await settle()
    assert len(transport.writes) == 1 and transport.writes[0].endswith(b"\r\n\r\nHello, world!")
    assert b"connection: close\r\n" in transport.writes[0] and transport.closed


async def test_a_streamed_response_keeps_uvicorns_writes():
    protocol, transport = connect(Streamed())
    protocol.data_received(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
    await settle()
    assert len(transport.writes) == 3  # the head at once, then each chunk
    assert transport.writes[0].endswith(b"transfer-encoding: chunked\r\n\r\n")
    assert transport.writes[1:] == [b"1\r\na\r\n", b"0\r\n\r\n"]
