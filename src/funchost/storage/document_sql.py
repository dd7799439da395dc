"""The SQL of the document store, written once for both backends (`storage/sqlconn.py`): the
embedded file (`sqlite/documents.py`) and PostgreSQL (`postgres/documents.py`) run these
statements inside the store's transactions.

Each function takes the transaction's connection (and the clock's `now` where time matters);
`SqlDocumentStore` runs one of them per call of the `DocumentStore` Protocol. A write takes the
next LSN of the item's partition inside its transaction, and writes to one store run one at a
time on both backends, so LSNs are given out in commit order without gaps.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from funchost.documents.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosBadRequestError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)
from funchost.storage.documents import ContainerInfo, FeedPage, PartitionRange
from funchost.storage.sqlconn import Conn, Row

MAX_PARTITIONS = 64
HASH_SPACE = 1 << 16
UNDEFINED_PK = "\x00undefined"  # an item without a value at the partition key path (by identity)
UNDEFINED_KEY = "undefined"  # its stored form: never a JSON text, and no NUL (PostgreSQL text has none)

# -- hashing ---------------------------------------------------------------------------------------


def _boundaries(partitions: int) -> list[int]:
    return [i * HASH_SPACE // partitions for i in range(partitions)]


def partition_ranges(partitions: int) -> list[PartitionRange]:
    """Physical partition `i` holds effective partition keys (hex) from `min` up to `max`."""
    ranges = []
    for index in range(partitions):
        low = "" if index == 0 else f"{index * HASH_SPACE // partitions:04X}"
        high = "FF" if index == partitions - 1 else f"{(index + 1) * HASH_SPACE // partitions:04X}"
        ranges.append(PartitionRange(index, low, high))
    return ranges


def pk_key(value: Any) -> str:
    """The stored form of a partition key value (stable across processes and runs)."""
    if value is UNDEFINED_PK:
        return UNDEFINED_KEY
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def partition_of(pk: str, partitions: int) -> int:
    """Stable hash of the partition key value onto the physical partitions (sha256, 16 bits)."""
    hashed = UNDEFINED_PK if pk == UNDEFINED_KEY else pk  # the partition it always had
    epk = int.from_bytes(hashlib.sha256(hashed.encode("utf-8")).digest()[:2], "big")
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


# -- databases -------------------------------------------------------------------------------------


def create_database(conn: Conn, name: str, exist_ok: bool, now: float) -> dict[str, Any]:
    row = conn.execute("SELECT rid, ts FROM databases WHERE name = ?", (name,)).fetchone()
    if row is not None:
        if not exist_ok:
            raise CosmosResourceExistsError(f"database '{name}' already exists")
        return {"id": name, "_rid": row["rid"], "_ts": row["ts"]}
    rid = _rid(4)
    conn.execute("INSERT INTO databases (name, rid, ts) VALUES (?, ?, ?)", (name, rid, int(now)))
    return {"id": name, "_rid": rid, "_ts": int(now)}


def get_database(conn: Conn, name: str) -> dict[str, Any]:
    row = conn.execute("SELECT rid, ts FROM databases WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise CosmosResourceNotFoundError(f"database '{name}' does not exist")
    return {"id": name, "_rid": row["rid"], "_ts": row["ts"]}


def list_databases(conn: Conn) -> list[str]:
    return [r["name"] for r in conn.execute("SELECT name FROM databases ORDER BY name")]


def delete_database(conn: Conn, name: str) -> None:
    get_database(conn, name)
    for table, column in (("items", "db"), ("partitions", "db"), ("containers", "db"), ("databases", "name")):
        conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (name,))


# -- containers ------------------------------------------------------------------------------------


def create_container(conn: Conn, database: str, name: str, *, partition_key_path: str,
                     partitions: int, default_ttl: int | None, exist_ok: bool, now: float) -> ContainerInfo:
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise CosmosBadRequestError(f"partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}")
    db = get_database(conn, database)
    existing = _container_row(conn, database, name)
    if existing is not None:
        if not exist_ok:
            raise CosmosResourceExistsError(f"container '{name}' already exists in database '{database}'")
        return _info(existing, db["_rid"])
    rid = _rid(4, base64.b64decode(db["_rid"]))
    conn.execute(
        "INSERT INTO containers (db, name, rid, pk_path, partitions, default_ttl, ts) VALUES (?,?,?,?,?,?,?)",
        (database, name, rid, partition_key_path, partitions, default_ttl, int(now)),
    )
    conn.executemany(
        "INSERT INTO partitions (db, container, pid, lsn) VALUES (?, ?, ?, 0)",
        [(database, name, pid) for pid in range(partitions)],
    )
    return get_container(conn, database, name)


def _container_row(conn: Conn, database: str, name: str) -> Row | None:
    return conn.execute(  # type: ignore[no-any-return]
        "SELECT * FROM containers WHERE db = ? AND name = ?", (database, name)
    ).fetchone()


def _info(row: Row, db_rid: str) -> ContainerInfo:
    return ContainerInfo(row["db"], row["name"], row["rid"], db_rid, row["pk_path"], row["partitions"],
                         row["default_ttl"])


def get_container(conn: Conn, database: str, name: str) -> ContainerInfo:
    """The container and its database's rid in one statement (every item call starts here)."""
    row = conn.execute("SELECT c.db, c.name, c.rid, c.pk_path, c.partitions, c.default_ttl, d.rid AS db_rid "
                       "FROM containers c JOIN databases d ON d.name = c.db WHERE c.db = ? AND c.name = ?",
                       (database, name)).fetchone()
    if row is None:
        get_database(conn, database)  # a missing database is named as such
        raise CosmosResourceNotFoundError(f"container '{name}' does not exist in database '{database}'")
    return _info(row, row["db_rid"])


