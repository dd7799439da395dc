"""The task hub on SQLite: one database file per hub, shared by every host on the data folder.

Leases are columns (``lease_token``, ``lease_expires``) taken and checked inside ``BEGIN
IMMEDIATE`` transactions, so two processes never run the same instance or activity at once and a
completion from a host whose lease lapsed writes nothing. Times are epoch seconds from the
runtime's clock. The schema and the statements are in `durable_sql`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from funchost.storage.durable import (
    ORCHESTRATION,
    ActivityItem,
    Commit,
    Committed,
    Delivered,
    HubCounts,
    InstanceClaim,
    InstanceQuery,
    InstanceRecord,
    NewInstance,
    Outbound,
    QueryPage,
    SessionOutcome,
    WorkItem,
)
from funchost.storage.sqlite import durable_sql as sql
from funchost.storage.sqlite.db import SqliteDatabase


class SqliteTaskHub:
    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        self.path = Path(path)
        self.db = SqliteDatabase(self.path, sql.SCHEMA, name=f"durable-{name}")

    async def create_if_not_exists(self) -> None:
        await self.db.write(lambda conn: None)  # the first connection creates the schema

    # -- instances ---------------------------------------------------------------------------------

    async def create_instance(self, instance: NewInstance, *, now: float, dedupe: frozenset[str],
                              claim: InstanceClaim | None = None) -> WorkItem | None:
        def write(conn: sqlite3.Connection) -> WorkItem | None:
            sql.create_instance(conn, instance, now, dedupe)
            return None if claim is None else sql.claim_instance(conn, instance.instance_id, claim, now)

        return await self.db.write(write)

    async def get_instance(self, instance_id: str) -> InstanceRecord | None:
        def read(conn: sqlite3.Connection) -> InstanceRecord | None:
            row = conn.execute("SELECT * FROM instances WHERE instance_id = ?", (instance_id,)).fetchone()
            return sql.to_record(row) if row is not None else None

        return await self.db.read(read)

    async def get_history(self, instance_id: str) -> list[dict[str, Any]]:
        def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            return sql.read_history(conn, instance_id)

        return await self.db.read(read)

    async def query(self, query: InstanceQuery) -> QueryPage:
        return await self.db.read(lambda conn: sql.query_instances(conn, query))

    async def send(self, messages: Sequence[Outbound], *, now: float) -> None:
        def write(conn: sqlite3.Connection) -> None:
            sql.send_messages(conn, messages, now)

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
        if not await self.db.read(lambda conn: conn.execute(sql.LOCKABLE, {"now": now, "kind": kind, "limit": 1})
                                  .fetchone() is not None):
            return []  # nothing to take: no write transaction (they queue behind every other host's)

        def write(conn: sqlite3.Connection) -> list[WorkItem]:
            ids = [row[0] for row in conn.execute(sql.LOCKABLE, {"now": now, "kind": kind, "limit": limit})]
            return [sql.take_instance(conn, instance_id, owner=owner, now=now, lease=lease, batch=batch)
                    for instance_id in ids]

        return await self.db.write(write)

    async def commit(self, item: WorkItem, commit: Commit, *, now: float) -> Committed:
        return await self.db.write(lambda conn: sql.apply_commit(conn, item, commit, now))

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
        if not await self.db.read(lambda conn: conn.execute(sql.AVAILABLE_ACTIVITY, (now, now)).fetchone() is not None):
            return []

        def write(conn: sqlite3.Connection) -> list[ActivityItem]:
            rows = conn.execute(
                "SELECT * FROM activities WHERE visible_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?) "
                "ORDER BY id LIMIT ?", (now, now, limit)).fetchall()
            items = []
            for row in rows:
                token = sql.new_token(owner)
                conn.execute("UPDATE activities SET lease_token = ?, lease_expires = ?, "
                             "dequeue_count = dequeue_count + 1 WHERE id = ?", (token, now + lease, row["id"]))
                items.append(ActivityItem(row["id"], row["instance_id"], row["execution_id"], row["task_id"],
                                          row["name"], row["input"], row["dequeue_count"] + 1, token, now + lease))
            return items

        return await self.db.write(write)

    async def complete_activity(self, item: ActivityItem, result: Outbound, *, now: float,
                                claim: InstanceClaim | None = None) -> Delivered:
        def write(conn: sqlite3.Connection) -> Delivered:
            if conn.execute("DELETE FROM activities WHERE id = ? AND lease_token = ?",
                            (item.id, item.lease_token)).rowcount != 1:
                return Delivered(False)
            sql.send_messages(conn, [result], now)
            return Delivered(True, None if claim is None else sql.claim_woken(conn, result.instance_id, claim, now))

        return await self.db.write(write)

    async def commit_session(self, item: WorkItem, commit: Commit, activity: ActivityItem, result: Outbound, *,
                             now: float, claim: InstanceClaim | None = None) -> SessionOutcome:
        return await self.db.write(lambda conn: sql.apply_session(conn, item, commit, activity, result, now, claim))

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
