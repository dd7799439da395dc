"""The host's stop: retry waits end at once, the stop timeout cancels what still runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from funchost.errors import ConfigError
from funchost.runtime.stopping import DEFAULT_SHUTDOWN_TIMEOUT, drain_within, shutdown_timeout, until_empty
from funchost.testing import HostHarness, write_app

APP = """
import asyncio
import azure.functions as func

app = func.FunctionApp()
STATE = {"attempts": 0, "cancelled": 0}
GATE = asyncio.Event()

@app.queue_trigger(arg_name="msg", queue_name="failing", connection="AzureWebJobsStorage")
@app.retry(strategy="fixed_delay", max_retry_count="-1", delay_interval="00:01:00")
def failing(msg: func.QueueMessage) -> None:
    STATE["attempts"] += 1
    raise RuntimeError("retried every minute, forever")

@app.queue_trigger(arg_name="msg", queue_name="stuck", connection="AzureWebJobsStorage")
async def stuck(msg: func.QueueMessage) -> None:
    try:
        await GATE.wait()
    except asyncio.CancelledError:
        STATE["cancelled"] += 1
        raise
"""


def test_the_stop_timeout_is_aspnetcores_shutdown_timeout() -> None:
    assert shutdown_timeout({}) == DEFAULT_SHUTDOWN_TIMEOUT == 30.0
    assert shutdown_timeout({"ASPNETCORE_SHUTDOWNTIMEOUTSECONDS": " 5 "}) == 5.0
    with pytest.raises(ConfigError, match="ASPNETCORE_SHUTDOWNTIMEOUTSECONDS.*whole number of seconds"):
        shutdown_timeout({"ASPNETCORE_SHUTDOWNTIMEOUTSECONDS": "1.5"})


async def test_drain_within_runs_the_stops_together_and_cancels_only_past_the_timeout() -> None:
    order: list[str] = []

    async def stop(name: str, release: asyncio.Event) -> None:
        order.append(f"{name} began")
        await release.wait()
        order.append(f"{name} ended")

    first, second = asyncio.Event(), asyncio.Event()
    draining = asyncio.ensure_future(drain_within([("a", stop("a", first)), ("b", stop("b", second))], 30,
                                                  cancel_running=lambda: pytest.fail("nothing is late")))
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["a began", "b began"]  # together, not one after the other
    second.set()
    first.set()
    assert await draining is True

    cancelled: list[int] = []
    never = asyncio.Event()
    stuck = [("stuck", stop("stuck", never))]
    assert await drain_within(stuck, 0.01, lambda: cancelled.append(1) or 1, grace=0.01) is False
    assert cancelled == [1] and order[-1] == "stuck began"  # its stop was cancelled after the grace


async def test_until_empty_gives_the_done_callbacks_their_loop_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A listener's stop waits until its set of tasks is empty; the tasks leave the set in their
    done callbacks, which run a loop turn after a task ends. From Python 3.12 on, `gather` over
    tasks that have all ended returns without a loop turn (simulated here, so that every Python
    runs the case): gathering alone spun forever, and a host's stop hung at full CPU."""
    real_gather = asyncio.gather
    calls = 0

    async def gather_without_a_turn(*futures: asyncio.Future[object], return_exceptions: bool = False) -> list[object]:
        nonlocal calls
        calls += 1
        if calls > 100:
            raise AssertionError("gathered 100 times and the loop never turned")
        if all(future.done() for future in futures):  # Python 3.12+: the results at once
            return [future.result() for future in futures]
        return await real_gather(*futures, return_exceptions=return_exceptions)

    tasks: set[asyncio.Task[None]] = set()

    async def work() -> None:
        return None

    task = asyncio.get_running_loop().create_task(work())
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    await asyncio.sleep(0)  # the task has run and ended; its done callback waits for the next turn
    assert task.done() and task in tasks
    monkeypatch.setattr(asyncio, "gather", gather_without_a_turn)
    await until_empty(tasks)
    assert not tasks and calls == 1


@pytest.fixture
async def stopping_host(tmp_path: Path):  # type: ignore[no-untyped-def]
    hosts: list[HostHarness] = []

    async def start(settings: dict[str, str] | None = None) -> HostHarness:
        app = write_app(tmp_path / "app", APP)
        host = await HostHarness(app, data_dir=tmp_path / "data", settings=settings).start()
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        if host.host.state != "Stopped":
            await asyncio.wait_for(host.stop(), 60)


async def test_a_retry_wait_does_not_hold_the_stop(stopping_host) -> None:  # type: ignore[no-untyped-def]
    host = await stopping_host()
    await host.queues.send("failing", "doomed")
    await host.advance(1)
    assert sys.modules["function_app"].STATE["attempts"] == 1  # now waiting a minute for the retry
    await asyncio.wait_for(host.stop(), 10)  # the manual clock never moves: only the stop ends the wait
    assert host.host.stopped_in_time


async def test_past_the_stop_timeout_running_invocations_are_cancelled(stopping_host) -> None:  # type: ignore[no-untyped-def]
    host = await stopping_host({"ASPNETCORE_SHUTDOWNTIMEOUTSECONDS": "0"})
    await host.queues.send("stuck", "forever")
    await host.advance(1)
    state = sys.modules["function_app"].STATE
    await asyncio.wait_for(host.stop(), 10)
    assert state["cancelled"] == 1 and not host.host.stopped_in_time
    assert host.host.state == "Stopped"
