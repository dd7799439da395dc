"""The Event Grid store on embedded SQLite: ``<data>/eventgrid/eventgrid.db``.

Events and their delivery rows are written in one transaction; a host takes due rows by writing
its owner id and a lease expiry in the same ``BEGIN IMMEDIATE`` transaction that selects them,
and every later update requires that it still holds the lease, so hosts sharing the file never
deliver a row twice (the contract is `funchost.storage.eventgrid`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from funchost.storage.eventgrid import (
    DEADLETTERING,
    PENDING,
    DeliveryRow,
    NewEvent,
    SubscriptionStats,
)
from funchost.storage.sqlite.db import SqliteDatabase

DB_FILE = "eventgrid.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    topic TEXT NOT NULL,
    schema TEXT NOT NULL,
    event_id TEXT NOT NULL,
    body TEXT NOT NULL,
    size INTEGER NOT NULL,
    published REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription TEXT NOT NULL,
    event_seq INTEGER NOT NULL REFERENCES events(seq),
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    next_attempt REAL NOT NULL,
    expires REAL NOT NULL,
    lease_owner TEXT,
    lease_until REAL,
    last_outcome TEXT,
    last_status INTEGER,
    last_attempt REAL,
    reason TEXT,
    gave_up REAL,
    finished REAL,
    location TEXT
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(state, next_attempt);
CREATE INDEX IF NOT EXISTS deliveries_sub ON deliveries(subscription, state);
CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS validations (
    subscription TEXT PRIMARY KEY,
    endpoint_hash TEXT NOT NULL,
    validated REAL NOT NULL
)
"""


