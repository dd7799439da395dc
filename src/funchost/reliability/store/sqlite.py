"""The default jobs database: one SQLite file in WAL mode.

Every write runs in `BEGIN IMMEDIATE`, which takes the database's write lock up front: the
conditional updates (acquire, outbox leasing) cannot interleave, within a process or across
processes sharing the file. One connection per thread.

Writers of one file in one process take turns on a process-wide lock (per resolved path) before
`BEGIN IMMEDIATE`: a waiting thread is woken the moment the previous commit ends. Without it,
SQLite's busy handler would put the waiting connection to sleep in growing steps (1, 2, 5, 10 ...
100 ms), which turns a sub-millisecond wait into tens of milliseconds under load. Writers in
other processes still meet at `BEGIN IMMEDIATE`, where the busy timeout makes them take turns.

Reads (`read()`) take no write lock: in WAL mode a deferred transaction reads a consistent
snapshot while a writer commits.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from funchost.private_files import private_sqlite_file
from funchost.reliability.errors import JobStoreError, StoreUnavailable
from funchost.reliability.store.db import Database, Row, sortable_text
from funchost.sqlite_open import connect_wal

T = TypeVar("T")

DEFAULT_BUSY_TIMEOUT = 30.0

_writer_locks: dict[str, threading.Lock] = {}
_writer_locks_guard = threading.Lock()


CLOSE_WAIT = 30.0  # seconds `close` waits for a transaction running on another thread


def writer_lock(path: Path) -> threading.Lock:
    """The process-wide lock serialising writers of the SQLite file at `path`."""
    key = os.path.realpath(path)
    with _writer_locks_guard:
        lock = _writer_locks.get(key)
        if lock is None:
            lock = _writer_locks[key] = threading.Lock()
        return lock


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


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


class SqliteDatabase(Database):
    name = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        # 0600 (and so are its -wal / -shm files); a folder of the user's choosing keeps its mode
        self.path = private_sqlite_file(path, restrict_folder=False)
        self._busy_timeout = busy_timeout
        self._writer = writer_lock(self.path)
        self._local = threading.local()
        self._lock = threading.Lock()
        # Every thread's connection, with a lock held while that thread runs a transaction or read:
        # `close` waits for it, because closing a connection under a statement another thread is
        # running crashes the process (the sqlite3 module does not guard against it).
        self._in_use: dict[sqlite3.Connection, threading.Lock] = {}
        self._closed = False

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise JobStoreError("the jobs database is closed")

        def setup(c: sqlite3.Connection) -> None:
            c.row_factory = sqlite3.Row
            c.execute("PRAGMA synchronous=NORMAL")

        # retried while another process converts the new file to WAL (funchost.sqlite_open)
        conn = _guard(lambda: connect_wal(self.path, busy_timeout=self._busy_timeout, setup=setup))
        self._local.conn = conn
        self._local.depth = 0
        self._local.reading = False
        self._local.in_use = threading.Lock()
        with self._lock:
            self._in_use[conn] = self._local.in_use
        return conn

    @contextmanager
    def transaction(self) -> Iterator[_SqliteTx]:
        conn = self._connect()
        if self._local.depth:  # join the transaction already open on this thread
            if self._local.reading:
                raise JobStoreError("a write cannot join a read on the same thread")
            with self._joined(_SqliteTx(conn)) as tx:
                yield tx
            return
        limit = self._wait_limit()
        started = time.monotonic()
        if not self._writer.acquire(timeout=-1 if limit is None else limit):
            raise StoreUnavailable(f"sqlite: the jobs database is busy (no write lock within {limit:g} s)")
        in_use = self._local.in_use
        in_use.acquire()
        try:
            self._begin_immediate(conn, None if limit is None else limit - (time.monotonic() - started))
            self._local.depth = 1
            try:
                yield _SqliteTx(conn)
            except BaseException:
                self._local.depth = 0
                _rollback(conn)
                raise
            self._local.depth = 0
            try:
                _guard(lambda: conn.execute("COMMIT"))
            except JobStoreError:
                _rollback(conn)
                raise
        finally:
            in_use.release()
            self._writer.release()

    def _begin_immediate(self, conn: sqlite3.Connection, wait: float | None) -> None:
        """BEGIN IMMEDIATE, waiting for another process's write lock up to the busy timeout, or
        only `wait` seconds inside `bounded_wait` (the connection's timeout is restored after)."""
        if wait is None:
            _guard(lambda: conn.execute("BEGIN IMMEDIATE"))
            return
        _guard(lambda: conn.execute(f"PRAGMA busy_timeout={max(0, int(wait * 1000))}"))
        try:
            _guard(lambda: conn.execute("BEGIN IMMEDIATE"))
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")

    @contextmanager
    def read(self) -> Iterator[_SqliteTx]:
        conn = self._connect()
        if self._local.depth:
            with self._joined(_SqliteTx(conn)) as read_tx:
                yield read_tx
            return
        in_use = self._local.in_use
        with in_use:
            _guard(lambda: conn.execute("BEGIN"))  # deferred: a snapshot, no write lock
            self._local.depth, self._local.reading = 1, True
            try:
                yield _SqliteTx(conn)
            finally:
                self._local.depth, self._local.reading = 0, False
                _rollback(conn)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            in_use, self._in_use = self._in_use, {}
        for conn, lock in in_use.items():
            # A transaction running on another thread ends first; one that does not end within
            # CLOSE_WAIT leaves its connection open (a leak, where closing would crash).
            if lock.acquire(timeout=CLOSE_WAIT):
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
                finally:
                    lock.release()
        self._local = threading.local()
