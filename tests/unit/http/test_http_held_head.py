"""A response's head goes out with its first body bytes (one write), and never waits longer
than the loop's turn: HEAD, a stream waiting for its first chunk, 100 Continue, a close."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.unit.http.test_http_protocol import App, FakeTransport, server_with


class Writes(FakeTransport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: Any) -> None:
        super().write(data)
        self.writes.append(bytes(data))


class Scripted(App):
    """Sends what `script(send, receive)` sends."""

    def __init__(self, script: Any) -> None:
        super().__init__()
        self.script = script

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.script(scope, receive, send)


@pytest.fixture
def app() -> App:
    return App()


def connect(app: App) -> tuple[Any, Writes]:
    server = server_with(app)
    protocol = server.protocol(config=server.config, server_state=server.state, app_state={})
    transport = Writes()
    protocol.connection_made(transport)
    return protocol, transport


async def turns(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_a_response_is_one_write_and_keep_alive_requests_each_one(app: App) -> None:
    protocol, transport = connect(app)
    for path in (b"/one", b"/two"):
        protocol.data_received(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        await turns()
    assert len(transport.writes) == 2
    assert all(w.startswith(b"HTTP/1.1 200 OK\r\n") for w in transport.writes)
    assert transport.writes[0].endswith(b"\r\n\r\n/one") and transport.writes[1].endswith(b"\r\n\r\n/two")


async def test_pipelined_requests_answer_in_order(app: App) -> None:
    protocol, transport = connect(app)
    protocol.data_received(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
    await turns(10)
    assert [w.rsplit(b"\r\n\r\n", 1)[1] for w in transport.writes] == [b"/a", b"/b"]


async def test_a_head_without_body_bytes_is_written_at_the_end_of_the_turn() -> None:
    chunk = asyncio.Event()

    async def stream(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await chunk.wait()
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    protocol, transport = connect(Scripted(stream))
    protocol.data_received(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
    await turns()
    assert len(transport.writes) == 1 and transport.writes[0].endswith(b"transfer-encoding: chunked\r\n\r\n")
    chunk.set()
    await turns()
    assert transport.writes[1:] == [b"5\r\nfirst\r\n", b"0\r\n\r\n"]


async def test_head_requests_and_no_content_get_their_head(app: App) -> None:
    protocol, transport = connect(app)
    protocol.data_received(b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n")
    await turns()
    assert len(transport.writes) == 1 and transport.writes[0].endswith(b"\r\n\r\n")

    async def no_content(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    protocol, transport = connect(Scripted(no_content))
    protocol.data_received(b"DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n")
    await turns()
    assert [w.split(b"\r\n", 1)[0] for w in transport.writes] == [b"HTTP/1.1 204 No Content"]


async def test_100_continue_is_not_held_and_a_closing_response_is_one_write() -> None:
    async def echo_then_close(scope: Any, receive: Any, send: Any) -> None:
        body = (await receive())["body"]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    protocol, transport = connect(Scripted(echo_then_close))
    protocol.data_received(b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
    await turns()
    assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    protocol.data_received(b"hi")
    await turns()
    assert len(transport.writes) == 2 and transport.writes[1].endswith(b"\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
    assert transport.closed


async def test_a_large_body_is_not_copied_onto_the_head() -> None:
    body = b"x" * (128 * 1024)

    async def large(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    protocol, transport = connect(Scripted(large))
    protocol.data_received(b"GET /l HTTP/1.1\r\nHost: x\r\n\r\n")
    await turns()
    assert len(transport.writes) == 2 and transport.writes[1] == body
