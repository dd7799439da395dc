"""The bridge as a blob trigger with the Event Grid source, beside the Event Grid trigger path."""

from __future__ import annotations

import logging

import pytest
from tests.support.pipeline import Pipeline, tiny_pdf

from funchost.reliability import BlobReference, blob_job_id


def bridge_records(caplog: pytest.LogCaptureFixture, source: str | None) -> list[dict]:
    found = []
    for record in caplog.records:
        fields = getattr(record, "custom_dimensions", None)
        if record.name == "importjobs.bridge" and isinstance(fields, dict) and fields.get("Source") == source:
            found.append({"message": record.getMessage().split(" ", 3)[:3], **fields})
    return found


async def test_upload_goes_through_both_bridges_and_makes_one_job(pipeline: Pipeline,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    p = pipeline
    caplog.set_level(logging.INFO, logger="importjobs.bridge")
    props = await p.upload("tenant-a/scans/both.pdf", tiny_pdf("via both paths"), content_type="application/pdf")
    await p.settle(3)
    job_id = blob_job_id(BlobReference("imports", "imports", "tenant-a/scans/both.pdf", props.etag.strip('"')),
                         "Microsoft.Storage.BlobCreated")
    assert await p.state(job_id) == "Completed"
    assert len(p.store.outbox.for_job(job_id)) == 1
    from_blob_trigger = bridge_records(caplog, "blobTrigger")
    assert [r["JobId"] for r in from_blob_trigger] == [job_id]  # the blob trigger ran, and found the same job


async def test_blob_trigger_bridge_alone_accepts_the_blob_version(pipeline: Pipeline,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    p = pipeline
    caplog.set_level(logging.INFO, logger="importjobs.bridge")
    props = await p.upload("tenant-a/direct.pdf", tiny_pdf("direct"), content_type="application/pdf")
    await p.settle(3)
    job_id = blob_job_id(BlobReference("imports", "imports", "tenant-a/direct.pdf", props.etag.strip('"')),
                         "Microsoft.Storage.BlobCreated")
    caplog.clear()
    result = await p.host.invoke("blob_trigger_bridge", "imports/tenant-a/direct.pdf")  # a redelivery
    assert result.succeeded
    [record] = bridge_records(caplog, "blobTrigger")
    assert record["JobId"] == job_id and record["message"][:2] == ["Blob", "event"]  # "Blob event duplicate"
    caplog.clear()
    await p.upload("tenant-a/x.pdf", tiny_pdf("x"), container="elsewhere", content_type="application/pdf")
    await p.settle(3)
    assert bridge_records(caplog, "blobTrigger") == []  # the subscription's filter: the imports container only
