"""The connection protocol against a fake transport: Kestrel's limits, timeouts and the
pipelining order, driven byte by byte and beat by beat (the heartbeat gets explicit times)."""

from __future__ import annotations

import asyncio
import functools
import re
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from funchost.triggers.http.limits import ServerLimits
from funchost.triggers.http.protocol import ConnectionBoard, GuardedHttpProtocol

GET = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.aborted = False
        self.reading = True

    def write(self, data: Any) -> None:
        assert not self.closed, "write after close"
        self.written += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 7071)}.get(name, default)

    @property
    def statuses(self) -> list[int]:
        return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", bytes(self.written))]


class App:
    """Answers 200 with the path; `hold` keeps responses back until released."""

    def __init__(self) -> None:
        self.hold = False
        self.release = asyncio.Event()
        self.received: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        self.received.append(message)
        if self.hold:
            await self.release.wait()
        body = scope["path"].encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class Server:
    def __init__(self, limits: ServerLimits, app: App) -> None:
        self.board = ConnectionBoard(limits, now=0.0)
        self.config = uvicorn.Config(app, lifespan="off", proxy_headers=False, log_config=None)
        self.config.load()
        self.state = ServerState()
        self.protocol = functools.partial(GuardedHttpProtocol, board=self.board)

    def connect(self) -> tuple[GuardedHttpProtocol, FakeTransport]:
        protocol = self.protocol(config=self.config, server_state=self.state, app_state={})
        transport = FakeTransport()
        protocol.connection_made(transport)
        return protocol, transport


@pytest.fixture
def app() -> App:
    return App()


def server_with(app: App, **limits: Any) -> Server:
    return Server(ServerLimits(**limits), app)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_normal_request_is_served(app):
    protocol, transport = server_with(app).connect()
    protocol.data_received(GET)
    await settle()
    assert transport.statuses == [200] and not transport.closed


async def test_request_line_longer_than_the_limit_is_414_without_reaching_the_app(app):
    protocol, transport = server_with(app, max_request_line_size=100).connect()
    target = b"/" + b"a" * 80
    protocol.data_received(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")  # 4 + 81 + 11 = 96
    await settle()
    assert transport.statuses == [200]
    protocol, transport = server_with(app, max_request_line_size=100).connect()
    protocol.data_received(b"GET " + target + b"aaaaa HTTP/1.1\r\n")  # 101 bytes
    assert transport.statuses == [414] and transport.closed and len(app.received) == 1


async def test_the_request_line_limit_counts_the_method(app):
    protocol, transport = server_with(app, max_request_line_size=100).connect()
    target = b"/" + b"a" * 77
    protocol.data_received(b"OPTIONS " + target + b" HTTP/1.1\r\n")  # 8 + 78 + 11 = 97
    assert transport.statuses == []
    protocol, transport = server_with(app, max_request_line_size=100).connect()
    protocol.data_received(b"UNSUBSCRIBE " + target + b" HTTP/1.1\r\n")  # 12 + 78 + 11 = 101
    assert transport.statuses == [414]


async def test_more_headers_than_the_count_limit_is_431(app):
    protocol, transport = server_with(app, max_request_header_count=3).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\nC: 1\r\n\r\n")
    await settle()
    assert transport.statuses == [200]
    protocol, transport = server_with(app, max_request_header_count=3).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n")
    assert transport.statuses == [431] and transport.closed


async def test_repeated_headers_flood_is_refused_at_the_count_limit(app):
    protocol, transport = server_with(app).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\n" + b"X-Tag: a\r\n" * 120_000 + b"\r\n")
    assert transport.statuses == [431] and app.received == []


async def test_header_bytes_over_the_total_size_are_431(app):
    protocol, transport = server_with(app, max_request_headers_total_size=1000).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 990 + b"\r\n\r\n")  # 999 bytes
    await settle()
    assert transport.statuses == [200]
    protocol, transport = server_with(app, max_request_headers_total_size=1000).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 992 + b"\r\n\r\n")
    assert transport.statuses == [431]


