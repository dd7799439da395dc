"""Poison quarantine: raw body stored aside, never logged; job NeedsAttention; re-drive."""

import json
import logging

from funchost.reliability.jobs import JobState, NewJob
from funchost.reliability.lease import DecisionKind, LeaseOptions
from funchost.reliability.metrics import Metrics
from funchost.reliability.outbox import OutboxMessage, OutboxState
from funchost.reliability.quarantine import PoisonMessage, Quarantine

SECRET = "https://acct.blob.core.windows.net/c/b?sv=2024&sig=TOPSECRET"


class MemoryBlobs:
    def __init__(self):
        self.blobs = {}

    def write(self, container, name, data, metadata):
        self.blobs[(container, name)] = (data, metadata)

    def read(self, container, name):
        return self.blobs[(container, name)][0]


def body(job_id="job-1"):
    return json.dumps({"jobId": job_id, "customer": "Taro Yamada", "blobUrl": SECRET}).encode()


async def test_quarantine_stores_raw_body_and_never_logs_it(store, caplog):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    blobs = MemoryBlobs()
    q = Quarantine(store, blobs.write, container="quarantine", function_version="1.4.2", metrics=Metrics())
    caplog.set_level(logging.DEBUG)
    record = await q.handle(PoisonMessage("import-jobs-poison", body(), message_id="m-9", dequeue_count=5))
    text = caplog.text + "".join(str(getattr(r, "custom_dimensions", "")) for r in caplog.records)
    assert "TOPSECRET" not in text and "Taro Yamada" not in text and "sig=" not in text
    line = next(r for r in caplog.records if "Poison message detected" in r.getMessage())
    assert line.levelno == logging.ERROR
    dims = line.custom_dimensions
    assert dims["JobId"] == "job-1" and dims["MessageHash"] == record.message_hash
    assert dims["QueueMessageId"] == "m-9" and dims["DequeueCount"] == 5 and dims["FunctionVersion"] == "1.4.2"
    ((container, name), (data, _meta)), = blobs.blobs.items()
    assert container == "quarantine" and data == body()
    assert store.jobs.get("job-1").state is JobState.NEEDS_ATTENTION
    assert q.metrics.get("poison.quarantined", queue="import-jobs-poison") == 1
    assert q.metrics.get("alerts", kind="poison") == 1
    assert "Taro" not in repr(PoisonMessage("q", body()))


async def test_unparseable_poison_message_is_still_quarantined(store, caplog):
    blobs = MemoryBlobs()
    q = Quarantine(store, blobs.write, metrics=Metrics())
    caplog.set_level(logging.DEBUG)
    record = await q.handle(PoisonMessage("import-jobs-poison", b"\xff not json " + SECRET.encode(), "m-1", 5))
    assert record.job_id is None and not record.job_marked
    assert "TOPSECRET" not in caplog.text
    assert len(blobs.blobs) == 1


async def test_final_jobs_are_not_marked_needs_attention(store):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    run = store.leases.acquire("job-1")
    store.leases.mark_completed("job-1", run.run_id)
    record = await Quarantine(store, MemoryBlobs().write, metrics=Metrics()).handle(
        PoisonMessage("import-jobs-poison", body(), "m", 5))
    assert not record.job_marked and store.jobs.get("job-1").state is JobState.COMPLETED


async def test_redrive_puts_the_job_back_through_the_outbox(store):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    blobs = MemoryBlobs()
    q = Quarantine(store, blobs.write, metrics=Metrics())
    record = await q.handle(PoisonMessage("import-jobs-poison", body(), "m-9", 5))
    assert store.leases.acquire("job-1").kind is DecisionKind.UNEXPECTED_STATE
    assert [p["quarantine_id"] for p in q.pending()] == [record.quarantine_id]
    outbox_id = await q.redrive(record.quarantine_id, blobs.read)
    row = store.outbox.get(outbox_id)
    assert row.queue_name == "import-jobs" and row.payload == body().decode() and row.state is OutboxState.PENDING
    assert store.jobs.get("job-1").state is JobState.ENQUEUED
    assert q.pending() == []
    assert store.leases.acquire("job-1").kind is DecisionKind.ACQUIRED


async def test_a_job_owned_by_a_live_run_is_not_marked_needs_attention(store, now):
    """A duplicate message that kept meeting a live run's lease is poisoned: the run still owns
    the job and finishes it; NeedsAttention would make its MarkCompleted fail."""
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    run = store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))
    quarantine = Quarantine(store, MemoryBlobs().write, metrics=Metrics())
    record = await quarantine.handle(PoisonMessage("import-jobs-poison", body(), "m-1", 5))
    assert not record.job_marked and store.jobs.get("job-1").state is JobState.PROCESSING
    assert [p["quarantine_id"] for p in quarantine.pending()] == [record.quarantine_id]  # still quarantined
    assert store.leases.mark_completed("job-1", run.run_id)


async def test_a_job_whose_run_died_is_marked_needs_attention(store, now):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))
    now.advance(61)  # the lease expired: nobody is working on the job
    record = await Quarantine(store, MemoryBlobs().write, metrics=Metrics()).handle(
        PoisonMessage("import-jobs-poison", body(), "m-1", 5))
    assert record.job_marked and store.jobs.get("job-1").state is JobState.NEEDS_ATTENTION
