"""Event Grid bridge (pipeline.md section 5) and OCR jobs."""

from __future__ import annotations

import base64
import json
import uuid

from tests.support.pipeline import Pipeline, tiny_pdf

from funchost.reliability import BlobReference, blob_job_id

CONN = "ImportsStorage"


def event(url: str, *, etag: str | None = "0x8DC0000000000001", version: str | None = None,
          event_type: str = "Microsoft.Storage.BlobCreated", event_id: str | None = None) -> dict:
    data: dict = {"api": "PutBlob", "url": url, "contentType": "application/pdf"}
    if etag is not None:
        data["eTag"] = etag
    if version is not None:
        data["versionId"] = version
    return {"id": event_id or str(uuid.uuid4()), "eventType": event_type, "subject": "/blobServices/default/x",
            "eventTime": "2026-06-19T10:00:00Z", "dataVersion": "", "metadataVersion": "1",
            "topic": "/subscriptions/x/resourceGroups/y/providers/Microsoft.Storage/storageAccounts/imports",
            "data": data}


def local_url(name: str, container: str = "imports") -> str:
    return f"http://127.0.0.1:10000/imports/{container}/{name}"


async def _invalid_events(p: Pipeline) -> list[dict]:
    messages = await p.host.queues.peek("invalid-events", connection=CONN)
    return [json.loads(base64.b64decode(m.content)) for m in messages]


async def test_uploaded_pdf_becomes_an_ocr_job_with_output_named_by_job_id(pipeline: Pipeline) -> None:
    p = pipeline
    props = await p.upload("tenant-a/scans/invoice.pdf", tiny_pdf("Invoice 42 total 10.50"),
                           content_type="application/pdf")
    await p.settle(3)
    blob = BlobReference("imports", "imports", "tenant-a/scans/invoice.pdf", props.etag.strip('"'))
    job_id = blob_job_id(blob, "Microsoft.Storage.BlobCreated")
    status = await p.status(job_id)
    assert status.status_code == 200 and status.json()["status"] == "Completed", status.text
    assert status.json()["kind"] == "ocr"
    text, _ = await p.context.blobs.read("ocr-output", f"tenant-a/{job_id}.txt")
    assert text.decode() == "Invoice 42 total 10.50"
    assert (await p.status(job_id, tenant="tenant-b")).status_code == 404


async def test_duplicate_events_for_one_blob_version_make_one_job(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    url = local_url("tenant-a/scans/a.pdf")
    first = event(url, event_id="evt-1")
    for payload in (first, first, event(url, event_id="evt-2")):  # redelivery and a second event
        result = await p.host.invoke("blob_created_bridge", payload)
        assert result.succeeded if hasattr(result, "succeeded") else True
    job_id = blob_job_id(BlobReference("imports", "imports", "tenant-a/scans/a.pdf", "0x8DC0000000000001"),
                         "Microsoft.Storage.BlobCreated")
    job = p.store.jobs.get(job_id)
    assert job is not None and job.event_id == "evt-1"  # the first event id is kept for audit
    assert len(p.store.outbox.for_job(job_id)) == 1


async def test_events_out_of_order_process_only_the_current_version(pipeline: Pipeline) -> None:
    p = pipeline
    name = "tenant-a/scans/b.pdf"
    v1 = await p.upload(name, tiny_pdf("version one"), content_type="application/pdf")
    v2 = await p.upload(name, tiny_pdf("version two"), content_type="application/pdf")
    await p.settle(3)  # the store's own events arrive; then replay them newest first
    for props in (v2, v1):
        await p.host.invoke("blob_created_bridge", event(local_url(name), etag=props.etag.strip('"')))
    await p.settle(3)
    ids = {props.etag: blob_job_id(BlobReference("imports", "imports", name, props.etag.strip('"')),
                                   "Microsoft.Storage.BlobCreated") for props in (v1, v2)}
    assert await p.state(ids[v2.etag]) == "Completed"
    old = p.store.jobs.get(ids[v1.etag])
    assert old is not None and old.state.value == "BusinessFailed" and "changed" in (old.reason or "")
    text, _ = await p.context.blobs.read("ocr-output", f"tenant-a/{ids[v2.etag]}.txt")
    assert text.decode() == "version two"


async def test_event_without_etag_and_version_goes_to_the_invalid_event_queue(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    await p.host.invoke("blob_created_bridge", event(local_url("tenant-a/x.pdf"), etag=None, event_id="evt-nov"))
    parked = await _invalid_events(p)
    assert [e["eventId"] for e in parked] == ["evt-nov"] and parked[0]["reason"] == "no eTag and no versionId"
    assert sum(p.store.jobs.count_by_state().values()) == 0


async def test_unparseable_url_goes_to_the_invalid_event_queue_without_the_url(pipeline: Pipeline) -> None:
    p = pipeline
    await p.host.invoke("blob_created_bridge", event("ftp://host/file?sig=SECRET", event_id="evt-url"))
    parked = await _invalid_events(p)
    assert parked[0]["eventId"] == "evt-url" and parked[0]["reason"] == "unparseable blob URL"
    assert "SECRET" not in json.dumps(parked)


async def test_public_endpoint_urls_are_parsed_and_version_id_keys_the_job(pipeline: Pipeline) -> None:
    p = pipeline
    url = "https://imports.blob.core.windows.net/imports/tenant-a/scans/c.pdf?sv=2024&sig=abc"
    await p.host.invoke("blob_created_bridge", event(url, etag=None, version="2026-06-19T01:23:45.0000000Z"))
    job_id = blob_job_id(BlobReference("imports", "imports", "tenant-a/scans/c.pdf", None,
                                       "2026-06-19T01:23:45.0000000Z"), "Microsoft.Storage.BlobCreated")
    assert p.store.jobs.get(job_id) is not None


async def test_other_event_types_are_ignored(pipeline: Pipeline) -> None:
    p = pipeline
    await p.host.invoke("blob_created_bridge", event(local_url("tenant-a/x.pdf"),
                                                     event_type="Microsoft.Storage.BlobDeleted"))
    assert sum(p.store.jobs.count_by_state().values()) == 0
    assert await _invalid_events(p) == []


async def test_disallowed_blob_events_make_no_job(pipeline: Pipeline) -> None:
    p = pipeline
    for url in (local_url("tenant-a/x.pdf", container="exports"), local_url("noprefix.pdf"),
                "http://127.0.0.1:10000/otheraccount/imports/tenant-a/x.pdf", local_url("tenant-a/../b/x.pdf")):
        await p.host.invoke("blob_created_bridge", event(url))
    assert sum(p.store.jobs.count_by_state().values()) == 0
    assert p.context.metrics.get("blob.disallowed_references") == 4
