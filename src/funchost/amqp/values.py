"""Small helpers over the codec's values: decoded strings are bytes, typed values are dicts."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from funchost.amqp.codec.error import AMQPError
from funchost.amqp.codec.types import TYPE, VALUE, AMQPTypes

_INT32 = range(-(2 ** 31), 2 ** 31)


def text(value: Any) -> str | None:
    """A decoded string or symbol (bytes) as str; None stays None."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def keyed(mapping: Any) -> dict[str, Any]:
    """A decoded map with str keys (non-map input is an empty map)."""
    if not isinstance(mapping, Mapping):
        return {}
    return {text(k) or "": v for k, v in mapping.items()}


def long(value: int) -> dict[str, Any]:
    return {TYPE: AMQPTypes.long, VALUE: value}


def uint(value: int) -> dict[str, Any]:
    return {TYPE: AMQPTypes.uint, VALUE: value}


def symbol(value: str) -> dict[str, Any]:
    return {TYPE: AMQPTypes.symbol, VALUE: value}


def timestamp(when: datetime | float) -> dict[str, Any]:
    seconds = when.timestamp() if isinstance(when, datetime) else when
    return {TYPE: AMQPTypes.timestamp, VALUE: int(round(seconds * 1000))}


def array(element_type: str, values: list[Any]) -> dict[str, Any]:
    return {TYPE: AMQPTypes.array, VALUE: [{TYPE: element_type, VALUE: v} for v in values]}


def from_timestamp_ms(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, UTC)
    return None


def simple(value: Any) -> Any:
    """A Python value as a typed AMQP value (ints beyond int32 as long)."""
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT32:
        return long(value)
    return value


def message_id_text(value: Any) -> str | None:
    """A message or correlation id (string, uuid, ulong or binary) as text."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return str(value)
    return text(value)


def echo_id(value: Any) -> Any:
    """The request's id for a correlation-id of the same AMQP type: decoded strings are bytes,
    so text that is valid UTF-8 goes back as a string (clients send uuid or string ids)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    return value


def error(condition: str, description: str | None = None, info: Mapping[str, Any] | None = None) -> AMQPError:
    return AMQPError(condition=condition, description=description, info=dict(info) if info else None)


def address_path(address: Any) -> str:
    """`amqps://localhost:5673/queue.1` -> `queue.1`; `$cbs` stays `$cbs` (scheme and authority go)."""
    value = text(address) or ""
    if "://" in value:
        value = value.split("://", 1)[1]
        value = value.split("/", 1)[1] if "/" in value else ""
    return value.strip("/")
