"""One account's blob transactions on PostgreSQL, with the guarantees the embedded store's
logic was written for (`SqliteDatabase`: BEGIN IMMEDIATE writes, snapshot reads):

* a write takes the account's transaction-level advisory lock first, so writes to one account
  run one at a time across every host, as on one SQLite file; the check-then-write logic, the
  counters (content ids, ETags, version ids) and the change journal's numbers stay race-free,
  and journal numbers are given in commit order without gaps;
* a read runs REPEATABLE READ, READ ONLY: one snapshot for the blob row and its chunks, never
  blocked by writers and never blocking them.

A host frozen while holding the lock holds it until `idle_in_transaction_session_timeout`
ends its session; the others wait at most `lock_timeout` and then answer ServerBusy (503).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from funchost.errors import ConfigError
from funchost.runtime.activity import busy
from funchost.storage.blobsql import blob_uploads as uploads
from funchost.storage.blobsql.blob_conn import Conn
from funchost.storage.postgres.blob_conn import PgConn
from funchost.storage.postgres.blob_schema import STEPS, account_schema
from funchost.storage.postgres.connect import connect_sync
from funchost.storage.postgres.db import PgDatabase, translate
from funchost.storage.postgres.migrate import migrate

T = TypeVar("T")

_LOCK_NAMESPACE = 0x66686262  # "fhbb": the blob accounts' write locks
_MAX_IDENTIFIER = 63  # PostgreSQL truncates longer names


class PgAccountDatabase:
    def __init__(self, database: PgDatabase, account: str) -> None:
        self._database = database
        self.schema = account_schema(database.config.schema, account)
        if len(self.schema.encode()) > _MAX_IDENTIFIER:
            raise ConfigError(f"the PostgreSQL schema of blob account '{account}' ('{self.schema}') is longer than "
                              f"{_MAX_IDENTIFIER} bytes: use a shorter FUNCHOST_POSTGRES_SCHEMA",
                              path="FUNCHOST_POSTGRES_SCHEMA")
        self._ready = False
        self._ready_lock = threading.Lock()

    async def read(self, fn: Callable[[Conn], T], /) -> T:
        await self._ready_tables()
        return await self._database.run(lambda conn: fn(self._begin(conn, write=False)))

    async def write(self, fn: Callable[[Conn], T], /) -> T:
        await self._ready_tables()
        return await self._database.run(lambda conn: fn(self._begin(conn, write=True)))

    async def _ready_tables(self) -> None:
        """Migrate before the first transaction, so waiting for another host's migration never
        holds a transaction of ours open."""
        if not self._ready:
            with busy():
                await asyncio.get_running_loop().run_in_executor(None, self._ensure_tables)

    def _begin(self, conn: Any, *, write: bool) -> Conn:
        """The first statements of the transaction (one round trip): isolation, the account's
        schema, and for a write the account's lock."""
        from psycopg import sql as pgsql

        ident = pgsql.Identifier(self.schema)
        if write:
            statements = pgsql.SQL("SET LOCAL search_path TO {}; SELECT pg_advisory_xact_lock({}, hashtext({}))").format(
                ident, pgsql.Literal(_LOCK_NAMESPACE), pgsql.Literal(self.schema))
        else:
            statements = pgsql.SQL("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                                   "SET LOCAL search_path TO {}").format(ident)
        conn.execute(statements)
        return PgConn(conn)

    def _ensure_tables(self) -> None:
        """Create or upgrade the account's tables once per process (on the database thread), and
        drop request bodies an interrupted upload left behind."""
        if self._ready:
            return
        with self._ready_lock:
            if self._ready:
                return
            import psycopg

            conn = connect_sync(self._database.config, "blobs-migrate")
            try:
                migrate(conn, self.schema, "blobs", STEPS)
                with conn.transaction():
                    self._begin(conn, write=True)
                    uploads.sweep(PgConn(conn))
            except psycopg.Error as exc:
                raise translate(self._database.config, exc) from exc
            finally:
                conn.close()
            self._ready = True

    async def aclose(self) -> None:
        """Nothing of its own: the connections are the backend's `PgDatabase`'s."""
