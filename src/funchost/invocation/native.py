"""The lean path: trigger values and outputs kept in the host's own form until someone needs a Datum.

The worker hands user code what the library's converters build from the host's Datums. For the
common types that round trip is pure overhead inside one process: a trigger that holds its data
in its own form (an HTTP request as read from the socket, a queue message as received) can build
`func.HttpRequest` / `func.QueueMessage` straight from it, and a returned `func.HttpResponse` can
be read straight into a response. Both forms stay available and give the same result (tests in
`tests/unit/core/test_lean_path_identity*.py` compare them on generated inputs):

* `NativeDatum`: a trigger value whose generic Datum value is built on first read; the plan's
  decoder calls `decode()` instead of the library converter it reproduces (`converter`).
* `LazyMapping`: binding data (or trigger metadata) built on first read: most functions have
  no binding expression to fill.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from azure.functions.meta import Datum

_UNSET: Any = object()


class LazyDatum(Datum):
    """A Datum whose value is built by `build()` on first read (then kept)."""

    def __init__(self, type: str, build: Callable[[], Any]) -> None:  # noqa: A002 - Datum's name
        self.type = type
        self._build = build
        self._value = _UNSET

    @property
    def value(self) -> Any:
        if self._value is _UNSET:
            self._value = self._build()
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self._value = value


class NativeDatum(LazyDatum):
    """A trigger value that also builds the user's object directly.

    `converter` is the library converter class whose `decode(self, trigger_metadata=...)` result
    `decode()` reproduces; the plan's decoder takes the direct way only for that converter.
    """

    converter: ClassVar[type | None] = None

    def decode(self) -> Any:
        raise NotImplementedError


class LazyMapping(Mapping[str, Any]):
    """A mapping built by `build()` on first access (binding data nobody may read)."""

    __slots__ = ("_build", "_data")

    def __init__(self, build: Callable[[], Mapping[str, Any]]) -> None:
        self._build: Callable[[], Mapping[str, Any]] | None = build
        self._data: Mapping[str, Any] | None = None

    def _loaded(self) -> Mapping[str, Any]:
        data = self._data
        if data is None:
            assert self._build is not None
            data = self._data = self._build()
            self._build = None
        return data

    def __getitem__(self, name: str) -> Any:
        return self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __repr__(self) -> str:
        return f"LazyMapping({dict(self._loaded())!r})"
