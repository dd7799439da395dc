"""Idempotent intake: one job per idempotency scope, written with its outbox row.

scope = tenantId + endpoint + userId + sha256(Idempotency-Key). The raw key is never stored;
the job id is derived from it: `"imp_" + sha256(tenant|endpoint|user|key)[:32]`.

`IntakeRepository.accept` runs ONE transaction: insert the job unless its id or scope exists,
and insert the outbox row only when the job is new. Outcomes:
- Accepted: new job + outbox row committed (dispatchers in this process are woken);
- AlreadyAccepted: same scope and same request hash; nothing written;
- Conflict: same scope (or job id) with a different request hash; nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from funchost.reliability.blobref import BlobReference
from funchost.reliability.canonical import sha256_hex
from funchost.reliability.jobs import JobState, NewJob, blob_to_json
from funchost.reliability.outbox import CommitSignal, OutboxMessage, insert_row
from funchost.reliability.store.db import Database, Row, Tx


@dataclass(frozen=True)
class IdempotencyScope:
    tenant_id: str
    endpoint: str
    user_id: str
    key: str

    def __post_init__(self) -> None:
        for name in ("tenant_id", "endpoint", "user_id", "key"):
            if not getattr(self, name):
                raise ValueError(f"idempotency scope needs a non-empty {name}")

    @property
    def key_hash(self) -> str:
        """sha256 of the raw Idempotency-Key: what the database stores instead of the key."""
        return sha256_hex(self.key)

    @property
    def job_id(self) -> str:
        return import_job_id(self.tenant_id, self.endpoint, self.user_id, self.key)

    def __repr__(self) -> str:  # never print the raw key
        return f"IdempotencyScope(tenant_id={self.tenant_id!r}, endpoint={self.endpoint!r}, user_id={self.user_id!r}, key_hash={self.key_hash[:12]!r})"


def import_job_id(tenant_id: str, endpoint: str, user_id: str, key: str) -> str:
    """`"imp_" + sha256(tenant|endpoint|user|key)[:32]`."""
    return "imp_" + sha256_hex("|".join([tenant_id, endpoint, user_id, key]))[:32]


class AcceptKind(StrEnum):
    ACCEPTED = "Accepted"
    ALREADY_ACCEPTED = "AlreadyAccepted"
    CONFLICT = "Conflict"


@dataclass(frozen=True)
class AcceptDecision:
    kind: AcceptKind
    job_id: str
    outbox_id: str | None = None


class IntakeRepository:
    def __init__(self, db: Database, now: Callable[[], datetime], signal: CommitSignal) -> None:
        self._db = db
        self._now = now
        self._signal = signal

    def accept(self, job: NewJob, message: OutboxMessage) -> AcceptDecision:
        """Create `job` and its outbox row atomically, or report the existing job."""
        now = self._now()
        with self._db.transaction() as tx:
            inserted = tx.execute(
                "INSERT INTO jobs (job_id, tenant_id, requested_by, endpoint, state, blob_ref,"
                " idempotency_key_hash, request_hash, event_id, correlation_id, attempts, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING",
                (job.job_id, job.tenant_id, job.requested_by, job.endpoint, JobState.ENQUEUED.value,
                 blob_to_json(job.blob), job.idempotency_key_hash, job.request_hash, job.event_id,
                 job.correlation_id, now, now),
            )
            if inserted == 1:
                outbox_id = insert_row(tx, job.job_id, message, now)
                decision = AcceptDecision(AcceptKind.ACCEPTED, job.job_id, outbox_id)
            else:
                decision = self._existing(tx, job)
        if decision.kind is AcceptKind.ACCEPTED:
            self._signal.fire()
        return decision

    def accept_import(self, scope: IdempotencyScope, request_hash: str, message: OutboxMessage,
                      *, blob: BlobReference | None = None, correlation_id: str | None = None) -> AcceptDecision:
        """`accept` for an HTTP intake keyed by an idempotency scope."""
        job = NewJob(
            job_id=scope.job_id, tenant_id=scope.tenant_id, requested_by=scope.user_id,
            endpoint=scope.endpoint, blob=blob,
            idempotency_key_hash=scope.key_hash, request_hash=request_hash, correlation_id=correlation_id,
        )
        return self.accept(job, message)

    def _existing(self, tx: Tx, job: NewJob) -> AcceptDecision:
        row: Row | None = tx.one(
            "SELECT job_id, tenant_id, endpoint, requested_by, idempotency_key_hash, request_hash"
            " FROM jobs WHERE job_id = ?", (job.job_id,))
        if row is None and job.idempotency_key_hash is not None:
            row = tx.one(
                "SELECT job_id, tenant_id, endpoint, requested_by, idempotency_key_hash, request_hash"
                " FROM jobs WHERE tenant_id = ? AND endpoint = ? AND requested_by = ? AND idempotency_key_hash = ?",
                (job.tenant_id, job.endpoint, job.requested_by, job.idempotency_key_hash))
        if row is None:  # pragma: no cover - the insert conflicted, so a row exists
            return AcceptDecision(AcceptKind.CONFLICT, job.job_id)
        same_scope = (row["tenant_id"], row["endpoint"], row["requested_by"], row["idempotency_key_hash"]) == (
            job.tenant_id, job.endpoint, job.requested_by, job.idempotency_key_hash)
        if same_scope and row["request_hash"] == job.request_hash:
            return AcceptDecision(AcceptKind.ALREADY_ACCEPTED, row["job_id"])
        return AcceptDecision(AcceptKind.CONFLICT, row["job_id"])
