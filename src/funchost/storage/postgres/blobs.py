"""`--storage postgres` blobs: the embedded store's Blob API, change journal and leases
(`SqliteBlobAccount`, one implementation of the rules) running on PostgreSQL tables, one schema
per account, through `PgAccountDatabase` (writes serialized per account across hosts, reads from
one snapshot). Times computed in Python come from the backend's clock: a `ServerClock` (the
server's time) unless a `ManualClock` drives the host.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from funchost.clock import Clock
from funchost.storage.blobs import BlobChangeListener
from funchost.storage.postgres.blob_database import PgAccountDatabase
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.sqlite.blob_account import SqliteBlobAccount
from funchost.storage.sqlite.blob_conn import Conn

T = TypeVar("T")


class PostgresBlobAccount(SqliteBlobAccount):
    """`BlobService`, `BlobApi` and `BlobChangeJournal` of one account on the server."""

    def __init__(self, database: PgDatabase, account: str, clock: Clock) -> None:
        # not super().__init__: that opens the account's SQLite file
        self.account_name = account
        self.clock = clock
        self._db = PgAccountDatabase(database, account)
        self._listeners: list[BlobChangeListener] = []

    async def _snapshot(self, fn: Callable[[Conn], T]) -> T:
        return await self._db.read(fn)  # every read is one REPEATABLE READ snapshot