async def test_an_endless_header_is_refused_after_a_bounded_number_of_reads(app):
    """The parser keeps an unfinished header value to itself; the protocol counts raw bytes."""
    protocol, transport = server_with(app).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nX-Big: ")
    reads = 0
    while not transport.closed:
        protocol.data_received(b"a" * 16384)
        reads += 1
        assert reads < 10
    assert transport.statuses == [431]
    assert reads == 3  # (8 KB line + 32 KB headers) / 16 KB reads


async def test_data_after_a_rejection_is_not_read(app):
    protocol, transport = server_with(app, max_request_header_count=1).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\n\r\n")
    assert transport.statuses == [431]
    written = bytes(transport.written)
    protocol.data_received(GET)
    assert bytes(transport.written) == written


async def test_rejections_are_written_like_kestrel_empty_body_and_connection_close(app):
    protocol, transport = server_with(app, max_request_header_count=1).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\n\r\n")
    head = bytes(transport.written)
    assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n" in head and head.endswith(b"\r\n\r\n")


async def test_a_malformed_request_is_400(app):
    protocol, transport = server_with(app).connect()
    protocol.data_received(b"NOT HTTP AT ALL\r\n\r\n")
    assert transport.statuses == [400] and transport.closed


async def test_pipelined_garbage_is_answered_after_the_valid_request(app):
    protocol, transport = server_with(app).connect()
    protocol.data_received(GET + b"GARBAGE\r\n\r\n")
    await settle()
    assert transport.statuses == [200, 400] and transport.closed
    assert bytes(transport.written).index(b"/hello") < bytes(transport.written).index(b"400 Bad Request")


async def test_pipelined_garbage_waits_for_every_queued_response(app):
    app.hold = True
    protocol, transport = server_with(app).connect()
    protocol.data_received(GET + GET.replace(b"/hello", b"/second") + b"\x00\x01\r\n\r\n")
    await settle()
    assert transport.statuses == [] and not transport.closed
    app.release.set()
    await settle()
    assert transport.statuses == [200, 200, 400]
    written = bytes(transport.written)
    assert written.index(b"/hello") < written.index(b"/second") < written.index(b"400 Bad Request")


async def test_a_broken_chunked_body_is_400_and_the_app_sees_a_disconnect(app):
    protocol, transport = server_with(app).connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    await settle()
    assert transport.statuses == [400] and transport.closed


# --- heartbeat timeouts ---------------------------------------------------------------------------


async def test_partial_headers_get_408_after_the_request_headers_timeout(app):
    server = server_with(app, request_headers_timeout=30.0)
    protocol, transport = server.connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n")
    server.board.tick(29.0)
    assert transport.statuses == [] and not transport.closed
    server.board.tick(31.0)
    assert transport.statuses == [408] and transport.closed


async def test_an_idle_connection_is_closed_silently_after_the_keep_alive_timeout(app):
    server = server_with(app, keep_alive_timeout=130.0)
    protocol, transport = server.connect()
    server.board.tick(129.0)
    assert not transport.closed
    server.board.tick(131.0)
    assert transport.closed and transport.written == b""


async def test_keep_alive_timeout_restarts_after_each_response(app):
    server = server_with(app, keep_alive_timeout=10.0)
    protocol, transport = server.connect()
    server.board.tick(8.0)
    protocol.data_received(GET)
    await settle()
    server.board.tick(12.0)  # 4 s after the response
    assert not transport.closed
    server.board.tick(19.0)
    assert transport.closed and transport.statuses == [200]


async def test_a_response_arms_no_timer_of_its_own_the_heartbeat_keeps_the_keep_alive_timeout(app):
    server = server_with(app, keep_alive_timeout=10.0)
    protocol, transport = server.connect()
    protocol.data_received(GET + GET)  # the second is pipelined behind the first
    await settle()
    await settle()
    assert transport.statuses == [200, 200] and server.state.total_requests == 2
    assert protocol.timeout_keep_alive_task is None  # uvicorn would arm one after each response
    server.board.tick(11.0)
    assert transport.closed


async def test_a_body_slower_than_the_minimum_rate_gets_408_after_the_grace_period(app):
    server = server_with(app, min_body_bytes_per_second=240.0, min_body_grace_period=5.0)
    protocol, transport = server.connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
    for second in range(1, 6):
        protocol.data_received(b"a" * 250)
        server.board.tick(float(second))
    assert transport.statuses == []  # 250 bytes/s is enough
    for second in range(6, 12):
        protocol.data_received(b"a" * 10)
        server.board.tick(float(second))
        if transport.closed:
            break
    assert transport.statuses == [408]
    await settle()
    assert app.received == [] or app.received[-1]["type"] == "http.disconnect"


