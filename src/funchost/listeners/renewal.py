"""Keep a lease alive while work runs: queue visibility, document leases, singleton locks.

Renews every `interval` seconds; after a failed renewal the next try comes sooner (halved,
never below `minimum`). `renew()` returns False when the lease is lost for good, which stops
the renewer (WebJobs stops on PopReceiptMismatch / 404 / 409).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from funchost.clock import Clock
from funchost.listeners.delays import LinearSpeedup

log = logging.getLogger("funchost.listeners")

Renew = Callable[[], Awaitable[bool]]


class Renewer:
    def __init__(self, name: str, renew: Renew, clock: Clock, *, interval: float, minimum: float,
                 first: float | None = None) -> None:
        self.name = name
        self._renew = renew
        self._clock = clock
        self._first = interval if first is None else first  # change feed leases: interval / 2
        self._timing = LinearSpeedup(interval, minimum)
        self._task: asyncio.Task[None] | None = None
        self.lost = False
        self.renewals = 0

    def start(self) -> Renewer:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"renew:{self.name}")
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        delay = self._first
        while True:
            await self._clock.sleep(delay)
            try:
                keep = await self._renew()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("renewal of %s failed; retrying sooner", self.name, exc_info=True)
                delay = self._timing.next_delay(False)
                continue
            if not keep:
                self.lost = True
                log.info("renewal of %s stopped: lease lost", self.name)
                return
            self.renewals += 1
            delay = self._timing.next_delay(True)
