"""A version counter that wakes every waiter when it moves: how the live view learns of changes."""

from __future__ import annotations

import asyncio

from funchost.clock import Clock


class Notifier:
    def __init__(self) -> None:
        self.version = 0
        self._changed = asyncio.Event()

    def notify(self) -> None:
        self.version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait(self, seen: int, clock: Clock, timeout: float) -> int:
        """The version once it differs from `seen`, or the same after `timeout` seconds."""
        if self.version == seen:
            await clock.wait(self._changed, timeout)
        return self.version
