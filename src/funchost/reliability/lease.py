"""Acquiring a job for processing, and finishing it, with conditional updates.

`acquire` is ONE conditional UPDATE: Enqueued / RetryableFailed, or Processing whose lease has
expired, become Processing with a fresh runId and lease deadline. When nothing was updated the
row is read (locked, in the same transaction) to say *why*, because "false" is not an answer a
queue worker can act on:

| kind                  | meaning                                                   | worker    |
|-----------------------|-----------------------------------------------------------|-----------|
| Acquired              | this call owns the job until `lease_until` (`run_id`)     | process   |
| AlreadyCompleted      | final state Completed                                     | return    |
| AlreadyBusinessFailed | final state BusinessFailed                                | return    |
| CurrentlyProcessing   | Processing, lease valid, owner alive (heartbeat recent)   | RetryLater|
| LeaseNotExpired       | Processing, lease valid, owner silent (heartbeat stale)   | RetryLater|
| NotFound              | no such job                                               | raise     |
| UnexpectedState       | any other state (NeedsAttention, unknown values)          | raise     |

CurrentlyProcessing vs LeaseNotExpired: both mean "someone holds an unexpired lease", and both
must keep the queue message (never "return on false"). They differ in what the holder last
did: the owner records a heartbeat at acquire and at every `renew` (done at half the lease
period). If that heartbeat is younger than `heartbeat_timeout` the owner is working
(CurrentlyProcessing); if it is older, the owner has most likely crashed and the job only waits
for its lease to run out (LeaseNotExpired; `retry_after` says how long). Operators alert on the
second, not the first.

`mark_*` are conditional on the runId that acquired the job: a run whose lease was taken over
cannot overwrite the new owner's result. They return whether they applied.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from funchost.reliability.jobs import ACQUIRABLE_STATES, Job, JobState, job_from_row
from funchost.reliability.store.db import Database, Row, Tx, to_dt


class DecisionKind(StrEnum):
    ACQUIRED = "Acquired"
    ALREADY_COMPLETED = "AlreadyCompleted"
    ALREADY_BUSINESS_FAILED = "AlreadyBusinessFailed"
    CURRENTLY_PROCESSING = "CurrentlyProcessing"
    LEASE_NOT_EXPIRED = "LeaseNotExpired"
    NOT_FOUND = "NotFound"
    UNEXPECTED_STATE = "UnexpectedState"


@dataclass(frozen=True)
class LeaseOptions:
    """`lease_seconds`: how long a run owns a job. Choose it longer than the longest expected
    run and shorter than `visibilityTimeout * (maxDequeueCount - 1)` (see docs/reliability.md).
    `heartbeat_timeout`: silence after which a valid lease is reported as LeaseNotExpired;
    default 3/4 of the lease (a live owner renews every half lease)."""

    lease_seconds: float = 300.0
    heartbeat_timeout: float | None = None

    @property
    def silence_limit(self) -> float:
        return self.heartbeat_timeout if self.heartbeat_timeout is not None else self.lease_seconds * 0.75


@dataclass(frozen=True)
class ProcessingDecision:
    kind: DecisionKind
    job_id: str
    run_id: str | None = None
    lease_until: datetime | None = None
    state: JobState | str | None = None
    attempts: int = 0
    retry_after: float | None = None
    job: Job | None = field(default=None, compare=False, repr=False)  # the row as acquired

    @property
    def acquired(self) -> bool:
        return self.kind is DecisionKind.ACQUIRED


_ACQUIRABLE = ", ".join(f"'{s.value}'" for s in ACQUIRABLE_STATES)
_PROCESSING = JobState.PROCESSING.value


class LeaseRepository:
    def __init__(self, db: Database, now: Callable[[], datetime]) -> None:
        self._db = db
        self._now = now

    def acquire(self, job_id: str, options: LeaseOptions = LeaseOptions(), run_id: str | None = None) -> ProcessingDecision:
        now = self._now()
        run_id = run_id or uuid.uuid4().hex
        until = now + timedelta(seconds=options.lease_seconds)
        with self._db.transaction() as tx:
            decision = self._try_update(tx, job_id, run_id, now, until)
            if decision is not None:
                return decision
            row = tx.one(f"SELECT state, lease_until, heartbeat_at, attempts FROM jobs WHERE job_id = ?{self._db.lock_row}", (job_id,))
            if row is not None and _acquirable(row, now):  # changed between the two statements
                decision = self._try_update(tx, job_id, run_id, now, until)
                if decision is not None:
                    return decision
            return _classify(job_id, row, now, options)

    def _try_update(self, tx: Tx, job_id: str, run_id: str, now: datetime, until: datetime) -> ProcessingDecision | None:
        row = tx.one(
            "UPDATE jobs SET state = ?, run_id = ?, lease_until = ?, heartbeat_at = ?,"
            " attempts = attempts + 1, updated_at = ?"
            f" WHERE job_id = ? AND (state IN ({_ACQUIRABLE})"
            " OR (state = ? AND (lease_until IS NULL OR lease_until <= ?)))"
            " RETURNING *",
            (_PROCESSING, run_id, until, now, now, job_id, _PROCESSING, now),
        )
        if row is None:
            return None
        return ProcessingDecision(DecisionKind.ACQUIRED, job_id, run_id, until, JobState.PROCESSING,
                                  int(row["attempts"]), job=job_from_row(row))

    def renew(self, job_id: str, run_id: str, lease_seconds: float) -> datetime | None:
        """Extend the lease of the run that owns the job (and record a heartbeat).

        Returns the new deadline, or None when `run_id` no longer owns the job.
        """
        now = self._now()
        until = now + timedelta(seconds=lease_seconds)
        with self._db.transaction() as tx:
            n = tx.execute(
                "UPDATE jobs SET lease_until = ?, heartbeat_at = ?, updated_at = ?"
                " WHERE job_id = ? AND run_id = ? AND state = ?",
                (until, now, now, job_id, run_id, _PROCESSING),
            )
        return until if n == 1 else None

    def mark_completed(self, job_id: str, run_id: str) -> bool:
        return self._finish(job_id, run_id, JobState.COMPLETED, None, final=True)

    def mark_business_failed(self, job_id: str, run_id: str, reason: str) -> bool:
        return self._finish(job_id, run_id, JobState.BUSINESS_FAILED, reason, final=True)

    def mark_retryable_failed(self, job_id: str, run_id: str, reason: str) -> bool:
        return self._finish(job_id, run_id, JobState.RETRYABLE_FAILED, reason, final=False)

    def _finish(self, job_id: str, run_id: str, state: JobState, reason: str | None, *, final: bool) -> bool:
        now = self._now()
        with self._db.transaction() as tx:
            n = tx.execute(
                "UPDATE jobs SET state = ?, reason = ?, lease_until = NULL, updated_at = ?, finished_at = ?"
                " WHERE job_id = ? AND run_id = ? AND state = ?",
                (state.value, reason, now, now if final else None, job_id, run_id, _PROCESSING),
            )
        return n == 1


def _acquirable(row: Row, now: datetime) -> bool:
    if row["state"] in {s.value for s in ACQUIRABLE_STATES}:
        return True
    lease_until = to_dt(row["lease_until"])
    return row["state"] == _PROCESSING and (lease_until is None or lease_until <= now)


def _classify(job_id: str, row: Row | None, now: datetime, options: LeaseOptions) -> ProcessingDecision:
    if row is None:
        return ProcessingDecision(DecisionKind.NOT_FOUND, job_id)
    state, attempts = row["state"], int(row["attempts"])
    lease_until = to_dt(row["lease_until"])
    if state == JobState.COMPLETED.value:
        return ProcessingDecision(DecisionKind.ALREADY_COMPLETED, job_id, state=JobState.COMPLETED, attempts=attempts)
    if state == JobState.BUSINESS_FAILED.value:
        return ProcessingDecision(DecisionKind.ALREADY_BUSINESS_FAILED, job_id, state=JobState.BUSINESS_FAILED, attempts=attempts)
    if state == _PROCESSING and lease_until is not None and lease_until > now:
        heartbeat = to_dt(row["heartbeat_at"])
        retry_after = (lease_until - now).total_seconds()
        alive = heartbeat is not None and (now - heartbeat).total_seconds() < options.silence_limit
        kind = DecisionKind.CURRENTLY_PROCESSING if alive else DecisionKind.LEASE_NOT_EXPIRED
        return ProcessingDecision(kind, job_id, lease_until=lease_until, state=JobState.PROCESSING,
                                  attempts=attempts, retry_after=retry_after)
    try:
        known: JobState | str = JobState(state)
    except ValueError:
        known = str(state)
    return ProcessingDecision(DecisionKind.UNEXPECTED_STATE, job_id, state=known, attempts=attempts)
