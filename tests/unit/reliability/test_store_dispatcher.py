"""OutboxDispatcher: per-item outcomes, DispatchUnknown paths, wake-ups, logging."""

import asyncio
import logging
from types import SimpleNamespace

from funchost.reliability.dispatcher import DispatcherOptions, OutboxDispatcher
from funchost.reliability.errors import StoreUnavailable
from funchost.reliability.jobs import NewJob
from funchost.reliability.metrics import Metrics
from funchost.reliability.outbox import OutboxMessage, OutboxState


class FakeQueue:
    """The send callable: records messages; can fail on chosen payloads."""

    def __init__(self):
        self.sent = []
        self.fail_mid_call = set()

    async def send(self, queue, payload):
        if payload in self.fail_mid_call:
            self.fail_mid_call.discard(payload)
            raise ConnectionResetError("connection reset while waiting for the response")
        self.sent.append((queue, payload))
        return f"msg-{len(self.sent)}"


class MarkFailsOnce:
    """Outbox repository whose mark_dispatched fails once, as a database timeout would."""

    def __init__(self, outbox):
        self._outbox = outbox
        self.failures = 1

    def __getattr__(self, name):
        return getattr(self._outbox, name)

    def mark_dispatched(self, *args):
        if self.failures:
            self.failures -= 1
            raise StoreUnavailable("timeout while committing")
        return self._outbox.mark_dispatched(*args)


def add(store, job_id, payload=None):
    return store.intake.accept(NewJob(job_id, "t", "u", "e"),
                               OutboxMessage("import-jobs", payload or f'{{"jobId":"{job_id}"}}')).outbox_id


def dispatcher(store, queue, **kw):
    opts = DispatcherOptions(unknown_recheck_seconds=60, **kw)
    return OutboxDispatcher(store, queue.send, dispatcher_id="d1", options=opts, metrics=Metrics())


async def test_sends_and_marks_dispatched(store):
    queue = FakeQueue()
    oid = add(store, "j1")
    result = await dispatcher(store, queue).dispatch_once()
    assert (result.leased, result.dispatched) == (1, 1)
    assert queue.sent == [("import-jobs", '{"jobId":"j1"}')]
    row = store.outbox.get(oid)
    assert row.state is OutboxState.DISPATCHED and row.message_id == "msg-1"


async def test_send_raising_mid_call_is_unknown_then_resent(store, now):
    queue = FakeQueue()
    oid = add(store, "j1")
    queue.fail_mid_call.add('{"jobId":"j1"}')
    d = dispatcher(store, queue)
    result = await d.dispatch_once()
    assert result.unknown == 1 and result.failed == 0
    assert store.outbox.get(oid).state is OutboxState.DISPATCH_UNKNOWN
    assert (await d.dispatch_once()).leased == 0
    now.advance(60)
    assert (await d.dispatch_once()).dispatched == 1
    assert store.outbox.get(oid).state is OutboxState.DISPATCHED


async def test_successful_send_whose_mark_failed_is_unknown_then_resent(store, now):
    queue = FakeQueue()
    oid = add(store, "j1")
    flaky = SimpleNamespace(outbox=MarkFailsOnce(store.outbox))
    d = dispatcher(flaky, queue)
    result = await d.dispatch_once()
    assert result.unknown == 1
    assert len(queue.sent) == 1  # it did reach the queue
    assert store.outbox.get(oid).state is OutboxState.DISPATCH_UNKNOWN
    now.advance(60)
    await d.dispatch_once()
    assert len(queue.sent) == 2  # re-sent: the worker's job lease absorbs the duplicate
    assert store.outbox.get(oid).state is OutboxState.DISPATCHED


async def test_send_timeout_and_cancel_are_unknown(store):
    async def hang(queue, payload):
        await asyncio.sleep(3600)

    oid = add(store, "j1")
    d = OutboxDispatcher(store, hang, dispatcher_id="d1", options=DispatcherOptions(send_timeout=0.01),
                         metrics=Metrics())
    assert (await d.dispatch_once()).unknown == 1
    assert store.outbox.get(oid).state is OutboxState.DISPATCH_UNKNOWN

    oid2 = add(store, "j2")
    d2 = OutboxDispatcher(store, hang, dispatcher_id="d2", options=DispatcherOptions(send_timeout=None),
                          metrics=Metrics())
    task = asyncio.create_task(d2.dispatch_once())
    for _ in range(200):
        await asyncio.sleep(0.01)
        if store.outbox.get(oid2).lease_owner == "d2":
            break
    await asyncio.sleep(0.05)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert store.outbox.get(oid2).state is OutboxState.DISPATCH_UNKNOWN


