"""Cosmos DB's argument rules, applied in front of any document store backend.

An item needs a non-empty string ``id``; a replacement keeps the id it replaces; a partition key
path is a JSON path starting with ``/``. The service answers these with 400 (BadRequest).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from funchost.documents.exceptions import CosmosBadRequestError
from funchost.storage.documents import DEFAULT_PARTITIONS, ContainerInfo, DocumentStore


def check_item(body: Mapping[str, Any]) -> None:
    item_id = body.get("id")
    if not isinstance(item_id, str) or not item_id:
        raise CosmosBadRequestError("the item needs a non-empty string 'id'")


def check_replacement(item_id: str, body: Mapping[str, Any]) -> None:
    if body.get("id") != item_id:
        raise CosmosBadRequestError("the replacement's 'id' must equal the item id")
    check_item(body)


def check_partition_key_path(path: str) -> None:
    if not isinstance(path, str) or not path.startswith("/"):
        raise CosmosBadRequestError(f"partition key path must start with '/', got {path!r}")


class ValidatingDocumentStore:
    """`DocumentStore` with the rules above checked before the backend is called."""

    def __init__(self, inner: DocumentStore) -> None:
        self.inner = inner
        self.name = inner.name
        self.endpoint_host = inner.endpoint_host
        # Calls without arguments to check go straight to the backend.
        self.create_database = inner.create_database
        self.get_database = inner.get_database
        self.list_databases = inner.list_databases
        self.delete_database = inner.delete_database
        self.get_container = inner.get_container
        self.list_containers = inner.list_containers
        self.delete_container = inner.delete_container
        self.partition_ranges = inner.partition_ranges
        self.read_item = inner.read_item
        self.delete_item = inner.delete_item
        self.query_items = inner.query_items
        self.latest_lsn = inner.latest_lsn
        self.read_feed = inner.read_feed
        self.aclose = inner.aclose

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
        check_partition_key_path(partition_key_path)
        return await self.inner.create_container(database, name, partition_key_path=partition_key_path,
                                                 partitions=partitions, default_ttl=default_ttl, exist_ok=exist_ok)

    async def create_item(self, database: str, container: str, body: Mapping[str, Any]) -> dict[str, Any]:
        check_item(body)
        return await self.inner.create_item(database, container, body)

    async def upsert_item(self, database: str, container: str, body: Mapping[str, Any], *,
                          if_match: str | None = None) -> dict[str, Any]:
        check_item(body)
        return await self.inner.upsert_item(database, container, body, if_match=if_match)

    async def replace_item(self, database: str, container: str, item_id: str, body: Mapping[str, Any], *,
                           if_match: str | None = None) -> dict[str, Any]:
        check_replacement(item_id, body)
        return await self.inner.replace_item(database, container, item_id, body, if_match=if_match)

