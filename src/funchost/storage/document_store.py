"""The Cosmos DB-like document store in SQL, written once for both backends: the embedded file
(`sqlite/documents.py`) and PostgreSQL (`postgres/documents.py`) give it a database and run the
same statements (`document_sql`).

A container has a partition key path and a fixed number of physical partitions; an item lands in
the partition whose hash range holds the hash of its partition key value. Every write takes the
next LSN of that partition and only the latest version of an item is kept, which gives the
LatestVersion change feed for free (see `funchost.storage.documents`).

Each call is one transaction of the store's database. Writes run one at a time per store on both
backends. Reads run in write transactions on the embedded file (one state for a read of several
statements; reading an expired item deletes it, lazy TTL) and in one read-only snapshot on a
database that has them (`snapshot_reads`), where an expired item is left for the next write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from funchost.clock import Clock
from funchost.storage import document_sql as sql
from funchost.storage.documents import DEFAULT_PARTITIONS, ContainerInfo, FeedPage, PartitionRange
from funchost.storage.sqlconn import Conn, StoreDatabase

T = TypeVar("T")


class SqlDocumentStore:
    """`DocumentStore`: the documents of one account (one connection name) on the store's database."""

    snapshot_reads = False  # reads in the database's read-only snapshots instead of write transactions

    def __init__(self, db: StoreDatabase, name: str, clock: Clock) -> None:
        self.name = name
        self.clock = clock
        self.endpoint_host = "localhost"  # as the Cosmos DB emulator's endpoint
        self._db = db

    async def _read(self, fn: Callable[[Conn], T]) -> T:
        return await (self._db.read(fn) if self.snapshot_reads else self._db.write(fn))

    def _now(self) -> float:
        return self.clock.now().timestamp()

    async def aclose(self) -> None:
        await self._db.aclose()

    # -- databases ---------------------------------------------------------------------------------

    async def create_database(self, name: str, *, exist_ok: bool = False) -> dict[str, Any]:
        now = self._now()
        return await self._db.write(lambda c: sql.create_database(c, name, exist_ok, now))

    async def get_database(self, name: str) -> dict[str, Any]:
        return await self._read(lambda c: sql.get_database(c, name))

    async def list_databases(self) -> list[str]:
        return await self._read(sql.list_databases)

    async def delete_database(self, name: str) -> None:
        await self._db.write(lambda c: sql.delete_database(c, name))

    # -- containers --------------------------------------------------------------------------------

    async def create_container(
        self,
        database: str,
        name: str,
        *,
        partition_key_path: str = "/id",
        partitions: int = DEFAULT_PARTITIONS,
        default_ttl: int | None = None,
        exist_ok: bool = False,
    ) -> ContainerInfo:
        now = self._now()
        return await self._db.write(lambda c: sql.create_container(
            c, database, name, partition_key_path=partition_key_path, partitions=partitions,
            default_ttl=default_ttl, exist_ok=exist_ok, now=now))

    async def get_container(self, database: str, name: str) -> ContainerInfo:
        return await self._read(lambda c: sql.get_container(c, database, name))

    async def list_containers(self, database: str) -> list[ContainerInfo]:
        return await self._read(lambda c: sql.list_containers(c, database))

    async def delete_container(self, database: str, name: str) -> None:
        await self._db.write(lambda c: sql.delete_container(c, database, name))

    async def partition_ranges(self, database: str, container: str) -> list[PartitionRange]:
        info = await self.get_container(database, container)
        return sql.partition_ranges(info.partitions)

    # -- items -------------------------------------------------------------------------------------

    async def create_item(self, database: str, container: str, body: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        return await self._db.write(lambda c: sql.create_item(c, database, container, body, now))

    async def upsert_item(self, database: str, container: str, body: Mapping[str, Any], *,
                          if_match: str | None = None) -> dict[str, Any]:
        now = self._now()
        return await self._db.write(lambda c: sql.upsert_item(c, database, container, body, if_match, now))

    async def replace_item(self, database: str, container: str, item_id: str, body: Mapping[str, Any], *,
                           if_match: str | None = None) -> dict[str, Any]:
        now = self._now()
        return await self._db.write(lambda c: sql.replace_item(c, database, container, item_id, body, if_match, now))

    async def read_item(self, database: str, container: str, item_id: str, partition_key: Any) -> dict[str, Any]:
        now = self._now()
        purge = not self.snapshot_reads
        return await self._read(lambda c: sql.read_item(c, database, container, item_id, partition_key, now, purge))

    async def delete_item(self, database: str, container: str, item_id: str, partition_key: Any, *,
                          if_match: str | None = None) -> None:
        now = self._now()
        await self._db.write(lambda c: sql.delete_item(c, database, container, item_id, partition_key, if_match, now))

    async def query_items(
        self,
        database: str,
        container: str,
        *,
        equals: Mapping[str, Any] | None = None,
        id_prefix: str | None = None,
        partition_key: Any = None,
        has_partition_key: bool = False,
    ) -> list[dict[str, Any]]:
        now = self._now()
        return await self._read(lambda c: sql.query_items(
            c, database, container, equals=equals, id_prefix=id_prefix, partition_key=partition_key,
            has_partition_key=has_partition_key, now=now))

    # -- change feed -------------------------------------------------------------------------------

    async def latest_lsn(self, database: str, container: str, partition: int) -> int:
        return await self._read(lambda c: sql.latest_lsn(c, database, container, partition))

    async def read_feed(
        self,
        database: str,
        container: str,
        partition: int,
        *,
        after_lsn: int | None = None,
        start_time: datetime | None = None,
        max_items: int | None = None,
    ) -> FeedPage:
        now = self._now()
        return await self._read(lambda c: sql.read_feed(
            c, database, container, partition, after_lsn=after_lsn, start_time=start_time, max_items=max_items,
            now=now))
