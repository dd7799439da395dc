"""The task hub on SQLite: one database file per hub, shared by every host on the data folder.

Leases are columns (``lease_token``, ``lease_expires``) taken and checked inside ``BEGIN
IMMEDIATE`` transactions, so two processes never run the same instance or activity at once and a
completion from a host whose lease lapsed writes nothing. Times are epoch seconds from the
runtime's clock.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from funchost.storage.durable import (
    ENTITY,
    ORCHESTRATION,
    ActivityItem,
    Commit,
    HubCounts,
    InstanceExists,
    InstanceQuery,
    InstanceRecord,
    LeaseLost,
    Message,
    NewActivity,
    NewInstance,
    Outbound,
    QueryPage,
    WorkItem,
)
from funchost.storage.sqlite.db import SqliteDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS instances (
    instance_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL DEFAULT '',
    execution_id TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    input TEXT,
    output TEXT,
    custom_status TEXT,
    created_time REAL NOT NULL,
    last_updated_time REAL NOT NULL,
    parent_instance_id TEXT,
    entity_exists INTEGER NOT NULL DEFAULT 0,
    entity_state TEXT,
    lease_token TEXT,
    lease_expires REAL
);
CREATE INDEX IF NOT EXISTS instances_created ON instances (kind, created_time, instance_id);
CREATE TABLE IF NOT EXISTS history (
    instance_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (instance_id, seq)
);
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT,
    event TEXT NOT NULL,
    visible_at REAL NOT NULL,
    control INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS inbox_instance ON inbox (instance_id, id);
CREATE INDEX IF NOT EXISTS inbox_visible ON inbox (visible_at);
CREATE TABLE IF NOT EXISTS activities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    input TEXT,
    visible_at REAL NOT NULL,
    dequeue_count INTEGER NOT NULL DEFAULT 0,
    lease_token TEXT,
    lease_expires REAL
);
CREATE INDEX IF NOT EXISTS activities_visible ON activities (visible_at, id)
"""

_LOCKABLE = """
SELECT m.instance_id FROM inbox m JOIN instances i ON i.instance_id = m.instance_id
WHERE m.visible_at <= :now AND i.kind = :kind
  AND (i.lease_expires IS NULL OR i.lease_expires <= :now)
  AND (i.status != 'Suspended' OR m.control = 1)
GROUP BY m.instance_id ORDER BY MIN(m.id) LIMIT :limit
"""


_AVAILABLE_ACTIVITY = ("SELECT 1 FROM activities WHERE visible_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?) "
                       "LIMIT 1")


def _time(value: float) -> datetime:
    return datetime.fromtimestamp(value, timezone.utc)


def _record(row: sqlite3.Row) -> InstanceRecord:
    return InstanceRecord(
        instance_id=row["instance_id"], kind=row["kind"], name=row["name"], version=row["version"],
        execution_id=row["execution_id"], status=row["status"], input=row["input"], output=row["output"],
        custom_status=row["custom_status"], created_time=_time(row["created_time"]),
        last_updated_time=_time(row["last_updated_time"]), parent_instance_id=row["parent_instance_id"],
        entity_exists=bool(row["entity_exists"]), entity_state=row["entity_state"],
    )


def _new_token(owner: str) -> str:
    return f"{owner}:{uuid.uuid4().hex}"


