"""functionTimeout on the system clock: one timer for every running invocation, the rules of
`asyncio.timeout` (short real deadlines, bounded waits)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from funchost.clock import ManualClock, SystemClock
from funchost.errors import FunctionTimeoutError
from funchost.invocation.deadlines import DeadlineWatch
from funchost.invocation.pieces import FunctionTimeout


class _Invocation:
    task = None  # binding's look at the task; None: the watch asks for the current one

    class plan:  # noqa: N801 - the attribute path FunctionTimeout reads
        class function:  # noqa: N801
            name = "slow"


def _sleeping(seconds: float, result: Any = "done") -> Any:
    async def call_next(invocation: Any) -> Any:
        await asyncio.sleep(seconds)
        return result

    return call_next


async def test_the_system_clock_uses_one_watch_for_all_invocations() -> None:
    assert FunctionTimeout(SystemClock(), 5)._watch is not None
    assert FunctionTimeout(ManualClock(), 5)._watch is None


async def test_a_call_past_its_deadline_fails_with_the_hosts_message() -> None:
    piece = FunctionTimeout(SystemClock(), 0.05)
    with pytest.raises(FunctionTimeoutError, match="Timeout value of 00:00:00.05 was exceeded by function: "
                                                   "Functions.slow"):
        await asyncio.wait_for(piece(_Invocation(), _sleeping(10)), 5)  # type: ignore[arg-type]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_calls_within_the_deadline_return_and_leave_the_watch() -> None:
    piece = FunctionTimeout(SystemClock(), 5)
    results = await asyncio.gather(*(piece(_Invocation(), _sleeping(0.001, i)) for i in range(20)))  # type: ignore[arg-type]
    assert results == list(range(20))
    assert piece._watch is not None and not piece._watch._running


async def test_only_the_invocations_past_their_deadline_are_cancelled() -> None:
    piece = FunctionTimeout(SystemClock(), 0.2)
    slow = asyncio.ensure_future(piece(_Invocation(), _sleeping(10)))  # type: ignore[arg-type]
    await asyncio.sleep(0.1)
    later = asyncio.ensure_future(piece(_Invocation(), _sleeping(0.15, "later")))  # type: ignore[arg-type]
    done, _ = await asyncio.wait({slow, later}, timeout=5)
    assert {slow, later} == done
    assert isinstance(slow.exception(), FunctionTimeoutError)
    assert later.result() == "later"  # started 0.1 s after the first: its deadline had not come


async def test_the_functions_own_timeout_error_is_not_the_hosts() -> None:
    async def own(invocation: Any) -> Any:
        raise TimeoutError("the function's own")

    with pytest.raises(TimeoutError, match="the function's own"):
        await FunctionTimeout(SystemClock(), 5)(_Invocation(), own)  # type: ignore[arg-type]


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    piece = FunctionTimeout(SystemClock(), 5)
    call = asyncio.ensure_future(piece(_Invocation(), _sleeping(10)))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_timer_left_by_a_finished_call_moves_to_the_next() -> None:
    piece = FunctionTimeout(SystemClock(), 0.05)
    watch = piece._watch
    assert isinstance(watch, DeadlineWatch)
    first = watch.enter()
    watch.leave(first)  # finished early: its timer still fires once, then moves to the next
    await asyncio.sleep(0.03)
    second = asyncio.ensure_future(piece(_Invocation(), _sleeping(10)))  # type: ignore[arg-type]
    with pytest.raises(FunctionTimeoutError):
        await asyncio.wait_for(second, 5)


async def test_the_watch_cancels_the_task_it_is_given() -> None:
    """Binding hands the watch its task (`Invocation.task`): that task, not the caller's, is cancelled."""
    watch = DeadlineWatch(0.01)
    target = asyncio.ensure_future(asyncio.sleep(10))
    entry = watch.enter(target)  # type: ignore[arg-type]
    assert entry.task is target
    with pytest.raises(asyncio.CancelledError):
        await target
    assert entry.expired and not asyncio.current_task().cancelled()  # type: ignore[union-attr]
