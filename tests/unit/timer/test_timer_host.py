"""The timer trigger through the real in-process host (indexing, executor, converters)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone

import pytest

from funchost.clock import ManualClock
from funchost.testing import write_app
from funchost.triggers.timer.monitor import HOSTS_CONTAINER, status_blob_name

START = datetime(2025, 1, 6, 10, 0, 0, tzinfo=timezone.utc)

APP = """
import azure.functions as func

app = func.FunctionApp()
SEEN = []

@app.timer_trigger(schedule="%TICK_SCHEDULE%", arg_name="timer", run_on_startup=False)
def tick(timer: func.TimerRequest) -> None:
    SEEN.append((timer.past_due, dict(timer.schedule_status or {}), dict(timer.schedule)))
"""


def seen() -> list:
    return sys.modules["function_app"].SEEN


@pytest.fixture
def app_dir(tmp_path):
    return write_app(tmp_path / "app", APP, settings={"TICK_SCHEDULE": "0 */5 * * * *"})


async def test_timer_function_runs_with_a_timer_request(funchost_app, app_dir):
    host = await funchost_app(app_dir, clock=ManualClock(START))
    await host.advance(5 * 60)
    await host.wait_until_idle()
    [(past_due, status, schedule)] = seen()
    assert past_due is False
    assert status["Next"] == "2025-01-06T10:05:00+00:00"
    assert schedule == {"AdjustForDST": True}
    blobs = host.runtime.storage.blobs()
    data, _ = await blobs.download_blob(HOSTS_CONTAINER, status_blob_name(host.runtime.host_id, "tick"))
    assert b'"Next": "2025-01-06T10:10:00+00:00"' in data


async def test_past_due_after_restart_through_the_host(funchost_app, app_dir, tmp_path):
    clock = ManualClock(START)
    first = await funchost_app(app_dir, clock=clock, data_dir=tmp_path / "data")
    await first.advance(5 * 60)
    await first.wait_until_idle()
    await first.stop()
    seen().clear()
    await clock.advance(30 * 60)
    second = await funchost_app(app_dir, clock=clock, data_dir=tmp_path / "data")
    await second.advance(1)
    await second.wait_until_idle()
    assert [past_due for past_due, _, _ in seen()] == [True]


async def test_admin_invocation_runs_now_not_past_due(funchost_app, app_dir):
    host = await funchost_app(app_dir, clock=ManualClock(START))
    result = await host.invoke("tick")
    assert result.succeeded
    [(past_due, status, _)] = seen()
    assert past_due is False
    assert status["Next"] == "2025-01-06T10:05:00+00:00"


async def test_a_bad_schedule_puts_the_function_in_error(funchost_app, tmp_path):
    app = write_app(tmp_path / "bad", APP, settings={"TICK_SCHEDULE": "every five minutes"})
    host = await funchost_app(app, clock=ManualClock(START))
    assert "tick" not in host.runtime.functions and "tick" not in host.host.listeners
    [reason] = host.runtime.function_errors.of("tick")
    assert "The schedule expression 'every five minutes' was not recognized" in reason


async def test_time_zone_setting_applies(funchost_app, tmp_path):
    app = write_app(tmp_path / "tz", APP, settings={"TICK_SCHEDULE": "0 0 12 * * *",
                                                    "WEBSITE_TIME_ZONE": "Tokyo Standard Time"})
    host = await funchost_app(app, clock=ManualClock(START))  # 10:00 UTC = 19:00 JST
    await host.advance(3600 * 17)  # 12:00 JST the next day is 03:00 UTC
    await host.wait_until_idle()
    [(_, status, _)] = seen()
    assert status["Next"] == "2025-01-07T12:00:00+09:00"
