"""HTTP intake `POST /api/imports` and status `GET /api/imports/{jobId}`.

The intake only accepts: principal, limits, DTO, blob policy and verification, then ONE
transaction writing the job and its outbox row. It never sends to a queue.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import azure.functions as func

from funchost.reliability import (
    AcceptKind,
    BlobReference,
    IdempotencyScope,
    OutboxMessage,
    StoreUnavailable,
    log_event,
)
from funchost.reliability import metrics as m
from funchost.reliability.logfields import loggable
from importjobs.blobcheck import BlobInvalid, verify
from importjobs.context import Pipeline
from importjobs.identity import Principal, Unauthorized, authenticate
from importjobs.intake import Rejected, SubmitImport, check_declared_length, idempotency_key, parse_body
from importjobs.messages import JobMessage
from importjobs.settings import ENDPOINT, IMPORT_QUEUE
from importjobs.storage import StorageBusy

log = logging.getLogger("importjobs.api")
RETRY_AFTER_SECONDS = 5


def json_response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(body), status_code=status, mimetype="application/json", headers=headers)


def status_url(job_id: str) -> str:
    return f"/api/imports/{job_id}"


async def submit_import(req: func.HttpRequest, pipeline: Pipeline) -> func.HttpResponse:
    headers = req.headers
    try:
        principal = authenticate(headers, pipeline.settings, pipeline.tokens)
    except Unauthorized as exc:
        return _reject(pipeline, Rejected(401, "unauthorized", str(exc)))
    try:
        check_declared_length(headers)
        key = idempotency_key(headers)
        dto = parse_body(req.get_body())
        blob = BlobReference(pipeline.account, dto.container_name, dto.blob_name, dto.etag, dto.version_id)
        violation = pipeline.policy.check(blob, principal.tenant_id)
        if violation is not None:
            pipeline.metrics.incr(m.DISALLOWED_BLOB_REFERENCES)
            log_event(log, logging.WARNING, "Blob reference is not allowed", TenantId=principal.tenant_id,
                      RequestedByUserId=principal.user_id, ContainerName=loggable(dto.container_name),
                      BlobName=loggable(dto.blob_name), Violation=violation.value)
            raise Rejected(403, "blob_not_allowed", f"the blob reference is not allowed ({violation.value})")
        return await _accept(req, pipeline, principal, key, dto, blob)
    except Rejected as rejected:
        return _reject(pipeline, rejected, principal)
    except StoreUnavailable:  # nothing was written: the client retries with the same key
        pipeline.metrics.incr(m.INTAKE_REJECTED, reason="store_unavailable")
        log_event(log, logging.WARNING, "Import request refused: the jobs database is busy", TenantId=principal.tenant_id,
                  RetryAfterSeconds=RETRY_AFTER_SECONDS)
        return store_busy()
    except StorageBusy:  # the blob could not be verified: nothing was written either
        pipeline.metrics.incr(m.INTAKE_REJECTED, reason="storage_unavailable")
        log_event(log, logging.WARNING, "Import request refused: the storage account did not answer",
                  TenantId=principal.tenant_id, RetryAfterSeconds=RETRY_AFTER_SECONDS)
        return storage_busy()


def storage_busy() -> func.HttpResponse:
    """503 + Retry-After: the blob could not be verified because its storage did not answer
    (restarting, unreachable); the request wrote nothing and may be repeated with the same key."""
    return json_response(503, {"error": "the storage account is unavailable; retry with the same Idempotency-Key",
                               "reason": "storage_unavailable"}, {"Retry-After": str(RETRY_AFTER_SECONDS)})


def store_busy() -> func.HttpResponse:
    """503 + Retry-After: the jobs database's write lock is held elsewhere (another host busy,
    frozen or paused); the request wrote nothing and may be repeated with the same key."""
    return json_response(503, {"error": "the jobs database is busy; retry with the same Idempotency-Key",
                               "reason": "store_unavailable"}, {"Retry-After": str(RETRY_AFTER_SECONDS)})


async def _accept(req: func.HttpRequest, pipeline: Pipeline, principal: Principal, key: str,
                  dto: SubmitImport, blob: BlobReference) -> func.HttpResponse:
    """Verify the blob, then ONE transaction: the job and its outbox row, or the existing job's
    answer (AlreadyAccepted / Conflict). A retry whose blob no longer verifies (deleted or
    replaced since) still gets the answer of the accepted request."""
    scope = IdempotencyScope(principal.tenant_id, ENDPOINT, principal.user_id, key)
    digest = dto.request_hash
    try:
        info = await verify(pipeline.blobs, blob, pipeline.settings)
    except BlobInvalid as exc:
        existing = await pipeline.intake(pipeline.store.jobs.get, scope.job_id)
        if existing is not None:
            kind = AcceptKind.ALREADY_ACCEPTED if existing.request_hash == digest and \
                existing.tenant_id == principal.tenant_id else AcceptKind.CONFLICT
            return _decided(pipeline, kind, scope.job_id, principal)
        raise Rejected(400, "blob_invalid", str(exc)) from None
    pinned = BlobReference(blob.storage_account, blob.container_name, blob.blob_name,
                           blob.etag or info.etag, blob.version_id or info.version_id)
    message = JobMessage(scope.job_id, principal.tenant_id, principal.user_id, pinned,
                         pipeline.now().isoformat().replace("+00:00", "Z"))
    outbox = OutboxMessage(IMPORT_QUEUE, message.to_json(), pipeline.settings.storage_connection)
    correlation = req.headers.get("x-correlation-id") or None
    decision = await pipeline.intake(pipeline.store.intake.accept_import, scope, digest, outbox, blob=pinned,
                                 correlation_id=correlation[:100] if correlation else None)
    return _decided(pipeline, decision.kind, decision.job_id, principal)


def _decided(pipeline: Pipeline, kind: AcceptKind, job_id: str, principal: Principal) -> func.HttpResponse:
    fields = {"JobId": job_id, "TenantId": principal.tenant_id, "RequestedByUserId": principal.user_id}
    if kind is AcceptKind.CONFLICT:
        pipeline.metrics.incr(m.INTAKE_CONFLICT)
        log_event(log, logging.WARNING, "Idempotency-Key reused with a different request body", **fields)
        return json_response(409, {"error": "The same Idempotency-Key was used with a different request body."})
    if kind is AcceptKind.ALREADY_ACCEPTED:
        pipeline.metrics.incr(m.INTAKE_ALREADY_ACCEPTED)
        log_event(log, logging.INFO, "Duplicate request accepted without creating a new outbox row", **fields)
    else:
        pipeline.metrics.incr(m.INTAKE_ACCEPTED)
        log_event(log, logging.INFO, "Import job accepted; job and outbox row created", **fields)
    url = status_url(job_id)
    return json_response(202, {"jobId": job_id, "statusUrl": url}, {"Location": url})


def _reject(pipeline: Pipeline, rejected: Rejected, principal: Principal | None = None) -> func.HttpResponse:
    pipeline.metrics.incr(m.INTAKE_REJECTED, reason=rejected.reason)
    log_event(log, logging.INFO, "Import request rejected", Reason=rejected.reason, Status=rejected.status,
              TenantId=principal.tenant_id if principal else None)
    headers = {"WWW-Authenticate": "Bearer"} if rejected.status == 401 else None
    return json_response(rejected.status, {"error": rejected.message, "reason": rejected.reason}, headers)


async def get_import(req: func.HttpRequest, pipeline: Pipeline) -> func.HttpResponse:
    try:
        principal = authenticate(req.headers, pipeline.settings, pipeline.tokens)
    except Unauthorized as exc:
        return json_response(401, {"error": str(exc)}, {"WWW-Authenticate": "Bearer"})
    job_id = req.route_params.get("jobId", "")
    try:
        job = await pipeline.intake(pipeline.store.jobs.get_for_tenant, job_id, principal.tenant_id)
    except StoreUnavailable:
        return store_busy()
    if job is None:  # another tenant's job reads exactly like a missing one
        return json_response(404, {"error": "job not found"})
    view = job.status_view()
    view["kind"] = "ocr" if job.job_id.startswith("blob_") else "import"
    if job.blob is not None:
        view["blob"] = {"containerName": job.blob.container_name, "blobName": job.blob.blob_name}
    return json_response(200, view)
