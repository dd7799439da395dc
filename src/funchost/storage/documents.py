"""The document store Protocol (Cosmos DB-like): databases, containers, items, the change feed.

What the Cosmos DB bindings, the change feed trigger (listener, processor, leases, estimator),
the `funchost.documents` clients and the CLI use; a backend implements these calls and nothing
above it knows how documents are stored. Every call is one atomic operation.

A container has a partition key path and a fixed number of physical partitions, each with its
own LSN: every write (create, replace, upsert, delete) of an item takes the next LSN of its
partition, so a partition's change feed is "items with an LSN above the continuation, in LSN
order" (the LatestVersion mode: intermediate updates collapse, deleted items are gone).

Errors are the `funchost.documents.exceptions` types (named as `azure.cosmos.exceptions` names
them): not found (404), exists (409), precondition failed (412), bad request (400). The
argument rules (an item's ``id``, partition key paths) are in `document_rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

# The connection a document binding names when it names none (the Cosmos DB extension's default).
DEFAULT_DOCUMENTS_CONNECTION = "CosmosDB"
DEFAULT_PARTITIONS = 1  # physical partitions of a new container unless asked otherwise


@dataclass(frozen=True)
class ContainerInfo:
    database: str
    name: str
    rid: str
    database_rid: str
    partition_key_path: str
    partitions: int
    default_ttl: int | None


@dataclass(frozen=True)
class PartitionRange:
    """A physical partition and its effective-partition-key range (hex, ``""`` .. ``"FF"``)."""

    id: int
    min: str
    max: str


@dataclass(frozen=True)
class FeedPage:
    items: list[dict[str, Any]]  # each with its ``_lsn``
    continuation: int  # the LSN to continue after
    has_more: bool
    latest_lsn: int  # the partition's current LSN (the "session token")


class DocumentStore(Protocol):
    """The documents of one account (one connection name)."""

    name: str  # the account (connection) name
    endpoint_host: str  # part of change feed lease ids, as the account endpoint's host is

    # -- databases ---------------------------------------------------------------------------------

    async def create_database(self, name: str, *, exist_ok: bool = False) -> dict[str, Any]:
        """``{"id", "_rid", "_ts"}``; exists (409) unless `exist_ok`."""

    async def get_database(self, name: str) -> dict[str, Any]: ...

    async def list_databases(self) -> list[str]: ...

    async def delete_database(self, name: str) -> None: ...

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
    ) -> ContainerInfo: ...

    async def get_container(self, database: str, name: str) -> ContainerInfo: ...

    async def list_containers(self, database: str) -> list[ContainerInfo]: ...

    async def delete_container(self, database: str, name: str) -> None: ...

    async def partition_ranges(self, database: str, container: str) -> list[PartitionRange]:
        """The container's physical partitions (the change feed leases' tokens and ranges)."""

    # -- items -------------------------------------------------------------------------------------

    async def create_item(self, database: str, container: str, body: Mapping[str, Any]) -> dict[str, Any]: ...

    async def upsert_item(self, database: str, container: str, body: Mapping[str, Any], *,
                          if_match: str | None = None) -> dict[str, Any]: ...

    async def replace_item(self, database: str, container: str, item_id: str, body: Mapping[str, Any], *,
                           if_match: str | None = None) -> dict[str, Any]: ...

    async def read_item(self, database: str, container: str, item_id: str, partition_key: Any) -> dict[str, Any]: ...

    async def delete_item(self, database: str, container: str, item_id: str, partition_key: Any, *,
                          if_match: str | None = None) -> None: ...

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
        """Items matching every `equals` path (``"status"``, ``"a.b"``) and the id prefix."""

    # -- change feed -------------------------------------------------------------------------------

    async def latest_lsn(self, database: str, container: str, partition: int) -> int: ...

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
        """LatestVersion change feed of one partition.

        `after_lsn` continues after a checkpoint; without it, `start_time` selects items last
        modified at or after that time (``datetime.min`` = from the beginning); with neither the
        read starts "now" (no items, the continuation is the current LSN).
        """

    async def aclose(self) -> None: ...
