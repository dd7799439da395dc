"""History events as the Durable Task Framework serialises them, the shape the Python SDK replays.

Each event is a JSON object with PascalCase keys (Newtonsoft's default for the DTFx classes):
``EventType`` as an integer, ``EventId`` (-1 unless the event schedules something), ``IsPlayed``
and an ISO 8601 ``Timestamp`` ending in ``Z`` (the SDK parses it with dateutil and needs the zone
to make ``current_utc_datetime`` aware). Events are stored exactly as built here, so a replay
sees byte for byte what the previous episode produced.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from enum import IntEnum
from typing import Any

Event = dict[str, Any]


class EventType(IntEnum):
    """DurableTask.Core ``EventType`` (History/EventType.cs)."""

    ExecutionStarted = 0
    ExecutionCompleted = 1
    ExecutionFailed = 2
    ExecutionTerminated = 3
    TaskScheduled = 4
    TaskCompleted = 5
    TaskFailed = 6
    SubOrchestrationInstanceCreated = 7
    SubOrchestrationInstanceCompleted = 8
    SubOrchestrationInstanceFailed = 9
    TimerCreated = 10
    TimerFired = 11
    OrchestratorStarted = 12
    OrchestratorCompleted = 13
    EventSent = 14
    EventRaised = 15
    ContinueAsNew = 16
    GenericEvent = 17
    HistoryState = 18
    ExecutionSuspended = 19
    ExecutionResumed = 20


class OrchestrationStatus(IntEnum):
    """DurableTask.Core ``OrchestrationStatus``; names are the runtime statuses of the HTTP API."""

    Running = 0
    Completed = 1
    ContinuedAsNew = 2
    Failed = 3
    Canceled = 4
    Terminated = 5
    Pending = 6
    Suspended = 7


_EVENT_TYPES: dict[object, EventType] = {member.value: member for member in EventType}


# -- time ---------------------------------------------------------------------------------------

_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?(Z|[+-]\d{2}:\d{2})?$")


def format_time(value: datetime) -> str:
    """Newtonsoft's round-trip format: up to 7 fraction digits, trailing zeros dropped, ``Z``."""
    value = value.astimezone(timezone.utc)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{value.microsecond:06d}0".rstrip("0")
    return f"{text}.{fraction}Z" if fraction else f"{text}Z"


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as .NET's ``DateTime`` reads it (a missing zone means UTC here)."""
    match = _ISO.match(text.strip())
    if match is None:
        raise ValueError(f"'{text}' is not an ISO 8601 date and time")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0").ljust(7, "0")[:6])
    parsed = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro,
                      tzinfo=timezone.utc)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
        parsed = datetime.fromtimestamp(parsed.timestamp() - offset, timezone.utc)
    return parsed


def status_time(value: datetime) -> str:
    """``DateTime.ToString("s") + "Z"``: the management API's second-precision times."""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- events -------------------------------------------------------------------------------------


def _event(event_type: EventType, timestamp: datetime, event_id: int = -1, **fields: Any) -> Event:
    event: Event = {"EventType": int(event_type), "EventId": event_id, "IsPlayed": False,
                    "Timestamp": format_time(timestamp)}
    event.update(fields)
    return event


def orchestrator_started(now: datetime) -> Event:
    return _event(EventType.OrchestratorStarted, now)


def orchestrator_completed(now: datetime) -> Event:
    return _event(EventType.OrchestratorCompleted, now)


def execution_started(now: datetime, *, instance_id: str, execution_id: str, name: str, version: str,
                      input_text: str | None, parent: dict[str, Any] | None = None) -> Event:
    """`input_text` is the stored input (JSON text, or None). `Version` must be present: the SDK
    reads it unconditionally."""
    return _event(EventType.ExecutionStarted, now,
                  OrchestrationInstance={"InstanceId": instance_id, "ExecutionId": execution_id},
                  ParentInstance=parent, Name=name, Version=version, Input=input_text, Tags=None,
                  Correlation=None, ScheduledStartTime=None, Generation=0)


def parent_instance(name: str, version: str, task_id: int, instance_id: str, execution_id: str) -> dict[str, Any]:
    return {"Name": name, "Version": version, "TaskScheduleId": task_id,
            "OrchestrationInstance": {"InstanceId": instance_id, "ExecutionId": execution_id}}


def execution_completed(now: datetime, status: OrchestrationStatus, result: str | None,
                        event_id: int = -1) -> Event:
    kind = EventType.ContinueAsNew if status is OrchestrationStatus.ContinuedAsNew else EventType.ExecutionCompleted
    return _event(kind, now, event_id, OrchestrationStatus=int(status), Result=result, FailureDetails=None)


def execution_terminated(now: datetime, reason: str | None) -> Event:
    return _event(EventType.ExecutionTerminated, now, Input=reason)


def execution_suspended(now: datetime, reason: str | None) -> Event:
    return _event(EventType.ExecutionSuspended, now, Reason=reason)


def execution_resumed(now: datetime, reason: str | None) -> Event:
    return _event(EventType.ExecutionResumed, now, Reason=reason)


def task_scheduled(now: datetime, task_id: int, name: str, input_text: str | None) -> Event:
    return _event(EventType.TaskScheduled, now, task_id, Name=name, Version="", Input=input_text)


def task_completed(now: datetime, task_id: int, result: str | None) -> Event:
    return _event(EventType.TaskCompleted, now, TaskScheduledId=task_id, Result=result)


def task_failed(now: datetime, task_id: int, reason: str, details: str | None) -> Event:
    return _event(EventType.TaskFailed, now, TaskScheduledId=task_id, Reason=reason, Details=details,
                  FailureDetails=None)


def sub_orchestration_created(now: datetime, task_id: int, name: str, instance_id: str,
                              input_text: str | None) -> Event:
    return _event(EventType.SubOrchestrationInstanceCreated, now, task_id, Name=name, Version="",
                  InstanceId=instance_id, Input=input_text)


def sub_orchestration_completed(now: datetime, task_id: int, result: str | None) -> Event:
    return _event(EventType.SubOrchestrationInstanceCompleted, now, TaskScheduledId=task_id, Result=result)


def sub_orchestration_failed(now: datetime, task_id: int, reason: str, details: str | None) -> Event:
    return _event(EventType.SubOrchestrationInstanceFailed, now, TaskScheduledId=task_id, Reason=reason,
                  Details=details, FailureDetails=None)


def timer_created(now: datetime, task_id: int, fire_at: datetime) -> Event:
    return _event(EventType.TimerCreated, now, task_id, FireAt=format_time(fire_at))


def timer_fired(now: datetime, timer_id: int, fire_at: datetime) -> Event:
    return _event(EventType.TimerFired, now, TimerId=timer_id, FireAt=format_time(fire_at))


def event_sent(now: datetime, task_id: int, instance_id: str, name: str, input_text: str | None) -> Event:
    return _event(EventType.EventSent, now, task_id, InstanceId=instance_id, Name=name, Input=input_text)


def event_raised(now: datetime, name: str, input_text: str | None) -> Event:
    return _event(EventType.EventRaised, now, Name=name, Input=input_text)


def event_type(event: Event) -> EventType:
    kind = event["EventType"]
    found = _EVENT_TYPES.get(kind)  # every replay reads every event's type: a lookup, not an enum call
    return found if found is not None else EventType(int(kind))


def played(events: list[Event]) -> list[Event]:
    """Copies marked as played: what a later episode replays."""
    return [{**event, "IsPlayed": True} for event in events]
