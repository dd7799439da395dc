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

Concurrent runs of one job are excluded by the job lease, and fenced here: given the `run_id`
that acquired the job, `begin` and `complete` apply only while that run still owns the job
(Processing under the same runId). A run whose lease expired and was taken over gets `LeaseLost`
instead of starting the effect again or recording its outcome over the new owner's; the new
owner calls the downstream with the same key, which de-duplicates an attempt the stale run made.

`RowSink` writes imported rows under a unique (jobId, rowNo) key: a rerun inserts nothing twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from funchost.reliability.errors import LeaseLost
from funchost.reliability.jobs import JobState
from funchost.reliability.store.db import Database, Tx

T = TypeVar("T")

STARTED = "Started"
DONE = "Done"

# The job is still owned by the run: the same fence as LeaseRepository.mark_*.
_OWNED = "EXISTS (SELECT 1 FROM jobs WHERE jobs.job_id = ? AND jobs.run_id = ? AND jobs.state = ?)"


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

    def begin(self, job_id: str, operation: str, run_id: str | None = None) -> EffectRecord | None:
        """Record an attempt (one transaction). Returns the Done record when the effect already
        happened. With `run_id`, raises `LeaseLost` (recording nothing) unless that run still
        owns the job."""
        key = effect_key(job_id, operation)
        now = self._now()
        with self._db.transaction() as tx:
            if run_id is not None and not self._owned(tx, job_id, run_id):
                raise LeaseLost(f"job {job_id}: run {run_id} no longer owns the job; effect {operation} not started")
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

    def _owned(self, tx: Tx, job_id: str, run_id: str) -> bool:
        """Whether `run_id` owns the job; the row stays locked until the end of `tx` (PostgreSQL),
        so an acquire cannot take the job over between this check and the insert."""
        row = tx.one(f"SELECT run_id FROM jobs WHERE job_id = ? AND run_id = ? AND state = ?{self._db.lock_row}",
                     (job_id, run_id, JobState.PROCESSING.value))
        return row is not None

    def complete(self, job_id: str, operation: str, result: Any = None, run_id: str | None = None) -> bool:
        """Record the effect as Done with its result; returns whether it applied. With `run_id`
        it applies only while that run owns the job and the effect is not Done yet."""
        params: tuple[Any, ...] = (DONE, json.dumps(result), self._now(), job_id, operation)
        sql = "UPDATE effects SET state = ?, result = ?, completed_at = ? WHERE job_id = ? AND operation = ?"
        if run_id is not None:
            sql += f" AND state = ? AND {_OWNED}"
            params += (STARTED, job_id, run_id, JobState.PROCESSING.value)
        with self._db.transaction() as tx:
            return tx.execute(sql, params) == 1

    def run_once(self, job_id: str, operation: str, fn: Callable[[str], T], run_id: str | None = None) -> T:
        """Call `fn(idempotency_key)` unless this (job, operation) is already Done. With `run_id`
        the bookkeeping is fenced (see the module docstring): `LeaseLost` when the run no
        longer owns the job."""
        done = self.begin(job_id, operation, run_id)
        if done is not None:
            return done.result  # type: ignore[no-any-return]
        result = fn(effect_key(job_id, operation))
        self._completed(job_id, operation, result, run_id)
        return result

    async def arun_once(self, job_id: str, operation: str, fn: Callable[[str], Awaitable[T]],
                        run_id: str | None = None) -> T:
        """`run_once` for a coroutine function; the bookkeeping runs on a worker thread."""

        done = await asyncio.to_thread(self.begin, job_id, operation, run_id)
        if done is not None:
            return done.result  # type: ignore[no-any-return]
        result = await fn(effect_key(job_id, operation))
        await asyncio.to_thread(self._completed, job_id, operation, result, run_id)
        return result

    def _completed(self, job_id: str, operation: str, result: Any, run_id: str | None) -> None:
        if not self.complete(job_id, operation, result, run_id) and run_id is not None:
            raise LeaseLost(f"job {job_id}: run {run_id} lost the job during effect {operation}; "
                            "the new owner repeats it with the same Idempotency-Key")


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
