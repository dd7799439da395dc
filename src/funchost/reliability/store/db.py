"""The small dialect layer under the repositories.

Repositories write SQL once, with `?` placeholders, against `Tx`. A `Database` opens
transactions and translates driver errors into `JobStoreError` / `StoreUnavailable`; the two
differences that matter for behaviour are spelled out as attributes:

- `skip_locked`: appended to row-leasing sub-selects (PostgreSQL: `FOR UPDATE SKIP LOCKED`;
  SQLite needs nothing because `BEGIN IMMEDIATE` already serialises writers);
- `lock_row`: appended to a classification read after a failed conditional update.

Times are always passed in from the caller's clock (never the database's `now()`), so a manual
clock drives leases and back-offs in tests exactly as real time does in production.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

Row = dict[str, Any]

T = TypeVar("T")


class Tx(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...


class Database(ABC):
    """One jobs database. Safe to share between threads (one connection per thread)."""

    name: str = ""
    skip_locked: str = ""
    lock_row: str = ""
    # Set by each dialect's constructor: per-thread connection state, and every connection opened.
    _local: threading.local
    _lock: threading.Lock
    _connections: list[Any]

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Tx]:
        """A write transaction: committed on normal exit, rolled back on exception."""

    def read(self) -> AbstractContextManager[Tx]:
        """A read-only unit of work. The default is a write transaction; a dialect whose readers
        need no write lock (SQLite WAL, PostgreSQL autocommit) overrides it. Inside an open
        `transaction()` on the same thread it joins that transaction."""
        return self.transaction()

    @abstractmethod
    def close(self) -> None: ...

    @contextmanager
    def bounded_wait(self, seconds: float) -> Iterator[None]:
        """Inside the block, a write transaction opened on this thread waits at most `seconds`
        for the write lock, then raises `StoreUnavailable` instead of waiting out the busy timeout
        (30 s): what an HTTP intake wants while another host holds the lock, frozen or slow. The
        transaction was not opened, so nothing was written."""
        local: Any = self._local
        previous = getattr(local, "wait_limit", None)
        local.wait_limit = seconds
        try:
            yield
        finally:
            local.wait_limit = previous

    def _wait_limit(self) -> float | None:
        return getattr(self._local, "wait_limit", None)

    @contextmanager
    def _joined(self, tx: T) -> Iterator[T]:
        """Join the unit of work already open on this thread: nested calls share it."""
        local: Any = self._local
        local.depth += 1
        try:
            yield tx
        finally:
            local.depth -= 1

    def _close_connections(self, errors: type[BaseException] | tuple[type[BaseException], ...]) -> None:
        """Close every thread's connection (ignoring `errors` from ones already broken)."""
        with self._lock:
            connections = self._connections
            for conn in connections:
                try:
                    conn.close()
                except errors:
                    pass
            connections.clear()
        self._local = threading.local()

    def migration_lock(self) -> str | None:
        """A statement that serialises schema migration between hosts (None: not needed)."""
        return None


def to_dt(value: Any) -> datetime | None:
    """A timestamp read back from either dialect, as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text).astimezone(UTC)


def sortable_text(value: datetime) -> str:
    """Fixed-width UTC text that sorts like the instant it names (used by SQLite)."""
    if value.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
