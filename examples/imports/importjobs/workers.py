"""Queue workers `process_import` and `process_ocr`: acquire, verify, act idempotently, finish.

The outcome of a message is decided by the acquire decision, never by "false":
- Acquired: process; AlreadyCompleted / AlreadyBusinessFailed: return (message deleted);
- CurrentlyProcessing / LeaseNotExpired: raise RetryLater (message kept, retried later);
- NotFound / UnexpectedState: raise (after maxDequeueCount the message is quarantined).
Business errors end the job as BusinessFailed without raising; transient errors mark it
RetryableFailed and raise so the queue retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import azure.functions as func

from funchost.errors import FunchostError, RetryLater
from funchost.reliability import DecisionKind, Job, LeaseOptions, keep_lease, log_event, sha256_hex
from funchost.reliability import metrics as m
from funchost.reliability.logfields import loggable
from importjobs.context import Pipeline
from importjobs.csvimport import ImportInvalid, parse_csv, summary
from importjobs.ledger import LedgerRefused, TransientError
from importjobs.messages import JobMessage, MalformedMessage, parse_message
from importjobs.ocr import ExtractionFailed, extract_text
from importjobs.storage import BlobMissing, VersionMismatch, fault

log = logging.getLogger("importjobs.workers")

LEDGER_OPERATION = "ledger-post"


class JobStateError(FunchostError):
    """The job is missing or in a state no message should find it in (investigate)."""


class MarkCompletedFailed(FunchostError):
    """Side effects are done but the job could not be marked Completed; the rerun repeats none."""


class BusinessError(Exception):
    """Ends the job as BusinessFailed with this reason."""


@dataclass(frozen=True)
class Run:
    pipeline: Pipeline
    job: Job
    message: JobMessage
    run_id: str
    fields: dict[str, Any]


Work = Callable[[Run], Awaitable[None]]


async def handle(msg: func.QueueMessage, pipeline: Pipeline, work: Work) -> None:
    body = msg.get_body()
    base = {"QueueMessageId": msg.id, "DequeueCount": msg.dequeue_count, "MessageHash": sha256_hex(body)}
    try:
        message = parse_message(body)
    except MalformedMessage as exc:
        log_event(log, logging.ERROR, "Queue message is not a job message", **base, Error=loggable(str(exc), 300))
        raise
    fields = {**base, "JobId": message.job_id, "TenantId": message.tenant_id}
    store = pipeline.store
    decision = await pipeline.db(store.leases.acquire, message.job_id,
                                 LeaseOptions(lease_seconds=pipeline.settings.lease_seconds))
    kind = decision.kind
    if kind in (DecisionKind.ALREADY_COMPLETED, DecisionKind.ALREADY_BUSINESS_FAILED):
        log_event(log, logging.INFO, "Job already finished; duplicate message dropped", **fields, Decision=kind.value)
        return
    if kind in (DecisionKind.CURRENTLY_PROCESSING, DecisionKind.LEASE_NOT_EXPIRED):
        pipeline.metrics.incr(m.RETRY_LATER)
        log_event(log, logging.WARNING, "Job is still marked as Processing; message kept for a later retry",
                  **fields, Decision=kind.value, RetryAfterSeconds=round(decision.retry_after or 0, 1))
        raise RetryLater(f"job {message.job_id} is {kind.value}; retry after {decision.retry_after or 0:.0f}s")
    if kind is not DecisionKind.ACQUIRED:
        log_event(log, logging.ERROR, "Unexpected job state for a queue message", **fields, Decision=kind.value,
                  State=str(decision.state))
        raise JobStateError(f"job {message.job_id}: {kind.value} (state {decision.state})")
    job = decision.job or await pipeline.db(store.jobs.get, message.job_id)
    assert job is not None and decision.run_id is not None
    run = Run(pipeline, job, message, decision.run_id, {**fields, "RunId": decision.run_id})
    log_event(log, logging.INFO, "Job started", **run.fields, Attempt=decision.attempts)
    renewal = asyncio.ensure_future(_renew(run))
    try:
        await work(run)
    except BusinessError as exc:
        renewal.cancel()
        await _finish_business_failed(run, str(exc))
        return
    except BaseException as exc:  # transient (timeout, 429, 503, disconnect) or a bug: retry, keep the message
        renewal.cancel()
        if isinstance(exc, Exception):
            await _finish_retryable(run, exc)
        raise
    renewal.cancel()
    await _finish_completed(run)


async def _renew(run: Run) -> None:
    """Extend the job lease at half its period while the run works (a live owner's heartbeat);
    a transient store failure is retried, not the end of renewal (toolkit `keep_lease`)."""
    pipeline, lease = run.pipeline, pipeline_lease(run)
    sleep = pipeline.runtime.clock.sleep if pipeline.runtime is not None else asyncio.sleep

    async def renew() -> datetime | None:
        return await pipeline.db(pipeline.store.leases.renew, run.job.job_id, run.run_id, lease)

    await keep_lease(renew, lease, sleep, fields=run.fields)


def pipeline_lease(run: Run) -> float:
    return run.pipeline.settings.lease_seconds


async def _finish_business_failed(run: Run, reason: str) -> None:
    applied = await run.pipeline.db(run.pipeline.store.leases.mark_business_failed, run.job.job_id, run.run_id, reason)
    log_event(log, logging.WARNING, "Job failed: business error", **run.fields, Reason=reason[:300], Applied=applied)
    if not applied:
        raise JobStateError(f"job {run.job.job_id}: lease lost before MarkBusinessFailed")


async def _finish_retryable(run: Run, exc: BaseException) -> None:
    reason = f"{type(exc).__name__}: {exc}"[:300]
    try:
        await run.pipeline.db(run.pipeline.store.leases.mark_retryable_failed, run.job.job_id, run.run_id, reason)
    except Exception:  # noqa: BLE001 - the lease runs out and the retry re-acquires anyway
        pass
    transient = isinstance(exc, TransientError | OSError | TimeoutError)
    log_event(log, logging.WARNING if transient else logging.ERROR,
              "Job failed: transient error, will retry" if transient else "Job failed: unexpected error, will retry",
              **run.fields, Reason=reason)


async def _finish_completed(run: Run) -> None:
    pipeline = run.pipeline
    try:
        await fault("pipeline.mark_completed.before", job_id=run.job.job_id)
        applied = await pipeline.db(pipeline.store.leases.mark_completed, run.job.job_id, run.run_id)
    except Exception as exc:
        applied, error = False, f"{type(exc).__name__}: {exc}"[:300]
    else:
        error = None if applied else "the run no longer owns the job"
    if not applied:
        pipeline.metrics.incr(m.MARK_COMPLETED_FAILURES)
        log_event(log, logging.ERROR, "Job side effects may have completed, but MarkCompleted failed",
                  **run.fields, Error=error)
        raise MarkCompletedFailed(f"job {run.job.job_id}: MarkCompleted failed ({error})")
    log_event(log, logging.INFO, "Job completed", **run.fields)


async def read_verified(run: Run) -> tuple[bytes, str]:
    """The job's blob, exactly the version accepted (eTag / versionId re-checked)."""
    blob = run.job.blob or run.message.blob
    try:
        data, info = await run.pipeline.blobs.read(blob.container_name, blob.blob_name, etag=blob.etag,
                                                   version_id=blob.version_id)
    except BlobMissing:
        raise BusinessError("the blob no longer exists") from None
    except VersionMismatch:
        raise BusinessError("the blob changed after the job was accepted (eTag/versionId mismatch)") from None
    if blob.version_id and info.version_id != blob.version_id:
        raise BusinessError("the blob changed after the job was accepted (versionId mismatch)")
    return data, info.content_type


async def import_csv(run: Run) -> None:
    data, _ = await read_verified(run)
    try:
        rows = parse_csv(data)
    except ImportInvalid as exc:
        raise BusinessError(str(exc)) from None
    pipeline, job_id = run.pipeline, run.job.job_id
    new = await pipeline.db(pipeline.store.rows.write, job_id, [(r.row_no, r.to_dict()) for r in rows])
    entry = {"jobId": job_id, "tenantId": run.job.tenant_id, "requestedBy": run.job.requested_by, **summary(rows)}

    async def post(idempotency_key: str) -> dict[str, Any]:
        return await pipeline.ledger.post(entry, idempotency_key)

    try:
        result = await pipeline.store.effects.arun_once(job_id, LEDGER_OPERATION, post, run_id=run.run_id)
    except LedgerRefused as exc:
        raise BusinessError(str(exc)) from None
    log_event(log, logging.INFO, "Import rows written and ledger entry posted", **run.fields, Rows=len(rows),
              NewRows=new, LedgerEntryId=(result or {}).get("entryId"))


async def ocr(run: Run) -> None:
    data, content_type = await read_verified(run)
    blob = run.job.blob or run.message.blob
    try:
        text = extract_text(data, content_type, blob.blob_name)
    except ExtractionFailed as exc:
        raise BusinessError(str(exc)) from None
    name = output_name(run.job)
    await run.pipeline.blobs.write(run.pipeline.settings.output_container, name, text.encode("utf-8"),
                                   content_type="text/plain; charset=utf-8",
                                   metadata={"jobid": run.job.job_id, "sourceetag": blob.etag or ""})
    log_event(log, logging.INFO, "OCR text written", **run.fields, OutputBlob=name, Characters=len(text))


def output_name(job: Job) -> str:
    """Named by jobId: a rerun overwrites the same blob instead of adding another."""
    return f"{job.tenant_id}/{job.job_id}.txt"
