"""Time, behind one seam.

Every delay in funchost (visibility, polling back-off, TTL, timers, retries, leases) goes through
a `Clock`, so `ManualClock` can run a ten-minute scenario in milliseconds. Code never calls
`asyncio.sleep`, `time.time` or `datetime.now` directly for behaviour that a test may want to
drive.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time as an aware UTC datetime."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards; use for durations."""

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for `seconds` (<= 0 only yields)."""

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait until `event` is set or `timeout` elapses; True if the event was set."""

    def timeout(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Like `asyncio.timeout`: cancel the enclosed block after `seconds`, raising TimeoutError."""


class SystemClock:
    """Real time."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        if event.is_set():
            return True
        try:
            await asyncio.wait_for(event.wait(), timeout=max(0.0, timeout))
        except TimeoutError:
            return event.is_set()
        return True

    def timeout(self, seconds: float) -> AbstractAsyncContextManager[None]:
        return asyncio.timeout(seconds)  # type: ignore[return-value]  # enters as a Timeout object


Settle = Callable[[], Awaitable[None]]


async def _yield_a_little() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class ManualClock:
    """A clock that moves only when told to.

    `advance()` fires sleepers in deadline order; after each deadline it calls `settle` so the
    code woken up can react (and schedule new sleeps) before time moves on. The test harness
    passes a settle function that waits until the host is idle.
    """

    def __init__(self, start: datetime | None = None) -> None:
        if start is None:
            start = datetime.now(timezone.utc).replace(microsecond=0)
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._epoch = start.astimezone(timezone.utc)
        self._elapsed = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        return self._epoch + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        return self._elapsed

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._seq), future))
        await future

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        if event.is_set():
            return True
        waiter = asyncio.ensure_future(event.wait())
        sleeper = asyncio.ensure_future(self.sleep(timeout))
        try:
            await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, sleeper):
                task.cancel()
        return event.is_set()

    def timeout(self, seconds: float) -> AbstractAsyncContextManager[None]:
        return _ManualTimeout(self, seconds)

    def _call_at(self, deadline: float, callback: Callable[[], None]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: None if f.cancelled() else callback())
        heapq.heappush(self._sleepers, (deadline, next(self._seq), future))
        return future

    def pending_deadlines(self) -> list[float]:
        """Seconds from now until each live sleeper fires (for tests and `idle` checks)."""
        return sorted(d - self._elapsed for d, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float, settle: Settle | None = None) -> None:
        """Move time forward by `seconds`, waking every sleeper due on the way, in order."""
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        settle = settle or _yield_a_little
        target = self._elapsed + seconds
        await settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            if future.done():
                continue
            self._elapsed = max(self._elapsed, deadline)
            future.set_result(None)
            await settle()
        self._elapsed = target
        await settle()

    async def advance_to(self, when: datetime, settle: Settle | None = None) -> None:
        await self.advance(max(0.0, (when - self.now()).total_seconds()), settle)


class _ManualTimeout:
    """`asyncio.timeout` semantics on a ManualClock: the deadline fires during `advance()`."""

    def __init__(self, clock: ManualClock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._expired = False
        self._timer: asyncio.Future[None] | None = None
        self._task: asyncio.Task[object] | None = None

    def expired(self) -> bool:
        return self._expired

    async def __aenter__(self) -> None:
        self._task = asyncio.current_task()
        self._timer = self._clock._call_at(self._clock.monotonic() + self._seconds, self._expire)

    def _expire(self) -> None:
        self._expired = True
        if self._task is not None:
            self._task.cancel()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if self._timer is not None and not self._timer.done():
            self._timer.cancel()
        if self._expired and exc_type is asyncio.CancelledError and self._task is not None:
            if self._task.uncancel() == 0:
                raise TimeoutError from exc
        return False
