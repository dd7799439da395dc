"""The host's HTTP request queue (azure-semantics 3.5).

Enabled when ``maxConcurrentRequests`` or ``maxOutstandingRequests`` is set. Like the host's
ActionBlock, at most ``maxConcurrentRequests`` function requests execute at once and at most
``maxOutstandingRequests`` are admitted (executing + waiting); a request beyond that gets 429
with ``X-FUNCTION-SCALEOUT: 1``. Dynamic throttles (performance counters) are accepted but never
trip: funchost has no such counters.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from funchost.triggers.http.options import UNBOUNDED, HttpOptions

SCALE_OUT_HEADER = (b"x-function-scaleout", b"1")
log = logging.getLogger("funchost.http")


class QueueFull(Exception):
    pass


class RequestQueue:
    def __init__(self, max_concurrent: int, max_outstanding: int) -> None:
        self.max_outstanding = max_outstanding
        self._slots = asyncio.Semaphore(max_concurrent) if max_concurrent != UNBOUNDED else None
        self.outstanding = 0

    @classmethod
    def from_options(cls, options: HttpOptions) -> RequestQueue | None:
        if not options.request_queue_enabled:
            return None
        return cls(options.max_concurrent_requests, options.max_outstanding_requests)

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        if self.max_outstanding != UNBOUNDED and self.outstanding >= self.max_outstanding:
            log.warning("Http request queue limit of %d has been exceeded.", self.max_outstanding)
            raise QueueFull()
        self.outstanding += 1
        try:
            if self._slots is None:
                yield
            else:
                async with self._slots:
                    yield
        finally:
            self.outstanding -= 1
