"""Outbox dispatch (pipeline.md section 2): failures before, during and after the send call."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.support.pipeline import Pipeline

from funchost.errors import ServiceUnavailable
from funchost.reliability import DispatcherOptions, OutboxDispatcher, OutboxState, StoreUnavailable

BODY = {"containerName": "imports", "blobName": "tenant-a/in/file.csv"}


async def _submit(p: Pipeline, key: str = "k") -> str:
    await p.upload("tenant-a/in/file.csv")
    response = await p.submit(BODY, key=key)
    assert response.status_code == 202, response.text
    return str(response.json()["jobId"])


async def _import_messages(p: Pipeline) -> int:
    return await p.host.queues.count("import-jobs", connection="ImportsStorage")


async def test_failure_before_the_send_call_is_dispatch_failed_with_backoff(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", ServiceUnavailable("queue client not ready"),
                      when=lambda job_id, **_: job_id.startswith("imp_"))
    job_id = await _submit(p)
    await p.settle()
    row = p.store.outbox.for_job(job_id)[0]
    assert row.state is OutboxState.DISPATCH_FAILED and row.attempts == 1
    assert row.next_attempt_at == p.store.now() + timedelta(seconds=2)  # min(300, 2**1)
    assert await _import_messages(p) == 0
    await p.settle(13)  # the timer (every 10 s) sends it once the 2 s back-off is over
    assert p.store.outbox.for_job(job_id)[0].state is OutboxState.DISPATCHED
    assert await p.state(job_id) == "Completed"


async def test_failure_during_the_send_call_is_dispatch_unknown_and_resent(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("queue.put.before", TimeoutError("send timed out"), when=lambda queue, **_: queue == "import-jobs")
    job_id = await _submit(p)
    await p.settle()
    row = p.store.outbox.for_job(job_id)[0]
    assert row.state is OutboxState.DISPATCH_UNKNOWN
    await p.settle(71)  # re-checked after unknown_recheck_seconds by the timer
    assert p.store.outbox.for_job(job_id)[0].state is OutboxState.DISPATCHED
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1


async def test_failure_after_a_successful_send_is_unknown_resent_and_processed_once(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.host.faults.arm("queue.put.after", ConnectionResetError("reply lost"),
                      when=lambda queue, **_: queue == "import-jobs")
    job_id = await _submit(p)
    await p.settle()
    assert p.store.outbox.for_job(job_id)[0].state is OutboxState.DISPATCH_UNKNOWN
    assert await p.state(job_id) == "Completed"  # the message did arrive
    await p.settle(71)  # resent: a duplicate message
    assert p.store.outbox.for_job(job_id)[0].state is OutboxState.DISPATCHED
    await p.settle(5)
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1
    assert p.store.rows.count(job_id) == 2
    assert p.store.effects.get(job_id, "ledger-post").attempts == 1  # type: ignore[union-attr]
    assert await _import_messages(p) == 0  # the duplicate was absorbed and deleted


async def test_mark_dispatched_failing_after_a_send_is_unknown_and_absorbed(any_pipeline: Pipeline,
                                                                            monkeypatch) -> None:  # type: ignore[no-untyped-def]
    p = any_pipeline
    outbox = p.store.outbox
    real = outbox.mark_dispatched
    calls = {"n": 0}

    def flaky(outbox_id, *args, **kwargs):  # type: ignore[no-untyped-def]
        if outbox.get(outbox_id).job_id.startswith("imp_") and calls["n"] == 0:
            calls["n"] += 1
            raise StoreUnavailable("database is locked")
        return real(outbox_id, *args, **kwargs)

    monkeypatch.setattr(outbox, "mark_dispatched", flaky)
    job_id = await _submit(p)
    await p.settle()
    assert outbox.for_job(job_id)[0].state is OutboxState.DISPATCH_UNKNOWN
    await p.settle(71)
    assert outbox.for_job(job_id)[0].state is OutboxState.DISPATCHED
    assert await p.state(job_id) == "Completed"
    assert len(await p.ledger()) == 1


async def test_one_failing_row_does_not_stop_the_batch(pipeline: Pipeline) -> None:
    p = pipeline
    await p.upload("tenant-a/in/a.csv")
    await p.upload("tenant-a/in/b.csv")
    # The intake wakes the dispatcher, which may prepare the row before the 202 reaches the test:
    # the fault picks the first import job it sees, not an id learnt from the response.
    doomed: list[str] = []

    def first_import_job(job_id: str, **_: object) -> bool:
        if not doomed and job_id.startswith("imp_"):
            doomed.append(job_id)
        return job_id in doomed

    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("boom"), times=None, when=first_import_job)
    first = (await p.submit({**BODY, "blobName": "tenant-a/in/a.csv"}, key="a")).json()["jobId"]
    await p.settle()
    second = (await p.submit({**BODY, "blobName": "tenant-a/in/b.csv"}, key="b")).json()["jobId"]
    await p.settle(10)
    assert doomed == [first]
    assert p.store.outbox.for_job(first)[0].state is OutboxState.DISPATCH_FAILED
    assert await p.state(second) == "Completed"


async def test_two_dispatchers_never_send_the_same_row_at_once(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    p.context._unsubscribe()  # only the two dispatchers of this test send
    for i in range(6):
        p.store.outbox.enqueue(f"job-{i}", _message(i))
    sent: list[str] = []
    in_flight: set[str] = set()
    overlaps: list[str] = []

    async def send(queue: str, payload: str) -> str:
        if payload in in_flight:
            overlaps.append(payload)
        in_flight.add(payload)
        await asyncio.sleep(0.01)
        in_flight.discard(payload)
        sent.append(payload)
        return "id-" + payload

    options = DispatcherOptions(batch_size=3)
    first = OutboxDispatcher(p.store, send, dispatcher_id="d1", options=options)
    second = OutboxDispatcher(p.store, send, dispatcher_id="d2", options=options)
    results = await asyncio.gather(first.dispatch_once(), second.dispatch_once(), first.dispatch_once(),
                                   second.dispatch_once())
    assert len(sent) == 6 and len(set(sent)) == 6
    assert not overlaps
    assert sum(r.dispatched for r in results) == 6


def _message(i: int):  # type: ignore[no-untyped-def]
    from funchost.reliability import OutboxMessage

    return OutboxMessage("scratch-queue", f'{{"n": {i}}}')
