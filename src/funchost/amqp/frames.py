"""Reading and writing AMQP frames: the 8-byte frame header, size limits, protocol headers.

A frame is `size(4) doff(1) type(1) channel(2)` then the body from `doff * 4`. A frame of eight
bytes is a heartbeat. Every problem with the bytes a peer sends (a size below 8 or above the
negotiated maximum, a bad data offset, a body that does not decode) is a `FrameError` carrying
the AMQP condition the connection is closed with; it never escapes the connection.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any, NamedTuple

from funchost.amqp import direct_encode as put
from funchost.amqp.codec import decode, encode
from funchost.amqp.codec.performatives import TransferFrame

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
HEARTBEAT = b"\x00\x00\x00\x08\x02\x00\x00\x00"
AMQP_FRAME, SASL_FRAME = 0, 1
MIN_MAX_FRAME_SIZE = 512  # AMQP 1.0 2.7.1: no peer may require less
PRE_OPEN_FRAME_LIMIT = 64 * 1024  # before `open` settles the size: SASL and open frames are small
_HEADER = struct.Struct(">IBBH")

FRAMING_ERROR = "amqp:connection:framing-error"
DECODE_ERROR = "amqp:decode-error"
NOT_ALLOWED = "amqp:not-allowed"


class FrameError(Exception):
    """Bad input from the peer: the connection closes with `condition`."""

    def __init__(self, condition: str, description: str) -> None:
        super().__init__(description)
        self.condition = condition
        self.description = description


class Frame(NamedTuple):
    channel: int
    kind: int  # AMQP_FRAME or SASL_FRAME
    performative: int  # descriptor code; 0 for a heartbeat
    fields: list[Any]


async def read_frame(reader: asyncio.StreamReader, max_size: int) -> Frame:
    """One frame (IncompleteReadError at the end of the stream)."""
    header = await reader.readexactly(8)
    return parse_frame(header, await reader.readexactly(_body_length(header, max_size)))


def _body_length(header: bytes, max_size: int) -> int:
    size, doff, _, _ = _HEADER.unpack(header)
    if size < 8 or doff < 2 or doff * 4 > size:
        raise FrameError(FRAMING_ERROR, f"invalid frame header (size {size}, data offset {doff})")
    if size > max_size:
        raise FrameError(FRAMING_ERROR, f"frame of {size} bytes exceeds the maximum frame size {max_size}")
    return int(size) - 8


def parse_frame(header: bytes, rest: bytes) -> Frame:
    """Decode a frame whose 8-byte header and remaining bytes were read."""
    size, doff, kind, channel = _HEADER.unpack(header)
    body = memoryview(rest)[doff * 4 - 8:]
    if kind not in (AMQP_FRAME, SASL_FRAME):
        raise FrameError(FRAMING_ERROR, f"unknown frame type {kind}")
    if not body:
        return Frame(channel, kind, 0, [])
    if len(body) < 4 or body[0] != 0x00 or body[1] not in (0x53, 0x80):
        raise FrameError(DECODE_ERROR, "a frame body must be a described performative")
    try:
        if body[1] == 0x80:  # an 8-byte ulong descriptor: the clients never send it, but it is valid AMQP
            big = int.from_bytes(body[2:10], "big")
            if big > 0xFF:
                raise ValueError("unknown descriptor")
            body = memoryview(b"\x00\x53" + bytes([big]) + bytes(body[10:]))
        code, fields = decode.decode_frame(body)
        code = int(code)
    except Exception as exc:  # the decoder raises KeyError, IndexError, struct.error, ValueError, ...
        raise FrameError(DECODE_ERROR, f"cannot decode the frame: {type(exc).__name__}") from None
    if not isinstance(fields, list):
        raise FrameError(DECODE_ERROR, "a performative must be a list")
    return Frame(channel, kind, code, fields)


def frame_bytes(channel: int, performative: Any, kind: int = AMQP_FRAME) -> bytes:
    """A performative (a codec namedtuple) as one frame, every field written."""
    header, body = encode.encode_frame(performative, frame_type=bytes([kind]))
    assert body is not None
    return header + channel.to_bytes(2, "big") + bytes(body)


def _plain_transfer(channel: int, fields: list[Any]) -> bytes | None:
    """The frame of a transfer with no payload yet, written directly (`direct_encode`) when its
    fields are the endpoint's usual ones (no delivery state, resume, abort or batchable); None
    for the codec to write. The same bytes as `frame_bytes` either way."""
    handle, delivery_id, tag, message_format, settled, more, *rest = fields
    if any(value is not None for value in rest) or not isinstance(tag, bytes) or delivery_id is None:
        return None
    body = b"\x00\x53\x14" + put.list_of([put.uint(handle), put.uint(delivery_id), put.binary(tag),
                                            put.uint(message_format), put.boolean(settled), put.boolean(more),
                                            put.NULL, put.NULL, put.NULL, put.NULL, put.NULL])
    return _HEADER.pack(len(body) + 8, 2, AMQP_FRAME, channel) + body


def transfer_frames(channel: int, fields: list[Any], payload: bytes, max_frame_size: int) -> list[bytes]:
    """A delivery as one or more transfer frames no larger than the peer's maximum."""
    first = _plain_transfer(channel, fields) or frame_bytes(channel, TransferFrame._make([*fields, b""]))
    room = max(max_frame_size - len(first) - 8, 64)
    if len(payload) <= room:  # the payload follows the performative: one encoding, a new size
        return [(len(first) + len(payload)).to_bytes(4, "big") + first[4:] + payload]
    frames = []
    for start in range(0, len(payload), room):
        chunk = payload[start:start + room]
        more = start + room < len(payload)
        part = list(fields)
        part[5] = more
        frames.append(frame_bytes(channel, TransferFrame._make([*part, chunk])))
    return frames
