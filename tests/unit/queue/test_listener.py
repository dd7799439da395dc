"""Queue listener and processor rules with a ManualClock and a fake invoker."""

from __future__ import annotations

import asyncio

import pytest

from funchost.testing.queues import QueueTools
from funchost.triggers.queue.options import QueuesOptions

from .conftest import queue_function

PRODUCTION = {"AZURE_FUNCTIONS_ENVIRONMENT": "Production"}


async def next_deadline(rig) -> float:
    await rig.settle()
    deadlines = rig.clock.pending_deadlines()
    assert deadlines, "the listener is not waiting on the clock"
    return deadlines[0]


async def test_backoff_sequence_stays_within_webjobs_bounds(rig_factory):
    rig = rig_factory(settings=PRODUCTION)
    await rig.service.create_queue("work")
    listener = rig.listener()
    await listener.start()
    expected = [(0.1, 0.1)]
    for k in range(1, 11):  # min + r * 2^(k-1) * min, r in [0.8, 1.2)
        expected.append((0.1 + 0.8 * 2 ** (k - 1) * 0.1, 0.1 + 1.2 * 2 ** (k - 1) * 0.1))
    waits = []
    for _ in range(len(expected) + 3):
        wait = await next_deadline(rig)
        waits.append(wait)
        await rig.advance(wait)
    for wait, (low, high) in zip(waits, expected, strict=False):
        assert low - 1e-9 <= wait <= min(high, 60.0) + 1e-9
    assert waits[-1] == 60.0 and waits[-2] == 60.0  # capped at maxPollingInterval until a success
    await listener.stop()


async def test_development_caps_polling_at_two_seconds(rig_factory):
    rig = rig_factory()  # AZURE_FUNCTIONS_ENVIRONMENT unset: Development
    await rig.service.create_queue("work")
    listener = rig.listener()
    await listener.start()
    for _ in range(12):
        await rig.advance(await next_deadline(rig))
    assert await next_deadline(rig) == pytest.approx(2.0)
    await listener.stop()


async def test_explicit_max_polling_interval_is_kept_in_development(rig_factory):
    rig = rig_factory(options=QueuesOptions(max_polling_interval=5.0, max_polling_interval_is_default=False))
    await rig.service.create_queue("work")
    listener = rig.listener()
    await listener.start()
    for _ in range(12):
        await rig.advance(await next_deadline(rig))
    assert await next_deadline(rig) == pytest.approx(5.0)
    await listener.stop()


async def test_notify_cuts_the_wait_and_success_resets_backoff(rig_factory):
    rig = rig_factory(settings=PRODUCTION)
    await rig.service.create_queue("work")
    listener = rig.listener()
    await listener.start()
    for _ in range(14):
        await rig.advance(await next_deadline(rig))
    assert await next_deadline(rig) == pytest.approx(60.0)
    await QueueTools(rig.runtime).send("work", "wake")  # publishes on the queue's topic
    await rig.settle()
    assert rig.invoker.bodies() == ["wake"]  # no clock movement needed
    assert await next_deadline(rig) == pytest.approx(0.1)  # first empty poll after a success waits min
    await listener.stop()


async def test_batch_threshold_limits_concurrency(rig_factory):
    release = asyncio.Event()

    async def blocked(request):
        await release.wait()
        return True

    rig = rig_factory(options=QueuesOptions(batch_size=4, new_batch_threshold=2), behaviour=blocked)
    tools = QueueTools(rig.runtime)
    for i in range(10):
        await tools.send("work", str(i))
    listener = rig.listener()
    await listener.start()
    await rig.settle()
    assert rig.invoker.running == 4 and listener.fetches == 1  # waiting: 4 in flight > threshold 2
    release.set()
    for _ in range(5):
        await rig.advance(0.1)
    assert sorted(rig.invoker.bodies(), key=int) == [str(i) for i in range(10)]
    assert rig.invoker.max_running <= 4 + 2
    assert await tools.count("work") == 0
    await listener.stop()


async def test_a_local_write_does_not_end_the_batch_threshold_wait(rig_factory):
    """QueueListener.Notify ends the back-off only: the wait after a batch is
    WaitForNewBatchThreshold alone, so an app writing to its own queue cannot lift the cap."""
    gates: dict[str, asyncio.Event] = {}

    async def blocked(request):
        await gates.setdefault(request.trigger_value.value, asyncio.Event()).wait()
        return True

    rig = rig_factory(options=QueuesOptions(batch_size=4, new_batch_threshold=2), behaviour=blocked)
    tools = QueueTools(rig.runtime)
    for i in range(4):
        await tools.send("work", str(i))
    listener = rig.listener()
    await listener.start()
    await rig.settle()
    assert rig.invoker.running == 4
    for i in range(4, 16):  # each send is a local write: it publishes on the queue's topic
        await tools.send("work", str(i))
        await rig.settle()
    assert rig.invoker.running == 4 and listener.fetches == 1  # still waiting for the threshold
    for body in ("0", "1"):
        gates.setdefault(body, asyncio.Event()).set()
    await rig.settle()
    assert len(rig.invoker.requests) == 8 and rig.invoker.running == 6  # batchSize + newBatchThreshold
    for i in range(16):
        gates.setdefault(str(i), asyncio.Event()).set()
    for _ in range(10):
        await rig.advance(0.1)
    assert sorted(rig.invoker.bodies(), key=int) == [str(i) for i in range(16)]
    assert rig.invoker.max_running == 4 + 2
    await listener.stop()


