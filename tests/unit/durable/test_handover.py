"""Work a statement takes for this host runs without another fetch: the activities an episode's
commit schedules (`ActivityClaim`), the orchestration an activity's result wakes and the one a
start creates (`InstanceClaim`); a loop that is stopping reserves nothing and waits for what it
reserved."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.durable import dispatcher
from funchost.durable.workloop import WorkLoop
from funchost.runtime.signals import Signals
from funchost.storage.durable import ORCHESTRATION, ActivityItem, Delivered, WorkItem
from funchost.storage.sqlite.durable import SqliteTaskHub
from funchost.testing.harness import HostHarness, write_app

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context")
def chain(context):
    total = 0
    for i in range(3):
        total += yield context.call_activity("double", i)
    return total

@app.activity_trigger(input_name="value")
def double(value):
    return value * 2
"""


async def test_a_start_and_each_result_run_the_orchestration_on_this_host_without_a_fetch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[str] = []
    handed_over: list[int] = []
    lock, complete = SqliteTaskHub.lock_instances, SqliteTaskHub.complete_activity

    async def counting(self: SqliteTaskHub, kind: str, **kwargs: Any) -> list[WorkItem]:
        items = await lock(self, kind, **kwargs)
        taken.extend(item.instance.instance_id for item in items if kind == ORCHESTRATION)
        return items

    async def counting_completions(self: SqliteTaskHub, item: ActivityItem, *args: Any, **kwargs: Any) -> Delivered:
        delivered = await complete(self, item, *args, **kwargs)
        if delivered.claimed is not None:
            handed_over.append(item.task_id)
        return delivered

    monkeypatch.setattr(SqliteTaskHub, "lock_instances", counting)
    monkeypatch.setattr(SqliteTaskHub, "complete_activity", counting_completions)
    # No extended sessions: each result goes through the completion that hands the instance over
    # (what a result does when its activity ran elsewhere or outlived the session's window).
    monkeypatch.setattr(dispatcher, "keeps_session", lambda *args: False)
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        instance = await host.durable.start("chain")
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed" and status["output"] == 6
        assert taken == []  # the start and the three results each handed the instance over
        assert handed_over == [0, 1, 2]
        completed = [e for e in await host.durable.history(instance) if e["EventType"] == 5]
        assert [e["TaskScheduledId"] for e in completed] == [0, 1, 2]  # each result once


async def test_a_stopping_loop_reserves_nothing_and_waits_for_its_reserved_slots() -> None:
    ran: list[Any] = []

    async def fetch(limit: int) -> list[Any]:
        return []

    async def process(item: Any) -> None:
        ran.append(item)

    loop = WorkLoop("test", limit=2, clock=ManualClock(), signals=Signals(), topic=("test",), fetch=fetch,
                    process=process)
    await loop.start()
    assert loop.reserve(5) == 2 and loop.reserve(1) == 0  # at most the free slots
    stopping = asyncio.get_running_loop().create_task(loop.stop())
    await asyncio.sleep(0)
    assert loop.reserve(1) == 0 and not stopping.done()  # still waiting for the work being taken
    loop.adopt(["claimed"], 2)
    await asyncio.wait_for(stopping, 5)
    assert ran == ["claimed"]  # taken work runs; the lease is never left to lapse
