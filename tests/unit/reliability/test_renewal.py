"""Lease renewal while a run works: transient failures are retried, a lost lease ends it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from funchost.clock import ManualClock
from funchost.reliability.errors import JobStoreError, StoreUnavailable
from funchost.reliability.renewal import RenewalEnd, keep_lease, retry_delay

UNTIL = datetime(2030, 1, 1, tzinfo=UTC)


class ScriptedRenew:
    """renew() answers from a script: an exception to raise or a value to return; then UNTIL."""

    def __init__(self, clock: ManualClock, *script: object) -> None:
        self.clock = clock
        self.script = list(script)
        self.calls: list[float] = []

    async def __call__(self) -> datetime | None:
        self.calls.append(self.clock.monotonic())
        step = self.script.pop(0) if self.script else UNTIL
        if isinstance(step, BaseException):
            raise step
        return step  # type: ignore[return-value]


async def test_renews_at_half_the_lease_until_cancelled() -> None:
    clock = ManualClock()
    renew = ScriptedRenew(clock)
    task = asyncio.ensure_future(keep_lease(renew, 60, clock.sleep))
    await clock.advance(125)
    task.cancel()
    assert [round(t) for t in renew.calls] == [30, 60, 90, 120]


async def test_a_transient_failure_is_retried_and_renewal_goes_on() -> None:
    clock = ManualClock()
    renew = ScriptedRenew(clock, StoreUnavailable("sqlite: database is locked"))
    task = asyncio.ensure_future(keep_lease(renew, 60, clock.sleep, fields={"JobId": "job-1"}))
    await clock.advance(125)
    assert not task.done()
    task.cancel()
    assert retry_delay(60) == 5
    # failed at 30, retried 5 s later, then back to every half lease
    assert [round(t) for t in renew.calls] == [30, 35, 65, 95, 125]


async def test_several_failures_in_a_row_keep_retrying() -> None:
    clock = ManualClock()
    renew = ScriptedRenew(clock, *[StoreUnavailable("locked")] * 4)
    task = asyncio.ensure_future(keep_lease(renew, 10, clock.sleep))
    await clock.advance(15)
    task.cancel()
    # 4 failures retried 1 s apart (a tenth of the lease), then the half-lease rhythm again
    assert [round(t) for t in renew.calls] == [5, 6, 7, 8, 9, 14]


async def test_a_lost_lease_ends_renewal() -> None:
    clock = ManualClock()
    renew = ScriptedRenew(clock, UNTIL, None)
    task = asyncio.ensure_future(keep_lease(renew, 60, clock.sleep))
    await clock.advance(100)
    assert task.done() and task.result() is RenewalEnd.LEASE_LOST
    assert len(renew.calls) == 2


async def test_a_non_transient_store_error_ends_renewal() -> None:
    clock = ManualClock()
    renew = ScriptedRenew(clock, JobStoreError("the jobs database is closed"))
    task = asyncio.ensure_future(keep_lease(renew, 60, clock.sleep))
    await clock.advance(40)
    assert task.done() and task.result() is RenewalEnd.STORE_ERROR