class HeldDeletes:
    """The processor's queue service with its deletes held until `release` is set (a slow
    delete round trip); everything else goes straight through."""

    def __init__(self, service) -> None:
        self._service = service
        self.release = asyncio.Event()
        self.waiting = 0

    def __getattr__(self, name):
        return getattr(self._service, name)

    async def delete_message(self, *args, **kwargs):
        self.waiting += 1
        try:
            await self.release.wait()
        finally:
            self.waiting -= 1
        return await self._service.delete_message(*args, **kwargs)


async def started_with_held_deletes(rig_factory, messages: int):
    """A listener (batch 4, threshold 2) started on `messages` waiting messages, its deletes held."""
    rig = rig_factory(options=QueuesOptions(batch_size=4, new_batch_threshold=2))
    tools = QueueTools(rig.runtime)
    for i in range(messages):
        await tools.send("work", str(i))
    listener = rig.listener()
    deletes = listener.processor.service = HeldDeletes(listener.processor.service)
    await listener.start()
    return rig, tools, listener, deletes


async def test_the_next_fetch_overlaps_the_deletes_of_messages_whose_function_returned(rig_factory):
    """A message stops counting toward newBatchThreshold once its function returns: the next
    fetch does not wait for the round trip of the batch's deletes (docs/deviations.md)."""
    rig, tools, listener, deletes = await started_with_held_deletes(rig_factory, 8)
    await rig.settle()
    assert listener.fetches == 2 and deletes.waiting == 8  # both batches ran while the deletes wait
    assert sorted(rig.invoker.bodies(), key=int) == [str(i) for i in range(8)]
    assert rig.invoker.max_running <= 4 + 2
    deletes.release.set()
    await rig.settle()
    assert await tools.count("work") == 0
    await listener.stop()


async def test_deletes_slower_than_the_fetches_hold_at_most_two_batches_and_the_threshold(rig_factory):
    """The fetch also waits while more than batchSize + newBatchThreshold messages are held,
    so deletes that do not return cannot make the listener take the whole queue."""
    rig, tools, listener, deletes = await started_with_held_deletes(rig_factory, 40)
    for _ in range(5):
        await rig.advance(1)
    # Fetched while at most 4 + 2 were held: the batch that crossed the line is the last.
    assert listener.fetches == 2 and listener.in_flight == 8 and deletes.waiting == 8
    deletes.release.set()
    for _ in range(20):
        await rig.advance(0.2)
    assert len(rig.invoker.requests) == 40 and await tools.count("work") == 0
    await listener.stop()


async def test_graceful_stop_completes_in_flight_messages(rig_factory):
    release = asyncio.Event()

    async def blocked(request):
        await release.wait()
        return True

    rig = rig_factory(behaviour=blocked)
    tools = QueueTools(rig.runtime)
    await tools.send("work", "in-flight")
    listener = rig.listener()
    await listener.start()
    await rig.settle()
    assert rig.invoker.running == 1
    stopping = asyncio.ensure_future(listener.stop())
    await rig.settle()
    assert not stopping.done()  # waits for the running function
    await tools.send("work", "after-stop")
    release.set()
    await asyncio.wait_for(stopping, 5)
    assert rig.invoker.bodies() == ["in-flight"]
    remaining = [m.content for m in await tools.peek("work")]
    assert len(remaining) == 1  # only the message sent after stop; in-flight one was deleted


async def test_renewal_keeps_a_long_function_invisible(rig_factory):
    async def long_running(request):
        await rig.clock.sleep(1500)  # 25 minutes, longer than the 10-minute receive visibility
        return True

    rig = rig_factory(behaviour=long_running, settings=PRODUCTION)
    tools = QueueTools(rig.runtime)
    await tools.send("work", "long")
    listener = rig.listener()
    await listener.start()
    await rig.settle()
    for _ in range(14):
        await rig.advance(100)
        # Nobody else may receive it while the function runs (renewed every 5 minutes).
        assert await rig.service.get_messages("work", visibility_timeout=1) == []
    await rig.advance(200)
    assert len(rig.invoker.requests) == 1
    assert await tools.count("work") == 0  # deleted with the latest (renewed) pop receipt
    await listener.stop()


async def test_failed_message_on_poison_named_queue_stays_invisible(rig_factory):
    rig = rig_factory(behaviour=lambda request: False, settings=PRODUCTION)
    tools = QueueTools(rig.runtime)
    await tools.send("work-poison", "stuck")
    listener = rig.listener(queue_function("work-poison"))
    await listener.start()
    await rig.advance(300)
    assert len(rig.invoker.requests) == 1  # not released: no fast loop
    await rig.advance(370)  # visible again at 600 s; polled within one 60 s back-off
    assert len(rig.invoker.requests) == 2  # back after the 10-minute receive visibility
    assert not await rig.service.queue_exists("work-poison-poison")
    await listener.stop()


