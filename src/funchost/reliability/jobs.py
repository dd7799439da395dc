r"""Jobs: the unit of work and its states.

```
Enqueued --acquire--> Processing --mark_completed--------> Completed
    ^                     |  \----mark_business_failed----> BusinessFailed
    |                     \-------mark_retryable_failed---> RetryableFailed --acquire--> Processing
    |   (lease expired: acquire again)
    \--- redrive --- NeedsAttention <--- quarantine (poison message)
```
Completed and BusinessFailed are final: a duplicate message for them is deleted (returns).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from funchost.reliability.blobref import BlobReference


class JobState(StrEnum):
    ENQUEUED = "Enqueued"
    PROCESSING = "Processing"
    COMPLETED = "Completed"
    BUSINESS_FAILED = "BusinessFailed"
    RETRYABLE_FAILED = "RetryableFailed"
    NEEDS_ATTENTION = "NeedsAttention"


ACQUIRABLE_STATES = (JobState.ENQUEUED, JobState.RETRYABLE_FAILED)
FINAL_STATES = (JobState.COMPLETED, JobState.BUSINESS_FAILED)


@dataclass(frozen=True)
class NewJob:
    """What intake writes. `idempotency_key_hash`/`request_hash` are None for event jobs."""

    job_id: str
    tenant_id: str
    requested_by: str
    endpoint: str
    blob: BlobReference | None = None
    idempotency_key_hash: str | None = None
    request_hash: str | None = None
    event_id: str | None = None
    correlation_id: str | None = None


@dataclass(frozen=True)
class Job:
    job_id: str
    tenant_id: str
    requested_by: str
    endpoint: str
    state: JobState
    blob: BlobReference | None
    idempotency_key_hash: str | None
    request_hash: str | None
    event_id: str | None
    correlation_id: str | None
    run_id: str | None
    lease_until: datetime | None
    heartbeat_at: datetime | None
    attempts: int
    reason: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    def status_view(self) -> dict[str, Any]:
        """What a status endpoint may show to the job's own tenant (no hashes, no keys)."""
        return {
            "jobId": self.job_id,
            "status": self.state.value,
            "reason": self.reason,
            "attempts": self.attempts,
            "createdAt": _iso(self.created_at),
            "updatedAt": _iso(self.updated_at),
            "finishedAt": _iso(self.finished_at),
        }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def blob_to_json(blob: BlobReference | None) -> str | None:
    return json.dumps(blob.to_dict(), sort_keys=True) if blob is not None else None


def blob_from_json(text: str | None) -> BlobReference | None:
    return BlobReference.from_dict(json.loads(text)) if text else None


def job_from_row(row: dict[str, Any]) -> Job:
    from funchost.reliability.store.db import to_dt

    return Job(
        job_id=row["job_id"],
        tenant_id=row["tenant_id"],
        requested_by=row["requested_by"],
        endpoint=row["endpoint"],
        state=JobState(row["state"]),
        blob=blob_from_json(row["blob_ref"]),
        idempotency_key_hash=row["idempotency_key_hash"],
        request_hash=row["request_hash"],
        event_id=row["event_id"],
        correlation_id=row["correlation_id"],
        run_id=row["run_id"],
        lease_until=to_dt(row["lease_until"]),
        heartbeat_at=to_dt(row["heartbeat_at"]),
        attempts=int(row["attempts"]),
        reason=row["reason"],
        created_at=to_dt(row["created_at"]),  # type: ignore[arg-type]
        updated_at=to_dt(row["updated_at"]),  # type: ignore[arg-type]
        finished_at=to_dt(row["finished_at"]),
    )


class JobRepository:
    """Reads of job rows (writes belong to intake, leases and quarantine)."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def get(self, job_id: str) -> Job | None:
        with self._db.read() as tx:
            row = tx.one("SELECT * FROM jobs WHERE job_id = ?", (job_id,))
        return job_from_row(row) if row else None

    def get_for_tenant(self, job_id: str, tenant_id: str) -> Job | None:
        """The job only when it belongs to `tenant_id` (another tenant's job reads as missing)."""
        with self._db.read() as tx:
            row = tx.one("SELECT * FROM jobs WHERE job_id = ? AND tenant_id = ?", (job_id, tenant_id))
        return job_from_row(row) if row else None

    def count_by_state(self) -> dict[str, int]:
        with self._db.read() as tx:
            rows = tx.all("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state")
        counts = {s.value: 0 for s in JobState}
        counts.update({r["state"]: int(r["n"]) for r in rows})
        return counts

    def expired_leases(self, now: datetime, limit: int = 100) -> list[Job]:
        """Processing jobs whose lease deadline has passed (their runner is gone)."""
        with self._db.read() as tx:
            rows = tx.all(
                "SELECT * FROM jobs WHERE state = ? AND lease_until <= ? ORDER BY lease_until LIMIT ?",
                (JobState.PROCESSING.value, now, limit),
            )
        return [job_from_row(r) for r in rows]

    def count_expired_leases(self, now: datetime) -> int:
        with self._db.read() as tx:
            row = tx.one("SELECT COUNT(*) AS n FROM jobs WHERE state = ? AND lease_until <= ?",
                         (JobState.PROCESSING.value, now))
        return int(row["n"]) if row else 0
