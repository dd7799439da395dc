"""Embedded Table storage: one SQLite file per account (``<account_dir>/tables.db``).

Entities are rows keyed (table, PartitionKey, RowKey) with their typed properties as JSON, so a
query in key order is an index scan, a `$filter` on PartitionKey/RowKey narrows the scan in SQL
and the rest is tested in Python. Timestamps are 100 ns ticks, strictly increasing per entity, and
the ETag is a function of the Timestamp (`W/"datetime'<url-encoded Timestamp>'"`), as the service
writes it. An entity group transaction is one SQLite transaction.
"""

from __future__ import annotations

import base64
import json
import math
import sqlite3
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from funchost.clock import Clock
from funchost.errors import InvalidInput, StorageError
from funchost.storage.sqlite.db import SqliteDatabase
from funchost.storage.table_filter import parse_filter
from funchost.storage.table_rules import check_properties
from funchost.storage.tables import (
    MAX_QUERY_RESULTS,
    BatchFailed,
    BatchOperation,
    Entity,
    TypedValue,
    parse_datetime,
    table_error,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS entities (
    tbl TEXT NOT NULL,
    pk TEXT NOT NULL,
    rk TEXT NOT NULL,
    ts INTEGER NOT NULL,
    props TEXT NOT NULL,
    PRIMARY KEY (tbl, pk, rk)
) WITHOUT ROWID
"""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SCAN_BATCH = 500


def ticks(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1) * 10


def timestamp_text(value: int) -> str:
    seconds, fraction = divmod(value, 10_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            f".{fraction:07d}Z")


def etag_for(ts: int) -> str:
    # The Timestamp URL-encoded: of its characters only ':' needs it (urllib's quote gives the same).
    return f"W/\"datetime'{timestamp_text(ts).replace(':', '%3A')}'\""


def _encode(properties: Mapping[str, TypedValue]) -> str:
    out: dict[str, list[Any]] = {}
    for name, (edm, value) in properties.items():
        if edm == "Edm.DateTime":
            value = timestamp_text(ticks(value))
        elif edm == "Edm.Binary":
            value = base64.b64encode(value).decode("ascii")
        elif edm == "Edm.Double" and (math.isnan(value) or math.isinf(value)):
            value = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        out[name] = [edm, value]
    return json.dumps(out, ensure_ascii=False)


def _decode(text: str) -> dict[str, TypedValue]:
    out: dict[str, TypedValue] = {}
    for name, (edm, value) in json.loads(text).items():
        if edm == "Edm.DateTime":
            value = parse_datetime(value)
        elif edm == "Edm.Binary":
            value = base64.b64decode(value)
        elif edm == "Edm.Double":
            value = float(value)
        out[name] = (edm, value)
    return out


def _entity(row: sqlite3.Row | tuple[Any, ...]) -> Entity:
    pk, rk, ts, props = row[0], row[1], row[2], row[3]
    return Entity(pk, rk, _EPOCH + timedelta(microseconds=ts // 10), etag_for(ts), _decode(props))


def _not_found_table(name: str) -> StorageError:
    return table_error(404, "TableNotFound", f"table '{name}' does not exist")


def _no_entity() -> StorageError:
    return table_error(404, "ResourceNotFound", "the specified entity does not exist")


def _condition_failed() -> StorageError:
    return table_error(412, "UpdateConditionNotSatisfied", "the update condition specified in the request was "
                                                           "not satisfied")


def _check_etag(if_match: str | None, ts: int) -> None:
    if if_match is None or if_match.strip() == "*":
        return
    given = if_match.strip()
    if not (given.startswith('W/"') and given.endswith('"')):
        raise InvalidInput(f"the If-Match value {if_match!r} is not an entity ETag")
    if given != etag_for(ts):
        raise _condition_failed()


class SqliteTableService:
    """`TableService` on embedded SQLite; safe for several processes sharing the file."""

    def __init__(self, account_dir: Path, account: str, clock: Clock) -> None:
        self.account_name = account
        self._clock = clock
        self._db = SqliteDatabase(Path(account_dir) / "tables.db", SCHEMA, name=f"tables-{account}")

    def _now_ticks(self) -> int:
        return ticks(self._clock.now())

    @staticmethod
    def _table_key(conn: sqlite3.Connection, name: str) -> str:
        key = name.lower()
        if conn.execute("SELECT 1 FROM tables WHERE key = ?", (key,)).fetchone() is None:
            raise _not_found_table(name)
        return key

    # -- tables ----------------------------------------------------------------------------------

    async def create_table(self, name: str) -> str:
        now = self._clock.now().timestamp()

        def run(conn: sqlite3.Connection) -> str:
            if conn.execute("INSERT OR IGNORE INTO tables(key, name, created) VALUES (?, ?, ?)",
                            (name.lower(), name, now)).rowcount == 0:
                raise table_error(409, "TableAlreadyExists", f"table '{name}' already exists")
            return name

        return await self._db.write(run)

    async def delete_table(self, name: str) -> None:
        def run(conn: sqlite3.Connection) -> None:
            key = self._table_key(conn, name)
            conn.execute("DELETE FROM entities WHERE tbl = ?", (key,))
            conn.execute("DELETE FROM tables WHERE key = ?", (key,))

        await self._db.write(run)

    async def list_tables(self, *, prefix: str | None = None, after: str | None = None,
                          top: int = MAX_QUERY_RESULTS) -> tuple[list[str], str | None]:
        start = max((prefix or "").lower(), (after or "").lower())
        rows = await self._db.read(lambda c: c.execute(
            "SELECT key, name FROM tables WHERE key >= ? AND substr(key, 1, ?) = ? ORDER BY key LIMIT ?",
            (start, len(prefix or ""), (prefix or "").lower(), top + 1)).fetchall())
        names = [r[1] for r in rows]
        return names[:top], names[top] if len(names) > top else None

    # -- entities --------------------------------------------------------------------------------

    def _insert(self, conn: sqlite3.Connection, key: str, pk: str, rk: str, props: str, now: int) -> Entity:
        if conn.execute("SELECT 1 FROM entities WHERE tbl = ? AND pk = ? AND rk = ?", (key, pk, rk)).fetchone():
            raise table_error(409, "EntityAlreadyExists", "the specified entity already exists")
        conn.execute("INSERT INTO entities(tbl, pk, rk, ts, props) VALUES (?, ?, ?, ?, ?)", (key, pk, rk, now, props))
        return _entity((pk, rk, now, props))

    def _update(self, conn: sqlite3.Connection, key: str, pk: str, rk: str, properties: Mapping[str, TypedValue],
                merge: bool, if_match: str | None, now: int) -> Entity:
        row = conn.execute("SELECT ts, props FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
                           (key, pk, rk)).fetchone()
        if row is None:
            if if_match is not None:
                raise _no_entity()
            return self._insert(conn, key, pk, rk, _encode(properties), now)
        _check_etag(if_match, row[0])
        merged = {**_decode(row[1]), **properties} if merge else dict(properties)
        if merge:
            check_properties(merged)  # the merged entity keeps the limits (the parts were checked before)
        ts = max(now, row[0] + 1)
        props = _encode(merged)
        conn.execute("UPDATE entities SET ts = ?, props = ? WHERE tbl = ? AND pk = ? AND rk = ?",
                     (ts, props, key, pk, rk))
        return _entity((pk, rk, ts, props))

    def _delete(self, conn: sqlite3.Connection, key: str, pk: str, rk: str, if_match: str | None) -> None:
        if if_match is None or not if_match.strip():
            raise _condition_failed()
        row = conn.execute("SELECT ts FROM entities WHERE tbl = ? AND pk = ? AND rk = ?", (key, pk, rk)).fetchone()
        if row is None:
            raise _no_entity()
        _check_etag(if_match, row[0])
        conn.execute("DELETE FROM entities WHERE tbl = ? AND pk = ? AND rk = ?", (key, pk, rk))

    async def insert_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue]) -> Entity:
        props = _encode(properties)
        now = self._now_ticks()
        return await self._db.write(
            lambda conn: self._insert(conn, self._table_key(conn, table), partition_key, row_key, props, now))

    async def update_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue], *, merge: bool, if_match: str | None) -> Entity:
        now = self._now_ticks()
        return await self._db.write(lambda conn: self._update(
            conn, self._table_key(conn, table), partition_key, row_key, properties, merge, if_match, now))

    async def delete_entity(self, table: str, partition_key: str, row_key: str, *, if_match: str) -> None:
        await self._db.write(lambda conn: self._delete(conn, self._table_key(conn, table), partition_key, row_key,
                                                       if_match))

    async def get_entity(self, table: str, partition_key: str, row_key: str) -> Entity:
        def run(conn: sqlite3.Connection) -> Entity:
            key = self._table_key(conn, table)
            row = conn.execute("SELECT pk, rk, ts, props FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
                               (key, partition_key, row_key)).fetchone()
            if row is None:
                raise _no_entity()
            return _entity(row)

        return await self._db.read(run)

    async def query_entities(self, table: str, *, filter: str | None = None, top: int = MAX_QUERY_RESULTS,
                             after: tuple[str, str] | None = None) -> tuple[list[Entity], tuple[str, str] | None]:
        parsed = parse_filter(filter) if filter else None
        where, args = ["tbl = ?"], []
        if parsed is not None:
            low, high, exact = parsed.bounds("PartitionKey")
            if exact:
                where.append("pk = ?")
                args.append(low)
                rk_low, rk_high, rk_exact = parsed.bounds("RowKey")
                if rk_exact:
                    where.append("rk = ?")
                    args.append(rk_low)
            else:
                if low is not None:
                    where.append("pk >= ?")
                    args.append(low)
                if high is not None:
                    where.append("pk <= ?")
                    args.append(high)

        def run(conn: sqlite3.Connection) -> tuple[list[Entity], tuple[str, str] | None]:
            key = self._table_key(conn, table)
            start = after or ("", "")
            found: list[Entity] = []
            while True:
                rows = conn.execute(
                    f"SELECT pk, rk, ts, props FROM entities WHERE {' AND '.join(where)} AND (pk > ? OR (pk = ? AND "
                    "rk >= ?)) ORDER BY pk, rk LIMIT ?", (key, *args, start[0], start[0], start[1], SCAN_BATCH)
                ).fetchall()
                for row in rows:
                    entity = _entity(row)
                    if parsed is None or parsed.matches(entity):
                        if len(found) == top:
                            return found, (entity.partition_key, entity.row_key)
                        found.append(entity)
                if len(rows) < SCAN_BATCH:
                    return found, None
                start = (rows[-1][0], rows[-1][1] + "\0")

        return await self._db.read(run)

    async def submit_batch(self, table: str, operations: Sequence[BatchOperation]) -> list[Entity | None]:
        now = self._now_ticks()

        def run(conn: sqlite3.Connection) -> list[Entity | None]:
            key = self._table_key(conn, table)
            results: list[Entity | None] = []
            for index, op in enumerate(operations):
                try:
                    results.append(self._apply(conn, key, op, now))
                except StorageError as exc:
                    raise BatchFailed(index, exc) from None
            return results

        return await self._db.write(run)

    def _apply(self, conn: sqlite3.Connection, key: str, op: BatchOperation, now: int) -> Entity | None:
        pk, rk = op.partition_key, op.row_key
        if op.kind == "insert":
            return self._insert(conn, key, pk, rk, _encode(op.properties), now)
        if op.kind == "delete":
            self._delete(conn, key, pk, rk, op.if_match)
            return None
        merge = op.kind in ("merge", "upsert-merge")
        if_match = op.if_match if op.kind in ("merge", "replace") else None
        return self._update(conn, key, pk, rk, op.properties, merge, if_match or ("*" if op.kind in ("merge", "replace")
                                                                                   else None), now)

    async def aclose(self) -> None:
        await self._db.aclose()
