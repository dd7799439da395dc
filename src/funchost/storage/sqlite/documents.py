"""Embedded Cosmos DB-like document store: databases, containers, items, change feed.

One SQLite file per account (``<data>/storage/<connection>/documents.sqlite3``), safe across
processes through `SqliteDatabase`. A container has a partition key path and a fixed number of
physical partitions; an item lands in the partition whose hash range holds the hash of its
partition key value. Every write (create, replace, upsert, delete) takes the next LSN of that
partition, so the change feed of a partition is "items with ``lsn`` greater than the
continuation, in LSN order". Only the latest version of an item is kept, which gives the
LatestVersion change feed for free: intermediate updates collapse and deleted items are gone.

The operations here take a `sqlite3.Connection` and run inside one transaction; the client in
`funchost.documents` runs them through `run()` (async) or `run_sync()` (user threads, CLI).
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from funchost.clock import Clock
from funchost.documents._base import DEFAULT_PARTITIONS
from funchost.documents.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosBadRequestError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)
from funchost.storage.sqlite.db import SqliteDatabase

T = TypeVar("T")

FILE_NAME = "documents.sqlite3"
MAX_PARTITIONS = 64
HASH_SPACE = 1 << 16
UNDEFINED_PK = "\x00undefined"  # an item without a value at the partition key path

SCHEMA = """
CREATE TABLE IF NOT EXISTS databases (
    name TEXT PRIMARY KEY, rid TEXT NOT NULL, ts INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS containers (
    db TEXT NOT NULL, name TEXT NOT NULL, rid TEXT NOT NULL, pk_path TEXT NOT NULL,
    partitions INTEGER NOT NULL, default_ttl INTEGER, ts INTEGER NOT NULL,
    PRIMARY KEY (db, name));
CREATE TABLE IF NOT EXISTS partitions (
    db TEXT NOT NULL, container TEXT NOT NULL, pid INTEGER NOT NULL, lsn INTEGER NOT NULL,
    PRIMARY KEY (db, container, pid));
CREATE TABLE IF NOT EXISTS items (
    db TEXT NOT NULL, container TEXT NOT NULL, pk TEXT NOT NULL, id TEXT NOT NULL,
    pid INTEGER NOT NULL, lsn INTEGER NOT NULL, modified REAL NOT NULL, expires REAL,
    body TEXT NOT NULL, PRIMARY KEY (db, container, pk, id));
CREATE INDEX IF NOT EXISTS items_feed ON items (db, container, pid, lsn);
CREATE INDEX IF NOT EXISTS items_id ON items (db, container, id)
"""


@dataclass(frozen=True)
class ContainerInfo:
    database: str
    name: str
    rid: str
    database_rid: str
    partition_key_path: str
    partitions: int
    default_ttl: int | None

    def partition_ranges(self) -> list[PartitionRange]:
        return [PartitionRange(i, *_epk_bounds(i, self.partitions)) for i in range(self.partitions)]


@dataclass(frozen=True)
class PartitionRange:
    """A physical partition and its effective-partition-key range (hex, ``""`` .. ``"FF"``)."""

    id: int
    min: str
    max: str


@dataclass(frozen=True)
class FeedPage:
    items: list[dict[str, Any]]
    continuation: int  # the LSN to continue after
    has_more: bool
    latest_lsn: int  # the partition's current LSN (the "session token")


# -- hashing ---------------------------------------------------------------------------------------


def _boundaries(partitions: int) -> list[int]:
    return [i * HASH_SPACE // partitions for i in range(partitions)]


def _epk_bounds(index: int, partitions: int) -> tuple[str, str]:
    low = "" if index == 0 else f"{index * HASH_SPACE // partitions:04X}"
    high = "FF" if index == partitions - 1 else f"{(index + 1) * HASH_SPACE // partitions:04X}"
    return low, high


def pk_key(value: Any) -> str:
    """The stored form of a partition key value (stable across processes and runs)."""
    if value is UNDEFINED_PK:
        return str(UNDEFINED_PK)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def partition_of(pk: str, partitions: int) -> int:
    """Stable hash of the partition key value onto the physical partitions (sha256, 16 bits)."""
    epk = int.from_bytes(hashlib.sha256(pk.encode("utf-8")).digest()[:2], "big")
    return bisect.bisect_right(_boundaries(partitions), epk) - 1


def pk_value(body: Mapping[str, Any], path: str) -> Any:
    node: Any = body
    for part in [p for p in path.split("/") if p]:
        if not isinstance(node, Mapping) or part not in node:
            return UNDEFINED_PK
        node = node[part]
    return node


def _rid(nbytes: int, prefix: bytes = b"") -> str:
    return base64.b64encode(prefix + os.urandom(nbytes)).decode("ascii")


def new_etag() -> str:
    return f'"{uuid.uuid4()}"'


# -- the store -------------------------------------------------------------------------------------


class SqliteDocumentStore:
    """The documents of one account (one connection name)."""

    def __init__(self, dir: Path, name: str, clock: Clock) -> None:
        self.dir = Path(dir)
        self.name = name
        self.clock = clock
        self.endpoint_host = "localhost"  # as the Cosmos DB emulator's endpoint
        self._db = SqliteDatabase(self.dir / FILE_NAME, SCHEMA, name="documents")

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in one write transaction off the event loop."""
        return await self._db.write(fn)

    def run_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Same, on the calling thread (sync user code, CLI)."""
        return self._db.write_sync(fn)

    async def aclose(self) -> None:
        await self._db.aclose()

    def close(self) -> None:
        self._db.close()

    def _now(self) -> float:
        return self.clock.now().timestamp()

    # -- databases ---------------------------------------------------------------------------------

    def create_database(self, conn: sqlite3.Connection, name: str, *, exist_ok: bool = False) -> dict[str, Any]:
        row = conn.execute("SELECT rid, ts FROM databases WHERE name = ?", (name,)).fetchone()
        if row is not None:
            if not exist_ok:
                raise CosmosResourceExistsError(f"database '{name}' already exists")
            return {"id": name, "_rid": row["rid"], "_ts": row["ts"]}
        rid = _rid(4)
        ts = int(self._now())
        conn.execute("INSERT INTO databases (name, rid, ts) VALUES (?, ?, ?)", (name, rid, ts))
        return {"id": name, "_rid": rid, "_ts": ts}

    def get_database(self, conn: sqlite3.Connection, name: str) -> dict[str, Any]:
        row = conn.execute("SELECT rid, ts FROM databases WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise CosmosResourceNotFoundError(f"database '{name}' does not exist")
        return {"id": name, "_rid": row["rid"], "_ts": row["ts"]}

    def list_databases(self, conn: sqlite3.Connection) -> list[str]:
        return [r["name"] for r in conn.execute("SELECT name FROM databases ORDER BY name")]

    def delete_database(self, conn: sqlite3.Connection, name: str) -> None:
        self.get_database(conn, name)
        for table, column in (("items", "db"), ("partitions", "db"), ("containers", "db"), ("databases", "name")):
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (name,))

    # -- containers --------------------------------------------------------------------------------

    def create_container(
        self,
        conn: sqlite3.Connection,
        database: str,
        name: str,
        *,
        partition_key_path: str = "/id",
        partitions: int = DEFAULT_PARTITIONS,
        default_ttl: int | None = None,
        exist_ok: bool = False,
    ) -> ContainerInfo:
        if not partition_key_path.startswith("/"):
            raise CosmosBadRequestError(f"partition key path must start with '/', got {partition_key_path!r}")
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise CosmosBadRequestError(f"partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}")
        db = self.get_database(conn, database)
        existing = self._container_row(conn, database, name)
        if existing is not None:
            if not exist_ok:
                raise CosmosResourceExistsError(f"container '{name}' already exists in database '{database}'")
            return self._info(existing, db["_rid"])
        rid = _rid(4, base64.b64decode(db["_rid"]))
        conn.execute(
            "INSERT INTO containers (db, name, rid, pk_path, partitions, default_ttl, ts) VALUES (?,?,?,?,?,?,?)",
            (database, name, rid, partition_key_path, partitions, default_ttl, int(self._now())),
        )
        conn.executemany(
            "INSERT INTO partitions (db, container, pid, lsn) VALUES (?, ?, ?, 0)",
            [(database, name, pid) for pid in range(partitions)],
        )
        return self.get_container(conn, database, name)

    def _container_row(self, conn: sqlite3.Connection, database: str, name: str) -> sqlite3.Row | None:
        return conn.execute(  # type: ignore[no-any-return]
            "SELECT * FROM containers WHERE db = ? AND name = ?", (database, name)
        ).fetchone()

    @staticmethod
    def _info(row: sqlite3.Row, db_rid: str) -> ContainerInfo:
        return ContainerInfo(row["db"], row["name"], row["rid"], db_rid, row["pk_path"], row["partitions"],
                             row["default_ttl"])

    def get_container(self, conn: sqlite3.Connection, database: str, name: str) -> ContainerInfo:
        db = self.get_database(conn, database)
        row = self._container_row(conn, database, name)
        if row is None:
            raise CosmosResourceNotFoundError(f"container '{name}' does not exist in database '{database}'")
        return self._info(row, db["_rid"])

    def list_containers(self, conn: sqlite3.Connection, database: str) -> list[ContainerInfo]:
        db = self.get_database(conn, database)
        rows = conn.execute("SELECT * FROM containers WHERE db = ? ORDER BY name", (database,))
        return [self._info(r, db["_rid"]) for r in rows]

    def delete_container(self, conn: sqlite3.Connection, database: str, name: str) -> None:
        self.get_container(conn, database, name)
        for table in ("items", "partitions"):
            conn.execute(f"DELETE FROM {table} WHERE db = ? AND container = ?", (database, name))
        conn.execute("DELETE FROM containers WHERE db = ? AND name = ?", (database, name))

    # -- items -------------------------------------------------------------------------------------

    def _live(self, conn: sqlite3.Connection, c: ContainerInfo, pk: str, item_id: str) -> sqlite3.Row | None:
        row = conn.execute(
            "SELECT * FROM items WHERE db = ? AND container = ? AND pk = ? AND id = ?",
            (c.database, c.name, pk, item_id),
        ).fetchone()
        if row is not None and row["expires"] is not None and row["expires"] <= self._now():
            conn.execute("DELETE FROM items WHERE db = ? AND container = ? AND pk = ? AND id = ?",
                         (c.database, c.name, pk, item_id))
            return None
        return row  # type: ignore[no-any-return]

    def _next_lsn(self, conn: sqlite3.Connection, c: ContainerInfo, pid: int) -> int:
        row = conn.execute(
            "UPDATE partitions SET lsn = lsn + 1 WHERE db = ? AND container = ? AND pid = ? RETURNING lsn",
            (c.database, c.name, pid),
        ).fetchone()
        return int(row["lsn"])

    def _expiry(self, c: ContainerInfo, body: Mapping[str, Any], now: float) -> float | None:
        if c.default_ttl is None:
            return None  # TTL off for the container: an item's "ttl" means nothing
        ttl = body.get("ttl", c.default_ttl)
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            return None  # -1 (or absent with default -1): never expires
        return now + ttl

    def _write(self, conn: sqlite3.Connection, c: ContainerInfo, body: Mapping[str, Any],
               previous: sqlite3.Row | None) -> dict[str, Any]:
        item_id = body.get("id")
        if not isinstance(item_id, str) or not item_id:
            raise CosmosBadRequestError("the item needs a non-empty string 'id'")
        pk = pk_key(pk_value(body, c.partition_key_path))
        pid = partition_of(pk, c.partitions)
        now = self._now()
        lsn = self._next_lsn(conn, c, pid)
        stored = {k: v for k, v in body.items() if k not in ("_rid", "_self", "_etag", "_attachments", "_ts", "_lsn")}
        rid = json.loads(previous["body"])["_rid"] if previous is not None else _rid(8, base64.b64decode(c.rid))
        stored.update({
            "_rid": rid,
            "_self": f"dbs/{c.database_rid}/colls/{c.rid}/docs/{rid}/",
            "_etag": new_etag(),
            "_attachments": "attachments/",
            "_ts": int(now),
        })
        conn.execute(
            "INSERT OR REPLACE INTO items (db, container, pk, id, pid, lsn, modified, expires, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (c.database, c.name, pk, item_id, pid, lsn, now, self._expiry(c, stored, now), json.dumps(stored)),
        )
        return stored

    def _locate(self, conn: sqlite3.Connection, database: str, container: str,
                body: Mapping[str, Any]) -> tuple[ContainerInfo, str, sqlite3.Row | None]:
        c = self.get_container(conn, database, container)
        pk = pk_key(pk_value(body, c.partition_key_path))
        return c, pk, self._live(conn, c, pk, str(body.get("id")))

    def create_item(self, conn: sqlite3.Connection, database: str, container: str,
                    body: Mapping[str, Any]) -> dict[str, Any]:
        c, _, existing = self._locate(conn, database, container, body)
        if existing is not None:
            raise CosmosResourceExistsError(f"an item with id '{body.get('id')}' already exists")
        return self._write(conn, c, body, None)

    def upsert_item(self, conn: sqlite3.Connection, database: str, container: str,
                    body: Mapping[str, Any], *, if_match: str | None = None) -> dict[str, Any]:
        c, _, existing = self._locate(conn, database, container, body)
        self._check_etag(existing, if_match, body.get("id"))
        return self._write(conn, c, body, existing)

    def replace_item(self, conn: sqlite3.Connection, database: str, container: str, item_id: str,
                     body: Mapping[str, Any], *, if_match: str | None = None) -> dict[str, Any]:
        if body.get("id") != item_id:
            raise CosmosBadRequestError("the replacement's 'id' must equal the item id")
        c, _, existing = self._locate(conn, database, container, body)
        if existing is None:
            raise CosmosResourceNotFoundError(f"item '{item_id}' does not exist")
        self._check_etag(existing, if_match, item_id)
        return self._write(conn, c, body, existing)

    @staticmethod
    def _check_etag(existing: sqlite3.Row | None, if_match: str | None, item_id: Any) -> None:
        if if_match is None:
            return
        current = json.loads(existing["body"])["_etag"] if existing is not None else None
        if current != if_match:
            raise CosmosAccessConditionFailedError(f"the etag of item '{item_id}' does not match")

    def read_item(self, conn: sqlite3.Connection, database: str, container: str, item_id: str,
                  partition_key: Any) -> dict[str, Any]:
        c = self.get_container(conn, database, container)
        row = self._live(conn, c, pk_key(partition_key), item_id)
        if row is None:
            raise CosmosResourceNotFoundError(f"item '{item_id}' does not exist")
        return json.loads(row["body"])  # type: ignore[no-any-return]

    def delete_item(self, conn: sqlite3.Connection, database: str, container: str, item_id: str,
                    partition_key: Any, *, if_match: str | None = None) -> None:
        c = self.get_container(conn, database, container)
        pk = pk_key(partition_key)
        row = self._live(conn, c, pk, item_id)
        if row is None:
            raise CosmosResourceNotFoundError(f"item '{item_id}' does not exist")
        self._check_etag(row, if_match, item_id)
        self._next_lsn(conn, c, row["pid"])  # a delete is a write: the partition's LSN moves
        conn.execute("DELETE FROM items WHERE db = ? AND container = ? AND pk = ? AND id = ?",
                     (database, container, pk, item_id))

    def query_items(
        self,
        conn: sqlite3.Connection,
        database: str,
        container: str,
        *,
        equals: Mapping[str, Any] | None = None,
        id_prefix: str | None = None,
        partition_key: Any = None,
        has_partition_key: bool = False,
    ) -> list[dict[str, Any]]:
        """Items matching every `equals` path (``"status"``, ``"a.b"``) and the id prefix."""
        self.get_container(conn, database, container)
        sql = "SELECT body, expires FROM items WHERE db = ? AND container = ?"
        args: list[Any] = [database, container]
        if has_partition_key:
            sql += " AND pk = ?"
            args.append(pk_key(partition_key))
        if id_prefix is not None:
            sql += " AND substr(id, 1, ?) = ?"
            args += [len(id_prefix), id_prefix]
        now = self._now()
        out = []
        for row in conn.execute(sql + " ORDER BY pid, lsn", args):
            if row["expires"] is not None and row["expires"] <= now:
                continue
            body = json.loads(row["body"])
            if all(_path_get(body, path) == value for path, value in (equals or {}).items()):
                out.append(body)
        return out

    # -- change feed -------------------------------------------------------------------------------

    def latest_lsn(self, conn: sqlite3.Connection, database: str, container: str, pid: int) -> int:
        row = conn.execute("SELECT lsn FROM partitions WHERE db = ? AND container = ? AND pid = ?",
                           (database, container, pid)).fetchone()
        if row is None:
            raise CosmosResourceNotFoundError(f"partition {pid} of '{container}' does not exist")
        return int(row["lsn"])

    def read_feed(
        self,
        conn: sqlite3.Connection,
        database: str,
        container: str,
        pid: int,
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
        self.get_container(conn, database, container)
        latest = self.latest_lsn(conn, database, container, pid)
        if after_lsn is None and start_time is None:
            return FeedPage([], latest, False, latest)
        sql = "SELECT body, lsn, expires FROM items WHERE db = ? AND container = ? AND pid = ?"
        args: list[Any] = [database, container, pid]
        if after_lsn is not None:
            sql += " AND lsn > ?"
            args.append(after_lsn)
        elif start_time is not None and start_time.year > 1:
            sql += " AND modified >= ?"
            args.append(start_time.timestamp())
        sql += " ORDER BY lsn"
        limit = max_items if max_items and max_items > 0 else None
        now = self._now()
        items: list[dict[str, Any]] = []
        last = after_lsn if after_lsn is not None else latest
        has_more = False
        for row in conn.execute(sql, args):
            if limit is not None and len(items) >= limit:
                has_more = True
                break
            if row["expires"] is not None and row["expires"] <= now:
                continue  # TTL expirations are not in the LatestVersion feed
            item = json.loads(row["body"])
            item["_lsn"] = row["lsn"]
            items.append(item)
            last = row["lsn"]
        if not has_more:
            last = latest  # everything up to the partition's LSN has been seen
        return FeedPage(items, last, has_more, latest)


def _path_get(body: Mapping[str, Any], path: str) -> Any:
    node: Any = body
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node
