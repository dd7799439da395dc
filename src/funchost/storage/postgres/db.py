"""One PostgreSQL server as the ports use it: an async pool for the hot paths, a thread with sync
connections for ports whose multi-statement logic is shared with the embedded store, one error map.

`transaction()` and `run()` both give READ COMMITTED transactions. Errors are translated at this
edge (style principle 8): connection loss, serialization failures, deadlocks, lock and statement
time-outs become a retryable `StorageError` (ServerBusy, 503), as the SQLite edge does for a busy
file; anything else is a bug or a constraint a port turns into its own error.

Time (docs/postgres.md, "Clocks"): hosts on several machines never compare their own clocks.
`server_time(clock)` is the `now` a statement should use: None for the host's real clock, which
the SQL replaces with the server's `clock_timestamp()` (`NOW_SQL`); the clock's own time for a
`ManualClock` (the contract suites and `funchost.testing` move time by hand). `ServerClock` is a
host clock corrected by the server's offset, for ports that compute times in Python.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from funchost.clock import Clock, SystemClock
from funchost.errors import StorageError
from funchost.runtime.activity import busy
from funchost.settings.postgres import PostgresConfig
from funchost.storage.postgres.connect import connect_kwargs, connect_sync, statement_failed, unreachable
from funchost.storage.postgres.hot import HotStatements
from funchost.storage.postgres.migrate import migrate
from funchost.thread_pool import ThreadPool

T = TypeVar("T")

# `now` in epoch seconds: the caller's (ManualClock) or the server's. Use with a `now` parameter.
NOW_SQL = "coalesce(%(now)s::float8, extract(epoch FROM clock_timestamp()))"


def server_time(clock: Clock) -> float | None:
    """The `now` parameter for NOW_SQL: None (the server's clock) unless time is driven by hand."""
    return None if isinstance(clock, SystemClock | ServerClock) else clock.now().timestamp()


def translate(config: PostgresConfig, exc: BaseException) -> StorageError:
    """A driver error as the ports' error tree: retryable ServerBusy for what passes by itself."""
    import psycopg
    from psycopg import errors

    if isinstance(exc, psycopg.OperationalError) and not isinstance(
            exc, errors.QueryCanceled | errors.LockNotAvailable | errors.SerializationFailure
            | errors.DeadlockDetected):
        return unreachable(config, exc)
    if isinstance(exc, psycopg.errors.QueryCanceled | errors.LockNotAvailable | errors.SerializationFailure
                  | errors.DeadlockDetected | errors.AdminShutdown | errors.CannotConnectNow):
        return statement_failed(exc, passes=True)
    if isinstance(exc, psycopg.InterfaceError):  # the connection was closed under us
        return unreachable(config, exc)
    return statement_failed(exc, passes=False)


class PgDatabase:
    """The server of one backend: opened lazily, closed with the backend."""

    def __init__(self, config: PostgresConfig, *, role: str = "host", min_size: int = 1, max_size: int = 8) -> None:
        self.config = config
        self._role = role
        self._sizes = (min_size, max_size)
        self._pool: Any = None
        self._pool_lock = asyncio.Lock()
        self._hot = HotStatements.for_config(config, role)
        self._threads = ThreadPool(4, "postgres")
        self._local = threading.local()
        self._sync: list[Any] = []
        self._sync_lock = threading.Lock()
        self._closed = False

    # -- schema ----------------------------------------------------------------------------------

    def migrate(self, component: str, steps: list[str]) -> int:
        """Bring `component`'s tables up to date (sync: call from `run_sync` or at open)."""
        conn = connect_sync(self.config, f"{self._role}-migrate")
        try:
            return migrate(conn, self.config.schema, component, steps)
        except StorageError:
            raise
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error):
                raise translate(self.config, exc) from exc
            raise
        finally:
            conn.close()

    # -- async pool ------------------------------------------------------------------------------

    async def pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self._pool is None:
                if self._closed:
                    raise StorageError("the PostgreSQL backend is closed", code="InternalError")
                from psycopg_pool import AsyncConnectionPool

                kwargs = dict(connect_kwargs(self.config, self._role), autocommit=True)
                kwargs["options"] += f" -c search_path={self.config.schema}"
                pool = AsyncConnectionPool(self.config.conninfo, min_size=self._sizes[0], max_size=self._sizes[1],
                                           kwargs=kwargs, open=False, timeout=30.0, reconnect_timeout=0)
                await pool.open()
                self._pool = pool
        return self._pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """An autocommit connection of the pool (each statement its own transaction)."""
        import psycopg

        pool = await self.pool()
        try:
            with busy():
                async with pool.connection() as conn:
                    yield conn
        except psycopg.Error as exc:
            raise translate(self.config, exc) from exc
        except TimeoutError as exc:  # the pool found no connection in time: the server is away
            raise StorageError(f"no PostgreSQL connection within 30s ({self.config.describe()})",
                               code="ServerBusy", status=503) from exc

    async def rows(self, statement: str, args: dict[str, Any], *, prepare: bool | None = None) -> list[Any]:
        """The rows of one statement on a pool connection (none for a statement without columns)."""
        async with self.connection() as conn:
            cursor = await conn.execute(statement, args, prepare=prepare)
            # `pgresult.nfields`, not `description`: that builds a column object per field each call
            result = cursor.pgresult
            return list(await cursor.fetchall()) if result is not None and result.nfields else []

    async def hot_rows(self, statement: str, args: dict[str, Any]) -> list[Any]:
        """`rows()` for the queue's per-message statements: on asyncpg where it connects as libpq
        would (`hot`), the rows indexable and unpackable as psycopg's tuples."""
        if self._hot is None:
            return await self.rows(statement, args)
        return await self._hot.rows(statement, args)  # closed with this database (`aclose`)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        """A connection inside one transaction, committed when the block ends without an error."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    # -- sync connections on threads -------------------------------------------------------------

    async def run(self, fn: Callable[[Any], T]) -> T:
        """`fn(conn)` in one transaction on a thread with its own sync connection: for ports whose
        check-then-write logic is written once as sync code (the embedded store's shape)."""
        if self._closed:
            raise StorageError("the PostgreSQL backend is closed", code="InternalError")
        with busy():
            return await self._threads.run(self.run_sync, fn)

    def run_sync(self, fn: Callable[[Any], T]) -> T:
        import psycopg

        conn = self._thread_connection()
        try:
            with conn.transaction():
                return fn(conn)
        except psycopg.Error as exc:
            # A connection the server ended (a restart answers the next statement with
            # AdminShutdown before psycopg marks it broken) is not used again.
            if conn.broken or conn.closed or isinstance(exc, psycopg.OperationalError):
                self._drop_thread_connection()
            raise translate(self.config, exc) from exc

    def _thread_connection(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        from psycopg import sql as pgsql

        conn = connect_sync(self.config, self._role)
        conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(self.config.schema)))
        self._local.conn = conn
        with self._sync_lock:
            self._sync.append(conn)
        return conn

    def _drop_thread_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._sync_lock:
                if conn in self._sync:
                    self._sync.remove(conn)
            conn.close()

    # -- clocks ----------------------------------------------------------------------------------

    def server_offset(self) -> float:
        """Server clock minus this host's clock, in seconds (half the round trip is the error)."""
        conn = connect_sync(self.config, f"{self._role}-clock")
        try:
            before = time.time()
            row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
            after = time.time()
        finally:
            conn.close()
        return float(row[0]) - (before + after) / 2

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._hot is not None:
            await self._hot.aclose()
        if self._pool is not None:
            await self._pool.close()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._close_sync)
        self._threads.shutdown()

    def _close_sync(self) -> None:
        with self._sync_lock:
            conns, self._sync = self._sync, []
        for conn in conns:
            try:
                conn.close()
            except Exception:  # closing a broken connection: nothing left to release
                pass


class ServerClock(SystemClock):
    """The host's clock moved by the server's offset: the times a Python-side port writes agree
    with the server's clock and with every other host's (skew cancels; the error is half a round
    trip). Measured when made; re-measured every `refresh` seconds on a thread of its own, so
    `now()` never waits for the server."""

    def __init__(self, database: PgDatabase, refresh: float = 60.0) -> None:
        self._database = database
        self._refresh = refresh
        self._offset = database.server_offset()
        self._measured = time.monotonic()
        self._measuring = threading.Lock()

    def now(self) -> datetime:
        if time.monotonic() - self._measured > self._refresh and self._measuring.acquire(blocking=False):
            self._measured = time.monotonic()
            threading.Thread(target=self._remeasure, name="postgres-clock", daemon=True).start()
        return datetime.now(timezone.utc) + timedelta(seconds=self._offset)

    def _remeasure(self) -> None:
        try:
            self._offset = self._database.server_offset()
        except Exception:  # the server is away: keep the last offset (its writes fail anyway)
            pass
        finally:
            self._measuring.release()

