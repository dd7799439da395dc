"""Episodes without a host: the real SDK orchestrator and funchost's `Episode`, history in memory.

    driver = Driver(orchestrator, activities=("say_hello",))
    commit = driver.start("Tokyo")                 # first episode
    commit = driver.deliver(driver.completed(0, "Hello Tokyo"))
    assert driver.status == "Completed"

Each step builds the work item a dispatcher would lock (instance, history, new inbox messages),
runs `Episode.run` with the SDK's handle as the orchestrator function, and applies the commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import azure.durable_functions as df
from azure.functions.meta import Datum

from funchost.durable import history as h
from funchost.durable import protocol
from funchost.durable.episode import Episode, EpisodeSettings
from funchost.durable.replay import SdkResult
from funchost.durable.shim import FunctionCatalog
from funchost.storage.durable import Commit, InstanceRecord, Message, WorkItem

START = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)


class Driver:
    def __init__(self, orchestrator: Callable[..., Any], *, name: str = "orch", instance_id: str = "abc",
                 activities: tuple[str, ...] = (), orchestrators: tuple[str, ...] = (), entities: tuple[str, ...] = (),
                 max_actions: int = 100000) -> None:
        self.handle = df.Orchestrator.create(orchestrator)
        self.name = name
        self.catalog = FunctionCatalog(activities, (name, *orchestrators), entities)
        self.settings = EpisodeSettings(self.catalog, "", max_actions, True)
        self.now = START
        self.history: list[dict[str, Any]] = []
        self.record = InstanceRecord(instance_id, "orchestration", name, "", "exec1", "Pending", None, None, None,
                                     START, START)
        self.commits: list[Commit] = []
        self.payloads: list[dict[str, Any]] = []
        self._next_message = 1

    # -- steps -------------------------------------------------------------------------------------

    def start(self, value: Any = None) -> Commit:
        stored = json.dumps(json.dumps(value))
        self.record = replace(self.record, input=stored)
        started = h.execution_started(self.now, instance_id=self.record.instance_id, execution_id="exec1",
                                      name=self.name, version="", input_text=stored)
        return self.deliver(started, execution_id="exec1")

    def deliver(self, *events: dict[str, Any], execution_id: str | None = None) -> Commit:
        messages = []
        for event in events:
            messages.append(Message(self._next_message, self.record.instance_id, execution_id, event, 0.0))
            self._next_message += 1
        item = WorkItem(self.record, list(self.history), messages, "token", 0.0)
        import asyncio

        commit = asyncio.run(Episode(item, self.now, self.settings).run(self._call))
        assert commit is not None
        self._apply(commit)
        self.now += timedelta(seconds=1)
        return commit

    async def _call(self, name: str, history: list[dict[str, Any]], started: dict[str, Any]) -> SdkResult:
        payload = protocol.orchestrator_payload(history, instance_id=self.record.instance_id,
                                                input_text=started.get("Input"), parent_instance_id=None,
                                                http_sleep_ms=30000)
        self.payloads.append(json.loads(payload))
        try:
            output, error = self.handle(payload), None
        except Exception as exc:  # noqa: BLE001 - the SDK reports failures by raising
            output, error = None, exc
        return protocol.orchestrator_result(Datum(output, "json") if output is not None else None, error)

    def _apply(self, commit: Commit) -> None:
        self.commits.append(commit)
        if commit.reset_history:
            self.history = []
        self.history += list(commit.history)
        update = commit.update
        self.record = replace(self.record, status=update.status, execution_id=update.execution_id,
                              input=update.input, output=update.output, custom_status=update.custom_status)

    # -- events ------------------------------------------------------------------------------------

    def completed(self, task_id: int, value: Any) -> dict[str, Any]:
        return h.task_completed(self.now, task_id, json.dumps(value))

    def failed(self, task_id: int, reason: str, details: str | None = None) -> dict[str, Any]:
        return h.task_failed(self.now, task_id, reason, details)

    def fired(self, timer_id: int) -> dict[str, Any]:
        fire_at = h.parse_time(self.scheduled(timer_id)["FireAt"])
        return h.timer_fired(fire_at, timer_id, fire_at)

    def raised(self, name: str, data: Any) -> dict[str, Any]:
        return h.event_raised(self.now, name, json.dumps(data))

    # -- reading -----------------------------------------------------------------------------------

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def output(self) -> Any:
        return json.loads(self.record.output) if self.record.output is not None else None

    def scheduled(self, task_id: int) -> dict[str, Any]:
        return next(e for e in self.history if e["EventId"] == task_id and e["EventType"] != 12)

    def kinds(self, commit: Commit | None = None) -> list[str]:
        events = (commit or self.commits[-1]).history
        return [h.EventType(e["EventType"]).name for e in events]
