"""Extended sessions (`funchost.durable.session`): which commits keep their instance for the one
activity they took, the chain that then runs one statement per step, and a kept instance given
back at once when this process writes it a message, or when the window passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.durable.test_handover import APP

from funchost.clock import ManualClock
from funchost.durable.hub import NotifyingHub
from funchost.durable.session import SESSION_WINDOW, Sessions, after_commit, keeps_session
from funchost.listeners.renewal import Renewer
from funchost.runtime.signals import Signals
from funchost.storage.durable import (
    ENTITY,
    ORCHESTRATION,
    RUNNING_STATUSES,
    ActivityClaim,
    ActivityItem,
    Commit,
    InstanceUpdate,
    NewActivity,
    NewInstance,
    Outbound,
    SessionOutcome,
    WorkItem,
)
from funchost.storage.sqlite.durable import SqliteTaskHub
from funchost.testing.harness import HostHarness, write_app

NOW = 1_700_000_000.0


def _item(kind: str = ORCHESTRATION) -> WorkItem:
    from datetime import datetime, timezone

    from funchost.storage.durable import InstanceRecord

    at = datetime.fromtimestamp(NOW, timezone.utc)
    record = InstanceRecord("a", kind, "orch", "", "e1", "Pending", None, None, None, at, at)
    return WorkItem(record, [{"EventType": 0}], [], "tok", NOW + 30)


def _commit(activities: int = 1, status: str = "Running", **extra: Any) -> Commit:
    return Commit(InstanceUpdate(status, "e1", None, None, None), [1], history=[{"EventType": 4}],
                  activities=[NewActivity("a", "e1", n, "act", None) for n in range(activities)], **extra)


@pytest.mark.parametrize(("commit", "room", "kind", "keeps"), [
    (_commit(), 1, ORCHESTRATION, True),
    (_commit(messages=[Outbound("other", {"EventType": 15})]), 1, ORCHESTRATION, True),  # to someone else
    (_commit(), 0, ORCHESTRATION, False),  # this host has no room for the activity
    (_commit(activities=2), 2, ORCHESTRATION, False),  # a fan-out: results are gathered by one fetch
    (_commit(activities=0), 1, ORCHESTRATION, False),
    (_commit(messages=[Outbound("a", {"EventType": 18}, "e1", NOW + 60)]), 1, ORCHESTRATION, False),  # a timer
    (_commit(instances=[NewInstance("child", "c", "", "x", None, {})]), 1, ORCHESTRATION, False),
    (_commit(status="Completed"), 1, ORCHESTRATION, False),
    (_commit(), 1, ENTITY, False),
])
def test_a_commit_keeps_its_instance_only_for_one_activity_it_takes(commit: Commit, room: int, kind: str,
                                                                     keeps: bool) -> None:
    assert keeps_session(_item(kind), commit, room) is keeps


def test_the_kept_item_is_the_instance_as_committed() -> None:
    kept = after_commit(_item(), _commit())
    assert kept.instance.status == "Running" and kept.history == [{"EventType": 0}, {"EventType": 4}]
    assert kept.messages == [] and kept.lease_token == "tok"


async def test_a_chain_runs_each_step_as_one_session_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[bool] = []
    completions: list[int] = []
    session = SqliteTaskHub.commit_session
    complete = SqliteTaskHub.complete_activity

    async def counting(self: SqliteTaskHub, *args: Any, **kwargs: Any) -> SessionOutcome:
        done = await session(self, *args, **kwargs)
        steps.append(done.committed is not None)
        return done

    async def counting_completions(self: SqliteTaskHub, item: ActivityItem, *args: Any, **kwargs: Any) -> Any:
        completions.append(item.task_id)
        return await complete(self, item, *args, **kwargs)

    monkeypatch.setattr(SqliteTaskHub, "commit_session", counting)
    monkeypatch.setattr(SqliteTaskHub, "complete_activity", counting_completions)
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        instance = await host.durable.start("chain")
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed" and status["output"] == 6
        assert steps == [True, True, True] and completions == []  # each result committed with its episode
        history = await host.durable.history(instance)
        assert [e["TaskScheduledId"] for e in history if e["EventType"] == 5] == [0, 1, 2]


async def _kept(tmp_path: Path, clock: ManualClock) -> tuple[NotifyingHub, Sessions, list[str]]:
    from datetime import datetime, timezone

    from funchost.durable import history as h

    store = SqliteTaskHub(tmp_path / "hub.db", "Hub")
    hub = NotifyingHub(store, Signals(), clock)
    now = hub.now()
    started = h.execution_started(datetime.fromtimestamp(now, timezone.utc), instance_id="a", execution_id="e1",
                                  name="orch", version="", input_text=None)
    await store.create_instance(NewInstance("a", "orch", "", "e1", None, started), now=now, dedupe=RUNNING_STATUSES)
    (item,) = await store.lock_instances(ORCHESTRATION, owner="o", now=now, lease=30, limit=1)
    commit = _commit()
    commit.consumed, commit.release, commit.claim = [m.id for m in item.messages], False, ActivityClaim("o", 60, 1)
    done = await store.commit(item, commit, now=now)
    renewed: list[str] = []

    def renewer(name: str, kept: WorkItem) -> Renewer:
        async def renew() -> bool:
            renewed.append(name)
            return True
        return Renewer(name, renew, clock, interval=SESSION_WINDOW / 4, minimum=0.1).start()  # a short lease

    sessions = Sessions(hub, renewer)
    sessions.open(after_commit(item, commit), done.claimed[0])
    return hub, sessions, renewed


async def test_a_message_written_here_gives_the_kept_instance_back_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    hub, sessions, _ = await _kept(tmp_path, clock)
    assert await hub.store.lock_instances(ORCHESTRATION, owner="o2", now=hub.now(), lease=30, limit=1) == []
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})])
    assert len(sessions) == 0
    await sessions.close()  # waits for the give-back under way
    (taken,) = await hub.store.lock_instances(ORCHESTRATION, owner="o2", now=hub.now(), lease=30, limit=1)
    assert [m.event["EventType"] for m in taken.messages] == [15]
    await hub.store.aclose()


async def test_a_kept_instance_is_renewed_and_given_back_after_the_window(tmp_path: Path) -> None:
    clock = ManualClock()
    hub, sessions, renewed = await _kept(tmp_path, clock)
    await clock.advance(SESSION_WINDOW / 2)
    assert len(sessions) == 1 and renewed  # the lease is renewed while the instance is kept
    await clock.advance(SESSION_WINDOW / 2)
    assert len(sessions) == 0
    await sessions.close()
    count = len(renewed)
    await clock.advance(SESSION_WINDOW)
    assert len(renewed) == count  # given back: no more renewals
    await hub.send([Outbound("a", {"EventType": 15, "Name": "x"})])
    (taken,) = await hub.store.lock_instances(ORCHESTRATION, owner="o2", now=hub.now(), lease=30, limit=1)
    assert taken.instance.instance_id == "a"
    await hub.store.aclose()


async def test_a_session_step_hands_its_activity_slot_to_the_next_activity() -> None:
    from funchost.durable.workloop import WorkLoop

    async def fetch(limit: int) -> list[Any]:
        return []

    async def process(item: Any) -> None:
        return None

    loop = WorkLoop("activities", limit=1, clock=ManualClock(), signals=Signals(), topic=("t",), fetch=fetch,
                    process=process)
    assert loop.reserve(1) == 1 and loop.reserve(1) == 0  # the one slot is taken
    assert loop.reserve(1, ending=1) == 1  # ... by the step that is about to finish: it passes it on
    loop.adopt([], 2)
