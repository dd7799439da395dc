"""Dispatch right after an intake commit, in this process, on the app's event loop.

The store's `CommitSignal` fires on the committing thread; `notify` hops to the loop and runs
`dispatch_once` until the outbox is drained (coalescing wake-ups that arrive meanwhile). The
timer function stays the safety net for rows committed by other processes or left behind.
Under funchost the pass is registered as host activity, so tests can wait until it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from funchost.reliability import OutboxDispatcher

log = logging.getLogger("importjobs.wakeup")


def _busy() -> contextlib.AbstractContextManager[Any]:
    try:
        from funchost.runtime.activity import busy
    except ImportError:  # pragma: no cover - on Azure
        return contextlib.nullcontext()
    return busy()


class DispatchWakeup:
    def __init__(self, dispatcher: OutboxDispatcher, loop: asyncio.AbstractEventLoop) -> None:
        self.dispatcher = dispatcher
        self.loop = loop
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def notify(self) -> None:
        """Thread-safe: ask for a dispatch pass now."""
        token = _busy()
        token.__enter__()
        try:
            self.loop.call_soon_threadsafe(self._schedule, token)
        except RuntimeError:  # the loop is closed: the host has stopped
            token.__exit__(None, None, None)

    def _schedule(self, token: contextlib.AbstractContextManager[Any]) -> None:
        if self._task is not None and not self._task.done():
            self._again = True
            token.__exit__(None, None, None)
            return
        self._task = self.loop.create_task(self._drain(token))

    async def _drain(self, token: contextlib.AbstractContextManager[Any]) -> None:
        try:
            while True:
                self._again = False
                result = await self.dispatcher.dispatch_once()
                if not self._again and result.leased < self.dispatcher.options.batch_size:
                    return
        except Exception:  # noqa: BLE001 - the timer retries; the store may be briefly unavailable
            log.exception("wake-up dispatch pass failed")
        finally:
            token.__exit__(None, None, None)

    async def idle(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})
