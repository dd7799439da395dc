"""ManualClock, delay strategies and the shared poll loop."""

from __future__ import annotations

import asyncio
import random

import pytest

from funchost.clock import ManualClock
from funchost.listeners.delays import FixedDelay, LinearSpeedup, RandomizedExponentialBackoff
from funchost.listeners.poll_loop import PollLoop
from funchost.listeners.renewal import Renewer


async def test_manual_clock_wakes_sleepers_in_order() -> None:
    clock = ManualClock()
    order: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        order.append(f"{name}@{clock.monotonic():g}")

    tasks = [asyncio.create_task(sleeper("b", 20)), asyncio.create_task(sleeper("a", 10))]
    await asyncio.sleep(0)
    start = clock.now()
    await clock.advance(15)
    assert order == ["a@10"]
    await clock.advance(600)
    assert order == ["a@10", "b@20"]
    assert (clock.now() - start).total_seconds() == 615
    await asyncio.gather(*tasks)


async def test_manual_clock_wait_returns_early_when_event_set() -> None:
    clock = ManualClock()
    event = asyncio.Event()
    waiter = asyncio.create_task(clock.wait(event, 60))
    await asyncio.sleep(0)
    event.set()
    assert await waiter is True
    assert await asyncio.create_task(_wait_and_advance(clock)) is False


async def _wait_and_advance(clock: ManualClock) -> bool:
    event = asyncio.Event()
    task = asyncio.create_task(clock.wait(event, 5))
    await asyncio.sleep(0)
    await clock.advance(5)
    return await task


def test_backoff_sequence_matches_webjobs_bounds() -> None:
    """100 ms, then min + r*2^(k-1)*min with r in [0.8, 1.2), capped at max (azure-semantics 1.3)."""
    for seed in range(50):
        strategy = RandomizedExponentialBackoff(0.1, 60.0, rng=random.Random(seed))
        delays = [strategy.next_delay(False) for _ in range(14)]
        assert delays[0] == pytest.approx(0.1)
        for k, delay in enumerate(delays[1:11], start=1):
            low, high = 0.1 + 0.8 * 2 ** (k - 1) * 0.1, 0.1 + 1.2 * 2 ** (k - 1) * 0.1
            if delay != 60.0:
                assert low <= delay < high, (k, delay)
        assert delays[-1] == 60.0 and delays[-2] == 60.0
        assert strategy.next_delay(True) == pytest.approx(0.1)  # a success resets to min ...
        assert 0.18 <= strategy.next_delay(False) < 0.22  # ... and the next failure continues at ~200 ms


def test_backoff_reaches_two_second_development_cap() -> None:
    strategy = RandomizedExponentialBackoff(0.1, 2.0, rng=random.Random(1))
    delays = [strategy.next_delay(False) for _ in range(10)]
    assert max(delays) == 2.0 and delays[-1] == 2.0


def test_fixed_and_linear_speedup() -> None:
    assert FixedDelay(3).next_delay(False) == 3
    speed = LinearSpeedup(300, 60)
    assert [speed.next_delay(False) for _ in range(4)] == [150, 75, 60, 60]
    assert speed.next_delay(True) == 300


async def test_poll_loop_backs_off_and_notify_cuts_the_wait() -> None:
    clock = ManualClock()
    polls: list[float] = []
    found = [True, False, False, False]

    async def poll() -> bool:
        polls.append(clock.monotonic())
        return found.pop(0) if found else False

    loop = PollLoop("test", poll, RandomizedExponentialBackoff(1.0, 8.0, rng=random.Random(0)), clock)
    loop.start()
    await asyncio.sleep(0)
    await clock.advance(0)
    assert polls == [0, 0]  # found work: next poll immediately; then nothing: wait 1 s (min)
    await clock.advance(1)
    assert len(polls) == 3
    loop.notify()  # e.g. a local queue write: the ~2 s wait ends now
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(polls) == 4 and polls[-1] == 1
    await loop.stop()


async def test_renewer_renews_at_interval_and_stops_when_lost() -> None:
    clock = ManualClock()
    outcomes = [True, True, False]
    calls: list[float] = []

    async def renew() -> bool:
        calls.append(clock.monotonic())
        return outcomes.pop(0)

    renewer = Renewer("lease", renew, clock, interval=300, minimum=60).start()
    await clock.advance(1000)
    assert calls == [300, 600, 900]
    assert renewer.lost and renewer.renewals == 2
    await renewer.stop()
