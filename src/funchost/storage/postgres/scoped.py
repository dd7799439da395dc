"""One store's transactions on PostgreSQL (a blob account, or any store whose rules are written
once for both backends, `storage/sqlconn.py`), with the guarantees the embedded store's logic was
written for (`SqliteDatabase`: BEGIN IMMEDIATE writes, snapshot reads):

* the store has a schema of its own (its tables under the names the shared SQL uses), migrated
  once per process under the migrations' advisory lock;
* a write takes the store's transaction-level advisory lock first, so writes to one store run
  one at a time across every host, as on one SQLite file; check-then-write logic and counters
  (content ids, ETags, sequence numbers) stay race-free, and numbers a write gives out (the blob
  change journal's) come in commit order without gaps;
* a read runs REPEATABLE READ, READ ONLY: one snapshot, never blocked by writers and never
  blocking them.

A host frozen while holding the lock holds it until `idle_in_transaction_session_timeout`
ends its session; the others wait at most `lock_timeout` and then answer ServerBusy (503).

A transaction that fails with a 503 (that time-out, the server restarting, a connection it ended)
runs again, as the Azure SDKs' default retry policy does for a client (`postgres.retry`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from funchost.errors import ConfigError
from funchost.runtime.activity import busy
from funchost.storage.postgres.connect import connect_sync
from funchost.storage.postgres.db import PgDatabase, translate
from funchost.storage.postgres.migrate import migrate
from funchost.storage.postgres.retry import retried
from funchost.storage.postgres.sqlconn import PgConn
from funchost.storage.sqlconn import Conn

T = TypeVar("T")

LOCK_NAMESPACE = 0x66686262  # "fhbb": the stores' write locks (first used by the blob accounts)
_MAX_IDENTIFIER = 63  # PostgreSQL truncates longer names


class PgScopedDatabase:
    """`StoreDatabase` of one store in `schema`, its tables made by `steps` (component
    `component` of the migrations); `prepare(conn)` runs in the first write transaction of each
    process (e.g. dropping what an interrupted upload left behind)."""

    def __init__(self, database: PgDatabase, schema: str, component: str, steps: Sequence[str], *,
                 what: str, prepare: Callable[[Conn], None] | None = None) -> None:
        self._database = database
        self.schema = schema
        if len(schema.encode()) > _MAX_IDENTIFIER:
            raise ConfigError(f"the PostgreSQL schema of {what} ('{schema}') is longer than {_MAX_IDENTIFIER} bytes: "
                              "use a shorter FUNCHOST_POSTGRES_SCHEMA", path="FUNCHOST_POSTGRES_SCHEMA")
        self._component = component
        self._steps = list(steps)
        self._prepare = prepare
        self._ready = False
        self._ready_lock = threading.Lock()

    async def read(self, fn: Callable[[Conn], T], /) -> T:
        await self._ready_tables()
        return await retried(self._database.run, lambda conn: fn(self._begin(conn, write=False)))

    async def write(self, fn: Callable[[Conn], T], /) -> T:
        await self._ready_tables()
        return await retried(self._database.run, lambda conn: fn(self._begin(conn, write=True)))

    async def _ready_tables(self) -> None:
        """Migrate before the first transaction, so waiting for another host's migration never
        holds a transaction of ours open."""
        if not self._ready:
            with busy():
                await asyncio.get_running_loop().run_in_executor(None, self._ensure_tables)

    def _begin(self, conn: Any, *, write: bool) -> Conn:
        """The first statements of the transaction (one round trip): isolation, the store's
        schema, and for a write the store's lock."""
        from psycopg import sql as pgsql

        ident = pgsql.Identifier(self.schema)
        if write:
            statements = pgsql.SQL("SET LOCAL search_path TO {}; SELECT pg_advisory_xact_lock({}, hashtext({}))").format(
                ident, pgsql.Literal(LOCK_NAMESPACE), pgsql.Literal(self.schema))
        else:
            statements = pgsql.SQL("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                                   "SET LOCAL search_path TO {}").format(ident)
        conn.execute(statements)
        return PgConn(conn)

    def _ensure_tables(self) -> None:
        """Create or upgrade the store's tables once per process (on the database thread), then
        `prepare` in a write transaction."""
        if self._ready:
            return
        with self._ready_lock:
            if self._ready:
                return
            import psycopg

            conn = connect_sync(self._database.config, f"{self._component}-migrate")
            try:
                migrate(conn, self.schema, self._component, self._steps)
                if self._prepare is not None:
                    with conn.transaction():
                        self._prepare(self._begin(conn, write=True))
            except psycopg.Error as exc:
                raise translate(self._database.config, exc) from exc
            finally:
                conn.close()
            self._ready = True

    async def aclose(self) -> None:
        """Nothing of its own: the connections are the backend's `PgDatabase`'s."""
