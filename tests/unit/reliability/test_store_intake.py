"""Idempotent intake on a real store (run on SQLite here and on PostgreSQL in integration)."""

import threading

from funchost.reliability.blobref import BlobReference
from funchost.reliability.canonical import request_hash
from funchost.reliability.idempotency import AcceptKind, IdempotencyScope
from funchost.reliability.jobs import JobState, NewJob
from funchost.reliability.outbox import CommitSignal, OutboxMessage

BODY = {"containerName": "imports", "blobName": "tenant-a/f.csv"}


def accept(store, scope, body=BODY):
    msg = OutboxMessage("import-jobs", f'{{"jobId":"{scope.job_id}"}}')
    return store.intake.accept_import(scope, request_hash(body), msg,
                                      blob=BlobReference("acct", body["containerName"], body["blobName"]))


def count(store, table):
    with store.db.transaction() as tx:
        return int(tx.one(f"SELECT COUNT(*) AS n FROM {table}")["n"])


def test_new_request_writes_job_and_outbox_row(store):
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1")
    decision = accept(store, scope)
    assert decision.kind is AcceptKind.ACCEPTED and decision.job_id == scope.job_id
    job = store.jobs.get(scope.job_id)
    assert job.state is JobState.ENQUEUED and job.requested_by == "user-1" and job.tenant_id == "tenant-a"
    assert job.blob.blob_name == "tenant-a/f.csv"
    rows = store.outbox.for_job(scope.job_id)
    assert [r.outbox_id for r in rows] == [decision.outbox_id]


def test_same_key_twice_is_one_job_and_one_outbox_row(store):
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1")
    first, second = accept(store, scope), accept(store, scope)
    assert second.kind is AcceptKind.ALREADY_ACCEPTED and second.job_id == first.job_id
    assert count(store, "jobs") == 1 and count(store, "outbox") == 1


def test_same_key_concurrently_is_one_job(store):
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1")
    barrier = threading.Barrier(6)
    results, errors = [], []

    def submit():
        try:
            barrier.wait(timeout=10)
            results.append(accept(store, scope).kind)
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=submit) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert sorted(results) == sorted([AcceptKind.ACCEPTED] + [AcceptKind.ALREADY_ACCEPTED] * 5)
    assert count(store, "jobs") == 1 and count(store, "outbox") == 1


def test_same_key_different_body_is_conflict_and_writes_nothing(store):
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1")
    accept(store, scope)
    other = {"containerName": "imports", "blobName": "tenant-a/other.csv"}
    decision = accept(store, scope, other)
    assert decision.kind is AcceptKind.CONFLICT
    assert count(store, "jobs") == 1 and count(store, "outbox") == 1
    assert store.jobs.get(scope.job_id).blob.blob_name == "tenant-a/f.csv"


def test_other_tenant_user_or_endpoint_is_another_scope(store):
    scopes = [
        IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1"),
        IdempotencyScope("tenant-b", "POST /imports", "user-1", "key-1"),
        IdempotencyScope("tenant-a", "POST /imports", "user-2", "key-1"),
        IdempotencyScope("tenant-a", "POST /exports", "user-1", "key-1"),
    ]
    kinds = [accept(store, s).kind for s in scopes]
    assert kinds == [AcceptKind.ACCEPTED] * 4
    assert count(store, "jobs") == 4 and count(store, "outbox") == 4


def test_raw_key_is_never_stored(store):
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "raw-secret-key-42")
    accept(store, scope)
    with store.db.transaction() as tx:
        values = [str(v) for row in tx.all("SELECT * FROM jobs") for v in row.values()]
    assert not any("raw-secret-key-42" in v for v in values)
    assert scope.key_hash in values


def test_duplicate_event_job_is_already_accepted(store):
    job = NewJob("blob_abc", "tenant-a", "eventgrid", "eventgrid:blob-created", event_id="evt-1")
    msg = OutboxMessage("ocr-jobs", '{"jobId":"blob_abc"}')
    assert store.intake.accept(job, msg).kind is AcceptKind.ACCEPTED
    again = NewJob("blob_abc", "tenant-a", "eventgrid", "eventgrid:blob-created", event_id="evt-2")
    assert store.intake.accept(again, msg).kind is AcceptKind.ALREADY_ACCEPTED
    assert store.jobs.get("blob_abc").event_id == "evt-1"
    assert count(store, "outbox") == 1


def test_commit_signal_fires_only_for_new_jobs(store):
    fired = []
    store.signal.subscribe(lambda: fired.append(1))
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1")
    accept(store, scope)
    accept(store, scope)
    assert fired == [1]


def test_a_failing_wake_up_never_fails_an_intake(store):
    signal = CommitSignal()
    signal.subscribe(lambda: 1 / 0)
    signal.fire()  # swallowed
    store.signal.subscribe(lambda: 1 / 0)
    assert accept(store, IdempotencyScope("t", "e", "u", "k")).kind is AcceptKind.ACCEPTED


def test_status_is_tenant_scoped(store):
    scope = IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1")
    accept(store, scope)
    assert store.jobs.get_for_tenant(scope.job_id, "tenant-a") is not None
    assert store.jobs.get_for_tenant(scope.job_id, "tenant-b") is None
    view = store.jobs.get_for_tenant(scope.job_id, "tenant-a").status_view()
    assert view["status"] == "Enqueued" and "request_hash" not in view
