"""Event Grid bridge: BlobCreated -> OCR job (Job + Outbox in one transaction), and nothing heavy.

Two ways in, one job per blob version: the Event Grid trigger on BlobCreated (`on_event`) and the
blob trigger with the Event Grid source (`on_blob`).

1. Only `Microsoft.Storage.BlobCreated`; other types are logged and ignored.
2. The URL is parsed into account / container / blob (public and path-style local endpoints);
   unparseable: the `invalid-events` queue.
3. No eTag and no versionId: `invalid-events` (strict mode), never a job keyed without a version.
4. Blob policy (ordinal prefix checks); not allowed: logged and dropped.
5. `jobId = blob_job_id(...)`: duplicates of the event (or another event for the same blob
   version) find the same job (AlreadyAccepted). The eventId is stored for audit.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import azure.functions as func

from funchost.reliability import BlobReference, NewJob, OutboxMessage, blob_job_id, log_event, parse_blob_url
from funchost.reliability import metrics as m
from funchost.reliability.logfields import loggable
from importjobs.context import Pipeline
from importjobs.messages import JobMessage
from importjobs.settings import INVALID_EVENT_QUEUE, OCR_QUEUE

log = logging.getLogger("importjobs.bridge")

BLOB_CREATED = "Microsoft.Storage.BlobCreated"
EVENT_ENDPOINT = "eventgrid:BlobCreated"
EVENT_USER = "eventgrid"


async def on_event(event: func.EventGridEvent, pipeline: Pipeline) -> str:
    """Returns what happened: ignored / invalid / not_allowed / accepted / duplicate."""
    ids = {"EventId": loggable(str(event.id))}  # event fields are chosen by whoever published the event
    if event.event_type != BLOB_CREATED:
        log_event(log, logging.INFO, "Event ignored: not a BlobCreated event", **ids, EventType=loggable(str(event.event_type)))
        return "ignored"
    data = event.get_json() if isinstance(event.get_json(), dict) else {}
    parsed = parse_blob_url(str(data.get("url") or ""))
    if parsed is None:
        await _invalid(pipeline, event, "unparseable blob URL")
        return "invalid"
    account, container, name = parsed
    etag, version = _text(data.get("eTag")), _text(data.get("versionId"))
    if etag is None and version is None:
        await _invalid(pipeline, event, "no eTag and no versionId", account, container, name)
        return "invalid"
    return await _accept(pipeline, BlobReference(account, container, name, etag, version), event.id, ids)


async def on_blob(blob: func.InputStream, pipeline: Pipeline) -> str:
    """The same intake from the blob trigger (Event Grid source): the blob's URI and properties
    name the version, so the job id is the one the BlobCreated event path computes, and the two
    paths (or a redelivery of either) make one job."""
    ids = {"Source": "blobTrigger"}
    properties = blob.blob_properties or {}
    parsed = parse_blob_url(str(blob.uri or ""))
    etag = _text(str(properties.get("ETag") or "").strip('"'))
    version = _text(properties.get("VersionId"))
    if parsed is None or (etag is None and version is None):
        log_event(log, logging.WARNING, "Blob trigger without a usable URI or version", **ids,
                  BlobTrigger=loggable(str(blob.name)))
        return "invalid"
    account, container, name = parsed
    return await _accept(pipeline, BlobReference(account, container, name, etag, version), None, ids)


async def _accept(pipeline: Pipeline, blob: BlobReference, event_id: str | None, ids: dict[str, Any]) -> str:
    account, container, name = blob.storage_account, blob.container_name, blob.blob_name
    tenant = name.split("/", 1)[0] if "/" in name else ""
    violation = pipeline.policy.check(blob, tenant)
    if violation is not None:
        pipeline.metrics.incr(m.DISALLOWED_BLOB_REFERENCES)
        log_event(log, logging.WARNING, "Blob reference is not allowed", **ids, StorageAccount=loggable(account),
                  ContainerName=loggable(container), BlobName=loggable(name), Violation=violation.value)
        return "not_allowed"
    job_id = blob_job_id(blob, BLOB_CREATED)
    message = JobMessage(job_id, tenant, EVENT_USER, blob, pipeline.now().isoformat().replace("+00:00", "Z"),
                         event_id=event_id)
    job = NewJob(job_id=job_id, tenant_id=tenant, requested_by=EVENT_USER, endpoint=EVENT_ENDPOINT, blob=blob,
                 event_id=event_id)
    decision = await pipeline.db(pipeline.store.intake.accept, job,
                                 OutboxMessage(OCR_QUEUE, message.to_json(), pipeline.settings.storage_connection))
    duplicate = decision.kind.value != "Accepted"
    log_event(log, logging.INFO, "Blob event duplicate: job already exists" if duplicate else "OCR job accepted",
              **ids, JobId=decision.job_id, TenantId=loggable(tenant), StorageAccount=loggable(account),
              ContainerName=loggable(container), BlobName=loggable(name))
    return "duplicate" if duplicate else "accepted"


async def _invalid(pipeline: Pipeline, event: func.EventGridEvent, reason: str, account: str | None = None,
                   container: str | None = None, name: str | None = None) -> None:
    """Park the event for investigation: identifiers only, never the URL (it may carry a SAS)."""
    record: dict[str, Any] = {"eventId": event.id, "eventType": event.event_type, "subject": event.subject,
                              "reason": reason, "storageAccount": account, "containerName": container,
                              "blobName": name, "eventTime": str(event.event_time) if event.event_time else None}
    await pipeline.queues.send(INVALID_EVENT_QUEUE, json.dumps(record))
    log_event(log, logging.WARNING, "Invalid blob event parked", EventId=loggable(str(event.id)), Reason=reason,
              QueueName=INVALID_EVENT_QUEUE)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
