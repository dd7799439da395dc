"""Durable timers, event timeouts and retries on `funchost.testing`'s manual clock: days in milliseconds."""

from __future__ import annotations

import time
from pathlib import Path

from funchost.clock import ManualClock
from funchost.testing.harness import HostHarness, write_app

APP = """
from datetime import timedelta
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)
CALLS = []

@app.orchestration_trigger(context_name="context")
def approval(context):
    yield context.call_activity("notify", context.get_input())
    timeout = context.create_timer(context.current_utc_datetime + timedelta(days=3))
    answer = context.wait_for_external_event("Approval")
    winner = yield context.task_any([answer, timeout])
    if winner == answer:
        timeout.cancel()
        return "approved" if answer.result else "rejected"
    return "escalated"

@app.activity_trigger(input_name="request")
def notify(request):
    CALLS.append(("notify", request))
    return None

@app.orchestration_trigger(context_name="context")
def monitor(context):
    state = context.get_input()
    polls = state["polls"] + 1
    context.set_custom_status({"polls": polls})
    if polls >= state["until"]:
        return polls
    yield context.create_timer(context.current_utc_datetime + timedelta(hours=6))
    context.continue_as_new({"polls": polls, "until": state["until"]})

@app.orchestration_trigger(context_name="context")
def patient(context):
    options = df.RetryOptions(first_retry_interval_in_milliseconds=60_000, max_number_of_attempts=4)
    result = yield context.call_activity_with_retry("flaky", options, "x")
    return result

@app.activity_trigger(input_name="value")
def flaky(value):
    CALLS.append(("flaky", value))
    if len([c for c in CALLS if c[0] == "flaky"]) < 3:
        raise ConnectionError("not yet")
    return "done"
"""


def calls() -> list[tuple[str, object]]:
    import sys

    return sys.modules["function_app"].CALLS  # type: ignore[no-any-return]


async def test_a_three_day_approval_timeout_passes_in_milliseconds(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        started = time.monotonic()
        instance = await host.durable.start("approval", {"order": 7})
        assert calls()[-1] == ("notify", {"order": 7})
        await host.advance(3 * 24 * 3600 - 60)
        assert (await host.durable.wait(instance))["runtimeStatus"] == "Running"
        await host.advance(60)
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed" and status["output"] == "escalated"
        assert time.monotonic() - started < 20  # real time: the three days are simulated
        history = await host.durable.history(instance)
        fired = [e for e in history if e["EventType"] == 11]
        assert len(fired) == 1 and fired[0]["FireAt"] == next(e for e in history if e["EventType"] == 10)["FireAt"]


async def test_an_event_before_the_timeout_wins_and_cancels_the_timer(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        instance = await host.durable.start("approval", {"order": 8})
        await host.advance(24 * 3600)
        await host.durable.raise_event(instance, "Approval", True)
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed" and status["output"] == "approved"


async def test_a_monitor_continues_as_new_on_six_hour_timers(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        instance = await host.durable.start("monitor", {"polls": 0, "until": 5})
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Running" and status["customStatus"] == {"polls": 1}
        await host.advance(4 * 6 * 3600)
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed" and status["output"] == 5
        assert status["customStatus"] == {"polls": 5}
        history = await host.durable.history(instance)
        assert [e["EventType"] for e in history[:2]] == [12, 0]  # only the last execution's history


async def test_retries_wait_on_the_clock_between_attempts(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        instance = await host.durable.start("patient")
        assert [c for c in calls() if c[0] == "flaky"] == [("flaky", "x")]
        await host.advance(59)
        assert len([c for c in calls() if c[0] == "flaky"]) == 1
        await host.advance(1)
        assert len([c for c in calls() if c[0] == "flaky"]) == 2
        await host.advance(60)
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed" and status["output"] == "done"