async def test_a_client_waiting_for_100_continue_is_not_timed_before_the_app_reads(app):
    server = server_with(app, min_body_grace_period=5.0)
    protocol, transport = server.connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
    protocol.cycle.waiting_for_100_continue = True  # as before the application's first receive()
    for second in range(1, 30):
        server.board.tick(float(second))
    assert not transport.closed


async def test_body_rate_zero_disables_the_check(app):
    server = server_with(app, min_body_bytes_per_second=0.0)
    protocol, transport = server.connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
    for second in range(1, 100):
        server.board.tick(float(second))
    assert not transport.closed


async def test_a_body_left_unsent_after_its_response_is_dropped_until_the_client_is_idle_for_the_keep_alive_timeout(app):
    server = server_with(app, min_body_bytes_per_second=0.0, keep_alive_timeout=10.0)
    protocol, transport = server.connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
    await settle()
    assert transport.statuses == [200]  # answered after the first part of its body
    server.board.tick(5.0)
    protocol.data_received(b"d" * 10)  # more of the body: read and dropped
    server.board.tick(11.0)
    assert not transport.closed  # the client sent some within the timeout
    server.board.tick(20.0)
    assert not transport.closed
    server.board.tick(22.0)
    assert transport.closed and transport.statuses == [200]


async def test_starved_heartbeats_do_not_count_against_the_client(app):
    server = server_with(app, min_body_grace_period=5.0)
    protocol, transport = server.connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"a" * 2000)
    server.board.tick(60.0)  # one beat after a minute of starvation counts as one second
    server.board.tick(61.0)
    assert not transport.closed


# --- connections ----------------------------------------------------------------------------------


async def test_connections_beyond_the_limit_get_503_and_are_closed(app):
    server = server_with(app, max_concurrent_connections=2)
    first, _ = server.connect()
    server.connect()
    refused, transport = server.connect()
    assert transport.statuses == [503] and transport.closed
    refused.connection_lost(None)
    first.connection_lost(None)
    _, again = server.connect()
    assert again.statuses == [] and not again.closed


async def test_abort_ends_a_request_waiting_for_its_body(app):
    server = server_with(app)
    protocol, transport = server.connect()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
    await settle()
    server.board.abort_all()
    await settle()
    assert transport.aborted


async def test_a_client_that_half_closes_after_its_request_still_gets_the_response(app):
    app.hold = True
    protocol, transport = server_with(app).connect()
    protocol.data_received(GET)
    assert protocol.eof_received() is True  # keep the transport open for the response
    app.release.set()
    await settle()
    assert transport.statuses == [200] and transport.closed


async def test_a_half_close_in_the_middle_of_a_request_closes(app):
    protocol, transport = server_with(app).connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nHost")
    assert not protocol.eof_received()  # asyncio closes the transport


async def test_a_connection_upgraded_to_websocket_leaves_the_board(app):
    server = server_with(app)
    protocol, transport = server.connect()
    assert server.board.connections == {protocol}
    protocol.data_received(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    assert server.board.connections == set()


async def test_one_connection_failing_its_heartbeat_does_not_stop_the_others(app, caplog):
    server = server_with(app, request_headers_timeout=30.0)
    broken, _ = server.connect()
    broken.tick = lambda now, elapsed: 1 / 0  # type: ignore[method-assign]
    protocol, transport = server.connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n")
    server.board.tick(31.0)
    assert transport.statuses == [408]
    assert "heartbeat failed" in caplog.text


async def test_a_head_the_server_cannot_decode_is_400_and_not_timed_as_a_body(app):
    server = server_with(app)
    protocol, transport = server.connect()
    # The parser takes this target; uvicorn's URL split in on_headers_complete does not.
    protocol.data_received(b"GET http://x:99999/ HTTP/1.1\r\nHost: x\r\n\r\n")
    assert transport.statuses == [400] and protocol.cycle is None
    server.board.tick(60.0)  # the closing connection is skipped
