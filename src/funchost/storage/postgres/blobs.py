"""`--storage postgres` blobs: the embedded store's Blob API, change journal and leases
(`blobsql.SqlBlobAccount`, one implementation of the rules) running on PostgreSQL tables, one schema
per account, through `PgScopedDatabase` (writes serialized per account across hosts, reads from
one snapshot). Times computed in Python come from the backend's clock: a `ServerClock` (the
server's time) unless a `ManualClock` drives the host.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from funchost.clock import Clock
from funchost.storage.blobs import BlobChange, BlobChangeListener, BlobProperties
from funchost.storage.blobsql import blob_uploads as uploads
from funchost.storage.blobsql.blob_account import SqlBlobAccount
from funchost.storage.postgres.blob_feed import BATCH, RemoteChanges, blob_channel
from funchost.storage.postgres.blob_schema import STEPS, account_schema
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.scoped import PgScopedDatabase
from funchost.storage.sqlconn import Conn, StoreDatabase

T = TypeVar("T")


class PostgresBlobAccount(SqlBlobAccount):
    """`BlobService`, `BlobApi` and `BlobChangeJournal` of one account on the server."""

    def __init__(self, database: PgDatabase, account: str, clock: Clock) -> None:
        self._database = database
        super().__init__(Path(account), account, clock)  # `_open` below: no folder of its own
        self._channel = blob_channel(database.config.schema)
        self._remote = RemoteChanges(database.config, account, lambda cursor: self.changes_since(cursor, BATCH),
                                     self.current_cursor, self._deliver)

    def _open(self, path: Path, name: str) -> StoreDatabase:
        return PgScopedDatabase(self._database, account_schema(self._database.config.schema, self.account_name),
                                "blobs", STEPS, what=f"blob account '{self.account_name}'", prepare=uploads.sweep)

    async def _snapshot(self, fn: Callable[[Conn], T]) -> T:
        return await self._db.read(fn)  # every read is one REPEATABLE READ snapshot

    # -- subscribers on every host ----------------------------------------------------------------

    def _journal(self, conn: Conn, kind: str, api: str, props: BlobProperties | None,
                 container: str | None = None, name: str | None = None) -> BlobChange:
        change = super()._journal(conn, kind, api, props, container, name)
        conn.execute("SELECT pg_notify(?, ?)", (self._channel, self.account_name))  # sent at commit
        self._remote.published(change)  # before the commit: the listener never hands it out again
        return change

    def _deliver(self, change: BlobChange) -> None:
        super()._publish(change)

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        """In this process as embedded; while there are subscribers, also other hosts' changes."""
        unsubscribe = super().subscribe(listener)
        try:
            self._remote.start()
        except RuntimeError:  # no running loop (a sync caller): this process's changes only
            pass

        def done() -> None:
            unsubscribe()
            if not self._listeners:
                try:
                    asyncio.get_running_loop().create_task(self._remote.stop())
                except RuntimeError:  # no running loop: nothing was started from here
                    pass

        return done

    async def aclose(self) -> None:
        await self._remote.stop()
        await super().aclose()
