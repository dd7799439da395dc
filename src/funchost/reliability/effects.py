"""Side effects that must happen once per job, however often the job runs.

A job can run again after its side effects are done (MarkCompleted failed, the host crashed,
a duplicate message took over an expired lease). Each effect is recorded under
(jobId, operation) in a send-history table and carries `Idempotency-Key: <jobId>:<operation>`
so a downstream API that honours the header de-duplicates too.

`run_once(job_id, operation, fn)`:
- already Done: `fn` is not called; the recorded result is returned;
- otherwise the attempt is recorded (Started), `fn(idempotency_key)` runs, and on success the
  row becomes Done with the JSON result. If `fn` raises, the row stays Started and the next run
  calls `fn` again with the same key (the downstream de-duplicates an attempt whose outcome we
  never saw).

Concurrent runs of one job are excluded by the job lease, not here.

`RowSink` writes imported rows under a unique (jobId, rowNo) key: a rerun inserts nothing twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from funchost.reliability.store.db import Database

T = TypeVar("T")

STARTED = "Started"
DONE = "Done"


def effect_key(job_id: str, operation: str) -> str:
    """The value of the `Idempotency-Key` header sent downstream for this effect."""
    if not job_id or not operation:
        raise ValueError("job_id and operation are required")
    return f"{job_id}:{operation}"


@dataclass(frozen=True)
class EffectRecord:
    job_id: str
    operation: str
    idempotency_key: str
    state: str
    attempts: int
    result: Any


def _record(row: Any) -> EffectRecord | None:
    if row is None:
        return None
    result = json.loads(row["result"]) if row["result"] is not None else None
    return EffectRecord(row["job_id"], row["operation"], row["idempotency_key"], row["state"],
                        int(row["attempts"]), result)


class EffectLog:
    def __init__(self, db: Database, now: Callable[[], datetime]) -> None:
        self._db = db
        self._now = now

    def get(self, job_id: str, operation: str) -> EffectRecord | None:
        with self._db.read() as tx:
            row = tx.one("SELECT * FROM effects WHERE job_id = ? AND operation = ?", (job_id, operation))
        return _record(row)

    def begin(self, job_id: str, operation: str) -> EffectRecord | None:
        """Record an attempt (one transaction). Returns the Done record when the effect already
        happened."""
        key = effect_key(job_id, operation)
        now = self._now()
        with self._db.transaction() as tx:
            tx.execute(
                "INSERT INTO effects (job_id, operation, idempotency_key, state, attempts, created_at)"
                " VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT DO NOTHING",
                (job_id, operation, key, STARTED, now),
            )
            tx.execute(
                "UPDATE effects SET attempts = attempts + 1 WHERE job_id = ? AND operation = ? AND state = ?",
                (job_id, operation, STARTED),
            )
            record = _record(tx.one("SELECT * FROM effects WHERE job_id = ? AND operation = ?", (job_id, operation)))
        return record if record is not None and record.state == DONE else None

    def complete(self, job_id: str, operation: str, result: Any = None) -> None:
        with self._db.transaction() as tx:
            tx.execute(
                "UPDATE effects SET state = ?, result = ?, completed_at = ? WHERE job_id = ? AND operation = ?",
                (DONE, json.dumps(result), self._now(), job_id, operation),
            )

    def run_once(self, job_id: str, operation: str, fn: Callable[[str], T]) -> T:
        """Call `fn(idempotency_key)` unless this (job, operation) is already Done."""
        done = self.begin(job_id, operation)
        if done is not None:
            return done.result  # type: ignore[no-any-return]
        result = fn(effect_key(job_id, operation))
        self.complete(job_id, operation, result)
        return result

    async def arun_once(self, job_id: str, operation: str, fn: Callable[[str], Awaitable[T]]) -> T:
        """`run_once` for a coroutine function; the bookkeeping runs on a worker thread."""

        done = await asyncio.to_thread(self.begin, job_id, operation)
        if done is not None:
            return done.result  # type: ignore[no-any-return]
        result = await fn(effect_key(job_id, operation))
        await asyncio.to_thread(self.complete, job_id, operation, result)
        return result


class RowSink:
    """Rows of a job keyed by (jobId, rowNo); inserting a row twice is a no-op."""

    def __init__(self, db: Database, now: Callable[[], datetime]) -> None:
        self._db = db
        self._now = now

    def write(self, job_id: str, rows: Iterable[tuple[int, Any]]) -> int:
        """Insert rows (row number, JSON-able data); returns how many were new."""
        now = self._now()
        inserted = 0
        with self._db.transaction() as tx:
            for row_no, data in rows:
                inserted += tx.execute(
                    "INSERT INTO job_rows (job_id, row_no, data, created_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    (job_id, int(row_no), json.dumps(data), now),
                )
        return inserted

    def count(self, job_id: str) -> int:
        with self._db.read() as tx:
            row = tx.one("SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?", (job_id,))
        return int(row["n"]) if row else 0

    def read(self, job_id: str) -> list[tuple[int, Any]]:
        with self._db.read() as tx:
            rows = tx.all("SELECT row_no, data FROM job_rows WHERE job_id = ? ORDER BY row_no", (job_id,))
        return [(int(r["row_no"]), json.loads(r["data"]) if r["data"] is not None else None) for r in rows]
