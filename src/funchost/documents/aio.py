"""The asyncio client, like `azure.cosmos.aio.CosmosClient` (same names as the sync client).

Used by the change feed trigger, the Cosmos DB bindings and async user functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from funchost.documents._base import _NO_PK, DEFAULT_PARTITIONS, ContainerOps, pk_path_of

if TYPE_CHECKING:
    from funchost.storage.sqlite.documents import ContainerInfo, SqliteDocumentStore


class ContainerProxy:
    def __init__(self, store: SqliteDocumentStore, database: str, container: str) -> None:
        self._ops = ContainerOps(store, database, container)
        self._store = store
        self.id = container
        self.database = database

    async def read(self) -> dict[str, Any]:
        return await self._store.run(self._ops.read())

    async def create_item(self, body: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        return await self._store.run(self._ops.create_item(body))

    async def upsert_item(self, body: Mapping[str, Any], *, etag: str | None = None, match_condition: Any = None,
                    **kwargs: Any) -> dict[str, Any]:
        return await self._store.run(self._ops.upsert_item(body, etag, match_condition))

    async def replace_item(self, item: Any, body: Mapping[str, Any], *, etag: str | None = None,
                     match_condition: Any = None, **kwargs: Any) -> dict[str, Any]:
        return await self._store.run(
            self._ops.replace_item(item, body, etag, match_condition))

    async def read_item(self, item: Any, partition_key: Any, **kwargs: Any) -> dict[str, Any]:
        return await self._store.run(self._ops.read_item(item, partition_key))

    async def delete_item(self, item: Any, partition_key: Any, *, etag: str | None = None, match_condition: Any = None,
                    **kwargs: Any) -> None:
        await self._store.run(self._ops.delete_item(item, partition_key, etag, match_condition))

    async def read_all_items(self, max_item_count: int | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        return await self._store.run(self._ops.read_all_items())

    async def query_items(self, query: str, parameters: Iterable[Mapping[str, Any]] | None = None,
                    partition_key: Any = _NO_PK, enable_cross_partition_query: bool | None = None,
                    **kwargs: Any) -> list[dict[str, Any]]:
        has_pk = partition_key is not _NO_PK
        return await self._store.run(
            self._ops.query_items(query, parameters, partition_key if has_pk else None, has_pk))


class DatabaseProxy:
    def __init__(self, store: SqliteDocumentStore, database: str) -> None:
        self._store = store
        self.id = database

    def get_container_client(self, container: str) -> ContainerProxy:
        return ContainerProxy(self._store, self.id, container)

    async def create_container(self, id: str, partition_key: Any = "/id", *, default_ttl: int | None = None,
                         partitions: int = DEFAULT_PARTITIONS, **kwargs: Any) -> ContainerProxy:
        await self._create(id, partition_key, default_ttl, partitions, exist_ok=False)
        return self.get_container_client(id)

    async def create_container_if_not_exists(self, id: str, partition_key: Any = "/id", *,
                                       default_ttl: int | None = None, partitions: int = DEFAULT_PARTITIONS,
                                       **kwargs: Any) -> ContainerProxy:
        await self._create(id, partition_key, default_ttl, partitions, exist_ok=True)
        return self.get_container_client(id)

    async def _create(self, id: str, partition_key: Any, default_ttl: int | None, partitions: int,
                *, exist_ok: bool) -> ContainerInfo:
        path = pk_path_of(partition_key)
        return await self._store.run(lambda conn: self._store.create_container(
            conn, self.id, id, partition_key_path=path, partitions=partitions, default_ttl=default_ttl,
            exist_ok=exist_ok))

    async def list_containers(self) -> list[dict[str, Any]]:
        infos = await self._store.run(lambda conn: self._store.list_containers(conn, self.id))
        return [{"id": c.name, "_rid": c.rid, "partitionKey": {"paths": [c.partition_key_path]}} for c in infos]

    async def delete_container(self, container: str) -> None:
        await self._store.run(lambda conn: self._store.delete_container(conn, self.id, container))


class CosmosClient:
    """``CosmosClient(store)``; for an app's embedded data use `funchost.documents.connect()`."""

    def __init__(self, store: SqliteDocumentStore) -> None:
        self._store = store

    def get_database_client(self, database: str) -> DatabaseProxy:
        return DatabaseProxy(self._store, database)

    async def create_database(self, id: str, **kwargs: Any) -> DatabaseProxy:
        await self._store.run(lambda conn: self._store.create_database(conn, id))
        return self.get_database_client(id)

    async def create_database_if_not_exists(self, id: str, **kwargs: Any) -> DatabaseProxy:
        await self._store.run(lambda conn: self._store.create_database(conn, id, exist_ok=True))
        return self.get_database_client(id)

    async def list_databases(self) -> list[dict[str, Any]]:
        return [{"id": n} for n in await self._store.run(self._store.list_databases)]

    async def delete_database(self, database: str) -> None:
        await self._store.run(lambda conn: self._store.delete_database(conn, database))
