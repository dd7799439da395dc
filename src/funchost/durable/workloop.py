"""Take work from the task hub while there is capacity: one loop per kind of work.

Built on the host's `PollLoop`. A fetch takes at most as many items as there are free slots
(``maxConcurrent*Functions``); each item runs in its own task and frees its slot when done. The
wait between fetches is cut short by an in-process signal (work written by this host), by a
freed slot, or by the next timer coming due; otherwise it backs off, so work written by other
hosts on the same data folder is found within a second. On a manual clock there is no
cross-process polling: signals and timers drive everything, so skipping days costs nothing.
A fetch that took fewer items than it asked for took all there were: the loop then waits for a
wake-up or the minimum poll instead of asking again at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from funchost.clock import Clock, SystemClock
from funchost.listeners.delays import RandomizedExponentialBackoff
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime import activity
from funchost.runtime.signals import Signals
from funchost.runtime.stopping import until_empty

log = logging.getLogger("funchost.durable")

MIN_POLL = 0.05
MAX_POLL = 1.0
MANUAL_CLOCK_IDLE = 24 * 3600.0  # no other processes to poll for; timers and signals wake the loop


class _UntilNextDue:
    """The back-off, bounded by the time until the next timer is due (set by each poll)."""

    def __init__(self, real_time: bool) -> None:
        self._backoff = RandomizedExponentialBackoff(MIN_POLL, MAX_POLL) if real_time else None
        self.due_in: float | None = None
        self._took_all = False

    @property
    def real_time(self) -> bool:
        return self._backoff is not None

    def took_all(self) -> None:
        """The last fetch took every item there was: wait the minimum poll (or a wake-up)."""
        self._took_all = True
        self.due_in = None

    def next_delay(self, succeeded: bool) -> float:
        succeeded, self._took_all = succeeded or self._took_all, False
        delay = self._backoff.next_delay(succeeded) if self._backoff is not None else MANUAL_CLOCK_IDLE
        if self.due_in is not None:
            delay = min(delay, max(0.0, self.due_in))
        return delay


class WorkLoop:
    def __init__(self, name: str, *, limit: int, clock: Clock, signals: Signals, topic: Hashable,
                 fetch: Callable[[int], Awaitable[list[Any]]], process: Callable[[Any], Awaitable[None]],
                 next_due: Callable[[], Awaitable[float | None]] | None = None) -> None:
        self.name = name
        self.limit = limit
        self._clock = clock
        self._signals = signals
        self._topic = topic
        self._fetch = fetch
        self._process = process
        self._next_due = next_due
        self._strategy = _UntilNextDue(isinstance(clock, SystemClock))
        self._loop = PollLoop(f"durable:{name}", self._poll, self._strategy, clock, on_error=self._on_error)
        self._running: set[asyncio.Task[None]] = set()
        self._reserved = 0  # slots promised to work taken elsewhere (`reserve` / `adopt`)
        self._stopping = False
        self._slot_freed = asyncio.Event()
        self._unsubscribe: Callable[[], None] | None = None

    async def start(self) -> None:
        self._unsubscribe = self._signals.subscribe(self._topic, self._loop.notify)
        self._loop.start()

    async def stop(self) -> None:
        """Fetch nothing more and reserve no more slots; let the work in progress (and the work
        being taken for slots already reserved) finish, or give its lease back."""
        self._stopping = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._slot_freed.set()
        await self._loop.stop()
        while self._running or self._reserved:
            if self._running:
                await until_empty(self._running)
            else:
                self._slot_freed.clear()
                await self._slot_freed.wait()

    def notify(self) -> None:
        self._loop.notify()

    @property
    def in_flight(self) -> int:
        return len(self._running)

    def reserve(self, wanted: int, *, ending: int = 0) -> int:
        """Hold up to `wanted` free slots for work about to be taken outside this loop (activities
        a commit or a completion takes for this host); give them back with `adopt`. None once the
        loop is stopping. `ending`: slots of running work that finishes right after (a session's
        step, run by the activity it completes, hands its slot to the next activity)."""
        if self._stopping:
            return 0
        granted = max(0, min(wanted, self.limit - len(self._running) - self._reserved + ending))
        self._reserved += granted
        return granted

    def adopt(self, items: list[Any], reserved: int) -> None:
        """Run `items` (taken under lease elsewhere) in the slots `reserve` held; free the rest."""
        self._reserved -= reserved
        for item in items:
            self._start(item)
        if len(items) < reserved:
            self._slot_freed.set()

    def _start(self, item: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._run(item), name=f"durable:{self.name}")
        self._running.add(task)
        task.add_done_callback(self._finished)

    async def _poll(self) -> bool:
        free = self.limit - len(self._running) - self._reserved
        if free <= 0:
            self._slot_freed.clear()
            await self._slot_freed.wait()
            return True
        with activity.busy():
            items = await self._fetch(free)
            for item in items:
                self._start(item)
            if items:
                if len(items) < free and self._strategy.real_time:
                    # Nothing else was visible: new work wakes the loop (a signal, a timer), so look
                    # again after the minimum poll rather than at once, an empty round trip.
                    self._strategy.took_all()
                    return False
                return True
            if self._next_due is not None:
                due = await self._next_due()
                self._strategy.due_in = None if due is None else due - self._clock.now().timestamp()
        return False

    async def _run(self, item: Any) -> None:
        try:
            await self._process(item)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("durable %s work failed unexpectedly; its lease will lapse and the work is retried",
                          self.name)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._slot_freed.set()  # wakes the loop only if it waits for capacity

    def _on_error(self, exc: BaseException) -> bool:
        log.warning("durable %s: fetching work failed (%s); retrying", self.name, exc)
        return True
