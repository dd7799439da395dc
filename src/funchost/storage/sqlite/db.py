"""One SQLite database file, used from asyncio without blocking the loop.

Statements run on a single dedicated thread per database object (SQLite connections are not
shareable across threads, and one writer thread avoids lock ping-pong inside a process).
Several processes may open the same file: WAL journal, `BEGIN IMMEDIATE` for writes, and a
busy timeout make them take turns safely; the first open is retried while another process
converts the file or creates the schema (`funchost.sqlite_open`).

Quick statements (`db.quick`: bounded work such as a queue receive of at most 32 rows, a
delete, a put) run on the calling loop's own connection instead, without the hop to the file's
thread and back: that hop cost two thread wake-ups and turns of the GIL, more than the statement
(a queue drain spent 27-31 µs per message on the file's thread, most of it switching, against
74 µs per message in all with the statements on the loop). That connection never waits: its
busy timeout is 0. A write lock held by another process or by the file's thread is tried again
on the loop's next LOCK_TRIES_ON_LOOP turns, each after the loop's other ready work: another
host's transaction on the same file mostly ends within them (a group of queue deletes takes a
few hundred µs), and the file's thread would have waited at least 1 ms (SQLite's busy handler
sleeps 1, 2, 5, 10... ms) besides the two thread wake-ups. A lock held longer sends the statement
to the file's thread, which waits for it as before. That connection never checkpoints either
(an fsync on the loop); the file's thread checkpoints every CHECKPOINT_EVERY commits made on
the loop. Unbounded work (purges, clearing a queue, counts) stays on the file's thread.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from funchost.errors import StorageError
from funchost.private_files import private_sqlite_file
from funchost.runtime.activity import busy
from funchost.sqlite_open import connect_wal, is_busy
from funchost.thread_pool import ThreadPool

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
CHECKPOINT_EVERY = 64  # commits on the loop's connection between checkpoints on the file's thread
LOCK_TRIES_ON_LOOP = 10  # the loop's next turns a quick write tries the held write lock on again

log = logging.getLogger("funchost.storage")


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
        self.quick = QuickStatements(self)
        self._loop_conn: sqlite3.Connection | None = None  # the quick statements' connection
        self._loop_thread: int | None = None  # the one thread that uses it (its loop's)
        self._loop_commits = 0  # since the last checkpoint
        self._checkpoint: asyncio.Future[None] | None = None

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
        self._check_open()
        with _translated(), busy():
            return await self._thread.run(fn)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("database is closed", code="InternalError")

    # -- quick statements on the loop's connection -------------------------------------------------

    def _loop_connection(self) -> sqlite3.Connection | None:
        """The calling thread's quick connection, or None: not opened yet (the first call opens it
        on the file's thread, which connects and creates the schema with the usual waits), or
        another thread's. One connection serves one thread, so transactions never interleave."""
        self._check_open()
        conn = self._loop_conn
        if conn is not None:
            return conn if threading.get_ident() == self._loop_thread else None
        if self._loop_thread is None:
            self._loop_thread = threading.get_ident()
            self._thread.run(self._open_loop_connection).add_done_callback(self._loop_connection_opened)
        return None

    def _open_loop_connection(self) -> sqlite3.Connection:
        conn = connect_wal(self.path, busy_timeout=BUSY_TIMEOUT_MS / 1000, setup=self._setup,
                           page_size=self._page_size)
        conn.execute("PRAGMA busy_timeout=0")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        self._connections.append(conn)
        return conn

    def _loop_connection_opened(self, opened: asyncio.Future[sqlite3.Connection]) -> None:
        if opened.cancelled() or opened.exception() is not None:
            self._loop_thread = None  # the next quick call tries again; this one went to the thread
            return
        self._loop_conn = opened.result()

    def _committed_on_loop(self) -> None:
        self._loop_commits += 1
        if self._loop_commits >= CHECKPOINT_EVERY and self._checkpoint is None and not self._closed:
            self._loop_commits = 0
            self._checkpoint = self._thread.run(self._checkpoint_wal)
            self._checkpoint.add_done_callback(self._checkpointed)

    def _checkpoint_wal(self) -> None:
        # PASSIVE: copies what no reader still needs, never waits for readers or writers.
        self._connect().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _checkpointed(self, done: asyncio.Future[None]) -> None:
        self._checkpoint = None
        if not done.cancelled() and done.exception() is not None:
            log.debug("checkpoint of %s failed: %s", self.path.name, done.exception())

    async def _read_quick(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._loop_connection()
        if conn is not None:
            try:
                return fn(conn)
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise _storage_error(exc) from exc
                # A read meets a lock only in rare states (WAL recovery): it waits on the thread.
        return await self.read(fn)

    async def _write_quick(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._loop_connection()
        if conn is None:
            return await self.write(fn)
        if not _begin_now(conn) and not await self._begun_on_later_turns(conn):
            return await self.write(fn)  # another writer holds the file: wait for it on the thread
        with _translated(), _transaction(conn):
            result = fn(conn)
        self._committed_on_loop()
        return result

    async def _begun_on_later_turns(self, conn: sqlite3.Connection) -> bool:
        """BEGIN IMMEDIATE on the loop's connection, tried on the loop's next LOCK_TRIES_ON_LOOP
        turns: False if the write lock stayed held (module docstring)."""
        for _ in range(LOCK_TRIES_ON_LOOP):
            await asyncio.sleep(0)  # the loop's other ready work runs first
            self._check_open()  # the file may have been closed meanwhile
            if _begin_now(conn):
                return True
        return False

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


class QuickStatements:
    """`db.quick.read(fn)` / `db.quick.write(fn)`: bounded work on the loop's own connection,
    the file's thread when that would wait (module docstring). A `Writer` for `WriteGroup`."""

    __slots__ = ("_db",)

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def read(self, fn: Callable[[sqlite3.Connection], T], /) -> T:
        return await self._db._read_quick(fn)

    async def write(self, fn: Callable[[sqlite3.Connection], T], /) -> T:
        return await self._db._write_quick(fn)


def _begin_now(conn: sqlite3.Connection) -> bool:
    """BEGIN IMMEDIATE on a connection that never waits (busy timeout 0): False while another
    connection holds the write lock. In WAL mode this is the one statement that may meet a lock."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise _storage_error(exc) from exc
        return False
    return True


def _storage_error(exc: sqlite3.OperationalError) -> StorageError:
    return StorageError(str(exc), code="ServerBusy", status=503)


@contextmanager
def _translated() -> Iterator[None]:
    """SQLite's operational errors (a lock held past the busy timeout, a full disk) as storage
    errors, 503: translated at the edge."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise _storage_error(exc) from exc


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """COMMIT on success, ROLLBACK on any error (the transaction is already begun)."""
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # the function failed, or the commit did (a full disk)
            conn.execute("ROLLBACK")
        raise


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE, then `_transaction`'s COMMIT / ROLLBACK (isolation_level=None)."""
    conn.execute("BEGIN IMMEDIATE")
    with _transaction(conn):
        yield conn


def _split(schema: str) -> list[str]:
    return [s.strip() for s in schema.split(";") if s.strip()]