def list_containers(conn: Conn, database: str) -> list[ContainerInfo]:
    db = get_database(conn, database)
    rows = conn.execute("SELECT * FROM containers WHERE db = ? ORDER BY name", (database,))
    return [_info(r, db["_rid"]) for r in rows]


def delete_container(conn: Conn, database: str, name: str) -> None:
    get_container(conn, database, name)
    for table in ("items", "partitions"):
        conn.execute(f"DELETE FROM {table} WHERE db = ? AND container = ?", (database, name))
    conn.execute("DELETE FROM containers WHERE db = ? AND name = ?", (database, name))


# -- items -----------------------------------------------------------------------------------------


def _live(conn: Conn, c: ContainerInfo, pk: str, item_id: str, now: float, purge: bool = True) -> Row | None:
    """The item unless it expired; an expired one is deleted when `purge` (a write transaction)."""
    row = conn.execute(
        "SELECT * FROM items WHERE db = ? AND container = ? AND pk = ? AND id = ?",
        (c.database, c.name, pk, item_id),
    ).fetchone()
    if row is not None and row["expires"] is not None and row["expires"] <= now:
        if not purge:
            return None
        conn.execute("DELETE FROM items WHERE db = ? AND container = ? AND pk = ? AND id = ?",
                     (c.database, c.name, pk, item_id))
        return None
    return row  # type: ignore[no-any-return]


def _next_lsn(conn: Conn, c: ContainerInfo, pid: int) -> int:
    row = conn.execute(
        "UPDATE partitions SET lsn = lsn + 1 WHERE db = ? AND container = ? AND pid = ? RETURNING lsn",
        (c.database, c.name, pid),
    ).fetchone()
    return int(row["lsn"])


def _expiry(c: ContainerInfo, body: Mapping[str, Any], now: float) -> float | None:
    if c.default_ttl is None:
        return None  # TTL off for the container: an item's "ttl" means nothing
    ttl = body.get("ttl", c.default_ttl)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
        return None  # -1 (or absent with default -1): never expires
    return now + ttl


def _write(conn: Conn, c: ContainerInfo, body: Mapping[str, Any], previous: Row | None,
           now: float) -> dict[str, Any]:
    item_id = str(body["id"])
    pk = pk_key(pk_value(body, c.partition_key_path))
    pid = partition_of(pk, c.partitions)
    lsn = _next_lsn(conn, c, pid)
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
        "INSERT INTO items (db, container, pk, id, pid, lsn, modified, expires, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (db, container, pk, id) DO UPDATE SET pid = excluded.pid, "
        "lsn = excluded.lsn, modified = excluded.modified, expires = excluded.expires, body = excluded.body",
        (c.database, c.name, pk, item_id, pid, lsn, now, _expiry(c, stored, now), json.dumps(stored)),
    )
    return stored