class SqliteEventStore:
    def __init__(self, directory: Path) -> None:
        self.db = SqliteDatabase(Path(directory) / DB_FILE, SCHEMA, name="eventgrid")

    async def aclose(self) -> None:
        await self.db.aclose()

    # -- publishing ------------------------------------------------------------------------------

    async def append(self, topic: str, schema: str, events: Sequence[NewEvent], now: float,
                     cursor: tuple[str, str | None, str] | None = None) -> bool:
        """Store events and their delivery rows atomically.

        With `cursor=(name, expected, new)` the write only happens if the stored cursor still
        equals `expected` (then it becomes `new`): how hosts sharing a folder publish each blob
        change exactly once. Returns False when the cursor had moved.
        """
        return await self.db.write(lambda conn: _append(conn, topic, schema, events, now, cursor))

    async def get_cursor(self, name: str) -> str | None:
        def run(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()
            return None if row is None else str(row[0])

        return await self.db.read(run)

    async def init_cursor(self, name: str, value: str) -> str:
        """Set the cursor if absent; return the stored value."""

        def run(conn: sqlite3.Connection) -> str:
            conn.execute("INSERT OR IGNORE INTO cursors(name, value) VALUES (?, ?)", (name, value))
            return str(conn.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()[0])

        return await self.db.write(run)

    # -- delivery --------------------------------------------------------------------------------

    async def lease_due(self, owner: str, now: float, lease_seconds: float, limit: int) -> list[DeliveryRow]:
        def run(conn: sqlite3.Connection) -> list[DeliveryRow]:
            rows = conn.execute(
                f"{_SELECT} WHERE d.state IN (?, ?) AND d.next_attempt <= ? "
                "AND (d.lease_until IS NULL OR d.lease_until <= ?) ORDER BY d.next_attempt, d.id LIMIT ?",
                (PENDING, DEADLETTERING, now, now, limit),
            ).fetchall()
            ids = [r["id"] for r in rows]
            conn.executemany("UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE id = ?",
                             [(owner, now + lease_seconds, i) for i in ids])
            return [_row(r) for r in rows]

        return await self.db.write(run)

    async def next_due(self) -> float | None:
        def run(conn: sqlite3.Connection) -> float | None:
            row = conn.execute(
                "SELECT MIN(MAX(next_attempt, COALESCE(lease_until, 0))) FROM deliveries WHERE state IN (?, ?)",
                (PENDING, DEADLETTERING)).fetchone()
            return None if row is None or row[0] is None else float(row[0])

        return await self.db.read(run)

    async def update(self, owner: str, changes: Iterable[tuple[int, dict[str, Any]]]) -> int:
        """Apply column changes to leased rows still held by `owner`; release their lease."""
        batch = list(changes)

        def run(conn: sqlite3.Connection) -> int:
            done = 0
            for row_id, values in batch:
                cols = ", ".join(f"{k} = ?" for k in values)
                sql = (f"UPDATE deliveries SET {cols}, lease_owner = NULL, lease_until = NULL "
                       "WHERE id = ? AND lease_owner = ?")
                done += conn.execute(sql, (*values.values(), row_id, owner)).rowcount
            return done

        return await self.db.write(run)

    # -- webhook validation ------------------------------------------------------------------------

    async def is_validated(self, subscription: str, endpoint_hash: str) -> bool:
        def run(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT endpoint_hash FROM validations WHERE subscription = ?",
                               (subscription,)).fetchone()
            return row is not None and row[0] == endpoint_hash

        return await self.db.read(run)

    async def set_validated(self, subscription: str, endpoint_hash: str, now: float) -> None:
        await self.db.write(lambda conn: conn.execute(
            "INSERT OR REPLACE INTO validations(subscription, endpoint_hash, validated) VALUES (?, ?, ?)",
            (subscription, endpoint_hash, now)))

    # -- status ----------------------------------------------------------------------------------

    async def stats(self) -> list[SubscriptionStats]:
        return await self.db.read(_stats)

    async def deliveries(self, subscription: str | None = None) -> list[DeliveryRow]:
        def run(conn: sqlite3.Connection) -> list[DeliveryRow]:
            if subscription is None:
                rows = conn.execute(f"{_SELECT} ORDER BY d.id").fetchall()
            else:
                rows = conn.execute(f"{_SELECT} WHERE d.subscription = ? ORDER BY d.id", (subscription,)).fetchall()
            return [_row(r) for r in rows]

        return await self.db.read(run)


_SELECT = (
    "SELECT d.*, e.topic, e.schema, e.body, e.size, e.published FROM deliveries d "
    "JOIN events e ON e.seq = d.event_seq"
)


def _append(conn: sqlite3.Connection, topic: str, schema: str, events: Sequence[NewEvent], now: float,
            cursor: tuple[str, str | None, str] | None) -> bool:
    if cursor is not None:
        name, expected, new = cursor
        row = conn.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()
        current = None if row is None else row[0]
        if current != expected:
            return False
        conn.execute("INSERT OR REPLACE INTO cursors(name, value) VALUES (?, ?)", (name, new))
    for item in events:
        body = json.dumps(item.event, separators=(",", ":"))
        seq = conn.execute(
            "INSERT INTO events(topic, schema, event_id, body, size, published) VALUES (?, ?, ?, ?, ?, ?)",
            (topic, schema, str(item.event.get("id", "")), body, len(body.encode()), now),
        ).lastrowid
        conn.executemany(
            "INSERT INTO deliveries(subscription, event_seq, state, max_attempts, next_attempt, expires) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(t.subscription, seq, PENDING, t.max_attempts, now, now + t.ttl_seconds) for t in item.targets],
        )
    return True


def _row(r: sqlite3.Row) -> DeliveryRow:
    return DeliveryRow(
        id=r["id"], subscription=r["subscription"], event_seq=r["event_seq"], topic=r["topic"],
        schema=r["schema"], event=json.loads(r["body"]), size=r["size"], published=r["published"],
        state=r["state"], attempts=r["attempts"], max_attempts=r["max_attempts"],
        next_attempt=r["next_attempt"], expires=r["expires"], last_outcome=r["last_outcome"],
        last_status=r["last_status"], last_attempt=r["last_attempt"], reason=r["reason"], gave_up=r["gave_up"],
    )


def _stats(conn: sqlite3.Connection) -> list[SubscriptionStats]:
    counts: dict[str, dict[str, Any]] = {}
    for sub, state, n, nxt, retrying in conn.execute(
        "SELECT subscription, state, COUNT(*), MIN(next_attempt), SUM(attempts > 0) "
        "FROM deliveries GROUP BY subscription, state"
    ):
        entry = counts.setdefault(sub, {"subscription": sub})
        entry[state] = n
        if state == PENDING:
            entry["next_attempt"] = nxt
            entry["retrying"] = int(retrying or 0)
    return [SubscriptionStats(**v) for _, v in sorted(counts.items())]
