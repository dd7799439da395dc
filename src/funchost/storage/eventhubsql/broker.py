"""`EventHubBroker` written once over a store database (`sqlconn.StoreDatabase`), in SQL that
SQLite and PostgreSQL both run; its tables are `SCHEMA` on SQLite (one file per namespace,
``<dir>/eventhubs.db``) and the steps of `postgres/eventhubs_schema` on PostgreSQL.

Each send is one write transaction, serialized per namespace by the backend (BEGIN IMMEDIATE on
the file, the namespace's lock on PostgreSQL), that picks the partition, takes the partition's
next sequence numbers and offsets and appends the events, so every host sharing the namespace
appends to one consistent log: numbers in commit order, without gaps, and a send that returned
is durable. Reads are plain indexed range queries (on PostgreSQL from one snapshot). Events older
than the hub's retention are invisible to reads and purged by later sends (at most once a minute
per hub and process).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from funchost.clock import Clock
from funchost.errors import InvalidInput, ResourceConflict
from funchost.storage.eventhub_partitioning import partition_index_for_key
from funchost.storage.eventhubs import (
    DEFAULT_CONSUMER_GROUP,
    DEFAULT_PARTITION_COUNT,
    DEFAULT_RETENTION_SECONDS,
    ConsumerGroupNotFound,
    EventHubNotFound,
    EventPosition,
    EventToSend,
    HubProperties,
    PartitionProperties,
    ReceivedEvent,
    check_publish_size,
    entity_key,
    validate_consumer_group_name,
    validate_hub_name,
    validate_partition_count,
)
from funchost.storage.sqlconn import Conn, Row, StoreDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS hubs (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, partition_count INTEGER NOT NULL, retention REAL NOT NULL,
    created REAL NOT NULL, fixed_groups INTEGER NOT NULL DEFAULT 0, round_robin INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS consumer_groups (
    hub TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (hub, key));
CREATE TABLE IF NOT EXISTS partitions (
    hub TEXT NOT NULL, id TEXT NOT NULL, next_sequence INTEGER NOT NULL DEFAULT 0,
    next_offset INTEGER NOT NULL DEFAULT 0, last_enqueued REAL, PRIMARY KEY (hub, id));
CREATE TABLE IF NOT EXISTS events (
    hub TEXT NOT NULL, partition TEXT NOT NULL, seq INTEGER NOT NULL, "offset" INTEGER NOT NULL,
    enqueued REAL NOT NULL, pkey TEXT, body BLOB NOT NULL, props TEXT, content_type TEXT,
    correlation_id TEXT, message_id TEXT, PRIMARY KEY (hub, partition, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_offset ON events (hub, partition, "offset");
CREATE INDEX IF NOT EXISTS events_by_time ON events (hub, enqueued)
"""

PURGE_EVERY = 60.0  # seconds between retention purges of one hub by one process
_COLUMNS = 'partition, seq, "offset", enqueued, pkey, body, props, content_type, correlation_id, message_id'


