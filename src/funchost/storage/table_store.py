"""Table storage in SQL, written once for both backends (`storage/sqlconn.py`): the embedded
store's file (`sqlite/tables.py`) and PostgreSQL (`postgres/tables.py`) run these statements.

Entities are rows keyed (table, PartitionKey, RowKey) with their typed properties as JSON
(`table_values`), so a query in key order is an index scan, a `$filter` on PartitionKey/RowKey
narrows the scan in SQL and the rest is tested in Python. Timestamps are 100 ns ticks, strictly
increasing per entity. Every call is one transaction of the store's database; an entity group
transaction is one write transaction (writes to one store run one at a time on both backends).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from funchost.clock import Clock
from funchost.errors import StorageError
from funchost.storage.sqlconn import Conn, StoreDatabase
from funchost.storage.table_filter import Filter, parse_filter
from funchost.storage.table_rules import check_properties
from funchost.storage.table_values import (
    check_etag,
    condition_failed,
    decode,
    encode,
    entity_of,
    no_entity,
    not_found_table,
    ticks,
)
from funchost.storage.tables import (
    MAX_QUERY_RESULTS,
    BatchFailed,
    BatchOperation,
    Entity,
    TypedValue,
    table_error,
)

SCAN_BATCH = 500


class SqlTableService:
    """`TableService` of one account on the store's database (given by the backend)."""

    def __init__(self, db: StoreDatabase, account: str, clock: Clock) -> None:
        self.account_name = account
        self._clock = clock
        self._db = db

    def _now_ticks(self) -> int:
        return ticks(self._clock.now())

    @staticmethod
    def _table_key(conn: Conn, name: str) -> str:
        key = name.lower()
        if conn.execute("SELECT 1 FROM tables WHERE key = ?", (key,)).fetchone() is None:
            raise not_found_table(name)
        return key

    # -- tables ----------------------------------------------------------------------------------

    async def create_table(self, name: str) -> str:
        now = self._clock.now().timestamp()

        def run(conn: Conn) -> str:
            if conn.execute("INSERT INTO tables(key, name, created) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                            (name.lower(), name, now)).rowcount == 0:
                raise table_error(409, "TableAlreadyExists", f"table '{name}' already exists")
            return name

        return await self._db.write(run)

    async def delete_table(self, name: str) -> None:
        def run(conn: Conn) -> None:
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

    def _insert(self, conn: Conn, key: str, pk: str, rk: str, props: str, now: int) -> Entity:
        if conn.execute("SELECT 1 FROM entities WHERE tbl = ? AND pk = ? AND rk = ?", (key, pk, rk)).fetchone():
            raise table_error(409, "EntityAlreadyExists", "the specified entity already exists")
        conn.execute("INSERT INTO entities(tbl, pk, rk, ts, props) VALUES (?, ?, ?, ?, ?)", (key, pk, rk, now, props))
        return entity_of((pk, rk, now, props))

    def _update(self, conn: Conn, key: str, pk: str, rk: str, properties: Mapping[str, TypedValue],
                merge: bool, if_match: str | None, now: int) -> Entity:
        row = conn.execute("SELECT ts, props FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
                           (key, pk, rk)).fetchone()
        if row is None:
            if if_match is not None:
                raise no_entity()
            return self._insert(conn, key, pk, rk, encode(properties), now)
        check_etag(if_match, row[0])
        merged = {**decode(row[1]), **properties} if merge else dict(properties)
        if merge:
            check_properties(merged)  # the merged entity keeps the limits (the parts were checked before)
        ts = max(now, row[0] + 1)
        props = encode(merged)
        conn.execute("UPDATE entities SET ts = ?, props = ? WHERE tbl = ? AND pk = ? AND rk = ?",
                     (ts, props, key, pk, rk))
        return entity_of((pk, rk, ts, props))

    def _delete(self, conn: Conn, key: str, pk: str, rk: str, if_match: str | None) -> None:
        if if_match is None or not if_match.strip():
            raise condition_failed()
        row = conn.execute("SELECT ts FROM entities WHERE tbl = ? AND pk = ? AND rk = ?", (key, pk, rk)).fetchone()
        if row is None:
            raise no_entity()
        check_etag(if_match, row[0])
        conn.execute("DELETE FROM entities WHERE tbl = ? AND pk = ? AND rk = ?", (key, pk, rk))

    async def insert_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue]) -> Entity:
        props = encode(properties)
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
        def run(conn: Conn) -> Entity:
            key = self._table_key(conn, table)
            row = conn.execute("SELECT pk, rk, ts, props FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
                               (key, partition_key, row_key)).fetchone()
            if row is None:
                raise no_entity()
            return entity_of(row)

        return await self._db.read(run)

    async def query_entities(self, table: str, *, filter: str | None = None, top: int = MAX_QUERY_RESULTS,
                             after: tuple[str, str] | None = None) -> tuple[list[Entity], tuple[str, str] | None]:
        parsed = parse_filter(filter) if filter else None
        where, args = _key_bounds(parsed)

        def run(conn: Conn) -> tuple[list[Entity], tuple[str, str] | None]:
            key = self._table_key(conn, table)
            start, past = after or ("", ""), ">="  # `after` itself is included, then the scan goes on past
            found: list[Entity] = []
            while True:
                rows = conn.execute(
                    f"SELECT pk, rk, ts, props FROM entities WHERE {' AND '.join(['tbl = ?', *where])} AND "
                    f"(pk > ? OR (pk = ? AND rk {past} ?)) ORDER BY pk, rk LIMIT ?",
                    (key, *args, start[0], start[0], start[1], SCAN_BATCH)).fetchall()
                for row in rows:
                    entity = entity_of(row)
                    if parsed is None or parsed.matches(entity):
                        if len(found) == top:
                            return found, (entity.partition_key, entity.row_key)
                        found.append(entity)
                if len(rows) < SCAN_BATCH:
                    return found, None
                start, past = (rows[-1][0], rows[-1][1]), ">"

        return await self._db.read(run)

    async def submit_batch(self, table: str, operations: Sequence[BatchOperation]) -> list[Entity | None]:
        now = self._now_ticks()

        def run(conn: Conn) -> list[Entity | None]:
            key = self._table_key(conn, table)
            results: list[Entity | None] = []
            for index, op in enumerate(operations):
                try:
                    results.append(self._apply(conn, key, op, now))
                except StorageError as exc:
                    raise BatchFailed(index, exc) from None
            return results

        return await self._db.write(run)

    def _apply(self, conn: Conn, key: str, op: BatchOperation, now: int) -> Entity | None:
        pk, rk = op.partition_key, op.row_key
        if op.kind == "insert":
            return self._insert(conn, key, pk, rk, encode(op.properties), now)
        if op.kind == "delete":
            self._delete(conn, key, pk, rk, op.if_match)
            return None
        merge = op.kind in ("merge", "upsert-merge")
        if_match = op.if_match if op.kind in ("merge", "replace") else None
        return self._update(conn, key, pk, rk, op.properties, merge, if_match or ("*" if op.kind in ("merge", "replace")
                                                                                   else None), now)

    async def aclose(self) -> None:
        await self._db.aclose()


def _key_bounds(parsed: Filter | None) -> tuple[list[str], list[Any]]:
    """The SQL conditions a filter puts on PartitionKey (and RowKey when the partition is exact)."""
    where: list[str] = []
    args: list[Any] = []
    if parsed is None:
        return where, args
    low, high, exact = parsed.bounds("PartitionKey")
    if exact:
        where.append("pk = ?")
        args.append(low)
        rk_low, _, rk_exact = parsed.bounds("RowKey")
        if rk_exact:
            where.append("rk = ?")
            args.append(rk_low)
        return where, args
    if low is not None:
        where.append("pk >= ?")
        args.append(low)
    if high is not None:
        where.append("pk <= ?")
        args.append(high)
    return where, args