class SqliteTaskHub:
    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        self.path = Path(path)
        self.db = SqliteDatabase(self.path, SCHEMA, name=f"durable-{name}")

    async def create_if_not_exists(self) -> None:
        await self.db.write(lambda conn: None)  # the first connection creates the schema

    # -- instances ---------------------------------------------------------------------------------

    async def create_instance(self, instance: NewInstance, *, now: float, dedupe: frozenset[str]) -> None:
        await self.db.write(lambda conn: _create(conn, instance, now, dedupe))

    async def get_instance(self, instance_id: str) -> InstanceRecord | None:
        def read(conn: sqlite3.Connection) -> InstanceRecord | None:
            row = conn.execute("SELECT * FROM instances WHERE instance_id = ?", (instance_id,)).fetchone()
            return _record(row) if row is not None else None

        return await self.db.read(read)

    async def get_history(self, instance_id: str) -> list[dict[str, Any]]:
        def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            return _history(conn, instance_id)

        return await self.db.read(read)

    async def query(self, query: InstanceQuery) -> QueryPage:
        return await self.db.read(lambda conn: _query(conn, query))

    async def send(self, messages: Sequence[Outbound], *, now: float) -> None:
        def write(conn: sqlite3.Connection) -> None:
            _send(conn, messages, now)

        await self.db.write(write)

    async def purge(self, instance_ids: Sequence[str]) -> int:
        def write(conn: sqlite3.Connection) -> int:
            deleted = 0
            for instance_id in instance_ids:
                deleted += conn.execute("DELETE FROM instances WHERE instance_id = ?", (instance_id,)).rowcount
                for table in ("history", "inbox", "activities"):
                    conn.execute(f"DELETE FROM {table} WHERE instance_id = ?", (instance_id,))
            return deleted

        return await self.db.write(write)

    # -- orchestration and entity work -------------------------------------------------------------

    async def lock_instances(self, kind: str, *, owner: str, now: float, lease: float, limit: int,
                             batch: int | None = None) -> list[WorkItem]:
        if not await self.db.read(lambda conn: conn.execute(_LOCKABLE, {"now": now, "kind": kind, "limit": 1})
                                  .fetchone() is not None):
            return []  # nothing to take: no write transaction (they queue behind every other host's)

        def write(conn: sqlite3.Connection) -> list[WorkItem]:
            ids = [row[0] for row in conn.execute(_LOCKABLE, {"now": now, "kind": kind, "limit": limit})]
            items = []
            for instance_id in ids:
                token = _new_token(owner)
                conn.execute("UPDATE instances SET lease_token = ?, lease_expires = ? WHERE instance_id = ?",
                             (token, now + lease, instance_id))
                row = conn.execute("SELECT * FROM instances WHERE instance_id = ?", (instance_id,)).fetchone()
                record = _record(row)
                control_only = " AND control = 1" if record.status == "Suspended" else ""
                sql = (f"SELECT * FROM inbox WHERE instance_id = ? AND visible_at <= ?{control_only} ORDER BY id"
                       + (f" LIMIT {int(batch)}" if batch else ""))
                messages = [Message(r["id"], r["instance_id"], r["execution_id"], json.loads(r["event"]),
                                    r["visible_at"]) for r in conn.execute(sql, (instance_id, now))]
                history = _history(conn, instance_id) if kind == ORCHESTRATION else []
                items.append(WorkItem(record, history, messages, token, now + lease))
            return items

        return await self.db.write(write)

    async def commit(self, item: WorkItem, commit: Commit, *, now: float) -> None:
        await self.db.write(lambda conn: _commit(conn, item, commit, now))

    async def release(self, item: WorkItem) -> None:
        await self.db.write(lambda conn: conn.execute(
            "UPDATE instances SET lease_token = NULL, lease_expires = NULL WHERE instance_id = ? AND lease_token = ?",
            (item.instance.instance_id, item.lease_token)))

    async def renew_instance(self, item: WorkItem, *, until: float) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            changed = conn.execute("UPDATE instances SET lease_expires = ? WHERE instance_id = ? AND lease_token = ?",
                                   (until, item.instance.instance_id, item.lease_token)).rowcount
            return changed == 1

        return await self.db.write(write)

    async def next_visible(self, kind: str, *, now: float) -> float | None:
        def read(conn: sqlite3.Connection) -> float | None:
            row = conn.execute(
                "SELECT MIN(m.visible_at) FROM inbox m JOIN instances i ON i.instance_id = m.instance_id "
                "WHERE m.visible_at > ? AND i.kind = ?", (now, kind)).fetchone()
            return float(row[0]) if row and row[0] is not None else None

        return await self.db.read(read)

    # -- activities --------------------------------------------------------------------------------

    async def lock_activities(self, *, owner: str, now: float, lease: float, limit: int) -> list[ActivityItem]:
        if not await self.db.read(lambda conn: conn.execute(_AVAILABLE_ACTIVITY, (now, now)).fetchone() is not None):
            return []

        def write(conn: sqlite3.Connection) -> list[ActivityItem]:
            rows = conn.execute(
                "SELECT * FROM activities WHERE visible_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?) "
                "ORDER BY id LIMIT ?", (now, now, limit)).fetchall()
            items = []
            for row in rows:
                token = _new_token(owner)
                conn.execute("UPDATE activities SET lease_token = ?, lease_expires = ?, "
                             "dequeue_count = dequeue_count + 1 WHERE id = ?", (token, now + lease, row["id"]))
                items.append(ActivityItem(row["id"], row["instance_id"], row["execution_id"], row["task_id"],
                                          row["name"], row["input"], row["dequeue_count"] + 1, token, now + lease))
            return items

        return await self.db.write(write)

    async def complete_activity(self, item: ActivityItem, result: Outbound, *, now: float) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if conn.execute("DELETE FROM activities WHERE id = ? AND lease_token = ?",
                            (item.id, item.lease_token)).rowcount != 1:
                return False
            _send(conn, [result], now)
            return True

        return await self.db.write(write)

    async def release_activity(self, item: ActivityItem) -> None:
        await self.db.write(lambda conn: conn.execute(
            "UPDATE activities SET lease_token = NULL, lease_expires = NULL WHERE id = ? AND lease_token = ?",
            (item.id, item.lease_token)))

    async def renew_activity(self, item: ActivityItem, *, until: float) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            return conn.execute("UPDATE activities SET lease_expires = ? WHERE id = ? AND lease_token = ?",
                                (until, item.id, item.lease_token)).rowcount == 1

        return await self.db.write(write)

    # -- housekeeping ------------------------------------------------------------------------------

    async def counts(self) -> HubCounts:
        def read(conn: sqlite3.Connection) -> HubCounts:
            statuses = {row[0]: row[1] for row in conn.execute(
                "SELECT status, COUNT(*) FROM instances WHERE kind = ? GROUP BY status", (ORCHESTRATION,))}
            inbox = conn.execute("SELECT COUNT(*) FROM inbox").fetchone()[0]
            activities = conn.execute("SELECT COUNT(*) FROM activities").fetchone()[0]
            return HubCounts(statuses, int(inbox), int(activities))

        return await self.db.read(read)

    async def aclose(self) -> None:
        await self.db.aclose()


