"""AMQP values written straight to bytes, each in the form the vendored codec (`codec/encode.py`)
chooses for it (the smallest that fits, constructors included as in list and map items), for the
hot paths that skip the codec's tree of typed dicts: a Service Bus delivery's sections
(`sb_encode.py`) and transfer frames (`frames.py`). Tests compare them with the codec's bytes.
"""

from __future__ import annotations

import struct
from datetime import datetime

NULL = b"\x40"
TRUE = b"\x56\x01"  # a boolean with its constructor, as the codec writes list items
FALSE = b"\x56\x00"
_PACK_Q = struct.Struct(">q").pack
_PACK_I = struct.Struct(">I").pack


def boolean(value: bool | None) -> bytes:
    return NULL if value is None else TRUE if value else FALSE


def list_of(items: list[bytes]) -> bytes:
    body = b"".join(items)
    if len(items) <= 255 and len(body) < 255:
        return bytes((0xC0, len(body) + 1, len(items))) + body
    return b"\xd0" + _PACK_I(len(body) + 4) + _PACK_I(len(items)) + body


def map_of(items: list[bytes]) -> bytes:
    body = b"".join(items)
    if len(items) <= 255 and len(body) < 255:
        return bytes((0xC1, len(body) + 1, len(items))) + body
    return b"\xd1" + _PACK_I(len(body) + 4) + _PACK_I(len(items)) + body


def variable(small: int, large: int, data: bytes) -> bytes:
    if len(data) <= 255:
        return bytes((small, len(data))) + data
    return bytes((large,)) + _PACK_I(len(data)) + data


def string(value: str) -> bytes:
    return variable(0xA1, 0xB1, value.encode("utf-8"))


def text(value: str | None) -> bytes:
    return NULL if value is None else string(value)


def symbol(value: str) -> bytes:
    return variable(0xA3, 0xB3, value.encode("utf-8"))


def binary(value: bytes) -> bytes:
    return variable(0xA0, 0xB0, value)


def uint(value: int) -> bytes:
    if value == 0:
        return b"\x43"
    if value <= 255:
        return bytes((0x52, value))
    return b"\x70" + _PACK_I(value)


def int32(value: int) -> bytes:
    if -128 <= value <= 127:
        return b"\x54" + struct.pack(">b", value)
    return b"\x71" + struct.pack(">i", value)


def long(value: int) -> bytes:
    if -128 <= value <= 127:
        return b"\x55" + struct.pack(">b", value)
    return b"\x81" + _PACK_Q(value)


def timestamp(value: datetime) -> bytes:
    return b"\x83" + _PACK_Q(int(round(value.timestamp() * 1000)))