async def test_failure_before_send_is_dispatch_failed_with_backoff(store, now):
    queue = FakeQueue()
    oid = add(store, "j1")

    def prepare(row):
        raise RuntimeError("queue connection 'ImportQueueStorage' is not configured")

    d = OutboxDispatcher(store, queue.send, dispatcher_id="d1", prepare=prepare, metrics=Metrics())
    assert (await d.dispatch_once()).failed == 1
    row = store.outbox.get(oid)
    assert row.state is OutboxState.DISPATCH_FAILED and queue.sent == []
    assert (row.next_attempt_at - now()).total_seconds() == 2


async def test_oversized_payload_fails_before_send(store):
    queue = FakeQueue()
    oid = add(store, "j1", payload="x" * (64 * 1024 + 1))
    assert (await dispatcher(store, queue).dispatch_once()).failed == 1
    assert store.outbox.get(oid).state is OutboxState.DISPATCH_FAILED and queue.sent == []


async def test_one_failing_row_never_stops_the_batch(store, caplog):
    queue = FakeQueue()
    ids = [add(store, f"j{i}") for i in range(4)]
    queue.fail_mid_call.add('{"jobId":"j1"}')
    caplog.set_level(logging.INFO, logger="funchost.reliability.dispatcher")
    result = await dispatcher(store, queue).dispatch_once()
    assert (result.leased, result.dispatched, result.unknown) == (4, 3, 1)
    states = [store.outbox.get(i).state for i in ids]
    assert states.count(OutboxState.DISPATCHED) == 3
    batch = [r for r in caplog.records if "batch finished" in r.getMessage()]
    assert batch and "Dispatched=3" in batch[-1].getMessage() and "Unknown=1" in batch[-1].getMessage()
    assert batch[-1].custom_dimensions["DispatcherId"] == "d1"


async def test_commit_wakes_an_attached_dispatcher(store):
    queue = FakeQueue()
    d = dispatcher(store, queue)
    unsubscribe = d.attach(store.signal)
    await asyncio.to_thread(add, store, "j1")  # a sync intake on a worker thread
    for _ in range(300):
        await asyncio.sleep(0.01)
        if queue.sent:
            break
    await d.idle()
    assert queue.sent == [("import-jobs", '{"jobId":"j1"}')]
    unsubscribe()
    add(store, "j2")
    await asyncio.sleep(0.05)
    assert len(queue.sent) == 1


async def test_run_loop_is_woken_by_notify_and_stops(store):
    from funchost.clock import ManualClock

    queue = FakeQueue()
    d = dispatcher(store, queue)
    d.attach(store.signal)
    stop = asyncio.Event()
    task = asyncio.create_task(d.run(stop, clock=ManualClock()))  # time never moves on its own
    await asyncio.sleep(0.05)
    add(store, "j1")
    for _ in range(300):
        await asyncio.sleep(0.01)
        if queue.sent:
            break
    assert queue.sent
    stop.set()
    await asyncio.wait_for(task, 5)


class CountingActivity:
    def __init__(self):
        self.entered = 0
        self.exited = 0

    def enter(self):
        self.entered += 1

    def exit(self):
        self.exited += 1


async def test_wakeups_are_reported_to_the_activity_hook_until_their_pass_is_done(store):
    queue = FakeQueue()
    activity = CountingActivity()
    d = OutboxDispatcher(store, queue.send, dispatcher_id="d1", metrics=Metrics(), activity=activity)
    d.attach(store.signal)
    await asyncio.gather(*(asyncio.to_thread(add, store, f"j{i}") for i in range(3)))  # commits on threads
    assert activity.entered == 3 and d.pending_wakeups >= 1  # requested, not all served yet
    await d.idle()
    assert len(queue.sent) == 3 and d.pending_wakeups == 0
    assert activity.exited == activity.entered == 3


async def test_a_woken_pass_drains_more_than_one_batch(store):
    queue = FakeQueue()
    for i in range(5):
        add(store, f"j{i}")
    d = OutboxDispatcher(store, queue.send, dispatcher_id="d1", metrics=Metrics(), activity=None,
                         options=DispatcherOptions(batch_size=2))
    d.attach(store.signal)
    d.notify()
    await d.idle()
    assert len(queue.sent) == 5 and d.pending_wakeups == 0


async def test_the_default_hook_is_the_host_activity_counter(store):
    from funchost.runtime import activity

    queue = FakeQueue()
    d = dispatcher(store, queue)
    d.attach(store.signal)
    before = activity.in_flight()
    await asyncio.to_thread(add, store, "j1")
    assert activity.in_flight() == before + 1  # counted while the pass is pending
    await d.idle()
    assert activity.in_flight() == before and queue.sent
