import json
from datetime import datetime, timedelta, timezone

import azure.functions as func
from azure.functions.timer import TimerRequestConverter

from funchost.triggers.timer.listener import TimerConfig, TimerListener
from funchost.triggers.timer.monitor import HOSTS_CONTAINER, ScheduleMonitor, ScheduleStatus, status_blob_name
from funchost.triggers.timer.schedule import effective_use_monitor, parse_schedule

from .conftest import START, RecordingInvoker, advance, settle, timer_function

UTC = timezone.utc


def make_listener(clock, blobs, invoker, schedule="0 */5 * * * *", *, run_on_startup=False,
                  use_monitor=None, name="tick"):
    parsed = parse_schedule(schedule, UTC)
    config = TimerConfig(parsed, run_on_startup, effective_use_monitor(parsed, use_monitor, clock.now()))
    monitor = ScheduleMonitor(blobs, "testhost", UTC)
    return TimerListener(timer_function(name, schedule), config, invoker, clock, monitor)


def fired(invoker: RecordingInvoker) -> list[str]:
    return [t.strftime("%H:%M:%S") for t in invoker.started_at]


def decode(request) -> func.TimerRequest:
    return TimerRequestConverter.decode(request.trigger_value, trigger_metadata=request.trigger_metadata)


async def stored_status(blobs) -> dict:
    data, _ = await blobs.download_blob(HOSTS_CONTAINER, status_blob_name("testhost", "tick"))
    return json.loads(data)


async def test_fires_on_schedule_and_persists_status(clock, blobs) -> None:
    invoker = RecordingInvoker(clock)
    listener = make_listener(clock, blobs, invoker)
    await listener.start()
    await settle()
    assert await stored_status(blobs) == {"Last": "0001-01-01T00:00:00", "Next": "2025-01-06T10:05:00+00:00",
                                          "LastUpdated": "2025-01-06T10:00:00+00:00"}
    await advance(clock, 11 * 60)
    assert fired(invoker) == ["10:05:00", "10:10:00"]
    request = invoker.requests[0]
    assert request.reason == "Timer fired at 2025-01-06T10:05:00.0000000+00:00"
    timer = decode(request)
    assert timer.past_due is False
    assert timer.schedule == {"AdjustForDST": True}
    assert timer.schedule_status["Next"] == "2025-01-06T10:05:00+00:00"
    assert await stored_status(blobs) == {"Last": "2025-01-06T10:10:00+00:00", "Next": "2025-01-06T10:15:00+00:00",
                                          "LastUpdated": "2025-01-06T10:10:00+00:00"}
    await listener.stop()


async def test_overrun_gives_exactly_one_catch_up_and_no_replay(clock, blobs) -> None:
    invoker = RecordingInvoker(clock, durations=[25])  # the first run takes 25 s of a 10 s schedule
    listener = make_listener(clock, blobs, invoker, "*/10 * * * * *")
    await listener.start()
    await advance(clock, 55)
    # 10:00:10 runs until :35; :20 and :30 were missed: one immediate catch-up at :35, then :40, :50.
    assert fired(invoker) == ["10:00:10", "10:00:35", "10:00:40", "10:00:50"]
    assert not any(decode(r).past_due for r in invoker.requests)
    await listener.stop()


async def test_one_invocation_at_a_time(clock, blobs) -> None:
    invoker = RecordingInvoker(clock, durations=[100, 100])
    listener = make_listener(clock, blobs, invoker, "*/10 * * * * *")
    await listener.start()
    await advance(clock, 150)
    # Never overlapping: the second run starts when the first ends, not at :20, :30, ...
    assert fired(invoker) == ["10:00:10", "10:01:50"]
    await advance(clock, 100)  # let the second run finish: stop() waits for it
    await listener.stop()
    assert fired(invoker)[:4] == ["10:00:10", "10:01:50", "10:03:30", "10:03:40"]


