"""Queue workers (pipeline.md section 3) and poison handling (section 4)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from tests.support.pipeline import CSV_BAD, Pipeline

from funchost.reliability import DecisionKind, LeaseOptions, StoreUnavailable, sha256_hex

BODY = {"containerName": "imports", "blobName": "tenant-a/in/file.csv"}
CONN = "ImportsStorage"


async def _accepted(p: Pipeline, data: bytes | None = None, key: str = "k") -> str:
    if data is None:
        await p.upload("tenant-a/in/file.csv")
    else:
        await p.upload("tenant-a/in/file.csv", data)
    response = await p.submit(BODY, key=key)
    assert response.status_code == 202, response.text
    return str(response.json()["jobId"])


def _payload(p: Pipeline, job_id: str) -> str:
    return p.store.outbox.for_job(job_id)[0].payload


async def test_duplicate_messages_at_once_are_processed_once(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("hold"), when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _accepted(p)
    await p.settle()
    payload = _payload(p, job_id)
    for _ in range(3):  # three copies in one batch: handled concurrently
        await p.host.queues.send("import-jobs", payload, connection=CONN)
    await p.settle()
    await p.settle(35)
    await p.settle(35)
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1
    assert p.store.rows.count(job_id) == 2
    assert await p.host.queues.count("import-jobs", connection=CONN) == 0
    assert await p.host.queues.count("import-jobs-poison", connection=CONN) == 0


async def test_currently_processing_keeps_the_message(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("hold"), when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _accepted(p)
    await p.settle()
    other = p.store.leases.acquire(job_id, LeaseOptions(lease_seconds=60))  # another worker holds the job
    assert other.acquired
    await p.host.queues.send("import-jobs", _payload(p, job_id), connection=CONN)
    await p.settle()
    assert await p.host.queues.count("import-jobs", connection=CONN) == 1  # kept, not deleted
    assert await p.state(job_id) == "Processing"
    assert p.context.metrics.get("worker.retry_later") >= 1
    await p.settle(65)  # that worker never finishes: its lease expires and the retry takes over
    await p.settle(35)
    assert await p.state(job_id) == "Completed"
    assert await p.host.queues.count("import-jobs", connection=CONN) == 0


async def test_mark_completed_failing_after_the_effects_repeats_no_effect(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("pipeline.mark_completed.before", ConnectionError("database connection lost"),
                      when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _accepted(p)
    await p.settle()
    assert await p.state(job_id) == "Processing"  # effects done, completion not recorded
    assert p.context.metrics.get("worker.mark_completed_failures") == 1
    assert len(await p.ledger()) == 1
    for _ in range(4):  # retries every 30 s: LeaseNotExpired until the 60 s lease is over
        await p.settle(31)
    assert await p.state(job_id) == "Completed"
    entries = await p.ledger()
    assert len(entries) == 1 and entries[0]["idempotencyKey"] == f"{job_id}:ledger-post"
    assert p.store.rows.count(job_id) == 2
    assert p.store.effects.get(job_id, "ledger-post").attempts == 1  # type: ignore[union-attr]


async def test_business_error_fails_the_job_without_retry(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    job_id = await _accepted(p, CSV_BAD)
    await p.settle()
    status = (await p.status(job_id)).json()
    assert status["status"] == "BusinessFailed"
    assert "line 2" in status["reason"] and "unknown customer" in status["reason"]
    assert status["attempts"] == 1
    assert await p.host.queues.count("import-jobs", connection=CONN) == 0
    assert await p.ledger() == []


async def test_missing_columns_are_a_business_error(pipeline: Pipeline) -> None:
    job_id = await _accepted(pipeline, b"name,value\nx,1\n")
    await pipeline.settle()
    assert (await pipeline.status(job_id)).json()["reason"].startswith("missing column(s): customerId, amount")


async def test_transient_ledger_error_is_retried_and_then_completes(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("function.before", RuntimeError("ledger down"), when=lambda function, **_: function == "ledger_post")
    job_id = await _accepted(p)
    await p.settle()
    job = p.store.jobs.get(job_id)
    assert job is not None and job.state.value == "RetryableFailed" and "ledger answered 500" in (job.reason or "")
    assert await p.host.queues.count("import-jobs", connection=CONN) == 1  # raised: the message stays
    await p.settle(35)  # visibilityTimeout 30 s, then the next poll
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1


async def test_etag_mismatch_at_processing_is_business_failed(pipeline: Pipeline) -> None:
    p = pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("hold"), when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _accepted(p)
    await p.settle()
    await p.upload("tenant-a/in/file.csv", b"customerId,amount\nC001,999\n")  # replaced after intake
    await p.settle(13)
    status = (await p.status(job_id)).json()
    assert status["status"] == "BusinessFailed" and "eTag" in status["reason"]
    assert await p.ledger() == []


async def test_unparseable_message_is_poisoned_and_quarantined_without_logging_the_body(
        pipeline: Pipeline, caplog: pytest.LogCaptureFixture) -> None:
    p = pipeline
    secret_body = "not json: card=4111111111111111"
    caplog.set_level(logging.DEBUG)
    await p.host.queues.send("import-jobs", secret_body, connection=CONN)
    for _ in range(6):
        await p.settle(31)
    assert await p.host.queues.count("import-jobs", connection=CONN) == 0
    assert await p.host.queues.count("import-jobs-poison", connection=CONN) == 0  # handled by import_poison
    pending = p.context.quarantine.pending()
    assert len(pending) == 1 and pending[0]["message_hash"] == sha256_hex(secret_body.encode())
    names = await p.context.blobs.names("quarantine")
    stored, _ = await p.context.blobs.read("quarantine", names[0])
    assert stored == secret_body.encode()
    assert p.context.metrics.get("alerts", kind="poison") == 1
    assert "4111111111111111" not in caplog.text
    assert "Poison message detected" in caplog.text and sha256_hex(secret_body.encode()) in caplog.text


async def test_poisoned_job_message_marks_the_job_needs_attention(pipeline: Pipeline) -> None:
    p = pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("hold"), times=None,
                      when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _accepted(p)
    await p.settle()
    # a message of a future schema version: never processable by this version
    await p.host.queues.send("import-jobs", json.dumps({"schema": 99, "jobId": job_id}), connection=CONN)
    for _ in range(6):
        await p.settle(31)
    assert await p.state(job_id) == "NeedsAttention"
    quarantined = p.context.quarantine.pending()
    assert quarantined[0]["job_id"] == job_id
    redrive = await p.host.http("POST", f"/api/quarantine/{quarantined[0]['quarantine_id']}/redrive", key="master")
    assert redrive.status_code == 202
    assert p.store.outbox.get(redrive.json()["outboxId"]) is not None
    assert await p.state(job_id) == "Enqueued"


async def test_watchdog_requeues_a_job_whose_runner_died(any_pipeline: Pipeline) -> None:
    """A run took the job and vanished with its message: the watchdog re-enqueues it."""
    p = any_pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("hold"), when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _accepted(p)
    await p.settle()
    with p.store.db.transaction() as tx:
        tx.execute("UPDATE outbox SET state = 'Dispatched' WHERE job_id = ?", (job_id,))
    assert p.store.leases.acquire(job_id, LeaseOptions(lease_seconds=60)).acquired
    await p.settle(130)  # lease expired; the watchdog (every minute) re-enqueues through the outbox
    await p.settle(15)
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1


async def test_one_failed_lease_renewal_does_not_end_renewal_for_the_run(pipeline: Pipeline) -> None:
    """A long run whose first renewal meets a locked database keeps its job (pipeline.md 3.9)."""
    p = pipeline
    release, calling = asyncio.Event(), asyncio.Event()
    ledger, renew = p.context.ledger, p.store.leases.renew
    post = ledger.post
    failures: list[str] = []

    async def slow_post(entry: dict[str, Any], key: str) -> dict[str, Any]:
        calling.set()
        await release.wait()
        return await post(entry, key)

    def renew_failing_once(*args: Any) -> Any:
        if not failures:
            failures.append("locked")
            raise StoreUnavailable("sqlite: database is locked")
        return renew(*args)

    ledger.post, p.store.leases.renew = slow_post, renew_failing_once
    job_id = await _accepted(p)
    await asyncio.wait_for(calling.wait(), 10)
    first_run = p.store.jobs.get(job_id).run_id  # type: ignore[union-attr]
    try:
        await p.host.advance(100)  # renewals at 30 (fails), 35, 65, 95: the 60 s lease never runs out
        assert failures == ["locked"]
        job = p.store.jobs.get(job_id)
        # still the first run's job: no watchdog re-enqueue, no takeover by another delivery
        assert job is not None and job.run_id == first_run and job.attempts == 1, job
        assert p.store.leases.acquire(job_id, LeaseOptions(lease_seconds=60)).kind is DecisionKind.CURRENTLY_PROCESSING
    finally:
        release.set()
    await p.settle()
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1