# -- statements used inside transactions ------------------------------------------------------------


def _history(conn: sqlite3.Connection, instance_id: str) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT event FROM history WHERE instance_id = ? ORDER BY seq", (instance_id,))
    return [json.loads(row[0]) for row in rows]


def _create(conn: sqlite3.Connection, instance: NewInstance, now: float, dedupe: frozenset[str]) -> None:
    row = conn.execute("SELECT status FROM instances WHERE instance_id = ?", (instance.instance_id,)).fetchone()
    if row is not None and row["status"] in dedupe:
        raise InstanceExists(instance.instance_id, row["status"])
    _replace_instance(conn, instance, now)


def _replace_instance(conn: sqlite3.Connection, instance: NewInstance, now: float) -> None:
    """A new execution replaces whatever was there: old history and undelivered messages go."""
    conn.execute("DELETE FROM history WHERE instance_id = ?", (instance.instance_id,))
    conn.execute("DELETE FROM inbox WHERE instance_id = ?", (instance.instance_id,))
    conn.execute("DELETE FROM activities WHERE instance_id = ?", (instance.instance_id,))
    conn.execute(
        "INSERT OR REPLACE INTO instances (instance_id, kind, name, version, execution_id, status, input, output, "
        "custom_status, created_time, last_updated_time, parent_instance_id) "
        "VALUES (?, ?, ?, ?, ?, 'Pending', ?, NULL, NULL, ?, ?, ?)",
        (instance.instance_id, ORCHESTRATION, instance.name, instance.version, instance.execution_id,
         instance.input, now, now, instance.parent_instance_id))
    visible = now if instance.visible_at is None else instance.visible_at
    conn.execute("INSERT INTO inbox (instance_id, execution_id, event, visible_at, control) VALUES (?, ?, ?, ?, 0)",
                 (instance.instance_id, instance.execution_id, json.dumps(instance.started), visible))


