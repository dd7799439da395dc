"""The orchestration context of a replay: DurableTask.Core's TaskOrchestrationContext, in Python.

It allocates sequence ids as API calls happen, keeps the actions not yet matched by history and
the open tasks, and applies history events in order: a scheduling event must match the action
with its id (else `NonDeterministicError` with DTFx's wording), a completion resolves the open
task (a completion for a task that is not open is ignored, as DTFx logs and drops duplicates).
External events are the extension's: waiters form a stack per name, early events a FIFO buffer.
"""

from __future__ import annotations

import uuid
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from funchost.durable import history as h
from funchost.durable.tasks import Future

Event = dict[str, Any]

# The class names DTFx puts in its non-determinism messages, by decision kind.
ACTION_CLASSES = {
    "activity": "ScheduleTaskOrchestratorAction",
    "timer": "CreateTimerOrchestratorAction",
    "suborchestration": "CreateSubOrchestrationAction",
    "send": "SendEventOrchestratorAction",
}
_GUID_NAMESPACE = uuid.UUID("9e952959-5e33-4daf-827f-2fa12937b875")  # GuidManager.UrlNamespaceValue
_CHANGED = "Was a change made to the orchestrator code after this instance had already started running?"


class NonDeterministicError(Exception):
    """NonDeterministicOrchestrationException: the replay does not produce what history recorded."""

    def __init__(self, details: str) -> None:
        super().__init__("Non-Deterministic workflow detected: " + details)


class TaskFailure(Exception):
    """A task's failure as history records it (TaskFailed / SubOrchestrationInstanceFailed)."""

    def __init__(self, reason: str | None, details: str | None) -> None:
        super().__init__(reason or "")
        self.reason = reason
        self.details = details


@dataclass
class Decision:
    """A new scheduling action: becomes a history event and work when the episode commits."""

    kind: str  # activity | timer | suborchestration | send
    id: int
    name: str = ""  # activity / orchestrator name, or the event name of a send
    input: str | None = None
    fire_at: datetime | None = None
    instance_id: str | None = None  # sub-orchestration id, or the target of a send
    version: str = ""


class OrchestrationContext:
    def __init__(self, instance_id: str, execution_id: str) -> None:
        self.instance_id = instance_id
        self.execution_id = execution_id
        self.now: datetime | None = None
        self._next_id = 0
        self._guid_counter = 0
        self.actions: dict[int, Decision] = {}
        self.open_tasks: dict[int, Future] = {}
        self._waiters: dict[str, list[Future]] = {}
        self._buffered: dict[str, deque[str | None]] = {}
        self.continue_as_new: str | None = None
        self.continued_as_new = False
        self.carryover: list[Event] = []

    # -- API used by the shim ----------------------------------------------------------------------

    def next_id(self) -> int:
        allocated = self._next_id
        self._next_id += 1
        return allocated

    def new_guid(self) -> str:
        """The extension's deterministic NewGuid: instance id, orchestration time, counter."""
        assert self.now is not None
        stamp = self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond:06d}0Z"
        name = f"{self.instance_id}_{stamp}_{self._guid_counter}"
        self._guid_counter += 1
        return str(uuid.uuid5(_GUID_NAMESPACE, name))

    def schedule(self, decision: Decision, *, awaited: bool = True) -> Future:
        self.actions[decision.id] = decision
        future = Future()
        if awaited:
            self.open_tasks[decision.id] = future
        else:
            future.set_result(None)
        return future

    def cancel_timer(self, timer_id: int) -> None:
        future = self.open_tasks.pop(timer_id, None)
        if future is not None:
            future.cancel()

    def wait_for_event(self, name: str) -> Future:
        future = Future()
        self._waiters.setdefault(name, []).append(future)
        buffered = self._buffered.get(name)
        if buffered:
            data = buffered.popleft()
            if not buffered:
                del self._buffered[name]
            self._raise(name, data)
        return future

    def request_continue_as_new(self, input_text: str | None) -> None:
        self.continue_as_new = input_text
        self.continued_as_new = True

    # -- history -----------------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        kind = h.event_type(event)
        if kind is h.EventType.OrchestratorStarted:
            self.now = h.parse_time(event["Timestamp"])
        elif kind is h.EventType.TaskScheduled:
            self._match(event, "activity", "activity", check_name=True)
        elif kind is h.EventType.TimerCreated:
            self._match(event, "timer", "timer", check_name=False)
        elif kind is h.EventType.SubOrchestrationInstanceCreated:
            self._match(event, "suborchestration", "suborchestration", check_name=True)
        elif kind is h.EventType.EventSent:
            self._match(event, "send", "send", check_name=True)
        elif kind in (h.EventType.TaskCompleted, h.EventType.SubOrchestrationInstanceCompleted):
            self._resolve(event["TaskScheduledId"], value=event.get("Result"))
        elif kind in (h.EventType.TaskFailed, h.EventType.SubOrchestrationInstanceFailed):
            self._resolve(event["TaskScheduledId"], error=TaskFailure(event.get("Reason"), event.get("Details")))
        elif kind is h.EventType.TimerFired:
            self._resolve(event["TimerId"], value=str(event["TimerId"]))
        elif kind is h.EventType.EventRaised:
            if self.continued_as_new:
                self.carryover.append(event)
            else:
                self._raise(str(event.get("Name")), event.get("Input"))

    def _resolve(self, task_id: int, *, value: Any = None, error: BaseException | None = None) -> None:
        future = self.open_tasks.pop(int(task_id), None)
        if future is None:
            return  # a duplicate or a cancelled timer: DTFx logs it and moves on
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def _raise(self, name: str, data: str | None) -> None:
        waiters = self._waiters.get(name)
        if waiters:
            future = waiters.pop()  # the most recent waiter first (the extension keeps a stack)
            if not waiters:
                del self._waiters[name]
            future.set_result(data)
        else:
            self._buffered.setdefault(name, deque()).append(data)

    def _match(self, event: Event, kind: str, what: str, *, check_name: bool) -> None:
        task_id = int(event["EventId"])
        action = self.actions.get(task_id)
        if action is None:
            raise NonDeterministicError(_missing(what, event, task_id))
        if action.kind != kind:
            raise NonDeterministicError(_other_kind(what, event, task_id, ACTION_CLASSES[action.kind]))
        if check_name and str(event.get("Name") or "").lower() != action.name.lower():
            raise NonDeterministicError(_other_name(what, event, task_id, action.name))
        del self.actions[task_id]

    def new_decisions(self) -> list[Decision]:
        return [self.actions[key] for key in sorted(self.actions)]


