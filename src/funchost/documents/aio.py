"""The asyncio client, like `azure.cosmos.aio.CosmosClient` (same names as the sync client).

Used by the change feed trigger, the Cosmos DB bindings and async user functions. It talks to a
`DocumentStore` (the port), whatever backend holds the documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from funchost.documents._base import NO_PARTITION_KEY, if_match, item_id, pk_path_of
from funchost.documents.query import parse_query
from funchost.storage.documents import DEFAULT_PARTITIONS, DocumentStore


class ContainerProxy:
    def __init__(self, store: DocumentStore, database: str, container: str) -> None:
        self.store = store
        self.id = container
        self.database = database

    async def read(self) -> dict[str, Any]:
        c = await self.store.get_container(self.database, self.id)
        return {"id": c.name, "_rid": c.rid, "partitionKey": {"paths": [c.partition_key_path], "kind": "Hash"},
                "defaultTtl": c.default_ttl, "physicalPartitions": c.partitions}

    async def create_item(self, body: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        return await self.store.create_item(self.database, self.id, dict(body))

    async def upsert_item(self, body: Mapping[str, Any], *, etag: str | None = None, match_condition: Any = None,
                          **kwargs: Any) -> dict[str, Any]:
        return await self.store.upsert_item(self.database, self.id, dict(body),
                                            if_match=if_match(etag, match_condition))

    async def replace_item(self, item: Any, body: Mapping[str, Any], *, etag: str | None = None,
                           match_condition: Any = None, **kwargs: Any) -> dict[str, Any]:
        return await self.store.replace_item(self.database, self.id, item_id(item), dict(body),
                                             if_match=if_match(etag, match_condition))

    async def read_item(self, item: Any, partition_key: Any, **kwargs: Any) -> dict[str, Any]:
        return await self.store.read_item(self.database, self.id, item_id(item), partition_key)

    async def delete_item(self, item: Any, partition_key: Any, *, etag: str | None = None,
                          match_condition: Any = None, **kwargs: Any) -> None:
        await self.store.delete_item(self.database, self.id, item_id(item), partition_key,
                                     if_match=if_match(etag, match_condition))

    async def read_all_items(self, max_item_count: int | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        return await self.store.query_items(self.database, self.id)

    async def query_items(self, query: str, parameters: Iterable[Mapping[str, Any]] | None = None,
                          partition_key: Any = NO_PARTITION_KEY, enable_cross_partition_query: bool | None = None,
                          **kwargs: Any) -> list[dict[str, Any]]:
        parsed = parse_query(query, parameters)
        has_pk = partition_key is not NO_PARTITION_KEY
        return await self.store.query_items(self.database, self.id, equals=parsed.equals, id_prefix=parsed.id_prefix,
                                            partition_key=partition_key if has_pk else None,
                                            has_partition_key=has_pk)


class DatabaseProxy:
    def __init__(self, store: DocumentStore, database: str) -> None:
        self.store = store
        self.id = database

    def get_container_client(self, container: str) -> ContainerProxy:
        return ContainerProxy(self.store, self.id, container)

    async def create_container(self, id: str, partition_key: Any = "/id", *, default_ttl: int | None = None,
                               partitions: int = DEFAULT_PARTITIONS, **kwargs: Any) -> ContainerProxy:
        await self.store.create_container(self.id, id, partition_key_path=pk_path_of(partition_key),
                                          partitions=partitions, default_ttl=default_ttl)
        return self.get_container_client(id)

    async def create_container_if_not_exists(self, id: str, partition_key: Any = "/id", *,
                                             default_ttl: int | None = None, partitions: int = DEFAULT_PARTITIONS,
                                             **kwargs: Any) -> ContainerProxy:
        await self.store.create_container(self.id, id, partition_key_path=pk_path_of(partition_key),
                                          partitions=partitions, default_ttl=default_ttl, exist_ok=True)
        return self.get_container_client(id)

    async def list_containers(self) -> list[dict[str, Any]]:
        infos = await self.store.list_containers(self.id)
        return [{"id": c.name, "_rid": c.rid, "partitionKey": {"paths": [c.partition_key_path]}} for c in infos]

    async def delete_container(self, container: str) -> None:
        await self.store.delete_container(self.id, container)


class CosmosClient:
    """``CosmosClient(store)``; for an app's embedded data use `funchost.documents.connect()`."""

    def __init__(self, store: DocumentStore) -> None:
        self.store = store

    def get_database_client(self, database: str) -> DatabaseProxy:
        return DatabaseProxy(self.store, database)

    async def create_database(self, id: str, **kwargs: Any) -> DatabaseProxy:
        await self.store.create_database(id)
        return self.get_database_client(id)

    async def create_database_if_not_exists(self, id: str, **kwargs: Any) -> DatabaseProxy:
        await self.store.create_database(id, exist_ok=True)
        return self.get_database_client(id)

    async def list_databases(self) -> list[dict[str, Any]]:
        return [{"id": n} for n in await self.store.list_databases()]

    async def delete_database(self, database: str) -> None:
        await self.store.delete_database(database)
