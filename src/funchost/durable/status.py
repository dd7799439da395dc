"""Status JSON as the management API returns it (StatusResponsePayload, DurableClient.GetStatusAsync).

``input``, ``output`` and ``customStatus`` are the stored texts parsed as JSON (an unparsable
text, such as a terminate reason or a failure message, is returned as a string). Times have
second precision. With ``showHistory`` the current execution's history follows, reshaped as the
extension reshapes it: event types by name, no EventId / IsPlayed, no OrchestratorStarted /
OrchestratorCompleted, and each TaskScheduled / SubOrchestrationInstanceCreated folded into its
completion as ``FunctionName`` + ``ScheduledTime`` (+ ``Input``).
"""

from __future__ import annotations

import json
from typing import Any

from funchost.durable import history as h
from funchost.storage.durable import InstanceRecord

Event = dict[str, Any]


def parse_token(text: str | None) -> Any:
    """DurableClient.ParseToJToken."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return ""
    try:
        return json.loads(text)
    except ValueError:
        return text


def status_payload(record: InstanceRecord, history: list[Event] | None = None, *, show_input: bool = True,
                   show_history_output: bool = False) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "name": record.name,
        "instanceId": record.instance_id,
        "runtimeStatus": record.status,
        "input": parse_token(record.input) if show_input else None,
        "customStatus": parse_token(record.custom_status),
        "output": parse_token(record.output),
        "createdTime": h.status_time(record.created_time),
        "lastUpdatedTime": h.status_time(record.last_updated_time),
    }
    if history is not None and record.status != "Pending":
        payload["historyEvents"] = history_payload(history, show_input=show_input,
                                                   show_history_output=show_history_output)
    return payload


def history_payload(events: list[Event], *, show_input: bool, show_history_output: bool) -> list[Event]:
    items = [dict(event) for event in events]
    scheduled: dict[str, tuple[int, Event]] = {}
    dropped: set[int] = set()
    for index, item in enumerate(items):
        kind = h.event_type(item)
        item["EventType"] = kind.name
        if kind in (h.EventType.TaskScheduled, h.EventType.SubOrchestrationInstanceCreated):
            scheduled[f"{kind.name}_{item.get('EventId')}"] = (index, dict(item))
            item.pop("Version", None)
        elif kind in (h.EventType.TaskCompleted, h.EventType.TaskFailed,
                      h.EventType.SubOrchestrationInstanceCompleted, h.EventType.SubOrchestrationInstanceFailed):
            prefix = "TaskScheduled" if kind in (h.EventType.TaskCompleted, h.EventType.TaskFailed) \
                else "SubOrchestrationInstanceCreated"
            found = scheduled.get(f"{prefix}_{item.get('TaskScheduledId')}")
            if found is not None:
                source_index, source = found
                item["ScheduledTime"] = source.get("Timestamp")
                item["FunctionName"] = source.get("Name")
                if show_input:
                    item["Input"] = source.get("Input")
                dropped.add(source_index)
            item.pop("TaskScheduledId", None)
            completed = kind in (h.EventType.TaskCompleted, h.EventType.SubOrchestrationInstanceCompleted)
            if completed and not show_history_output:
                item.pop("Result", None)
            elif completed:
                item["Result"] = parse_token(item.get("Result"))
        elif kind is h.EventType.ExecutionStarted:
            item["FunctionName"] = item.pop("Name", None)
            for key in ("OrchestrationInstance", "ParentInstance", "Version", "Tags"):
                item.pop(key, None)
        elif kind in (h.EventType.ExecutionCompleted, h.EventType.ContinueAsNew):
            status = item.get("OrchestrationStatus")
            if isinstance(status, int):
                item["OrchestrationStatus"] = h.OrchestrationStatus(status).name
            if not show_history_output:
                item.pop("Result", None)
            else:
                item["Result"] = parse_token(item.get("Result"))
        elif kind is h.EventType.TimerFired:
            item.pop("TimerId", None)
        elif kind in (h.EventType.OrchestratorStarted, h.EventType.OrchestratorCompleted):
            dropped.add(index)
        if not show_input:
            item.pop("Input", None)
        item.pop("EventId", None)
        item.pop("IsPlayed", None)
    return [item for index, item in enumerate(items) if index not in dropped]
