"""Visibility renewal for every message a queue listener holds, on one task per listener.

Same timing as WebJobs' per-message UpdateQueueMessageVisibilityCommand (and `Renewer`): first
renewal half a receive visibility after the message was received, then every half visibility;
after a failed renewal the next try comes sooner (halved, floor 1 min); a lost lease
(PopReceiptMismatch / 404 / 409, reported by `renew` returning False) ends renewal of that
message. One timer per listener instead of one task and timer per message keeps the per-message
cost of the trigger low (it halves the drain rate otherwise).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from funchost.clock import Clock
from funchost.listeners.delays import LinearSpeedup

log = logging.getLogger("funchost.queues")

H = TypeVar("H")


@dataclass(eq=False, slots=True)
class Renewal(Generic[H]):
    """The renewal schedule of one item `VisibilityKeeper.hold` keeps invisible; its timing is
    made at its first renewal (most messages are done before one is due)."""

    item: H
    due: float
    timing: LinearSpeedup | None = None
    renewals: int = 0
    lost: bool = False
    released: bool = field(default=False, repr=False)
    renewing: asyncio.Future[None] | None = field(default=None, repr=False)


class VisibilityKeeper(Generic[H]):
    def __init__(self, name: str, clock: Clock, renew: Callable[[H], Awaitable[bool]], *,
                 interval: float, minimum: float) -> None:
        self.name = name
        self._clock = clock
        self._renew = renew
        self._interval = interval
        self._minimum = minimum
        self._holds: dict[int, Renewal[H]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def hold(self, item: H) -> Renewal[H]:
        """Start keeping `item` invisible; call `release()` when its processing is over."""
        entry = Renewal(item, self._clock.monotonic() + self._interval)
        self._holds[id(entry)] = entry
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"visibility:{self.name}")
        self._wake.set()
        return entry

    def release(self, entry: Renewal[H]) -> Awaitable[None] | None:
        """Stop renewing `entry`. A renewal already in flight is returned for the caller to await,
        so that it completes the message with the latest pop receipt (as WebJobs awaits its
        timer's stop); None when there is none (no coroutine per message)."""
        entry.released = True
        self._holds.pop(id(entry), None)
        if entry.renewing is not None:
            return asyncio.shield(entry.renewing)
        return None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._holds:
                self._wake.clear()
                await self._wake.wait()
                continue
            now = self._clock.monotonic()
            due = [entry for entry in self._holds.values() if entry.due <= now]
            if due:
                await asyncio.gather(*(self._renew_one(entry) for entry in due))
                continue
            # New holds are never due before the earliest existing one, so this sleep is exact.
            await self._clock.sleep(min(entry.due for entry in self._holds.values()) - now)

    async def _renew_one(self, entry: Renewal[H]) -> None:
        timing = entry.timing
        if timing is None:
            timing = entry.timing = LinearSpeedup(self._interval, self._minimum)
        entry.renewing = asyncio.get_running_loop().create_future()
        try:
            keep = await self._renew(entry.item)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("visibility renewal on %s failed; retrying sooner", self.name, exc_info=True)
            entry.due = self._clock.monotonic() + timing.next_delay(False)
            return
        finally:
            entry.renewing.set_result(None)
            entry.renewing = None
        if not keep:
            entry.lost = True
            self._holds.pop(id(entry), None)
            return
        entry.renewals += 1
        entry.due = self._clock.monotonic() + timing.next_delay(True)
