"""A response sent with `asgi.respond` leaves in one socket write, byte for byte what uvicorn
writes in two; unmarked (streamed) responses keep uvicorn's writes. `WholeResponseCycle.send_whole`
against uvicorn's own `send` of the same two messages: the same bytes, the same cycle state
afterwards, the same errors, on a grid of responses (statuses, headers a function can set, HEAD,
HTTP/1.0, a closed client); and `asgi.respond` takes that path only where it applies."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest
from tests.unit.http.test_http_protocol import FakeTransport, server_with
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from funchost.triggers.http.asgi import respond
from funchost.triggers.http.whole_response import WholeResponseCycle, adopt


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


# -- send_whole, beside uvicorn's send ------------------------------------------------------------

DATE = [(b"date", b"Fri, 04 Dec 2026 23:00:00 GMT")]
STATE = ("response_started", "response_complete", "keep_alive", "chunked_encoding", "expected_content_length",
         "waiting_for_100_continue")


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        assert not self.closed, "write after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def cycle(cls: type[RequestResponseCycle], *, method: str = "GET", keep_alive: bool = True,
          expect_100: bool = False) -> tuple[RequestResponseCycle, Transport, list[str]]:
    transport = Transport()
    completed: list[str] = []
    scope = {"type": "http", "method": method, "http_version": "1.1", "path": "/", "query_string": b"",
             "headers": [], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 7071), "scheme": "http"}
    logger = logging.getLogger("test.whole_response")
    made = RequestResponseCycle(scope, transport, FlowControl(transport), logger, logger, False, list(DATE),
                                asyncio.Event(), expect_100, keep_alive, lambda: completed.append("done"))
    if cls is WholeResponseCycle:
        adopt(made)
    return made, transport, completed


async def by_uvicorn(made: RequestResponseCycle, status: int, headers: list[tuple[bytes, bytes]],
                     body: bytes) -> BaseException | None:
    try:
        await made.send({"type": "http.response.start", "status": status, "headers": headers})
        await made.send({"type": "http.response.body", "body": body})
    except RuntimeError as exc:
        return exc
    return None


def whole(made: RequestResponseCycle, status: int, headers: list[tuple[bytes, bytes]],
          body: bytes) -> BaseException | None:
    assert isinstance(made, WholeResponseCycle)
    try:
        assert made.send_whole(status, headers, body)
    except RuntimeError as exc:
        return exc
    return None


HEADERS = {
    "length": lambda body: [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
    "no length": lambda body: [(b"Content-Type", b"application/json")],
    "close": lambda body: [(b"content-length", str(len(body)).encode()), (b"Connection", b"keep-alive, Close")],
    "chunked": lambda body: [(b"transfer-encoding", b"chunked")],
    "length and chunked": lambda body: [(b"content-length", b"5"), (b"transfer-encoding", b"Chunked")],
    "two lengths": lambda body: [(b"content-length", str(len(body)).encode()), (b"content-length", b"99")],
    "too short": lambda body: [(b"content-length", str(len(body) + 3).encode())],
    "too long": lambda body: [(b"content-length", b"1")],
    "bad name": lambda body: [(b"x bad", b"1")],
    "bad value": lambda body: [(b"x-ok", b"a\r\nInjected: 1")],
    "tab in value": lambda body: [(b"content-length", str(len(body)).encode()), (b"x-tab", b"a\tb")],
}
CASES = list(itertools.product([200, 204, 304, 404, 500], HEADERS, [b"", b"Hello, world!"], ["GET", "HEAD"],
                               [True, False]))


@pytest.mark.parametrize(("status", "headers", "body", "method", "keep_alive"), CASES)
async def test_a_whole_response_is_what_uvicorns_two_sends_make(status, headers, body, method, keep_alive):
    listed = HEADERS[headers](body)
    plain, plain_transport, plain_done = cycle(RequestResponseCycle, method=method, keep_alive=keep_alive)
    held, held_transport, held_done = cycle(WholeResponseCycle, method=method, keep_alive=keep_alive)
    expected = await by_uvicorn(plain, status, list(listed), body)
    got = whole(held, status, list(listed), body)
    assert repr(got) == repr(expected)
    assert b"".join(held_transport.writes) == b"".join(plain_transport.writes)
    assert len(held_transport.writes) <= 1  # one system call at most
    assert [getattr(held, name) for name in STATE] == [getattr(plain, name) for name in STATE]
    assert held_transport.closed == plain_transport.closed and held_done == plain_done
    assert held.message_event.is_set() == plain.message_event.is_set()


async def test_a_client_waiting_for_100_continue_is_told_no_more_as_by_uvicorn():
    plain, _, _ = cycle(RequestResponseCycle, expect_100=True)
    held, _, _ = cycle(WholeResponseCycle, expect_100=True)
    await by_uvicorn(plain, 200, [(b"content-length", b"0")], b"")
    whole(held, 200, [(b"content-length", b"0")], b"")
    assert held.waiting_for_100_continue is plain.waiting_for_100_continue is False


async def test_a_disconnected_client_gets_nothing_either_way():
    plain, plain_transport, _ = cycle(RequestResponseCycle)
    held, held_transport, _ = cycle(WholeResponseCycle)
    plain.disconnected = held.disconnected = True
    await by_uvicorn(plain, 200, [(b"content-length", b"2")], b"ok")
    whole(held, 200, [(b"content-length", b"2")], b"ok")
    assert held_transport.writes == plain_transport.writes == []
    assert held.response_started is plain.response_started


@pytest.mark.parametrize("why", ["write paused", "access log", "started"])
async def test_send_whole_declines_where_uvicorns_send_must_run(why):
    held, transport, _ = cycle(WholeResponseCycle)
    if why == "write paused":
        held.flow.write_paused = True
    elif why == "access log":
        held.access_log = True
    else:
        await held.send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    written = list(transport.writes)
    assert held.send_whole(200, [(b"content-length", b"2")], b"ok") is False
    assert transport.writes == written


async def test_respond_writes_once_through_the_cycle_and_sends_messages_elsewhere():
    held, transport, done = cycle(WholeResponseCycle)
    await respond(held.send, 201, b"made", [(b"content-type", b"text/plain")])
    assert transport.writes == [b"HTTP/1.1 201 Created\r\ndate: Fri, 04 Dec 2026 23:00:00 GMT\r\n"
                                b"content-type: text/plain\r\ncontent-length: 4\r\n\r\nmade"]
    assert held.response_complete and done == ["done"]

    messages: list[dict[str, Any]] = []

    async def other_server(message: dict[str, Any]) -> None:
        messages.append(message)

    await respond(other_server, 201, b"made")
    assert [m["type"] for m in messages] == ["http.response.start", "http.response.body"]

    paused, transport, _ = cycle(WholeResponseCycle)
    paused.flow.write_paused = True
    paused.flow._is_writable_event.set()  # drained at once: uvicorn's send goes on
    await respond(paused.send, 200, b"ok")
    assert transport.writes == [b"HTTP/1.1 200 OK\r\ndate: Fri, 04 Dec 2026 23:00:00 GMT\r\ncontent-length: 2\r\n\r\nok"]


# -- whole_body, beside uvicorn's receive ------------------------------------------------------------

@pytest.mark.parametrize(("body", "more_body", "expect_100", "disconnected", "complete"), [
    (b"", False, False, False, False),
    (b'{"a": 1}', False, False, False, False),
    (b"part", True, False, False, False),  # more to come: receive() must wait for it
    (b"all", False, True, False, False),  # receive() tells the client "100 Continue" first
    (b"all", False, False, True, False),
    (b"all", False, False, False, True),
])
async def test_whole_body_is_what_receive_returns_or_declines(body, more_body, expect_100, disconnected, complete):
    plain, plain_transport, _ = cycle(RequestResponseCycle, expect_100=expect_100)
    held, held_transport, _ = cycle(WholeResponseCycle, expect_100=expect_100)
    for made in (plain, held):
        made.body = bytearray(body)
        made.more_body = more_body
        made.disconnected = disconnected
        made.response_complete = complete
        made.message_event.set()
        made.flow.pause_reading()
    assert isinstance(held, WholeResponseCycle)
    taken = held.whole_body()
    if more_body or expect_100 or disconnected or complete:
        assert taken is None and bytes(held.body) == body and held.message_event.is_set()
        return
    message = await plain.receive()
    assert message == {"type": "http.request", "body": body, "more_body": False} and taken == body
    assert bytes(held.body) == bytes(plain.body) == b""
    assert held.message_event.is_set() == plain.message_event.is_set()
    assert held.flow.read_paused == plain.flow.read_paused
    assert held_transport.writes == plain_transport.writes == []


async def test_read_body_takes_a_whole_body_from_the_cycle_and_reads_messages_elsewhere():
    from funchost.triggers.http.asgi import BodyTooLarge, read_body

    held, _, _ = cycle(WholeResponseCycle)
    held.body, held.more_body = bytearray(b"0123456789"), False
    held.message_event.set()
    assert await read_body({"headers": []}, held.receive, limit=100) == b"0123456789"
    held.body = bytearray(b"0123456789")
    with pytest.raises(BodyTooLarge):
        await read_body({"headers": []}, held.receive, limit=5)

    messages = [{"type": "http.request", "body": b"ab", "more_body": True},
                {"type": "http.request", "body": b"cd", "more_body": False}]

    async def other_server() -> dict[str, Any]:
        return messages.pop(0)

    assert await read_body({"headers": []}, other_server, limit=100) == b"abcd"