async def test_dequeue_count_above_max_is_poisoned_without_invoking(rig_factory):
    rig = rig_factory(options=QueuesOptions(max_dequeue_count=2))
    tools = QueueTools(rig.runtime)
    await tools.send("work", "crashed-twice")
    for _ in range(2):  # two hosts received it and died
        assert await rig.service.get_messages("work", visibility_timeout=1)
        await rig.advance(2)
    listener = rig.listener()
    await listener.start()
    await rig.advance(1)
    assert rig.invoker.requests == []
    assert await tools.poison("work") == ["crashed-twice"]
    await listener.stop()


async def test_receive_visibility_setting_shortens_crash_recovery(rig_factory):
    rig = rig_factory(settings={"FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "4"})
    tools = QueueTools(rig.runtime)
    await tools.send("work", "x")
    listener = rig.listener()
    await listener.start()
    await rig.settle()
    [request] = rig.invoker.requests
    inserted = request.binding_data["InsertionTime"]
    assert (request.binding_data["NextVisibleTime"] - inserted).total_seconds() == 4
    await listener.stop()


async def test_two_hosts_on_one_file_never_process_a_message_twice(rig_factory, tmp_path):
    from funchost.clock import ManualClock

    from .conftest import FakeInvoker, make_runtime

    async def slow(request):
        await asyncio.sleep(0.001)
        return True

    clock = ManualClock()
    runtimes = [make_runtime(tmp_path, clock, FakeInvoker(slow), data="shared") for _ in range(2)]
    tools = QueueTools(runtimes[0])
    for i in range(120):
        await tools.send("work", str(i))
    from funchost.triggers.queue import SUPPORT

    listeners = [SUPPORT.create_listener(queue_function(), rt) for rt in runtimes]
    assert listeners[0].service is not listeners[1].service  # two connections, like two processes
    for listener in listeners:
        await listener.start()
    for _ in range(200):
        await asyncio.sleep(0.005)
        if await tools.count("work") == 0:
            break
    for listener in listeners:
        await listener.stop()
    bodies = [b for rt in runtimes for b in rt.invoker.bodies()]
    assert sorted(bodies, key=int) == [str(i) for i in range(120)]
    assert all(rt.invoker.requests for rt in runtimes)  # both took part
    for rt in runtimes:
        await rt.storage.aclose()


class _SlowRenewalAnswers:
    """Applies visibility updates at once but holds back their answers until `gate` opens."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.gate = asyncio.Event()
        self.applied = asyncio.Event()

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    async def update_message(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        receipt = await self.inner.update_message(*args, **kwargs)
        self.applied.set()
        await self.gate.wait()
        return receipt


async def test_completion_waits_for_an_in_flight_renewal(rig_factory):
    # WebJobs stops (awaits) the renewal timer before completing, so the delete carries the
    # pop receipt of a renewal that was in flight when the function finished.
    finished = asyncio.Event()

    async def until_finished(request):
        await finished.wait()
        return True

    rig = rig_factory(behaviour=until_finished, settings=PRODUCTION)
    tools = QueueTools(rig.runtime)
    await tools.send("work", "once")
    listener = rig.listener()
    slow = _SlowRenewalAnswers(listener.processor.service)
    listener.processor.service = slow
    await listener.start()
    await rig.settle()
    await rig.advance(300)  # first renewal: applied by the service, answer still on its way
    assert slow.applied.is_set()
    finished.set()
    await rig.settle()
    slow.gate.set()
    await rig.settle()
    assert await tools.count("work") == 0  # deleted with the renewed pop receipt
    await rig.advance(700)
    assert len(rig.invoker.requests) == 1  # never delivered twice
    await listener.stop()


class _FailingReceives:
    """The listener's queue service, whose next receives raise `failures` in turn."""

    def __init__(self, inner, failures: list[BaseException]) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.failures = inner, failures

    async def get_messages(self, name: str, **kwargs):  # type: ignore[no-untyped-def]
        if self.failures:
            raise self.failures.pop(0)
        return await self.inner.get_messages(name, **kwargs)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)


async def test_an_unexpected_poll_error_is_logged_and_the_listener_polls_again(rig_factory, caplog):
    from funchost.errors import StorageError

    rig = rig_factory(settings=PRODUCTION)
    await rig.service.create_queue("work")
    await QueueTools(rig.runtime).send("work", "after the errors")
    listener = rig.listener()
    denied = StorageError("This request is not authorized to perform this operation.",
                          code="AuthorizationFailure", status=403)
    confused = RuntimeError("cannot switch to state 12; another operation is in progress")
    listener.service = listener.processor.service = _FailingReceives(listener.service, [denied, confused])
    await listener.start()
    for _ in range(3):
        await rig.advance(await next_deadline(rig))
        if rig.invoker.bodies():
            break
    assert rig.invoker.bodies() == ["after the errors"]
    assert listener.loop.running
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "poll failed unexpectedly" in r.getMessage()]
    assert [r.exc_info is not None for r in errors] == [False, True]  # a bug's traceback, not a 403's
    await listener.stop()
