"""A synchronous client with the method names of `azure.cosmos.CosmosClient`.

For user code (sync functions run on worker threads), scripts and the CLI. Every call is the
async client's (`funchost.documents.aio`) run to completion by `bridge.run_sync`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from funchost.documents import aio
from funchost.documents._base import NO_PARTITION_KEY
from funchost.documents.bridge import run_sync
from funchost.storage.documents import DEFAULT_PARTITIONS, DocumentStore


class ContainerProxy:
    def __init__(self, store: DocumentStore, database: str, container: str) -> None:
        self._aio = aio.ContainerProxy(store, database, container)
        self.id = container
        self.database = database

    def read(self) -> dict[str, Any]:
        return run_sync(self._aio.read())

    def create_item(self, body: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        return run_sync(self._aio.create_item(body))

    def upsert_item(self, body: Mapping[str, Any], *, etag: str | None = None, match_condition: Any = None,
                    **kwargs: Any) -> dict[str, Any]:
        return run_sync(self._aio.upsert_item(body, etag=etag, match_condition=match_condition))

    def replace_item(self, item: Any, body: Mapping[str, Any], *, etag: str | None = None,
                     match_condition: Any = None, **kwargs: Any) -> dict[str, Any]:
        return run_sync(self._aio.replace_item(item, body, etag=etag, match_condition=match_condition))

    def read_item(self, item: Any, partition_key: Any, **kwargs: Any) -> dict[str, Any]:
        return run_sync(self._aio.read_item(item, partition_key))

    def delete_item(self, item: Any, partition_key: Any, *, etag: str | None = None, match_condition: Any = None,
                    **kwargs: Any) -> None:
        run_sync(self._aio.delete_item(item, partition_key, etag=etag, match_condition=match_condition))

    def read_all_items(self, max_item_count: int | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        return run_sync(self._aio.read_all_items())

    def query_items(self, query: str, parameters: Iterable[Mapping[str, Any]] | None = None,
                    partition_key: Any = NO_PARTITION_KEY, enable_cross_partition_query: bool | None = None,
                    **kwargs: Any) -> list[dict[str, Any]]:
        return run_sync(self._aio.query_items(query, parameters, partition_key))


class DatabaseProxy:
    def __init__(self, store: DocumentStore, database: str) -> None:
        self._aio = aio.DatabaseProxy(store, database)
        self._store = store
        self.id = database

    def get_container_client(self, container: str) -> ContainerProxy:
        return ContainerProxy(self._store, self.id, container)

    def create_container(self, id: str, partition_key: Any = "/id", *, default_ttl: int | None = None,
                         partitions: int = DEFAULT_PARTITIONS, **kwargs: Any) -> ContainerProxy:
        run_sync(self._aio.create_container(id, partition_key, default_ttl=default_ttl, partitions=partitions))
        return self.get_container_client(id)

    def create_container_if_not_exists(self, id: str, partition_key: Any = "/id", *,
                                       default_ttl: int | None = None, partitions: int = DEFAULT_PARTITIONS,
                                       **kwargs: Any) -> ContainerProxy:
        run_sync(self._aio.create_container_if_not_exists(id, partition_key, default_ttl=default_ttl,
                                                          partitions=partitions))
        return self.get_container_client(id)

    def list_containers(self) -> list[dict[str, Any]]:
        return run_sync(self._aio.list_containers())

    def delete_container(self, container: str) -> None:
        run_sync(self._aio.delete_container(container))


class CosmosClient:
    """``CosmosClient(store)``; for an app's embedded data use `funchost.documents.connect()`."""

    def __init__(self, store: DocumentStore) -> None:
        self._aio = aio.CosmosClient(store)
        self._store = store

    def get_database_client(self, database: str) -> DatabaseProxy:
        return DatabaseProxy(self._store, database)

    def create_database(self, id: str, **kwargs: Any) -> DatabaseProxy:
        run_sync(self._aio.create_database(id))
        return self.get_database_client(id)

    def create_database_if_not_exists(self, id: str, **kwargs: Any) -> DatabaseProxy:
        run_sync(self._aio.create_database_if_not_exists(id))
        return self.get_database_client(id)

    def list_databases(self) -> list[dict[str, Any]]:
        return run_sync(self._aio.list_databases())

    def delete_database(self, database: str) -> None:
        run_sync(self._aio.delete_database(database))
