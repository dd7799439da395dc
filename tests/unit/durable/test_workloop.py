"""The durable work loop's fetch rhythm: after a fetch that took everything there was, it waits
for a wake-up or the minimum poll instead of asking again at once (an empty round trip)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from funchost.clock import Clock, ManualClock, SystemClock
from funchost.durable.workloop import MIN_POLL, WorkLoop, _UntilNextDue
from funchost.runtime.signals import Signals


def loop_taking(items: int, clock: Clock) -> WorkLoop:
    async def fetch(limit: int) -> list[Any]:
        return list(range(min(items, limit)))

    async def process(item: Any) -> None:
        return None

    return WorkLoop("test", limit=10, clock=clock, signals=Signals(), topic=("test",), fetch=fetch, process=process)


async def test_a_fetch_that_took_everything_is_not_repeated_at_once() -> None:
    assert await loop_taking(3, SystemClock())._poll() is False  # 3 of 10 asked: all there were
    assert await loop_taking(10, SystemClock())._poll() is True  # full: there may be more
    assert await loop_taking(3, ManualClock(datetime(2024, 5, 1, tzinfo=timezone.utc)))._poll() is True


def test_after_taking_everything_the_wait_is_the_minimum_poll_not_the_back_off() -> None:
    strategy = _UntilNextDue(real_time=True)
    for _ in range(6):
        strategy.next_delay(False)  # idle: backed off towards a second
    assert strategy.next_delay(False) > MIN_POLL
    strategy.took_all()
    assert strategy.next_delay(False) == MIN_POLL
