"""Side effects run once across reruns; rows are unique; the watchdog re-enqueues stuck work."""

import asyncio

import pytest

from funchost.reliability.effects import effect_key
from funchost.reliability.errors import LeaseLost
from funchost.reliability.jobs import NewJob
from funchost.reliability.lease import LeaseOptions
from funchost.reliability.metrics import Metrics
from funchost.reliability.outbox import OutboxMessage, OutboxState
from funchost.reliability.watchdog import Watchdog, WatchdogOptions


def test_effect_runs_once_across_reruns(store):
    calls = []

    def notify(key):
        calls.append(key)
        return {"status": 202}

    assert store.effects.run_once("job-1", "notify-erp", notify) == {"status": 202}
    assert store.effects.run_once("job-1", "notify-erp", notify) == {"status": 202}  # rerun
    assert calls == ["job-1:notify-erp"]
    store.effects.run_once("job-1", "send-mail", notify)
    store.effects.run_once("job-2", "notify-erp", notify)
    assert calls == ["job-1:notify-erp", "job-1:send-mail", "job-2:notify-erp"]


def test_failed_effect_is_retried_with_the_same_key(store):
    keys = []

    def flaky(key):
        keys.append(key)
        if len(keys) == 1:
            raise TimeoutError("downstream timeout")
        return "ok"

    with pytest.raises(TimeoutError):
        store.effects.run_once("job-1", "post", flaky)
    assert store.effects.run_once("job-1", "post", flaky) == "ok"
    assert keys == ["job-1:post", "job-1:post"]
    record = store.effects.get("job-1", "post")
    assert record.state == "Done" and record.attempts == 2 and record.idempotency_key == effect_key("job-1", "post")


async def test_async_effect_runs_once(store):
    calls = []

    async def call(key):
        calls.append(key)
        return 1

    assert await store.effects.arun_once("job-1", "ocr", call) == 1
    assert await store.effects.arun_once("job-1", "ocr", call) == 1
    assert calls == ["job-1:ocr"]
    await asyncio.sleep(0)


def test_rows_are_written_once(store):
    assert store.rows.write("job-1", [(1, {"a": 1}), (2, {"a": 2})]) == 2
    assert store.rows.write("job-1", [(1, {"a": "changed"}), (2, {}), (3, {"a": 3})]) == 1
    assert store.rows.count("job-1") == 3
    assert store.rows.read("job-1")[0] == (1, {"a": 1})


def new_job(store, job_id):
    store.intake.accept(NewJob(job_id, "t", "u", "e"), OutboxMessage("import-jobs", f'{{"jobId":"{job_id}"}}'))
    (row,) = store.outbox.lease_due("d", 10, 60)
    store.outbox.mark_dispatched(row.outbox_id, "d", "m")


def test_watchdog_requeues_expired_leases_once(store, now):
    new_job(store, "j1")
    new_job(store, "j2")
    store.leases.acquire("j1", LeaseOptions(lease_seconds=600))
    store.leases.acquire("j2", LeaseOptions(lease_seconds=6000))
    dog = Watchdog(store, WatchdogOptions(stuck_after_seconds=300), metrics=Metrics())
    assert dog.scan().expired_leases == 0
    now.advance(600)
    report = dog.scan()
    assert (report.expired_leases, report.requeued_jobs) == (1, 1)
    rows = store.outbox.for_job("j1")
    assert [r.state for r in rows] == [OutboxState.DISPATCHED, OutboxState.PENDING]
    assert rows[1].payload == '{"jobId":"j1"}' and rows[1].queue_name == "import-jobs"
    again = dog.scan()
    assert (again.expired_leases, again.requeued_jobs) == (1, 0)  # already queued again
    assert len(store.outbox.for_job("j1")) == 2
    assert dog.metrics.get("jobs.processing_past_lease") == 1


def test_watchdog_reschedules_stuck_outbox_rows(store, now):
    store.intake.accept(NewJob("p", "t", "u", "e"), OutboxMessage("q", "{}"))
    store.intake.accept(NewJob("u", "t", "u", "e"), OutboxMessage("q", "{}"))
    store.intake.accept(NewJob("f", "t", "u", "e"), OutboxMessage("q", "{}"))
    rows = {r.job_id: r for r in store.outbox.lease_due("d", 10, 60)}
    store.outbox.mark_unknown(rows["u"].outbox_id, "d", "timeout", 3600)
    store.outbox.mark_failed(rows["f"].outbox_id, "d", "bad config")
    now.advance(120)  # the Pending row's lease expired; nobody dispatches
    dog = Watchdog(store, WatchdogOptions(stuck_after_seconds=300), metrics=Metrics())
    assert dog.scan().stuck_outbox == 0
    now.advance(300)
    report = dog.scan()
    assert (report.stuck_outbox, report.rescheduled_outbox) == (2, 2)  # Pending + DispatchUnknown
    due = {r.job_id for r in store.outbox.lease_due("d2", 10, 60)}
    assert "u" in due  # due now instead of in an hour


# -- fencing by runId: a run that lost its job neither starts nor records an effect -----------------

def _taken_over(store, now):
    """job-1 acquired by a first run whose 60 s lease then expired and a second run took over."""
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    first = store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))
    now.advance(61)
    second = store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))
    assert first.acquired and second.acquired
    return first.run_id, second.run_id


def test_a_stale_run_cannot_record_the_effect_over_the_new_owner(store, now):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    first = store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))
    assert store.effects.begin("job-1", "post", first.run_id) is None  # the first run calls downstream ...
    now.advance(61)
    second = store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))  # ... and is taken over
    assert not store.effects.complete("job-1", "post", {"by": "first"}, run_id=first.run_id)
    assert store.effects.get("job-1", "post").state == "Started"
    keys = []
    assert store.effects.run_once("job-1", "post", lambda key: keys.append(key) or {"by": "second"},
                                  run_id=second.run_id) == {"by": "second"}
    assert keys == ["job-1:post"]  # the same key: the downstream de-duplicates the first attempt
    record = store.effects.get("job-1", "post")
    assert record.state == "Done" and record.result == {"by": "second"}


def test_a_stale_run_gets_lease_lost_and_starts_no_effect(store, now):
    stale, _ = _taken_over(store, now)
    calls = []
    with pytest.raises(LeaseLost):
        store.effects.run_once("job-1", "post", calls.append, run_id=stale)
    assert calls == [] and store.effects.get("job-1", "post") is None


async def test_a_run_that_loses_the_job_during_the_effect_gets_lease_lost(store, now):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    first = store.leases.acquire("job-1", LeaseOptions(lease_seconds=60))

    async def slow_call(key):
        now.advance(61)  # the call outlives the lease and another run takes the job over
        assert store.leases.acquire("job-1", LeaseOptions(lease_seconds=60)).acquired
        return "sent"

    with pytest.raises(LeaseLost):
        await store.effects.arun_once("job-1", "post", slow_call, run_id=first.run_id)
    assert store.effects.get("job-1", "post").state == "Started"


def test_the_owner_completes_its_effect_once(store):
    store.intake.accept(NewJob("job-1", "t", "u", "e"), OutboxMessage("import-jobs", "{}"))
    run = store.leases.acquire("job-1")
    calls = []
    assert store.effects.run_once("job-1", "post", lambda key: calls.append(key) or 7, run_id=run.run_id) == 7
    assert store.effects.run_once("job-1", "post", lambda key: calls.append(key) or 8, run_id=run.run_id) == 7
    assert calls == ["job-1:post"]
    assert not store.effects.complete("job-1", "post", 9, run_id=run.run_id)  # already Done: kept
    assert store.effects.get("job-1", "post").result == 7
