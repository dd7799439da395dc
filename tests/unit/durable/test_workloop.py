"""The work loop's fetches: after a fetch that took everything visible (fewer items than free
slots), the next poll reads only the next due time unless work was signalled meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

from funchost.clock import ManualClock
from funchost.durable.workloop import WorkLoop
from funchost.runtime.signals import Signals

TOPIC = ("durable", "test")


class Hub:
    """Fetch answers from a list of batches; counts fetches and next-due reads."""

    def __init__(self, batches: list[list[str]]) -> None:
        self.batches = batches
        self.fetches: list[int] = []
        self.due_reads = 0
        self.processed: list[str] = []
        self.during_fetch: Any = None  # called inside the next fetch (a signal while it runs)

    async def fetch(self, free: int) -> list[str]:
        self.fetches.append(free)
        if self.during_fetch is not None:
            self.during_fetch()
            self.during_fetch = None
        return self.batches.pop(0) if self.batches else []

    async def process(self, item: str) -> None:
        self.processed.append(item)

    async def next_due(self) -> float | None:
        self.due_reads += 1
        return None


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def loop_for(hub: Hub, signals: Signals, limit: int = 4) -> WorkLoop:
    return WorkLoop("test", limit=limit, clock=ManualClock(), signals=signals, topic=TOPIC,
                    fetch=hub.fetch, process=hub.process, next_due=hub.next_due)


async def test_a_drained_fetch_is_not_followed_by_an_empty_one() -> None:
    signals = Signals()
    signals.bind_loop(asyncio.get_running_loop())
    hub = Hub([["a", "b"]])
    loop = loop_for(hub, signals)
    await loop.start()
    await settle()
    assert hub.processed == ["a", "b"] and hub.fetches == [4] and hub.due_reads == 1
    hub.batches.append(["c"])
    signals.publish(TOPIC)  # new local work: fetched at once
    await settle()
    assert hub.processed == ["a", "b", "c"] and hub.fetches == [4, 4] and hub.due_reads == 2
    await loop.stop()


async def test_a_signal_during_a_drained_fetch_fetches_again() -> None:
    signals = Signals()
    signals.bind_loop(asyncio.get_running_loop())
    hub = Hub([["a"], ["b"]])
    loop = loop_for(hub, signals)
    hub.during_fetch = loop.notify  # a signal delivered while the first fetch runs
    await loop.start()
    await settle()
    assert hub.processed == ["a", "b"]  # fetched without another signal
    # (a third, empty fetch follows: the poll loop's wake-up flag, set by that signal, is still set)
    assert hub.fetches[:2] == [4, 3] and len(hub.fetches) == 3
    await loop.stop()


async def test_a_fetch_that_fills_the_free_slots_is_followed_by_another() -> None:
    signals = Signals()
    signals.bind_loop(asyncio.get_running_loop())
    hub = Hub([["a", "b"], ["c"]])
    loop = loop_for(hub, signals, limit=2)
    await loop.start()
    await settle()
    assert hub.processed == ["a", "b", "c"] and len(hub.fetches) == 2 and hub.due_reads == 1
    await loop.stop()
