"""The AMQP frame parser: any bytes either decode or raise FrameError (with an AMQP condition)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from funchost.amqp.codec.performatives import AttachFrame, FlowFrame, OpenFrame
from funchost.amqp.frames import FRAMING_ERROR, FrameError, _body_length, frame_bytes, parse_frame


def split(data: bytes) -> tuple[bytes, bytes]:
    return data[:8], data[8:]


def test_a_performative_round_trips() -> None:
    frame = parse_frame(*split(frame_bytes(3, FlowFrame(0, 100, 0, 100, 1, 0, 50, None, False, None, None))))
    assert (frame.channel, frame.performative) == (3, 0x13)
    assert frame.fields[6] == 50


def test_every_field_is_written() -> None:
    """The azure-eventhub decoder reads open's fields by position: all ten are on the wire."""
    frame = parse_frame(*split(frame_bytes(0, OpenFrame("c", None, 65536, 10, None, None, None, None, None, None))))
    assert len(frame.fields) == 10


def test_an_oversized_frame_is_a_framing_error() -> None:
    with pytest.raises(FrameError) as raised:
        _body_length(struct.pack(">IBBH", 10_000_000, 2, 0, 0), 65536)
    assert raised.value.condition == FRAMING_ERROR


def test_a_frame_shorter_than_its_header_is_a_framing_error() -> None:
    with pytest.raises(FrameError):
        _body_length(struct.pack(">IBBH", 4, 2, 0, 0), 65536)


def test_a_truncated_performative_is_a_decode_error() -> None:
    data = frame_bytes(0, AttachFrame("n", 1, True, 0, 1, None, None, None, False, None, None, None, None, None))
    with pytest.raises(FrameError) as raised:
        parse_frame(data[:8], data[8:-6])
    assert raised.value.condition == "amqp:decode-error"


@settings(max_examples=400, deadline=None)
@given(st.binary(min_size=0, max_size=300), st.integers(0, 1), st.integers(2, 4))
def test_arbitrary_bodies_decode_or_raise_frame_error(body: bytes, kind: int, doff: int) -> None:
    header = struct.pack(">IBBH", 8 + max(doff * 4 - 8, 0) + len(body), doff, kind, 0)
    rest = bytes(max(doff * 4 - 8, 0)) + body
    try:
        parse_frame(header, rest)
    except FrameError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=4, max_size=200))
def test_mutated_performatives_decode_or_raise_frame_error(noise: bytes) -> None:
    valid = frame_bytes(1, AttachFrame("link", 2, False, 0, 1, None, None, None, False, 0, None, None, None,
                                       {"k": "v"}))
    body = bytearray(valid[8:])
    for i, byte in enumerate(noise[:len(body)]):
        if byte % 3 == 0:
            body[i % len(body)] = noise[-1 - (i % len(noise))]
    try:
        parse_frame(valid[:8], bytes(body))
    except FrameError:
        pass
