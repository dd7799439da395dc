"""The default jobs database: one SQLite file in WAL mode.

Every write runs in `BEGIN IMMEDIATE`, which takes the database's write lock up front: the
conditional updates (acquire, outbox leasing) cannot interleave, within a process or across
processes sharing the file. One connection per thread; a busy timeout makes writers take turns.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from funchost.reliability.errors import JobStoreError, StoreUnavailable
from funchost.reliability.store.db import Database, Row, sortable_text

T = TypeVar("T")

DEFAULT_BUSY_TIMEOUT = 30.0


def _param(value: Any) -> Any:
    return sortable_text(value) if isinstance(value, datetime) else value


def _guard(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except sqlite3.OperationalError as exc:  # locked, busy, disk I/O: worth retrying
        raise StoreUnavailable(f"sqlite: {exc}") from exc
    except sqlite3.Error as exc:
        raise JobStoreError(f"sqlite: {exc}") from exc


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = _guard(lambda: self._conn.execute(sql, [_param(p) for p in params]))
        return cursor.rowcount

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        # fetchall: a RETURNING statement must run to completion before COMMIT
        rows = _guard(lambda: self._conn.execute(sql, [_param(p) for p in params]).fetchall())
        return dict(rows[0]) if rows else None

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        rows = _guard(lambda: self._conn.execute(sql, [_param(p) for p in params]).fetchall())
        return [dict(r) for r in rows]


class SqliteDatabase(Database):
    name = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise JobStoreError("the jobs database is closed")

        def open_() -> sqlite3.Connection:
            c = sqlite3.connect(
                str(self.path), timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
            c.row_factory = sqlite3.Row
            c.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
            return c

        conn = _guard(open_)
        self._local.conn = conn
        self._local.depth = 0
        with self._lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[_SqliteTx]:
        conn = self._connect()
        if self._local.depth:  # join the transaction already open on this thread
            self._local.depth += 1
            try:
                yield _SqliteTx(conn)
            finally:
                self._local.depth -= 1
            return
        _guard(lambda: conn.execute("BEGIN IMMEDIATE"))
        self._local.depth = 1
        try:
            yield _SqliteTx(conn)
        except BaseException:
            self._local.depth = 0
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self._local.depth = 0
        try:
            _guard(lambda: conn.execute("COMMIT"))
        except JobStoreError:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._local = threading.local()