# DTFx's messages (TaskOrchestrationContext.Handle*Event), word for word.


def _missing(what: str, event: Event, task_id: int) -> str:
    name, version, target = event.get("Name"), event.get("Version") or "", event.get("InstanceId")
    if what == "timer":
        return (f"A previous execution of this orchestration scheduled a timer task with sequence number {task_id} but "
                f"the current replay execution hasn't (yet?) scheduled this task. {_CHANGED}")
    if what == "suborchestration":
        return (f"A previous execution of this orchestration scheduled a sub-orchestration task with sequence ID "
                f"{task_id} and name '{name}' (version '{version}', instance ID '{target}'), but the current replay "
                f"execution hasn't (yet?) scheduled this task. {_CHANGED}")
    if what == "send":
        return (f"A previous execution of this orchestration scheduled a send event task with sequence ID {task_id}, "
                f"type 'EventSent' name '{name}', instance ID '{target}', but the current replay execution hasn't "
                f"(yet?) scheduled this task. {_CHANGED}")
    return (f"A previous execution of this orchestration scheduled an activity task with sequence ID {task_id} and "
            f"name '{name}' (version '{version}'), but the current replay execution hasn't (yet?) scheduled this "
            f"task. {_CHANGED}")


def _other_kind(what: str, event: Event, task_id: int, produced: str) -> str:
    name, version, target = event.get("Name"), event.get("Version") or "", event.get("InstanceId")
    if what == "timer":
        return (f"A previous execution of this orchestration scheduled a timer task with sequence number {task_id} "
                f"named but the current orchestration replay instead produced a {produced} action with this sequence "
                f"number. {_CHANGED}")
    if what == "suborchestration":
        return (f"A previous execution of this orchestration scheduled a sub-orchestration task with sequence ID "
                f"{task_id} and name '{name}' (version '{version}', instance ID '{target}'), but the current "
                f"orchestration replay instead produced a {produced} action at this sequence number. {_CHANGED}")
    if what == "send":
        return (f"A previous execution of this orchestration scheduled a send event task with sequence ID {task_id}, "
                f"type 'EventSent', name '{name}', instance ID '{target}', but the current orchestration replay "
                f"instead scheduled a {produced} task at this sequence number. {_CHANGED}")
    return (f"A previous execution of this orchestration scheduled an activity task with sequence number {task_id} "
            f"named '{name}', but the current orchestration replay instead produced a {produced} action with this "
            f"sequence number. {_CHANGED}")


def _other_name(what: str, event: Event, task_id: int, produced: str) -> str:
    name, version, target = event.get("Name"), event.get("Version") or "", event.get("InstanceId")
    if what == "suborchestration":
        return (f"A previous execution of this orchestration scheduled a sub-orchestration task with sequence ID "
                f"{task_id} and name '{name}' (version '{version}', instance ID '{target}'), but the current "
                f"orchestration replay instead scheduled a sub-orchestration task with name {produced} at this "
                f"sequence number. {_CHANGED}")
    if what == "send":
        return (f"A previous execution of this orchestration scheduled a send event task with sequence ID {task_id}, "
                f"type 'EventSent', name '{name}', instance ID '{target}'), but the current orchestration replay "
                f"instead scheduled a send event task with name {produced}at this sequence number. {_CHANGED}")
    return (f"A previous execution of this orchestration scheduled an activity task with sequence number {task_id} "
            f"named '{name}', but the current orchestration replay instead scheduled an activity task named "
            f"'{produced}' with this sequence number.  {_CHANGED}")