def _send(conn: sqlite3.Connection, messages: Sequence[Outbound], now: float) -> None:
    for message in messages:
        if message.instance_id.startswith("@"):
            _ensure_entity(conn, message.instance_id, now)
        visible = now if message.visible_at is None else message.visible_at
        conn.execute("INSERT INTO inbox (instance_id, execution_id, event, visible_at, control) VALUES (?, ?, ?, ?, ?)",
                     (message.instance_id, message.execution_id, json.dumps(message.event), visible,
                      1 if message.control else 0))


def _ensure_entity(conn: sqlite3.Connection, instance_id: str, now: float) -> None:
    name = instance_id[1:].split("@", 1)[0]
    conn.execute("INSERT OR IGNORE INTO instances (instance_id, kind, name, status, created_time, last_updated_time) "
                 "VALUES (?, ?, ?, 'Running', ?, ?)", (instance_id, ENTITY, name, now, now))


def _commit(conn: sqlite3.Connection, item: WorkItem, commit: Commit, now: float) -> None:
    instance_id = item.instance.instance_id
    row = conn.execute("SELECT lease_token FROM instances WHERE instance_id = ?", (instance_id,)).fetchone()
    if row is None or row["lease_token"] != item.lease_token:
        raise LeaseLost(f"the lease on '{instance_id}' was lost; another host has taken the instance over")
    update = commit.update
    release = ", lease_token = NULL, lease_expires = NULL" if commit.release else ""
    conn.execute(
        "UPDATE instances SET status = ?, execution_id = ?, input = ?, output = ?, custom_status = ?, "
        "name = COALESCE(?, name), version = COALESCE(?, version), entity_exists = ?, entity_state = ?, "
        f"last_updated_time = ?{release} WHERE instance_id = ?",
        (update.status, update.execution_id, update.input, update.output, update.custom_status, update.name,
         update.version, 1 if update.entity_exists else 0, update.entity_state, now, instance_id))
    conn.executemany("DELETE FROM inbox WHERE id = ?", [(message_id,) for message_id in commit.consumed])
    if commit.reset_history:
        conn.execute("DELETE FROM history WHERE instance_id = ?", (instance_id,))
    if commit.history:
        start = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM history WHERE instance_id = ?",
                             (instance_id,)).fetchone()[0]
        conn.executemany("INSERT INTO history (instance_id, seq, event) VALUES (?, ?, ?)",
                         [(instance_id, start + i, json.dumps(event)) for i, event in enumerate(commit.history)])
    for instance in commit.instances:
        _replace_instance(conn, instance, now)
    _add_activities(conn, commit.activities, now)
    _send(conn, commit.messages, now)


def _add_activities(conn: sqlite3.Connection, activities: Sequence[NewActivity], now: float) -> None:
    conn.executemany(
        "INSERT INTO activities (instance_id, execution_id, task_id, name, input, visible_at) VALUES (?, ?, ?, ?, ?, ?)",
        [(a.instance_id, a.execution_id, a.task_id, a.name, a.input, now) for a in activities])


def _query(conn: sqlite3.Connection, query: InstanceQuery) -> QueryPage:
    clauses = ["kind = ?"]
    params: list[Any] = [query.kind]
    if query.created_from is not None:
        clauses.append("created_time >= ?")
        params.append(query.created_from.timestamp())
    if query.created_to is not None:
        clauses.append("created_time <= ?")
        params.append(query.created_to.timestamp())
    if query.statuses:
        clauses.append(f"status IN ({', '.join('?' for _ in query.statuses)})")
        params.extend(sorted(query.statuses))
    if query.prefix:
        clauses.append("substr(instance_id, 1, ?) = ?")
        params.extend([len(query.prefix), query.prefix])
    if query.name is not None:
        clauses.append("name = ?")
        params.append(query.name)
    offset = _decode_token(query.continuation)
    top = max(1, query.top)
    rows = conn.execute(f"SELECT * FROM instances WHERE {' AND '.join(clauses)} "
                        "ORDER BY created_time, instance_id LIMIT ? OFFSET ?", (*params, top + 1, offset)).fetchall()
    more = len(rows) > top
    return QueryPage([_record(r) for r in rows[:top]], _encode_token(offset + top) if more else None)


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        return max(0, int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"]))
    except (ValueError, KeyError, TypeError):
        return 0


__all__ = ["SqliteTaskHub", "LeaseLost"]
