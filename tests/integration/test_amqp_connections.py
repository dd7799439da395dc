"""Bad input on the AMQP endpoint closes that connection with the AMQP error, never the endpoint."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from tests.support.amqp import serve_amqp

from funchost.amqp.codec.performatives import BeginFrame, OpenFrame
from funchost.amqp.frames import AMQP_HEADER, SASL_HEADER, frame_bytes, parse_frame


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    return sock


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return data


def frames_after_header(data: bytes) -> list:
    rest, frames = data[8:], []
    while len(rest) >= 8:
        size = struct.unpack(">I", rest[:4])[0]
        frames.append(parse_frame(rest[:8], rest[8:size]))
        rest = rest[size:]
    return frames


def opened(port: int) -> socket.socket:
    sock = connect(port)
    sock.sendall(AMQP_HEADER + frame_bytes(0, OpenFrame("t", None, 65536, 10, None, None, None, None, None, None)))
    return sock


def close_condition(data: bytes) -> bytes:
    close = [f for f in frames_after_header(data) if f.performative == 0x18]
    assert close, "the endpoint sent no close"
    return close[-1].fields[0][0]


def test_an_oversized_frame_closes_the_connection_with_a_framing_error(tmp_path: Path) -> None:
    with serve_amqp(tmp_path) as served:
        sock = opened(served.port)
        sock.sendall(struct.pack(">IBBH", 50_000_000, 2, 0, 0))
        assert close_condition(read_all(sock)) == b"amqp:connection:framing-error"
        again = opened(served.port)  # the endpoint still serves
        again.settimeout(5)
        first = again.recv(8)
        assert first == AMQP_HEADER
        again.close()


def test_a_malformed_frame_closes_the_connection_with_a_decode_error(tmp_path: Path) -> None:
    with serve_amqp(tmp_path) as served:
        sock = opened(served.port)
        body = b"\x00\x53\x12\xc0\xff\x09garbage"
        sock.sendall(struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body)
        assert close_condition(read_all(sock)) == b"amqp:decode-error"


def test_a_wrong_protocol_header_gets_the_supported_header_then_close(tmp_path: Path) -> None:
    with serve_amqp(tmp_path) as served:
        sock = connect(served.port)
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert read_all(sock) == AMQP_HEADER


def test_sasl_anonymous_then_open(tmp_path: Path) -> None:
    with serve_amqp(tmp_path) as served:
        sock = connect(served.port)
        sock.sendall(SASL_HEADER)
        assert sock.recv(8) == SASL_HEADER
        sock.close()


def test_the_connection_cap_refuses_extra_connections(tmp_path: Path) -> None:
    with serve_amqp(tmp_path, max_connections=1) as served:
        first = opened(served.port)
        first.settimeout(10)
        assert first.recv(8) == AMQP_HEADER
        second = connect(served.port)
        second.sendall(AMQP_HEADER)
        assert read_all(second) == b""
        first.close()


def test_heartbeats_at_half_the_clients_idle_timeout(tmp_path: Path) -> None:
    with serve_amqp(tmp_path) as served:
        sock = connect(served.port)
        sock.sendall(AMQP_HEADER + frame_bytes(0, OpenFrame("t", None, 65536, 10, 1000, None, None, None, None,
                                                               None)))
        sock.settimeout(30)
        data = b""
        while data.count(b"\x00\x00\x00\x08\x02\x00\x00\x00") < 2:  # two empty frames: the endpoint is alive
            chunk = sock.recv(4096)
            assert chunk, "the endpoint closed the connection"
            data += chunk
        opens = [f for f in frames_after_header(data) if f.performative == 0x10]
        assert len(opens) == 1 and len(opens[0].fields) == 10
        sock.close()


def test_performatives_with_arbitrary_fields_never_stop_the_endpoint(tmp_path: Path) -> None:
    """Well-framed performatives whose fields are anything: each connection is answered or closed
    with an AMQP error, and the endpoint keeps serving."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from funchost.amqp.codec.encode import encode_value
    from funchost.amqp.codec.types import TYPE, VALUE, AMQPTypes

    simple = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 31), 2 ** 31 - 1), st.binary(max_size=20),
                       st.text(max_size=20))
    fields = st.lists(st.one_of(simple, st.lists(simple, max_size=4), st.dictionaries(st.text(max_size=8), simple,
                                                                                         max_size=3)), max_size=14)
    begin = frame_bytes(1, BeginFrame(None, 0, 100, 100, 10, None, None, None))

    with serve_amqp(tmp_path) as served:
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.integers(0x10, 0x18), fields)
        def one(code: int, values: list) -> None:
            body = bytearray()
            encode_value(body, {TYPE: AMQPTypes.described, VALUE: ({TYPE: AMQPTypes.ulong, VALUE: code},
                                                                    {TYPE: AMQPTypes.list, VALUE: values})})
            frame = struct.pack(">IBBH", 8 + len(body), 2, 0, 1) + bytes(body)
            sock = opened(served.port)
            sock.sendall(begin + frame + frame)
            sock.settimeout(0.3)
            try:
                while sock.recv(65536):
                    pass
            except (TimeoutError, ConnectionResetError):
                pass
            sock.close()

        one()
        again = opened(served.port)
        again.settimeout(10)
        assert again.recv(8) == AMQP_HEADER
        again.close()
