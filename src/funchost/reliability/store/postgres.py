"""PostgreSQL jobs database (psycopg 3), for several hosts sharing one set of jobs.

Same repository SQL as SQLite. Row leasing uses `FOR UPDATE SKIP LOCKED` so concurrent
dispatchers skip each other's rows instead of waiting; conditional updates rely on the row lock
PostgreSQL takes for UPDATE (READ COMMITTED re-checks the WHERE clause after a wait).
One connection per thread, autocommit outside explicit transactions. `schema` (optional) selects
a PostgreSQL schema, created if missing, so several apps or test runs can share one database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from funchost.reliability.errors import JobStoreError, StoreUnavailable
from funchost.reliability.store.db import Database, Row

try:
    import psycopg
    from psycopg import sql as pgsql
    from psycopg.rows import dict_row
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("PostgreSQL support needs psycopg 3: pip install 'psycopg[binary]'") from exc

MIGRATION_LOCK_KEY = 0x66756E63  # arbitrary constant: "func"


def _translate(exc: Exception) -> JobStoreError:
    if isinstance(exc, psycopg.OperationalError | psycopg.errors.SerializationFailure
                  | psycopg.errors.DeadlockDetected | psycopg.errors.LockNotAvailable):
        return StoreUnavailable(f"postgres: {exc}")
    return JobStoreError(f"postgres: {exc}")


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self._conn = conn

    def _run(self, sql: str, params: Sequence[Any]) -> psycopg.Cursor[Row]:
        try:
            return self._conn.execute(sql.replace("?", "%s"), list(params))
        except psycopg.Error as exc:
            raise _translate(exc) from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._run(sql, params).rowcount

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self._run(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._run(sql, params).fetchall()


class PostgresDatabase(Database):
    name = "postgres"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    lock_row = " FOR UPDATE"

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: int = 10) -> None:
        self.dsn = dsn
        self.schema = schema
        self._connect_timeout = connect_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[psycopg.Connection[Row]] = []
        self._closed = False

    def migration_lock(self) -> str:
        return f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"

    def _connect(self) -> psycopg.Connection[Row]:
        conn: psycopg.Connection[Row] | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if self._closed:
            raise JobStoreError("the jobs database is closed")
        try:
            conn = psycopg.connect(
                self.dsn, autocommit=True, row_factory=dict_row, connect_timeout=self._connect_timeout
            )
            if self.schema:
                ident = pgsql.Identifier(self.schema)
                try:
                    conn.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateSchema):
                    # IF NOT EXISTS is not atomic: a host creating the same schema at the same
                    # moment makes this one fail on the catalog's unique index. It exists now.
                    pass
                conn.execute(pgsql.SQL("SET search_path TO {}").format(ident))
        except psycopg.Error as exc:
            raise _translate(exc) from exc
        self._local.conn = conn
        self._local.depth = 0
        with self._lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[_PgTx]:
        conn = self._connect()
        if self._local.depth:
            with self._joined(_PgTx(conn)) as tx:
                yield tx
            return
        self._local.depth = 1
        limit = self._wait_limit()
        try:
            with conn.transaction():
                if limit is not None:  # a row lock held by a stalled host: fail fast (bounded_wait)
                    conn.execute(pgsql.SQL("SET LOCAL lock_timeout = {}").format(
                        pgsql.Literal(f"{max(1, int(limit * 1000))}ms")))
                yield _PgTx(conn)
        except psycopg.Error as exc:
            raise _translate(exc) from exc
        finally:
            self._local.depth = 0

    @contextmanager
    def read(self) -> Iterator[_PgTx]:
        """Reads in autocommit mode: one round trip per statement, no BEGIN/COMMIT."""
        yield _PgTx(self._connect())

    def close(self) -> None:
        self._closed = True
        self._close_connections(psycopg.Error)
