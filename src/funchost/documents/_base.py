"""Operations shared by the sync and async clients: each returns a `fn(conn)` for the store."""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from funchost.documents.exceptions import CosmosBadRequestError
from funchost.documents.query import parse_query

if TYPE_CHECKING:
    from funchost.storage.sqlite.documents import SqliteDocumentStore

Op = Callable[[sqlite3.Connection], Any]

DEFAULT_PARTITIONS = 1  # physical partitions of a new container unless asked otherwise


class MatchConditions(enum.Enum):
    """Same members as `azure.core.MatchConditions` (either may be passed)."""

    Unconditionally = 1
    IfNotModified = 2
    IfModified = 3
    IfPresent = 4
    IfMissing = 5


@dataclass(frozen=True)
class PartitionKey:
    """`azure.cosmos.PartitionKey` for container creation: ``PartitionKey(path="/tenant")``."""

    path: str
    kind: str = "Hash"


def pk_path_of(partition_key: Any) -> str:
    if isinstance(partition_key, str):
        return partition_key
    if isinstance(partition_key, Mapping):
        paths = partition_key.get("paths") or [partition_key.get("path")]
        return str(paths[0])
    path = getattr(partition_key, "path", None)
    if isinstance(path, str):
        return path
    raise CosmosBadRequestError(f"unsupported partition key definition {partition_key!r}")


def if_match(etag: str | None, match_condition: Any) -> str | None:
    """azure-cosmos sends If-Match only for IfNotModified with an etag."""
    if match_condition is None:
        return None
    name = getattr(match_condition, "name", str(match_condition))
    if name == "IfNotModified":
        if not etag:
            raise CosmosBadRequestError("match_condition IfNotModified needs an etag")
        return etag
    if name == "Unconditionally":
        return None
    raise CosmosBadRequestError(f"match_condition {name} is not supported by the embedded store")


def item_id(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item["id"])
    return str(item)


class ContainerOps:
    """The store calls of one container (database + name)."""

    def __init__(self, store: SqliteDocumentStore, database: str, container: str) -> None:
        self.store = store
        self.database = database
        self.id = container

    def read(self) -> Op:
        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            c = self.store.get_container(conn, self.database, self.id)
            return {"id": c.name, "_rid": c.rid, "partitionKey": {"paths": [c.partition_key_path], "kind": "Hash"},
                    "defaultTtl": c.default_ttl, "physicalPartitions": c.partitions}
        return op

    def create_item(self, body: Mapping[str, Any]) -> Op:
        return lambda conn: self.store.create_item(conn, self.database, self.id, dict(body))

    def upsert_item(self, body: Mapping[str, Any], etag: str | None, match_condition: Any) -> Op:
        cond = if_match(etag, match_condition)
        return lambda conn: self.store.upsert_item(conn, self.database, self.id, dict(body), if_match=cond)

    def replace_item(self, item: Any, body: Mapping[str, Any], etag: str | None, match_condition: Any) -> Op:
        cond = if_match(etag, match_condition)
        key = item_id(item)
        return lambda conn: self.store.replace_item(conn, self.database, self.id, key, dict(body), if_match=cond)

    def read_item(self, item: Any, partition_key: Any) -> Op:
        key = item_id(item)
        return lambda conn: self.store.read_item(conn, self.database, self.id, key, partition_key)

    def delete_item(self, item: Any, partition_key: Any, etag: str | None, match_condition: Any) -> Op:
        cond = if_match(etag, match_condition)
        key = item_id(item)
        return lambda conn: self.store.delete_item(conn, self.database, self.id, key, partition_key, if_match=cond)

    def query_items(self, query: str, parameters: Iterable[Mapping[str, Any]] | None,
                    partition_key: Any, has_partition_key: bool) -> Op:
        parsed = parse_query(query, parameters)
        return lambda conn: self.store.query_items(
            conn, self.database, self.id, equals=parsed.equals, id_prefix=parsed.id_prefix,
            partition_key=partition_key, has_partition_key=has_partition_key)

    def read_all_items(self) -> Op:
        return lambda conn: self.store.query_items(conn, self.database, self.id)


_NO_PK = object()
