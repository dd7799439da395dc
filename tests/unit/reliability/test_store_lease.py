"""Acquire decisions for every state, and runId-conditional marks."""

import threading

import pytest

from funchost.reliability.jobs import JobState, NewJob
from funchost.reliability.lease import DecisionKind, LeaseOptions
from funchost.reliability.outbox import OutboxMessage

OPTS = LeaseOptions(lease_seconds=600)


def new_job(store, job_id="job-1"):
    store.intake.accept(NewJob(job_id, "t", "u", "e"), OutboxMessage("q", "{}"))
    return job_id


def set_state(store, job_id, state):
    with store.db.transaction() as tx:
        tx.execute("UPDATE jobs SET state = ? WHERE job_id = ?", (state, job_id))


def test_enqueued_is_acquired_with_run_id_and_deadline(store, now):
    job_id = new_job(store)
    d = store.leases.acquire(job_id, OPTS)
    assert d.kind is DecisionKind.ACQUIRED and d.run_id and d.attempts == 1
    assert (d.lease_until - now()).total_seconds() == 600
    job = store.jobs.get(job_id)
    assert job.state is JobState.PROCESSING and job.run_id == d.run_id and job.lease_until == d.lease_until
    assert d.job == job  # the acquired row comes back with the decision: no second read needed


def test_retryable_failed_is_acquired_again(store):
    job_id = new_job(store)
    first = store.leases.acquire(job_id, OPTS)
    assert store.leases.mark_retryable_failed(job_id, first.run_id, "503 from downstream")
    second = store.leases.acquire(job_id, OPTS)
    assert second.kind is DecisionKind.ACQUIRED and second.run_id != first.run_id and second.attempts == 2


def test_processing_with_live_owner_is_currently_processing(store, now):
    job_id = new_job(store)
    store.leases.acquire(job_id, OPTS)
    now.advance(60)
    d = store.leases.acquire(job_id, OPTS)
    assert d.kind is DecisionKind.CURRENTLY_PROCESSING
    assert d.retry_after == 540 and d.run_id is None


def test_processing_with_silent_owner_is_lease_not_expired(store, now):
    job_id = new_job(store)
    store.leases.acquire(job_id, OPTS)
    now.advance(500)  # no heartbeat for 500 s > 3/4 of 600 s, lease still valid
    d = store.leases.acquire(job_id, OPTS)
    assert d.kind is DecisionKind.LEASE_NOT_EXPIRED and d.retry_after == 100


def test_renew_keeps_the_owner_alive(store, now):
    job_id = new_job(store)
    run = store.leases.acquire(job_id, OPTS)
    now.advance(300)
    assert store.leases.renew(job_id, run.run_id, 600) is not None
    now.advance(200)
    assert store.leases.acquire(job_id, OPTS).kind is DecisionKind.CURRENTLY_PROCESSING
    assert store.leases.renew(job_id, "someone-else", 600) is None


def test_expired_lease_is_taken_over(store, now):
    job_id = new_job(store)
    crashed = store.leases.acquire(job_id, OPTS)
    now.advance(600)
    d = store.leases.acquire(job_id, OPTS)
    assert d.kind is DecisionKind.ACQUIRED and d.run_id != crashed.run_id


def test_completed_and_business_failed_are_final(store):
    a, b = new_job(store, "a"), new_job(store, "b")
    ra, rb = store.leases.acquire(a, OPTS), store.leases.acquire(b, OPTS)
    assert store.leases.mark_completed(a, ra.run_id)
    assert store.leases.mark_business_failed(b, rb.run_id, "unknown customer C9")
    assert store.leases.acquire(a, OPTS).kind is DecisionKind.ALREADY_COMPLETED
    assert store.leases.acquire(b, OPTS).kind is DecisionKind.ALREADY_BUSINESS_FAILED
    job_b = store.jobs.get(b)
    assert job_b.reason == "unknown customer C9" and job_b.finished_at is not None


def test_missing_job_is_not_found(store):
    assert store.leases.acquire("nope", OPTS).kind is DecisionKind.NOT_FOUND


@pytest.mark.parametrize("state", [JobState.NEEDS_ATTENTION.value, "SomethingElse"])
def test_other_states_are_unexpected(store, state):
    job_id = new_job(store)
    set_state(store, job_id, state)
    d = store.leases.acquire(job_id, OPTS)
    assert d.kind is DecisionKind.UNEXPECTED_STATE and str(getattr(d.state, "value", d.state)) == state


def test_marks_with_a_stale_run_id_do_nothing(store, now):
    job_id = new_job(store)
    old = store.leases.acquire(job_id, OPTS)
    now.advance(601)
    new = store.leases.acquire(job_id, OPTS)
    assert not store.leases.mark_completed(job_id, old.run_id)
    assert not store.leases.mark_business_failed(job_id, old.run_id, "x")
    assert not store.leases.mark_retryable_failed(job_id, old.run_id, "x")
    job = store.jobs.get(job_id)
    assert job.state is JobState.PROCESSING and job.run_id == new.run_id
    assert store.leases.mark_completed(job_id, new.run_id)
    assert not store.leases.mark_completed(job_id, new.run_id)  # only once


def test_concurrent_acquire_has_one_winner(store):
    job_id = new_job(store)
    barrier = threading.Barrier(6)
    kinds, errors = [], []

    def worker():
        try:
            barrier.wait(timeout=10)
            kinds.append(store.leases.acquire(job_id, OPTS).kind)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert kinds.count(DecisionKind.ACQUIRED) == 1
    assert kinds.count(DecisionKind.CURRENTLY_PROCESSING) == 5
