"""The transactional outbox: queue messages written with the job, sent later.

Row states: Pending (new), Dispatched (sent; message id recorded), DispatchFailed (failed before
the send call started: certainly not sent; retried with back-off), DispatchUnknown (the send was
attempted and its outcome is unknown: timeout, disconnect, cancel, or the send succeeded but
marking the row failed; re-sent later, duplicates are absorbed by the worker's job lease).

A row is due when it is not Dispatched, `next_attempt_at <= now` and no live lease holds it.
Leasing writes `lease_owner` + `lease_until` in one statement, so several dispatchers never hold
the same row. Every mark is conditional on the lease owner and returns whether it applied.
A lease that expires without a mark means the holder vanished mid-send: the next lease turns
the row into DispatchUnknown before re-sending it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from funchost.reliability.store.db import Database, Row, Tx, to_dt

MAX_BACKOFF_SECONDS = 300


class OutboxState(StrEnum):
    PENDING = "Pending"
    DISPATCHED = "Dispatched"
    DISPATCH_FAILED = "DispatchFailed"
    DISPATCH_UNKNOWN = "DispatchUnknown"


OPEN_STATES = (OutboxState.PENDING, OutboxState.DISPATCH_FAILED, OutboxState.DISPATCH_UNKNOWN)


def dispatch_backoff(attempts: int) -> int:
    """Seconds before the next try after a DispatchFailed: `min(300, 2**attempts)`.

    `attempts` counts the send attempts made so far, including the one that just failed
    (1 -> 2 s, 2 -> 4 s, ... 8 -> 256 s, 9 and later -> 300 s).
    """
    if attempts < 0:
        raise ValueError("attempts must be >= 0")
    return MAX_BACKOFF_SECONDS if attempts >= 9 else min(MAX_BACKOFF_SECONDS, 2**attempts)


@dataclass(frozen=True)
class OutboxMessage:
    """A message to send once the surrounding transaction commits."""

    queue_name: str
    payload: str
    connection: str | None = None


@dataclass(frozen=True)
class OutboxRow:
    outbox_id: str
    job_id: str
    queue_name: str
    connection: str | None
    payload: str
    state: OutboxState
    attempts: int
    next_attempt_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    last_error: str | None
    message_id: str | None
    created_at: datetime
    updated_at: datetime
    dispatched_at: datetime | None

    @classmethod
    def from_row(cls, row: Row) -> OutboxRow:
        return cls(
            outbox_id=row["outbox_id"],
            job_id=row["job_id"],
            queue_name=row["queue_name"],
            connection=row["connection"],
            payload=row["payload"],
            state=OutboxState(row["state"]),
            attempts=int(row["attempts"]),
            next_attempt_at=to_dt(row["next_attempt_at"]),  # type: ignore[arg-type]
            lease_owner=row["lease_owner"],
            lease_until=to_dt(row["lease_until"]),
            last_error=row["last_error"],
            message_id=row["message_id"],
            created_at=to_dt(row["created_at"]),  # type: ignore[arg-type]
            updated_at=to_dt(row["updated_at"]),  # type: ignore[arg-type]
            dispatched_at=to_dt(row["dispatched_at"]),
        )


class CommitSignal:
    """Tells dispatchers in this process that new outbox rows were committed.

    Stores call `fire()` after a commit that created rows; `OutboxDispatcher.attach()` subscribes
    its `notify`. Callbacks must be cheap and thread-safe; their exceptions are swallowed so a
    wake-up can never fail an intake that has already committed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Register `callback`; returns a function that unregisters it."""
        with self._lock:
            self._callbacks.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unsubscribe

    def fire(self) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - a wake-up is best effort by design
                pass


#: The process-wide signal used by stores that are not given their own.
after_commit = CommitSignal()


def new_outbox_id() -> str:
    return "obx_" + uuid.uuid4().hex


def insert_row(tx: Tx, job_id: str, message: OutboxMessage, now: datetime) -> str:
    """Add a Pending row inside the caller's transaction (intake, watchdog, re-drive)."""
    outbox_id = new_outbox_id()
    tx.execute(
        "INSERT INTO outbox (outbox_id, job_id, queue_name, connection, payload, state, attempts,"
        " next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
        (outbox_id, job_id, message.queue_name, message.connection, message.payload,
         OutboxState.PENDING.value, now, now, now),
    )
    return outbox_id


_OPEN = ", ".join(f"'{s.value}'" for s in OPEN_STATES)
_DUE = f"state IN ({_OPEN}) AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)"