def _when(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def _event(row: Row) -> ReceivedEvent:
    return ReceivedEvent(
        partition_id=row["partition"], sequence_number=row["seq"], offset=row["offset"],
        enqueued_time=_when(row["enqueued"]), body=bytes(row["body"]), partition_key=row["pkey"],
        properties=json.loads(row["props"]) if row["props"] else {}, content_type=row["content_type"],
        correlation_id=row["correlation_id"], message_id=row["message_id"])


class SqlEventHubBroker:
    def __init__(self, namespace: str, clock: Clock, db: StoreDatabase) -> None:
        self.namespace = namespace
        self.clock = clock
        self._db = db
        self._purged: dict[str, float] = {}

    # -- hubs and consumer groups ------------------------------------------------------------------

    async def create_hub(self, name: str, *, partition_count: int | None = None,
                         consumer_groups: Sequence[str] = (), retention_seconds: float | None = None,
                         exist_ok: bool = True) -> HubProperties:
        validate_hub_name(name)
        count = DEFAULT_PARTITION_COUNT if partition_count is None else partition_count
        validate_partition_count(count)
        for group in consumer_groups:
            validate_consumer_group_name(group)
        retention = DEFAULT_RETENTION_SECONDS if retention_seconds is None else float(retention_seconds)
        if retention <= 0:
            raise InvalidInput(f"the retention must be positive, got {retention_seconds!r}")
        now = self.clock.now().timestamp()
        key = entity_key(name)

        def run(conn: Conn) -> HubProperties:
            if conn.execute("SELECT 1 FROM hubs WHERE key = ?", (key,)).fetchone() is not None:
                if not exist_ok:
                    raise ResourceConflict(f"the event hub '{name}' already exists", code="MessagingEntityAlreadyExists")
                return _hub(conn, key)
            conn.execute("INSERT INTO hubs(key, name, partition_count, retention, created, fixed_groups) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (key, name, count, retention, now, int(bool(consumer_groups))))
            conn.executemany("INSERT INTO partitions(hub, id) VALUES (?, ?)", [(key, str(i)) for i in range(count)])
            groups = [DEFAULT_CONSUMER_GROUP, *[g for g in consumer_groups if entity_key(g) != "$default"]]
            conn.executemany("INSERT INTO consumer_groups(hub, key, name) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                             [(key, entity_key(g), g) for g in groups])
            return _hub(conn, key)

        return await self._db.write(run)

    async def hub(self, name: str) -> HubProperties:
        return await self._db.read(lambda conn: _hub(conn, entity_key(name)))

    async def list_hubs(self) -> list[HubProperties]:
        def run(conn: Conn) -> list[HubProperties]:
            keys = [r[0] for r in conn.execute("SELECT key FROM hubs ORDER BY key")]
            return [_hub(conn, k) for k in keys]

        return await self._db.read(run)

    async def ensure_consumer_group(self, hub: str, name: str) -> None:
        validate_consumer_group_name(name)
        key, group = entity_key(hub), entity_key(name)

        def run(conn: Conn) -> None:
            row = conn.execute("SELECT fixed_groups FROM hubs WHERE key = ?", (key,)).fetchone()
            if row is None:
                raise EventHubNotFound(_not_found(self.namespace, hub))
            if conn.execute("SELECT 1 FROM consumer_groups WHERE hub = ? AND key = ?", (key, group)).fetchone():
                return
            if row[0]:
                raise ConsumerGroupNotFound(
                    f"The messaging entity '{self.namespace}:eventhub:{hub}~0|{name}' could not be found.")
            conn.execute("INSERT INTO consumer_groups(hub, key, name) VALUES (?, ?, ?)", (key, group, name))

        await self._db.write(run)

    # -- send ------------------------------------------------------------------------------------

    async def send(self, hub: str, events: Sequence[EventToSend], *, partition_key: str | None = None,
                   partition_id: str | None = None) -> list[ReceivedEvent]:
        if partition_key is not None and partition_id is not None:
            raise InvalidInput("a send takes a partition key or a partition id, not both")
        check_publish_size(events, partition_key)
        if not events:
            return []
        now = self.clock.now().timestamp()
        key = entity_key(hub)
        purge_before = self._purge_due(key, now)

        def run(conn: Conn) -> list[ReceivedEvent]:
            row = conn.execute("SELECT partition_count, retention, round_robin FROM hubs WHERE key = ?",
                               (key,)).fetchone()
            if row is None:
                raise EventHubNotFound(_not_found(self.namespace, hub))
            count, retention, round_robin = row
            if partition_id is not None:
                if partition_id not in {str(i) for i in range(count)}:
                    raise InvalidInput(f"the partition '{partition_id}' does not exist in the event hub '{hub}' "
                                       f"(partitions 0-{count - 1})", code="ArgumentOutOfRange")
                target = partition_id
            elif partition_key is not None:
                target = str(partition_index_for_key(partition_key, count))
            else:
                target = str(round_robin % count)
                conn.execute("UPDATE hubs SET round_robin = ? WHERE key = ?", ((round_robin + 1) % count, key))
            seq, offset, last = conn.execute(
                "SELECT next_sequence, next_offset, last_enqueued FROM partitions WHERE hub = ? AND id = ?",
                (key, target)).fetchone()
            enqueued = max(now, last or 0.0)  # a partition's enqueued times never go backwards
            rows: list[tuple[Any, ...]] = []
            for event in events:
                rows.append((key, target, seq, offset, enqueued, partition_key, bytes(event.body),
                             json.dumps(dict(event.properties)) if event.properties else None,
                             event.content_type, event.correlation_id, event.message_id))
                seq += 1
                offset += event.size(partition_key)
            conn.executemany(f"INSERT INTO events(hub, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            conn.execute("UPDATE partitions SET next_sequence = ?, next_offset = ?, last_enqueued = ? "
                         "WHERE hub = ? AND id = ?", (seq, offset, enqueued, key, target))
            if purge_before:
                conn.execute("DELETE FROM events WHERE hub = ? AND enqueued < ?", (key, now - retention))
            return [ReceivedEvent(r[1], r[2], r[3], _when(r[4]), r[6], r[5], dict(e.properties), e.content_type,
                                  e.correlation_id, e.message_id) for r, e in zip(rows, events, strict=True)]

        return await self._db.write(run)

    def _purge_due(self, key: str, now: float) -> bool:
        if now - self._purged.get(key, float("-inf")) < PURGE_EVERY:
            return False
        self._purged[key] = now
        return True

    # -- read ------------------------------------------------------------------------------------

    async def read(self, hub: str, partition_id: str, position: EventPosition, max_events: int, *,
                   consumer_group: str = DEFAULT_CONSUMER_GROUP) -> list[ReceivedEvent]:
        if max_events < 1:
            raise InvalidInput("max_events must be at least 1")
        key = entity_key(hub)
        now = self.clock.now().timestamp()
        condition, value = _condition(position)

        def run(conn: Conn) -> list[ReceivedEvent]:
            hub_row = conn.execute("SELECT retention FROM hubs WHERE key = ?", (key,)).fetchone()
            if hub_row is None:
                raise EventHubNotFound(_not_found(self.namespace, hub))
            _partition(conn, key, hub, partition_id)
            if position.kind == "latest":
                return []
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE hub = ? AND partition = ? AND {condition} AND enqueued >= ? "
                "ORDER BY seq LIMIT ?", (key, partition_id, value, now - hub_row[0], max_events)).fetchall()
            return [_event(r) for r in rows]

        return await self._db.read(run)

    async def partition_properties(self, hub: str, partition_id: str) -> PartitionProperties:
        key = entity_key(hub)
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> PartitionProperties:
            hub_row = conn.execute("SELECT name, retention FROM hubs WHERE key = ?", (key,)).fetchone()
            if hub_row is None:
                raise EventHubNotFound(_not_found(self.namespace, hub))
            part = _partition(conn, key, hub, partition_id)
            first, retained = conn.execute(
                "SELECT MIN(seq), COUNT(*) FROM events WHERE hub = ? AND partition = ? AND enqueued >= ?",
                (key, partition_id, now - hub_row[1])).fetchone()
            last_seq = part["next_sequence"] - 1
            last_offset = -1
            if last_seq >= 0:
                found = conn.execute('SELECT "offset" FROM events WHERE hub = ? AND partition = ? AND seq = ?',
                                     (key, partition_id, last_seq)).fetchone()
                last_offset = found[0] if found else -1
            return PartitionProperties(
                hub=hub_row[0], partition_id=partition_id,
                beginning_sequence_number=first if first is not None else -1,
                last_enqueued_sequence_number=last_seq, last_enqueued_offset=last_offset,
                last_enqueued_time=_when(part["last_enqueued"]) if part["last_enqueued"] is not None else None,
                retained_events=retained)

        return await self._db.read(run)

    async def aclose(self) -> None:
        await self._db.aclose()


def _not_found(namespace: str, hub: str) -> str:
    return f"The messaging entity 'sb://{namespace}/{hub}' could not be found."


def _hub(conn: Conn, key: str) -> HubProperties:
    row = conn.execute("SELECT name, partition_count, retention, created FROM hubs WHERE key = ?", (key,)).fetchone()
    if row is None:
        raise EventHubNotFound(f"The messaging entity '{key}' could not be found.")
    groups = tuple(r[0] for r in conn.execute("SELECT name FROM consumer_groups WHERE hub = ? ORDER BY key", (key,)))
    return HubProperties(row["name"], tuple(str(i) for i in range(row["partition_count"])), _when(row["created"]),
                         row["retention"], groups)


def _partition(conn: Conn, key: str, hub: str, partition_id: str) -> Row:
    row = conn.execute("SELECT next_sequence, next_offset, last_enqueued FROM partitions WHERE hub = ? AND id = ?",
                       (key, partition_id)).fetchone()
    if row is None:
        raise InvalidInput(f"the partition '{partition_id}' does not exist in the event hub '{hub}'",
                           code="ArgumentOutOfRange")
    return row  # type: ignore[no-any-return]


def _condition(position: EventPosition) -> tuple[str, Any]:
    kind, value = position.kind, position.value
    if kind == "earliest" or kind == "latest":
        return "seq >= ?", 0
    if kind == "sequence":
        return ("seq >= ?" if position.inclusive else "seq > ?"), int(value)  # type: ignore[arg-type]
    if kind == "offset":
        return ('"offset" >= ?' if position.inclusive else '"offset" > ?'), int(value)  # type: ignore[arg-type]
    if kind == "enqueued" and isinstance(value, datetime):
        return "enqueued >= ?", value.timestamp()
    raise InvalidInput(f"unknown event position {position!r}")
