"""funchost.reliability: idempotent intake, outbox, job leases and friends (seed 000).

Public names:
    canonical_json, request_hash, sha256_hex, select_fields           (canonical)
    IdempotencyScope, import_job_id, AcceptKind, AcceptDecision          (idempotency)
    Job, NewJob, JobState                                                (jobs)
    DecisionKind, ProcessingDecision, LeaseOptions                       (lease)
    OutboxState, OutboxMessage, OutboxRow, CommitSignal, after_commit,
    dispatch_backoff                                                     (outbox)
    OutboxDispatcher, DispatcherOptions, BatchResult                     (dispatcher)
    EffectLog, RowSink, effect_key                                       (effects)
    BlobReference, BlobPolicy, Violation, parse_blob_url, blob_job_id    (blobref)
    Watchdog, WatchdogOptions, WatchdogReport                            (watchdog)
    Quarantine, PoisonMessage, QuarantineRecord                          (quarantine)
    keep_lease, RenewalEnd                                               (renewal)
    Metrics, default_metrics                                             (metrics)
    log_event, check_fields, redact                                      (logfields)
    JobStore, AsyncJobStore, open_store, open_sqlite, open_postgres      (jobstore)
    ReliabilityError, JobStoreError, StoreUnavailable, LeaseLost, UnsafeLogValue,
    RetryLater, BusinessFailure                                          (errors)

Depends only on the standard library (psycopg for PostgreSQL), so an app deployed to Azure can
import it without the funchost host. Every time comes from an injectable `now()` callable.
"""

from funchost.reliability.blobref import BlobPolicy, BlobReference, Violation, blob_job_id, parse_blob_url
from funchost.reliability.canonical import canonical_json, request_hash, select_fields, sha256_hex
from funchost.reliability.dispatcher import BatchResult, DispatcherOptions, OutboxDispatcher
from funchost.reliability.effects import EffectLog, RowSink, effect_key
from funchost.reliability.errors import (
    BusinessFailure,
    JobStoreError,
    LeaseLost,
    ReliabilityError,
    RetryLater,
    StoreUnavailable,
    UnsafeLogValue,
)
from funchost.reliability.idempotency import AcceptDecision, AcceptKind, IdempotencyScope, import_job_id
from funchost.reliability.jobs import Job, JobState, NewJob
from funchost.reliability.jobstore import AsyncJobStore, JobStore, open_postgres, open_sqlite, open_store
from funchost.reliability.lease import DecisionKind, LeaseOptions, ProcessingDecision
from funchost.reliability.logfields import check_fields, log_event, redact
from funchost.reliability.metrics import Metrics, default_metrics
from funchost.reliability.outbox import (
    CommitSignal,
    OutboxMessage,
    OutboxRow,
    OutboxState,
    after_commit,
    dispatch_backoff,
)
from funchost.reliability.quarantine import PoisonMessage, Quarantine, QuarantineRecord
from funchost.reliability.renewal import RenewalEnd, keep_lease
from funchost.reliability.watchdog import Watchdog, WatchdogOptions, WatchdogReport

__all__ = [
    "AcceptDecision", "AcceptKind", "AsyncJobStore", "BatchResult", "BlobPolicy", "BlobReference",
    "BusinessFailure", "CommitSignal", "DecisionKind", "DispatcherOptions", "EffectLog", "IdempotencyScope",
    "Job", "JobState", "JobStore", "JobStoreError", "LeaseLost", "LeaseOptions", "Metrics", "NewJob", "OutboxDispatcher",
    "OutboxMessage", "OutboxRow", "OutboxState", "PoisonMessage", "ProcessingDecision", "Quarantine",
    "QuarantineRecord", "ReliabilityError", "RenewalEnd", "RetryLater", "RowSink", "StoreUnavailable", "UnsafeLogValue",
    "Violation", "Watchdog", "WatchdogOptions", "WatchdogReport", "after_commit", "blob_job_id",
    "canonical_json", "check_fields", "default_metrics", "dispatch_backoff", "effect_key", "import_job_id",
    "keep_lease", "log_event", "open_postgres", "open_sqlite", "open_store", "parse_blob_url", "redact", "request_hash",
    "select_fields", "sha256_hex",
]