class OutboxRepository:
    def __init__(self, db: Database, now: Callable[[], datetime], signal: CommitSignal) -> None:
        self._db = db
        self._now = now
        self.signal = signal

    def enqueue(self, job_id: str, message: OutboxMessage) -> str:
        """Add a Pending row in its own transaction (prefer the intake's shared transaction)."""
        with self._db.transaction() as tx:
            outbox_id = insert_row(tx, job_id, message, self._now())
        self.signal.fire()
        return outbox_id

    def lease_due(self, dispatcher_id: str, limit: int, lease_seconds: float) -> list[OutboxRow]:
        """Atomically lease up to `limit` due rows for `dispatcher_id`, oldest due first."""
        now = self._now()
        until = now + timedelta(seconds=lease_seconds)
        # The CTE is evaluated once (an IN-subquery may be re-run per row by PostgreSQL); the
        # outer re-check of _DUE makes a row leased meanwhile by someone else drop out.
        sql = (
            f"WITH picked AS (SELECT outbox_id FROM outbox WHERE {_DUE}"
            f" ORDER BY next_attempt_at, created_at, outbox_id LIMIT ?{self._db.skip_locked})"
            " UPDATE outbox SET lease_owner = ?, lease_until = ?, updated_at = ?,"
            " state = CASE WHEN lease_owner IS NOT NULL THEN ? ELSE state END"
            f" WHERE outbox_id IN (SELECT outbox_id FROM picked) AND {_DUE}"
            " RETURNING *"
        )
        params = (now, now, limit, dispatcher_id, until, now, OutboxState.DISPATCH_UNKNOWN.value, now, now)
        with self._db.transaction() as tx:
            rows = tx.all(sql, params)
        leased = [OutboxRow.from_row(r) for r in rows]
        return sorted(leased, key=lambda r: (r.next_attempt_at, r.created_at, r.outbox_id))

    def mark_dispatched(self, outbox_id: str, dispatcher_id: str, message_id: str | None) -> bool:
        now = self._now()
        return self._mark(
            "state = ?, message_id = ?, dispatched_at = ?, attempts = attempts + 1",
            (OutboxState.DISPATCHED.value, message_id, now), outbox_id, dispatcher_id, now,
        )

    def mark_failed(self, outbox_id: str, dispatcher_id: str, error: str) -> bool:
        """Failed before the send call started: DispatchFailed with exponential back-off."""
        now = self._now()
        with self._db.transaction() as tx:
            row = tx.one(f"SELECT attempts FROM outbox WHERE outbox_id = ?{self._db.lock_row}", (outbox_id,))
            if row is None:
                return False
            attempts = int(row["attempts"]) + 1
            retry_at = now + timedelta(seconds=dispatch_backoff(attempts))
            return self._mark(
                "state = ?, attempts = ?, next_attempt_at = ?, last_error = ?",
                (OutboxState.DISPATCH_FAILED.value, attempts, retry_at, _short(error)),
                outbox_id, dispatcher_id, now, tx,
            )

    def mark_unknown(self, outbox_id: str, dispatcher_id: str, error: str, recheck_seconds: float) -> bool:
        """The send was attempted; whether it reached the queue is unknown. Re-sent later."""
        now = self._now()
        return self._mark(
            "state = ?, attempts = attempts + 1, next_attempt_at = ?, last_error = ?",
            (OutboxState.DISPATCH_UNKNOWN.value, now + timedelta(seconds=recheck_seconds), _short(error)),
            outbox_id, dispatcher_id, now,
        )

    def _mark(self, assignments: str, values: tuple[object, ...], outbox_id: str,
              dispatcher_id: str, now: datetime, tx: Tx | None = None) -> bool:
        sql = (
            f"UPDATE outbox SET {assignments}, lease_owner = NULL, lease_until = NULL, updated_at = ?"
            " WHERE outbox_id = ? AND lease_owner = ? AND state <> ?"
        )
        params = (*values, now, outbox_id, dispatcher_id, OutboxState.DISPATCHED.value)
        if tx is not None:
            return tx.execute(sql, params) == 1
        with self._db.transaction() as own:
            return own.execute(sql, params) == 1

    def get(self, outbox_id: str) -> OutboxRow | None:
        with self._db.read() as tx:
            row = tx.one("SELECT * FROM outbox WHERE outbox_id = ?", (outbox_id,))
        return OutboxRow.from_row(row) if row else None

    def for_job(self, job_id: str) -> list[OutboxRow]:
        with self._db.read() as tx:
            rows = tx.all("SELECT * FROM outbox WHERE job_id = ? ORDER BY created_at, outbox_id", (job_id,))
        return [OutboxRow.from_row(r) for r in rows]

    def stats(self) -> dict[str, float]:
        """Counts per open state and the age in seconds of the oldest open row."""
        now = self._now()
        with self._db.read() as tx:
            rows = tx.all(
                f"SELECT state, COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox"
                f" WHERE state IN ({_OPEN}) GROUP BY state"
            )
        out: dict[str, float] = {s.value: 0 for s in OPEN_STATES}
        oldest: datetime | None = None
        for r in rows:
            out[r["state"]] = int(r["n"])
            created = to_dt(r["oldest"])
            if created is not None and (oldest is None or created < oldest):
                oldest = created
        out["oldest_age_seconds"] = max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
        return out


def _short(error: str, limit: int = 500) -> str:
    return error if len(error) <= limit else error[: limit - 1] + "…"
