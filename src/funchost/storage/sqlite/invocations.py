"""The invocation history on embedded SQLite: ``<data>/dashboard/invocations.db``.

Two tables: one row per invocation and its log lines (deleted with it). Writes come in batches
from the dashboard's recorder: one `BEGIN IMMEDIATE` transaction and one statement per table for
a whole batch, the rows numbered by the writer (the transaction keeps other processes out).

The only index is the row number: an index on the (random) invocation ids or on function names
would cost more on every write than the scans it saves on the few page views, over a history
bounded to `MAX_HISTORY_COUNT` rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from funchost.storage.invocations import (
    FAILED,
    FunctionActivity,
    InvocationRecord,
    LogLine,
    StoredInvocation,
)
from funchost.storage.sqlite.db import SqliteDatabase

DB_FILE = "invocations.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS invocations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    function TEXT NOT NULL COLLATE NOCASE,
    trigger TEXT NOT NULL,
    reason TEXT NOT NULL,
    started REAL NOT NULL,
    duration_ms REAL NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    stack TEXT,
    details TEXT NOT NULL,
    result TEXT,
    retry_count INTEGER NOT NULL,
    dropped_logs INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS invocation_logs (
    invocation_seq INTEGER NOT NULL REFERENCES invocations(seq) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    time REAL NOT NULL,
    level TEXT NOT NULL,
    category TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (invocation_seq, n)
) WITHOUT ROWID
"""

_COLUMNS = ("seq, id, function, trigger, reason, started, duration_ms, outcome, error, stack, details, "
            "result, retry_count, dropped_logs")


class SqliteInvocationHistory:
    def __init__(self, directory: Path) -> None:
        self.db = SqliteDatabase(Path(directory) / DB_FILE, SCHEMA, name="history")

    async def append(self, records: Sequence[InvocationRecord]) -> None:
        if records:
            await self.db.write(lambda conn: _append(conn, records))

    async def recent(self, *, function: str | None = None, outcome: str | None = None, limit: int = 50,
                     before_seq: int | None = None, after_seq: int | None = None) -> list[StoredInvocation]:
        where, args = [], []
        for clause, value in (("function = ?", function), ("outcome = ?", outcome),
                              ("seq < ?", before_seq), ("seq > ?", after_seq)):
            if value is not None:
                where.append(clause)
                args.append(value)
        sql = (f"SELECT {_COLUMNS} FROM invocations {'WHERE ' + ' AND '.join(where) if where else ''} "
               "ORDER BY seq DESC LIMIT ?")
        rows = await self.db.read(lambda conn: conn.execute(sql, (*args, max(0, limit))).fetchall())
        return [_stored(row, ()) for row in rows]

    async def get(self, invocation_id: str) -> StoredInvocation | None:
        def read(conn: sqlite3.Connection) -> StoredInvocation | None:
            row = conn.execute(f"SELECT {_COLUMNS} FROM invocations WHERE id = ? ORDER BY seq DESC LIMIT 1",
                               (invocation_id,)).fetchone()
            if row is None:
                return None
            lines = conn.execute("SELECT time, level, category, message FROM invocation_logs "
                                 "WHERE invocation_seq = ? ORDER BY n", (row["seq"],)).fetchall()
            return _stored(row, tuple(LogLine(r["time"], r["level"], r["category"], r["message"]) for r in lines))

        return await self.db.read(read)

    async def activity(self) -> list[FunctionActivity]:
        def read(conn: sqlite3.Connection) -> list[FunctionActivity]:
            rows = conn.execute(
                "SELECT function, COUNT(*) AS total, SUM(outcome = ?) AS failed, MAX(seq) AS last "
                "FROM invocations GROUP BY function ORDER BY function", (FAILED,)).fetchall()
            found = []
            for row in rows:
                last = conn.execute("SELECT started, outcome FROM invocations WHERE seq = ?",
                                    (row["last"],)).fetchone()
                found.append(FunctionActivity(row["function"], row["total"], row["failed"] or 0,
                                              last["started"], last["outcome"]))
            return found

        return await self.db.read(read)

    async def last_seq(self) -> int:
        row = await self.db.read(lambda conn: conn.execute("SELECT MAX(seq) FROM invocations").fetchone())
        return int(row[0] or 0)

    async def prune(self, *, max_count: int, oldest_started: float) -> int:
        def delete(conn: sqlite3.Connection) -> int:
            # Records are written about in the order they start: the ones too old are the first in seq
            # order, so this scan stops at the first record young enough (no index on `started`).
            young = conn.execute("SELECT seq FROM invocations WHERE started >= ? ORDER BY seq LIMIT 1",
                                 (oldest_started,)).fetchone()
            if young is None:
                deleted = conn.execute("DELETE FROM invocations").rowcount
            else:
                deleted = conn.execute("DELETE FROM invocations WHERE seq < ? AND started < ?",
                                       (young[0], oldest_started)).rowcount
            if max_count <= 0:
                return int(deleted + conn.execute("DELETE FROM invocations").rowcount)
            # The newest record past the limit: it and everything written before it go.
            row = conn.execute("SELECT seq FROM invocations ORDER BY seq DESC LIMIT 1 OFFSET ?",
                               (max_count,)).fetchone()
            if row is not None:
                deleted += conn.execute("DELETE FROM invocations WHERE seq <= ?", (row[0],)).rowcount
            return int(deleted)

        return await self.db.write(delete)

    async def aclose(self) -> None:
        await self.db.aclose()


_encode = json.JSONEncoder(default=str).encode  # one encoder: json.dumps(default=...) builds one per call
_INSERT = f"INSERT INTO invocations ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


def _append(conn: sqlite3.Connection, records: Sequence[InvocationRecord]) -> None:
    last = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'invocations'").fetchone()
    first = (last[0] if last else 0) + 1
    conn.executemany(_INSERT, [
        (seq, r.id, r.function, r.trigger, r.reason, r.started, r.duration_ms, r.outcome, r.error, r.stack,
         _encode(r.details) if r.details else "{}", r.result, r.retry_count, r.dropped_logs)
        for seq, r in enumerate(records, first)])
    lines = [(seq, n, line.time, line.level, line.category, line.message)
             for seq, r in enumerate(records, first) if r.logs for n, line in enumerate(r.logs)]
    if lines:
        conn.executemany("INSERT INTO invocation_logs VALUES (?,?,?,?,?,?)", lines)


def _stored(row: sqlite3.Row, logs: tuple[LogLine, ...]) -> StoredInvocation:
    details: Any = json.loads(row["details"])
    return StoredInvocation(row["seq"], InvocationRecord(
        id=row["id"], function=row["function"], trigger=row["trigger"], reason=row["reason"],
        started=row["started"], duration_ms=row["duration_ms"], outcome=row["outcome"], error=row["error"],
        stack=row["stack"], details=details if isinstance(details, dict) else {}, result=row["result"],
        retry_count=row["retry_count"], logs=logs, dropped_logs=row["dropped_logs"]))
