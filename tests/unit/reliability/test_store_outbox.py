"""Outbox leasing and marks."""

import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pytest

from funchost.reliability.jobs import NewJob
from funchost.reliability.outbox import OutboxMessage, OutboxState, dispatch_backoff


def add_rows(store, n, prefix="job"):
    ids = []
    for i in range(n):
        d = store.intake.accept(NewJob(f"{prefix}-{i}", "t", "u", "e"), OutboxMessage("q", f'{{"i":{i}}}'))
        ids.append(d.outbox_id)
    return ids


def test_backoff_values():
    assert [dispatch_backoff(a) for a in range(0, 12)] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]
    assert dispatch_backoff(10_000) == 300


def test_lease_takes_due_rows_once(store):
    add_rows(store, 3)
    first = store.outbox.lease_due("d1", 10, 60)
    assert len(first) == 3 and all(r.lease_owner == "d1" for r in first)
    assert store.outbox.lease_due("d2", 10, 60) == []


def test_lease_respects_the_limit(store):
    add_rows(store, 5)
    assert len(store.outbox.lease_due("d1", 2, 60)) == 2
    assert len(store.outbox.lease_due("d2", 10, 60)) == 3


def test_mark_dispatched_records_message_id_and_is_owner_conditional(store):
    (oid,) = add_rows(store, 1)
    store.outbox.lease_due("d1", 10, 60)
    assert not store.outbox.mark_dispatched(oid, "d2", "m-2")
    assert store.outbox.mark_dispatched(oid, "d1", "m-1")
    row = store.outbox.get(oid)
    assert row.state is OutboxState.DISPATCHED and row.message_id == "m-1" and row.lease_owner is None
    assert not store.outbox.mark_dispatched(oid, "d1", "m-again")
    assert store.outbox.lease_due("d1", 10, 60) == []


def test_dispatch_failed_backoff_exact_values(store, now):
    (oid,) = add_rows(store, 1)
    expected = [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
    for attempt, delay in enumerate(expected, start=1):
        (row,) = store.outbox.lease_due("d1", 10, 60)
        assert store.outbox.mark_failed(oid, "d1", "queue client misconfigured")
        row = store.outbox.get(oid)
        assert row.state is OutboxState.DISPATCH_FAILED and row.attempts == attempt
        assert (row.next_attempt_at - now()).total_seconds() == delay
        now.advance(delay - 1)
        assert store.outbox.lease_due("d1", 10, 60) == []  # not due yet
        now.advance(1)


def test_dispatch_unknown_is_rechecked_later(store, now):
    (oid,) = add_rows(store, 1)
    store.outbox.lease_due("d1", 10, 60)
    assert store.outbox.mark_unknown(oid, "d1", "timeout", 60)
    row = store.outbox.get(oid)
    assert row.state is OutboxState.DISPATCH_UNKNOWN and row.attempts == 1
    assert store.outbox.lease_due("d1", 10, 60) == []
    now.advance(60)
    assert [r.outbox_id for r in store.outbox.lease_due("d2", 10, 60)] == [oid]


def test_expired_unresolved_lease_becomes_unknown_and_is_released(store, now):
    (oid,) = add_rows(store, 1)
    store.outbox.lease_due("d1", 10, 60)  # d1 vanishes mid-send
    now.advance(59)
    assert store.outbox.lease_due("d2", 10, 60) == []
    now.advance(1)
    (row,) = store.outbox.lease_due("d2", 10, 60)
    assert row.state is OutboxState.DISPATCH_UNKNOWN and row.lease_owner == "d2"
    assert not store.outbox.mark_dispatched(oid, "d1", "late")  # the old holder lost it
    assert store.outbox.mark_dispatched(oid, "d2", "m-2")


def test_two_dispatchers_in_threads_never_lease_the_same_row(store):
    total = 60
    add_rows(store, total)
    leased = {f"d{i}": [] for i in range(4)}
    barrier = threading.Barrier(4)
    errors = []

    def run(did):
        try:
            barrier.wait(timeout=10)
            while rows := store.outbox.lease_due(did, 3, 600):
                leased[did].extend(r.outbox_id for r in rows)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(d,)) for d in leased]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    everything = [oid for ids in leased.values() for oid in ids]
    assert len(everything) == total and len(set(everything)) == total


def test_two_dispatchers_in_processes_never_lease_the_same_row(store, store_kind, store_target):
    from tests.support.lease_worker import lease_all

    total = 80
    add_rows(store, total)
    target, schema = store_target
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(lease_all, store_kind, target, schema, f"p{i}", 4) for i in range(2)]
        results = [f.result(timeout=120) for f in futures]
    everything = results[0] + results[1]
    assert len(everything) == total and len(set(everything)) == total


def test_stats_count_open_rows_and_oldest_age(store, now):
    ids = add_rows(store, 3)
    now.advance(30)
    store.outbox.lease_due("d1", 10, 60)
    store.outbox.mark_dispatched(ids[0], "d1", "m")
    store.outbox.mark_failed(ids[1], "d1", "x")
    store.outbox.mark_unknown(ids[2], "d1", "x", 60)
    stats = store.outbox.stats()
    assert stats["Pending"] == 0 and stats["DispatchFailed"] == 1 and stats["DispatchUnknown"] == 1
    assert stats["oldest_age_seconds"] == pytest.approx(30)


def test_store_gauges(store, now):
    from funchost.reliability.metrics import Metrics, refresh_store_gauges

    add_rows(store, 2)
    store.leases.acquire("job-0")
    now.advance(400)
    m = Metrics()
    refresh_store_gauges(m, store)
    snap = m.snapshot()
    assert snap["outbox.pending"] == 2 and snap["outbox.oldest_age_seconds"] == 400
    assert snap["jobs.processing_past_lease"] == 1
