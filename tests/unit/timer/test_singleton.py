import asyncio
from datetime import timezone
from pathlib import Path

import pytest

from funchost.errors import ConfigError
from funchost.storage.sqlite.blobs import SqliteBlobService
from funchost.triggers.timer.listener import TimerConfig, TimerListener
from funchost.triggers.timer.monitor import HOSTS_CONTAINER, ScheduleMonitor
from funchost.triggers.timer.schedule import parse_schedule
from funchost.triggers.timer.singleton import (
    SingletonListener,
    SingletonOptions,
    listener_lock_name,
    parse_singleton_options,
)

from .conftest import RecordingInvoker, advance, settle, timer_function

EVERY_SECOND = "* * * * * *"


def make_host(clock, blobs, options=None):
    invoker = RecordingInvoker(clock)
    function = timer_function("tick", EVERY_SECOND)
    config = TimerConfig(parse_schedule(EVERY_SECOND), False, False)

    def factory() -> TimerListener:
        return TimerListener(function, config, invoker, clock, ScheduleMonitor(blobs, "testhost", timezone.utc))

    return SingletonListener(factory, blobs, "testhost", "tick", options or SingletonOptions(), clock), invoker


def crash_running_listener() -> None:
    """What a killed process leaves behind: its tasks stop, nothing is released."""
    for task in asyncio.all_tasks():
        if task.get_name().startswith(("timer:", "renew:")):
            task.cancel()


@pytest.fixture
async def second_blobs(tmp_path: Path, clock):  # type: ignore[no-untyped-def]
    # A second service object on the same folder: another process on the same data directory.
    service = SqliteBlobService(tmp_path / "storage" / "devstoreaccount1", "devstoreaccount1", clock)
    yield service
    await service.aclose()


async def test_only_one_host_runs_the_timer(clock, blobs, second_blobs) -> None:
    a, ran_a = make_host(clock, blobs)
    b, ran_b = make_host(clock, second_blobs)
    await a.start()
    await b.start()
    await settle()
    assert a.is_listening and not b.is_listening
    await advance(clock, 300)  # several renewals and recovery polls
    assert len(ran_a.requests) == 300
    assert ran_b.requests == []
    props = await blobs.get_blob_properties(HOSTS_CONTAINER, listener_lock_name("testhost", "tick"))
    assert props.lease_state == "leased"
    await b.stop()
    await a.stop()


async def test_a_killed_owner_is_replaced_within_lease_period_plus_polling(clock, blobs, second_blobs) -> None:
    a, ran_a = make_host(clock, blobs)
    b, ran_b = make_host(clock, second_blobs)
    await a.start()
    await b.start()
    await advance(clock, 45)  # renewed at 30 s: the lease now runs until 90 s
    crash_running_listener()
    await settle()
    count_a = len(ran_a.requests)
    await advance(clock, 44)
    assert ran_b.requests == []  # still leased by the dead host
    await advance(clock, 122 - 89)  # B polls at 60 s (leased) and at 120 s (expired at 90 s)
    assert b.is_listening
    assert len(ran_b.requests) >= 1
    assert len(ran_a.requests) == count_a
    await b.stop()


async def test_short_lock_period_and_polling_from_host_json(clock, blobs, second_blobs) -> None:
    options = parse_singleton_options({"listenerLockPeriod": "00:00:15",
                                       "listenerLockRecoveryPollingInterval": "00:00:15"})
    a, _ = make_host(clock, blobs, options)
    b, ran_b = make_host(clock, second_blobs, options)
    await a.start()
    await b.start()
    await advance(clock, 8)  # renewed at 7.5 s: leased until 22.5 s
    crash_running_listener()
    await advance(clock, 32 - 8)  # B's polls: 15 s (leased), 30 s (free)
    assert b.is_listening and len(ran_b.requests) >= 1
    await b.stop()


async def test_graceful_stop_releases_the_lock_for_the_next_poll(clock, blobs, second_blobs) -> None:
    a, _ = make_host(clock, blobs)
    b, ran_b = make_host(clock, second_blobs)
    await a.start()
    await b.start()
    await advance(clock, 10)
    await a.stop()
    props = await blobs.get_blob_properties(HOSTS_CONTAINER, listener_lock_name("testhost", "tick"))
    assert props.lease_state == "available"
    await advance(clock, 49)
    assert ran_b.requests == []
    await advance(clock, 2)  # B's first recovery poll at 60 s
    assert b.is_listening and ran_b.requests
    await b.stop()


async def test_lost_lease_stops_the_listener_until_reacquired(clock, blobs, second_blobs) -> None:
    a, ran_a = make_host(clock, blobs)
    await a.start()
    await advance(clock, 5)
    await second_blobs.break_lease(HOSTS_CONTAINER, listener_lock_name("testhost", "tick"), break_period=0)
    b, ran_b = make_host(clock, second_blobs)
    await b.start()  # takes the broken lease
    assert b.is_listening
    await advance(clock, 31)  # A's renewal at 30 s fails: A stops running the timer
    assert not a.is_listening
    count_a = len(ran_a.requests)
    await advance(clock, 30)
    assert len(ran_a.requests) == count_a
    assert len(ran_b.requests) >= 60
    await a.stop()
    await b.stop()


def test_singleton_options_are_validated() -> None:
    assert parse_singleton_options(None) == SingletonOptions()
    assert parse_singleton_options({"ListenerLockPeriod": "00:00:20"}).listener_lock_period == 20
    never = parse_singleton_options({"listenerLockRecoveryPollingInterval": "10675199.02:48:05.4775807"})
    assert never.listener_lock_recovery_polling_interval is None
    with pytest.raises(ConfigError, match=r"singleton\.listenerLockPeriod: must be at most 60"):
        parse_singleton_options({"listenerLockPeriod": "00:02:00"})
    with pytest.raises(ConfigError, match=r"singleton\.listenerLockRecoveryPollingInterval: must be at least 15"):
        parse_singleton_options({"listenerLockRecoveryPollingInterval": "00:00:05"})
    warnings: list[str] = []
    assert parse_singleton_options({"listenerLockPeriode": "00:00:20"}, warnings) == SingletonOptions()
    assert warnings == ["host.json: singleton.listenerLockPeriode: unknown key ignored, as the Functions host ignores "
                        "keys it does not bind (did you mean 'listenerLockPeriod'?)"]


async def test_recovery_keeps_polling_when_the_listener_fails_to_start(clock, blobs, second_blobs) -> None:
    """A listener that fails to start after the lock was won gives the lock back and the host
    tries again at the next recovery poll, instead of leaving the timer unowned for good."""
    a, ran_a = make_host(clock, blobs)
    await a.start()
    b, ran_b = make_host(clock, second_blobs)
    real_factory = b._factory
    failures = [RuntimeError("inner start failed")]

    def flaky_factory():  # type: ignore[no-untyped-def]
        inner = real_factory()
        if failures:
            error = failures.pop()

            async def broken_start() -> None:
                raise error

            inner.start = broken_start  # type: ignore[method-assign]
        return inner

    b._factory = flaky_factory
    await b.start()
    await a.stop()  # releases the lock: B wins it at its next poll, fails to start, retries
    await advance(clock, 61)
    assert not b.is_listening and failures == []
    await advance(clock, 60)
    assert b.is_listening
    await advance(clock, 5)
    assert len(ran_b.requests) >= 1
    await b.stop()
