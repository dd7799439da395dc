"""Kestrel's limits and timeouts on a real `funchost start`, at the socket level.

The host runs with short timeouts set through Kestrel's setting names, so every wait below is
bounded polling of a few seconds; while a hostile client is attached, others are still served.
"""

from __future__ import annotations

import json
import select
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.acceptance.rawhttp import ResponseReader, connect, exchange, request_bytes
from tests.acceptance.support import RunningHost, start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance
APP = Path(__file__).resolve().parents[2] / "examples" / "hello"
SHORT = {
    "Kestrel__Limits__KeepAliveTimeout": "00:00:02",
    "Kestrel__Limits__RequestHeadersTimeout": "00:00:02",
    "Kestrel__Limits__MinRequestBodyDataRate__GracePeriod": "00:00:02",
    "Kestrel__Limits__MaxConcurrentConnections": "40",
}
HELLO = request_bytes("GET", "/api/hello")


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHost]:
    running = start_funchost(APP, data_dir=tmp_path_factory.mktemp("limits") / "data", env=SHORT)
    yield running
    code, output = stop_funchost(running)
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-5000:]


def served(host: RunningHost) -> bool:
    response = exchange(host.port, HELLO, timeout=5)
    return response is not None and response.status == 200 and response.body == b"Hello, world!"


def closed_by_server(sock: socket.socket, within: float) -> tuple[bool, bytes]:
    """Read until the server closes the connection (bounded); returns (closed, what it sent)."""
    received = b""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return True, received
        if not data:
            return True, received
        received += data
    return False, received


def status_of(received: bytes) -> int:
    return int(received.split(b" ", 2)[1]) if received.startswith(b"HTTP/1.1 ") else 0


def test_a_flood_of_repeated_headers_is_431_at_once_and_others_are_served(host: RunningHost) -> None:
    started = time.monotonic()
    response = exchange(host.port, request_bytes("GET", "/api/hello", [("X-Tag", "a")] * 120_000))
    assert response is not None and response.status == 431
    assert time.monotonic() - started < 10  # read up to the limit, not 120,000 headers
    assert served(host)


def test_a_one_megabyte_header_is_431_and_a_long_url_414(host: RunningHost) -> None:
    response = exchange(host.port, request_bytes("GET", "/api/hello", [("X-Big", "a" * (1 << 20))]))
    assert response is not None and response.status == 431
    response = exchange(host.port, request_bytes("GET", "/api/hello?" + "q" * 9000))
    assert response is not None and response.status == 414
    within = exchange(host.port, request_bytes("GET", "/api/hello", [("X-Fine", "a" * 30_000)]))
    assert within is not None and within.status == 200


