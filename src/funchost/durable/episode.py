"""One orchestration episode: new inbox messages in, one atomic commit out.

As DTFx's TaskOrchestrationDispatcher: messages for another execution or duplicated task results
are dropped; a terminate ends the execution without running user code; a suspend parks the
instance (other messages wait in the inbox until it is resumed); otherwise the episode appends
``OrchestratorStarted`` and the new events, calls the orchestrator function with the whole
history, replays its actions, and appends the new scheduling events, the completion if the
execution ended, and ``OrchestratorCompleted``. The commit also carries the work those events
stand for: activity work items, timer messages, sub-orchestrations, entity requests, and the
parent's SubOrchestrationInstanceCompleted/Failed.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from funchost.durable import history as h
from funchost.durable.context import Decision
from funchost.durable.replay import Completion, ReplayOutcome, SdkResult, replay
from funchost.durable.shim import FunctionCatalog
from funchost.storage.durable import (
    Commit,
    InstanceUpdate,
    Message,
    NewActivity,
    NewInstance,
    Outbound,
    WorkItem,
)

Event = dict[str, Any]
# Calls the orchestrator function: (orchestrator name, full history, instance) -> the SDK's result,
# or None when the host is stopping (the work item is given back untouched).
CallOrchestrator = Callable[[str, list[Event], Any], Awaitable[SdkResult | None]]

_COMPLETIONS = {h.EventType.TaskCompleted, h.EventType.TaskFailed, h.EventType.SubOrchestrationInstanceCompleted,
                h.EventType.SubOrchestrationInstanceFailed, h.EventType.TimerFired}
_ENDED = {"Completed", "Failed", "Terminated", "Canceled"}


@dataclass(frozen=True)
class EpisodeSettings:
    catalog: FunctionCatalog
    default_version: str
    max_actions: int
    store_inputs: bool


def new_execution_id() -> str:
    return uuid.uuid4().hex


class Episode:
    def __init__(self, item: WorkItem, now: datetime, settings: EpisodeSettings) -> None:
        self.item = item
        self.instance = item.instance
        self.now = now
        self.settings = settings
        self.history = list(item.history)
        self.consumed = [m.id for m in item.messages]

    async def run(self, call: CallOrchestrator) -> Commit | None:
        instance = self.instance
        messages = self._deliverable()
        if instance.status in _ENDED and not self._starts_execution(messages):
            return self._commit_only()
        control = [m for m in messages if h.event_type(m.event) in (h.EventType.ExecutionTerminated,
                                                                   h.EventType.ExecutionSuspended)]
        terminate = next((m for m in control if h.event_type(m.event) is h.EventType.ExecutionTerminated), None)
        if terminate is not None:
            return self._terminate(terminate)
        if any(h.event_type(m.event) is h.EventType.ExecutionSuspended for m in control):
            return self._suspend(messages)
        new_events = [h.orchestrator_started(self.now)]
        new_events += [m.event for m in messages if self._keep(m, instance.status)]
        if len(new_events) == 1:
            return self._commit_only()
        started = _find(self.history + new_events, h.EventType.ExecutionStarted)
        if started is None:
            return self._commit_only()  # results for an execution that never started: drop
        full = h.played(self.history) + new_events
        sdk = await call(instance.name, full, started)
        if sdk is None:
            return None
        outcome = replay(full, instance_id=instance.instance_id, execution_id=self._execution_id(started),
                         name=str(started.get("Name") or instance.name),
                         parent_instance_id=_parent_id(started), catalog=self.settings.catalog,
                         default_version=self.settings.default_version, max_actions=self.settings.max_actions,
                         sdk=sdk)
        return self._commit(new_events, started, outcome)

    # -- message triage ----------------------------------------------------------------------------

    def _deliverable(self) -> list[Message]:
        """Messages of the current execution, ExecutionStarted first; stale ones are dropped."""
        current = self.instance.execution_id
        kept = [m for m in self.item.messages if m.execution_id is None or m.execution_id == current]
        kept.sort(key=lambda m: (h.event_type(m.event) is not h.EventType.ExecutionStarted, m.id))
        return kept

    def _starts_execution(self, messages: list[Message]) -> bool:
        return any(h.event_type(m.event) is h.EventType.ExecutionStarted for m in messages) and not self.history

    def _keep(self, message: Message, status: str) -> bool:
        kind = h.event_type(message.event)
        if kind is h.EventType.ExecutionStarted:
            return not self.history
        if kind is h.EventType.ExecutionResumed:
            return status == "Suspended"
        if kind in _COMPLETIONS:
            return not self._already_completed(message.event)
        return kind is h.EventType.EventRaised

    def _already_completed(self, event: Event) -> bool:
        key = "TimerId" if h.event_type(event) is h.EventType.TimerFired else "TaskScheduledId"
        task_id = event.get(key)
        return any(h.event_type(e) in _COMPLETIONS and e.get("TimerId", e.get("TaskScheduledId")) == task_id
                   for e in self.history)

    def _execution_id(self, started: Event) -> str:
        return str((started.get("OrchestrationInstance") or {}).get("ExecutionId") or self.instance.execution_id)

    # -- outcomes ----------------------------------------------------------------------------------

    def _update(self, status: str, *, output: str | None = None, custom_status: str | None = None) -> InstanceUpdate:
        instance = self.instance
        return InstanceUpdate(status=status, execution_id=instance.execution_id, input=instance.input,
                              output=output, custom_status=custom_status)

    def _commit_only(self) -> Commit:
        instance = self.instance
        return Commit(self._update(instance.status, output=instance.output, custom_status=instance.custom_status),
                      self.consumed)

    def _terminate(self, message: Message) -> Commit:
        reason = message.event.get("Input")
        starting = [m.event for m in self.item.messages
                    if h.event_type(m.event) is h.EventType.ExecutionStarted and not self.history][:1]
        events = [h.orchestrator_started(self.now), *starting, message.event,
                  h.execution_completed(self.now, h.OrchestrationStatus.Terminated, reason),
                  h.orchestrator_completed(self.now)]
        started = _find(self.history + starting, h.EventType.ExecutionStarted)
        notify = _notify_parent(started, h.OrchestrationStatus.Terminated, reason, None, self.now)
        return Commit(self._update("Terminated", output=reason, custom_status=self.instance.custom_status),
                      self.consumed, history=h.played(events), messages=notify)

    def _suspend(self, messages: list[Message]) -> Commit:
        """Only control messages are consumed; the others wait for the resume."""
        suspend = next(m for m in messages if h.event_type(m.event) is h.EventType.ExecutionSuspended)
        events = [h.orchestrator_started(self.now), suspend.event, h.orchestrator_completed(self.now)]
        consumed = [m.id for m in self.item.messages if m.id == suspend.id or m not in messages]
        return Commit(self._update("Suspended", custom_status=self.instance.custom_status), consumed,
                      history=h.played(events))

    def _commit(self, new_events: list[Event], started: Event, outcome: ReplayOutcome) -> Commit:
        instance = self.instance
        execution_id = self._execution_id(started)
        events = list(new_events)
        activities: list[NewActivity] = []
        messages: list[Outbound] = []
        instances: list[NewInstance] = []
        for decision in outcome.decisions:
            events.append(self._decision_event(decision))
            self._decision_work(decision, started, execution_id, activities, messages, instances)
        custom = outcome.state.custom_status if outcome.state.custom_status_set else None
        completion = outcome.completion
        status, output, new_input = "Running", None, instance.input
        reset = False
        if completion is not None:
            events.append(h.execution_completed(self.now, completion.status, completion.result, completion.event_id))
            if completion.status is h.OrchestrationStatus.ContinuedAsNew:
                reset, status, new_input = True, "ContinuedAsNew", completion.result
                execution_id = new_execution_id()
                messages += self._continue_as_new(started, completion, execution_id)
            else:
                status, output = completion.status.name, completion.result
                messages += _notify_parent(started, completion.status, completion.result, completion.details,
                                           self.now)
        events.append(h.orchestrator_completed(self.now))
        update = InstanceUpdate(status=status, execution_id=execution_id, input=new_input, output=output,
                                custom_status=custom)
        return Commit(update, self.consumed, history=[] if reset else h.played(events), reset_history=reset,
                      messages=messages, activities=activities, instances=instances)

    def _decision_event(self, decision: Decision) -> Event:
        now = self.now
        keep_input = self.settings.store_inputs
        if decision.kind == "activity":
            return h.task_scheduled(now, decision.id, decision.name, decision.input if keep_input else None)
        if decision.kind == "timer":
            assert decision.fire_at is not None
            return h.timer_created(now, decision.id, decision.fire_at)
        if decision.kind == "suborchestration":
            return h.sub_orchestration_created(now, decision.id, decision.name, str(decision.instance_id),
                                               decision.input if keep_input else None)
        return h.event_sent(now, decision.id, str(decision.instance_id), decision.name, decision.input)

    def _decision_work(self, decision: Decision, started: Event, execution_id: str, activities: list[NewActivity],
                       messages: list[Outbound], instances: list[NewInstance]) -> None:
        instance_id = self.instance.instance_id
        if decision.kind == "activity":
            activities.append(NewActivity(instance_id, execution_id, decision.id, decision.name, decision.input))
        elif decision.kind == "timer":
            assert decision.fire_at is not None
            fired = h.timer_fired(decision.fire_at, decision.id, decision.fire_at)
            messages.append(Outbound(instance_id, fired, execution_id, decision.fire_at.timestamp()))
        elif decision.kind == "suborchestration":
            child = str(decision.instance_id)
            child_execution = new_execution_id()
            parent = h.parent_instance(str(started.get("Name") or self.instance.name), str(started.get("Version") or ""),
                                       decision.id, instance_id, execution_id)
            child_started = h.execution_started(self.now, instance_id=child, execution_id=child_execution,
                                                name=decision.name, version=decision.version,
                                                input_text=decision.input, parent=parent)
            instances.append(NewInstance(child, decision.name, decision.version, child_execution, decision.input,
                                         child_started, parent_instance_id=instance_id))
        else:
            raised = h.event_raised(self.now, decision.name, decision.input)
            messages.append(Outbound(str(decision.instance_id), raised))

    def _continue_as_new(self, started: Event, completion: Completion, execution_id: str) -> list[Outbound]:
        """The next execution starts from a new ExecutionStarted; unprocessed events carry over."""
        instance_id = self.instance.instance_id
        restarted = h.execution_started(self.now, instance_id=instance_id, execution_id=execution_id,
                                        name=str(started.get("Name") or self.instance.name),
                                        version=str(started.get("Version") or ""), input_text=completion.result,
                                        parent=started.get("ParentInstance"))
        carried = [Outbound(instance_id, event) for event in completion.carryover]
        return [Outbound(instance_id, restarted, execution_id), *carried]


def _find(events: list[Event], kind: h.EventType) -> Event | None:
    return next((e for e in events if h.event_type(e) is kind), None)


def _parent_id(started: Event | None) -> str | None:
    parent = (started or {}).get("ParentInstance") or None
    return (parent.get("OrchestrationInstance") or {}).get("InstanceId") if parent else None


def _notify_parent(started: Event | None, status: h.OrchestrationStatus, result: str | None, details: str | None,
                   now: datetime) -> list[Outbound]:
    """A sub-orchestration's end, as DTFx reports it to the parent (terminate counts as failure)."""
    parent = (started or {}).get("ParentInstance") or None
    if not parent:
        return []
    target = parent.get("OrchestrationInstance") or {}
    task_id = int(parent.get("TaskScheduleId", -1))
    if status is h.OrchestrationStatus.Completed:
        event = h.sub_orchestration_completed(now, task_id, result)
    else:
        event = h.sub_orchestration_failed(now, task_id, result or "", details)
    return [Outbound(str(target.get("InstanceId")), event, target.get("ExecutionId"))]
