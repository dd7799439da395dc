"""Trigger metadata whose Datums are built when a converter first reads them.

A trigger hands the worker several metadata values per invocation (the HTTP request's
``Headers`` and ``Query`` as JSON, a queue message's times and counts); most functions never
look at them (a `str` or `func.HttpRequest` parameter does not). Building the Datum, and its
JSON, on first read keeps that cost off every invocation while every read sees the same value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from azure.functions.meta import Datum


class LazyMetadata(Mapping[str, Datum]):
    """name -> raw value; `encode(raw)` gives the Datum, once, on first access."""

    __slots__ = ("_raw", "_encode", "_built")

    def __init__(self, raw: Mapping[str, Any], encode: Callable[[Any], Datum]) -> None:
        self._raw = raw
        self._encode = encode
        self._built: dict[str, Datum] = {}

    def __getitem__(self, name: str) -> Datum:
        built = self._built.get(name)
        if built is None:
            built = self._built[name] = self._encode(self._raw[name])
        return built

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __repr__(self) -> str:
        return f"LazyMetadata({dict(self)!r})"
