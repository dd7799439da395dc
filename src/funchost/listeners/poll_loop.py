"""The one polling loop (style principle 3).

Queue, change feed, outbox and event-delivery listeners all run this loop with their own
`poll` coroutine and delay strategy. `notify()` cuts the current wait short without touching
the back-off state, as QueueListener.Notify does in WebJobs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from funchost.clock import Clock
from funchost.listeners.delays import DelayStrategy

log = logging.getLogger("funchost.listeners")

# poll() returns True when it found (and started) work; False when there was nothing to do.
Poll = Callable[[], Awaitable[bool]]
# on_error(exc) returns True to keep polling (after a back-off), False to stop the loop.
OnError = Callable[[BaseException], bool]


class PollLoop:
    def __init__(
        self,
        name: str,
        poll: Poll,
        strategy: DelayStrategy,
        clock: Clock,
        *,
        on_error: OnError | None = None,
    ) -> None:
        self.name = name
        self._poll = poll
        self._strategy = strategy
        self._clock = clock
        self._on_error = on_error
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.last_delay = 0.0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run(), name=f"poll:{self.name}")

    def notify(self) -> None:
        """End the current wait early (a local write to the polled resource happened)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop fetching. Work already started by `poll` is the caller's to finish."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def run(self) -> None:
        found_since_last_delay = False
        wait = 0.0
        while not self._stopping:
            if wait > 0:
                self.last_delay = wait
                await self._clock.wait(self._wake, wait)
                self._wake.clear()
                if self._stopping:
                    break
            try:
                found = await self._poll()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the listener decides whether this is survivable
                if self._on_error is None or not self._on_error(exc):
                    log.exception("poll loop %s stopped by an unhandled error", self.name)
                    raise
                found = False
            if found:
                found_since_last_delay = True
                wait = 0.0
            else:
                wait = self._strategy.next_delay(found_since_last_delay)
                found_since_last_delay = False