def _locate(conn: Conn, database: str, container: str, body: Mapping[str, Any],
            now: float) -> tuple[ContainerInfo, Row | None]:
    c = get_container(conn, database, container)
    pk = pk_key(pk_value(body, c.partition_key_path))
    return c, _live(conn, c, pk, str(body.get("id")), now)


def _check_etag(existing: Row | None, if_match: str | None, item_id: Any) -> None:
    if if_match is None:
        return
    current = json.loads(existing["body"])["_etag"] if existing is not None else None
    if current != if_match:
        raise CosmosAccessConditionFailedError(f"the etag of item '{item_id}' does not match")


def create_item(conn: Conn, database: str, container: str, body: Mapping[str, Any],
                now: float) -> dict[str, Any]:
    c, existing = _locate(conn, database, container, body, now)
    if existing is not None:
        raise CosmosResourceExistsError(f"an item with id '{body.get('id')}' already exists")
    return _write(conn, c, body, None, now)


def upsert_item(conn: Conn, database: str, container: str, body: Mapping[str, Any],
                if_match: str | None, now: float) -> dict[str, Any]:
    c, existing = _locate(conn, database, container, body, now)
    _check_etag(existing, if_match, body.get("id"))
    return _write(conn, c, body, existing, now)


def replace_item(conn: Conn, database: str, container: str, item_id: str, body: Mapping[str, Any],
                 if_match: str | None, now: float) -> dict[str, Any]:
    c, existing = _locate(conn, database, container, body, now)
    if existing is None:
        raise CosmosResourceNotFoundError(f"item '{item_id}' does not exist")
    _check_etag(existing, if_match, item_id)
    return _write(conn, c, body, existing, now)


def read_item(conn: Conn, database: str, container: str, item_id: str, partition_key: Any,
              now: float, purge: bool) -> dict[str, Any]:
    c = get_container(conn, database, container)
    row = _live(conn, c, pk_key(partition_key), item_id, now, purge)
    if row is None:
        raise CosmosResourceNotFoundError(f"item '{item_id}' does not exist")
    return json.loads(row["body"])  # type: ignore[no-any-return]


def delete_item(conn: Conn, database: str, container: str, item_id: str, partition_key: Any,
                if_match: str | None, now: float) -> None:
    c = get_container(conn, database, container)
    pk = pk_key(partition_key)
    row = _live(conn, c, pk, item_id, now)
    if row is None:
        raise CosmosResourceNotFoundError(f"item '{item_id}' does not exist")
    _check_etag(row, if_match, item_id)
    _next_lsn(conn, c, row["pid"])  # a delete is a write: the partition's LSN moves
    conn.execute("DELETE FROM items WHERE db = ? AND container = ? AND pk = ? AND id = ?",
                 (database, container, pk, item_id))


def query_items(conn: Conn, database: str, container: str, *, equals: Mapping[str, Any] | None,
                id_prefix: str | None, partition_key: Any, has_partition_key: bool,
                now: float) -> list[dict[str, Any]]:
    get_container(conn, database, container)
    sql = "SELECT body, expires FROM items WHERE db = ? AND container = ?"
    args: list[Any] = [database, container]
    if has_partition_key:
        sql += " AND pk = ?"
        args.append(pk_key(partition_key))
    if id_prefix is not None:
        sql += " AND substr(id, 1, ?) = ?"
        args += [len(id_prefix), id_prefix]
    out = []
    for row in conn.execute(sql + " ORDER BY pid, lsn", args):
        if row["expires"] is not None and row["expires"] <= now:
            continue
        body = json.loads(row["body"])
        if all(_path_get(body, path) == value for path, value in (equals or {}).items()):
            out.append(body)
    return out


def _path_get(body: Mapping[str, Any], path: str) -> Any:
    node: Any = body
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


# -- change feed -----------------------------------------------------------------------------------


def latest_lsn(conn: Conn, database: str, container: str, pid: int) -> int:
    row = conn.execute("SELECT lsn FROM partitions WHERE db = ? AND container = ? AND pid = ?",
                       (database, container, pid)).fetchone()
    if row is None:
        raise CosmosResourceNotFoundError(f"partition {pid} of '{container}' does not exist")
    return int(row["lsn"])


def read_feed(conn: Conn, database: str, container: str, pid: int, *, after_lsn: int | None,
              start_time: datetime | None, max_items: int | None, now: float) -> FeedPage:
    get_container(conn, database, container)
    latest = latest_lsn(conn, database, container, pid)
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