def test_an_absurd_content_length_is_413_or_400_at_once(host: RunningHost) -> None:
    huge = exchange(host.port, b"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\n{")
    assert huge is not None and huge.status == 413  # over the body limit: the body is not read
    overflow = exchange(host.port, b"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n")
    assert overflow is not None and overflow.status == 400
    negative = exchange(host.port, b"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
    assert negative is not None and negative.status == 400


def test_a_header_of_hundreds_of_megabytes_is_not_read(host: RunningHost) -> None:
    """The server answers and closes while the client is still sending: sending fails early."""
    sent = 0
    with connect(host.port) as sock:
        sock.sendall(b"GET /api/hello HTTP/1.1\r\nHost: x\r\nX-Huge: ")
        chunk = b"a" * 65536
        with pytest.raises(OSError):
            while sent < 200 * 1024 * 1024:
                sock.sendall(chunk)
                sent += len(chunk)
    assert sent < 16 * 1024 * 1024
    assert served(host)


def test_half_open_connections_are_closed_after_the_keep_alive_timeout(host: RunningHost) -> None:
    idle = [connect(host.port) for _ in range(10)]
    try:
        assert served(host)
        for sock in idle:
            closed, received = closed_by_server(sock, within=10)
            assert closed and received == b""  # closed silently: no request was started
    finally:
        for sock in idle:
            sock.close()


def test_headers_sent_too_slowly_get_408_while_others_are_served(host: RunningHost) -> None:
    with connect(host.port) as slow:
        slow.sendall(b"GET /api/hello HTTP/1.1\r\nHost: x\r\n")
        assert served(host)
        closed, received = closed_by_server(slow, within=10)
    assert closed and status_of(received) == 408


def test_a_body_sent_below_the_minimum_rate_gets_408(host: RunningHost) -> None:
    with connect(host.port) as slow:
        slow.sendall(b"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000\r\n\r\n[")
        assert served(host)
        closed, received = closed_by_server(slow, within=15)
    assert closed and status_of(received) == 408


def test_connections_beyond_the_maximum_get_503_and_the_host_recovers(host: RunningHost) -> None:
    held = [connect(host.port) for _ in range(45)]
    try:
        answers: dict[socket.socket, bytes] = {}
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            readable, _, _ = select.select([s for s in held if s not in answers], [], [], 0.1)
            for sock in readable:
                answers[sock] = sock.recv(200)
        # Admitted connections wait for a request (and close silently at the keep-alive timeout).
        refused = [status_of(data) for data in answers.values() if data]
        assert refused and set(refused) == {503}
        assert len(held) - len(refused) <= 40  # the maximum admitted; the rest refused at once
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 10
    while not served(host):
        assert time.monotonic() < deadline, "not served again after the connections closed"
        time.sleep(0.1)
    assert "maximum of 40 concurrent connections" in host.output()


def test_a_valid_request_followed_by_garbage_gets_its_response_before_the_400(host: RunningHost) -> None:
    with connect(host.port) as sock:
        sock.sendall(HELLO + b"GARBAGE\x00\r\n\r\n")
        reader = ResponseReader(sock)
        first = reader.next()
        second = reader.next()
    assert first is not None and (first.status, first.body) == (200, b"Hello, world!")
    assert second is not None and second.status == 400


CHUNKED_ECHO = b"POST /api/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
MALFORMED_CHUNKED = (
    b"zz\r\n0\r\n\r\n",  # a chunk size that is not hexadecimal
    b"-1\r\nx\r\n0\r\n\r\n",
    b" 1\r\nx\r\n0\r\n\r\n",
    b"1\r\n00\r\n0\r\n\r\n",  # more data than the chunk size says
    b"1\nx\n0\n\n",  # bare LF line ends
    b"1\r\nx\r\n0\r\nnot a trailer\r\n\r\n",
    b"ffffffffffffffffff\r\n",  # a size beyond 64 bits
)


def test_a_malformed_chunked_body_is_400_before_the_function(host: RunningHost) -> None:
    before = host.output().count("Executing 'Functions.echo'")
    for body in MALFORMED_CHUNKED:
        response = exchange(host.port, CHUNKED_ECHO + body, timeout=5)
        assert response is not None, body
        assert (response.status, response.body, response.headers.get("connection")) == (400, b"", "close"), body
    # One chunk holding "0", then the last chunk: well-formed, so it reaches the function intact
    # (examples/hello's `hello` fails on it, a 500 from the function: get_json() is 0, not a dict).
    response = exchange(host.port, CHUNKED_ECHO + b"1\r\n0\r\n0\r\n\r\n", timeout=5)
    assert response is not None and response.status == 200 and json.loads(response.body)["json"] == 0
    # The console lines of a loop's turn may wait up to 2 ms (docs/deviations.md, "Console output").
    deadline = time.monotonic() + 5
    while host.output().count("Executing 'Functions.echo'") <= before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host.output().count("Executing 'Functions.echo'") == before + 1


def test_a_client_that_half_closes_after_its_request_gets_the_response(host: RunningHost) -> None:
    response = exchange(host.port, request_bytes("GET", "/api/slow?seconds=0.3"), half_close=True)
    assert response is not None and (response.status, response.body) == (200, b"done")


def test_sigterm_with_a_client_holding_a_half_sent_body_stops_after_the_grace_period(tmp_path: Path) -> None:
    env = {"ASPNETCORE_SHUTDOWNTIMEOUTSECONDS": "1", "Kestrel__Limits__MinRequestBodyDataRate__BytesPerSecond": "0"}
    running = start_funchost(APP, data_dir=tmp_path / "data", env=env)
    try:
        with connect(running.port) as holder:
            holder.sendall(b"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            assert httpx.get(f"{running.base_url}/api/hello", timeout=5).status_code == 200
            running.process.send_signal(signal.SIGTERM)
            running.process.wait(timeout=15)  # without the grace period: forever
    finally:
        code, output = stop_funchost(running)
    assert code == 0, output
    assert "still open after the shutdown timeout of 1s" in output