async def test_past_due_after_a_restart_runs_once_with_past_due(clock, blobs) -> None:
    first = RecordingInvoker(clock)
    listener = make_listener(clock, blobs, first)
    await listener.start()
    await advance(clock, 5 * 60)
    assert fired(first) == ["10:05:00"]
    await listener.stop()

    await advance(clock, 20 * 60)  # host down from 10:05 to 10:25: 10:10, 10:15, 10:20 missed
    second = RecordingInvoker(clock)
    restarted = make_listener(clock, blobs, second)
    await restarted.start()
    await advance(clock, 4 * 60)
    assert fired(second) == ["10:25:00"]  # once, immediately, not once per missed occurrence
    timer = decode(second.requests[0])
    assert timer.past_due is True
    assert timer.schedule_status["Next"] == "2025-01-06T10:10:00+00:00"
    assert second.requests[0].details["UnscheduledInvocationReason"] == "IsPastDue"
    assert second.requests[0].details["OriginalSchedule"].startswith("2025-01-06T10:10:00")
    await advance(clock, 60)
    assert fired(second) == ["10:25:00", "10:30:00"]
    assert decode(second.requests[1]).past_due is False
    await restarted.stop()


async def test_changed_schedule_is_not_past_due(clock, blobs) -> None:
    monitor = ScheduleMonitor(blobs, "testhost", UTC)
    old = ScheduleStatus(START - timedelta(hours=2), START - timedelta(hours=1), START - timedelta(hours=2))
    await monitor.update_status("tick", old)  # written by an hourly schedule that no longer exists
    invoker = RecordingInvoker(clock)
    listener = make_listener(clock, blobs, invoker, "0 */5 * * * *")
    await listener.start()
    await advance(clock, 60)
    assert invoker.requests == []
    assert (await stored_status(blobs))["Next"] == "2025-01-06T10:05:00+00:00"
    await listener.stop()


async def test_run_on_startup_runs_immediately_then_on_schedule(clock, blobs) -> None:
    invoker = RecordingInvoker(clock)
    listener = make_listener(clock, blobs, invoker, "0 0 * * * *", run_on_startup=True)
    await listener.start()
    await advance(clock, 1)
    assert fired(invoker) == ["10:00:00"]
    assert invoker.requests[0].details["UnscheduledInvocationReason"] == "RunOnStartup"
    assert decode(invoker.requests[0]).past_due is False
    await advance(clock, 3600)
    assert fired(invoker) == ["10:00:00", "11:00:00"]
    await listener.stop()


async def test_sub_minute_schedule_has_no_status(clock, blobs) -> None:
    invoker = RecordingInvoker(clock)
    listener = make_listener(clock, blobs, invoker, "*/15 * * * * *")
    await listener.start()
    await advance(clock, 30)
    assert fired(invoker) == ["10:00:15", "10:00:30"]
    assert decode(invoker.requests[0]).schedule_status == {}  # ScheduleStatus null
    assert not await blobs.container_exists(HOSTS_CONTAINER)
    await listener.stop()


async def test_timespan_schedule_counts_from_the_previous_start(clock, blobs) -> None:
    invoker = RecordingInvoker(clock, durations=[90])
    listener = make_listener(clock, blobs, invoker, "00:01:00")
    await listener.start()
    await advance(clock, 215)
    # 10:01 runs 90 s; next = 10:01 + 1 min is already past: immediately at 10:02:30; then 10:03:30.
    assert fired(invoker) == ["10:01:00", "10:02:30", "10:03:30"]
    await listener.stop()


async def test_stop_prevents_further_invocations(clock, blobs) -> None:
    invoker = RecordingInvoker(clock)
    listener = make_listener(clock, blobs, invoker, "*/10 * * * * *")
    await listener.start()
    await advance(clock, 10)
    await listener.stop()
    await advance(clock, 60)
    assert fired(invoker) == ["10:00:10"]


async def test_time_zone_schedule_uses_local_wall_clock(clock, blobs) -> None:
    from zoneinfo import ZoneInfo

    tokyo = ZoneInfo("Asia/Tokyo")
    invoker = RecordingInvoker(clock)
    parsed = parse_schedule("0 0 20 * * *", tokyo)  # 20:00 JST = 11:00 UTC
    listener = TimerListener(timer_function("tick", "0 0 20 * * *"), TimerConfig(parsed, False, True), invoker,
                             clock, ScheduleMonitor(blobs, "testhost", tokyo))
    await listener.start()
    await advance(clock, 3600)
    assert [t.astimezone(UTC) for t in invoker.started_at] == [datetime(2025, 1, 6, 11, tzinfo=UTC)]
    assert (await stored_status(blobs))["Last"] == "2025-01-06T20:00:00+09:00"
    await listener.stop()
