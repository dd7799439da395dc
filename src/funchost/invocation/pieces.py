"""The small pieces around the user function's call: fault points, functionTimeout.

They sit below binding in the executor's chain (see `middleware`), so a failure is an exception
that binding turns into the attempt's failed result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from funchost.clock import Clock, SystemClock
from funchost.errors import FunctionTimeoutError
from funchost.invocation.contracts import InvocationResult
from funchost.invocation.deadlines import DeadlineWatch
from funchost.invocation.middleware import CallNext, Invocation
from funchost.runtime.faults import FaultInjector


class FaultPoints:
    """``function.before`` / ``function.after`` around the user function (nothing while no
    fault is armed: the call goes straight on)."""

    def __init__(self, faults: FaultInjector) -> None:
        self.faults = faults

    def __call__(self, invocation: Invocation, call_next: CallNext) -> Awaitable[InvocationResult]:
        if not self.faults.enabled:
            return call_next(invocation)
        return self._around(invocation, call_next)

    async def _around(self, invocation: Invocation, call_next: CallNext) -> InvocationResult:
        details = {"function": invocation.plan.function.name, "invocation_id": invocation.request.invocation_id}
        await self.faults.hit("function.before", **details)
        result = await call_next(invocation)
        await self.faults.hit("function.after", **details)
        return result


class FunctionTimeout:
    """host.json ``functionTimeout`` on the call itself (argument binding and outputs excluded).

    An async function is cancelled; a sync function's thread cannot be interrupted, so its
    invocation fails and the thread finishes on its own, as in the Python worker.
    """

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds
        # On the system clock one timer serves every running invocation (`deadlines.py`);
        # other clocks (the tests' ManualClock) get their own `timeout()` per call.
        self._watch = DeadlineWatch(seconds) if isinstance(clock, SystemClock) else None

    def __call__(self, invocation: Invocation, call_next: CallNext) -> Awaitable[InvocationResult]:
        if self._watch is not None:
            return self._watched(invocation, call_next, self._watch)
        return self._timed(invocation, call_next)

    async def _timed(self, invocation: Invocation, call_next: CallNext) -> InvocationResult:
        deadline = self.clock.timeout(self.seconds)
        try:
            async with deadline:
                return await call_next(invocation)
        except TimeoutError:
            if not deadline.expired():  # type: ignore[attr-defined]
                raise  # the function's own TimeoutError
            raise self._timeout_error(invocation) from None

    async def _watched(self, invocation: Invocation, call_next: CallNext, deadlines: DeadlineWatch) -> InvocationResult:
        """`asyncio.timeout`'s rules: a cancellation the deadline caused becomes the timeout
        error; one requested by someone else (the host stopping) stays a cancellation."""
        watch = deadlines.enter(invocation.task)  # binding's look at the task: asking again costs a system call
        try:
            result = await call_next(invocation)
        except asyncio.CancelledError:
            deadlines.leave(watch)
            if watch.expired and watch.task.uncancel() <= watch.cancelling:
                raise self._timeout_error(invocation) from None
            raise
        except BaseException:
            deadlines.leave(watch)
            if watch.expired:
                watch.task.uncancel()
            raise
        deadlines.leave(watch)
        if watch.expired:
            watch.task.uncancel()
        return result

    def _timeout_error(self, invocation: Invocation) -> FunctionTimeoutError:
        return FunctionTimeoutError(
            f"Timeout value of {format_delay(self.seconds)} was exceeded by function: "
            f"Functions.{invocation.plan.function.name}"
        )


def format_delay(seconds: float) -> str:
    """A TimeSpan as .NET prints it: 00:05:00, 00:00:01.5."""
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{int(h):02d}:{int(m):02d}:{s:06.3f}".rstrip("0").rstrip(".")
