"""One SQLite database file, used from asyncio without blocking the loop.

All statements run on a single dedicated thread per database object (SQLite connections are
not shareable across threads, and one writer thread avoids lock ping-pong inside a process).
Several processes may open the same file: WAL journal, `BEGIN IMMEDIATE` for writes, and a
busy timeout make them take turns safely; the first open is retried while another process
converts the file or creates the schema (`funchost.sqlite_open`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from funchost.errors import StorageError
from funchost.private_files import private_sqlite_file
from funchost.runtime.activity import busy
from funchost.sqlite_open import connect_wal
from funchost.thread_pool import ThreadPool

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000


class SqliteDatabase:
    def __init__(self, path: Path, schema: str = "", *, name: str = "sqlite",
                 upgrade: Callable[[sqlite3.Connection], None] | None = None, page_size: int | None = None) -> None:
        """`upgrade` runs after `schema`, in the same write transaction (e.g. adding a column to a
        file created by an older version); `page_size` is the page size of a file created here."""
        self.path = private_sqlite_file(path)  # 0600, and so are its -wal / -shm files
        self._schema = schema
        self._upgrade = upgrade
        self._page_size = page_size
        self._thread = ThreadPool(1, f"{name}-db")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False

    # -- connection ------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_wal(self.path, busy_timeout=BUSY_TIMEOUT_MS / 1000, setup=self._setup,
                               page_size=self._page_size)
            self._local.conn = conn
            self._connections.append(conn)
        return conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.row_factory = sqlite3.Row
        # NORMAL is durable across process crashes in WAL mode (only an OS crash can lose
        # the last commits), which is the failure model of a local host.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        if self._schema:  # IF NOT EXISTS inside BEGIN IMMEDIATE: a racing creator is harmless
            with _immediate(conn):
                for statement in _split(self._schema):
                    conn.execute(statement)
                if self._upgrade is not None:
                    self._upgrade(conn)

    # -- running work ----------------------------------------------------------------------------

    def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` synchronously on the calling thread (CLI, tests, sync code)."""
        return fn(self._connect())

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._submit(lambda: fn(self._connect()))

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in one write transaction on the database thread."""

        def run() -> T:
            conn = self._connect()
            with _immediate(conn):
                return fn(conn)

        return await self._submit(run)

    async def _submit(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StorageError("database is closed", code="InternalError")
        try:
            with busy():
                return await self._thread.run(fn)
        except sqlite3.OperationalError as exc:  # translate at the edge
            raise StorageError(str(exc), code="ServerBusy", status=503) from exc

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._thread.run(self._close_all)
        self._thread.shutdown(wait=True)

    def close(self) -> None:
        self._closed = True
        self._thread.shutdown(wait=True)
        self._close_all()

    def _close_all(self) -> None:
        for conn in self._connections:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._connections.clear()


class _immediate:
    """BEGIN IMMEDIATE / COMMIT / ROLLBACK as a context manager (isolation_level=None)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")


def _split(schema: str) -> list[str]:
    return [s.strip() for s in schema.split(";") if s.strip()]
