"""The Durable SDK's executor with its namedtuple class made once: the same class each episode,
the same fields and module as the SDK's own, and orchestrations replay exactly as before."""

from __future__ import annotations

import collections
import importlib
import json

import azure.durable_functions as df

from funchost.durable.sdk_executor import install, made_once

MODULE = "azure.durable_functions.models.TaskOrchestrationExecutor"


def test_a_class_is_made_once_per_name_and_fields_and_looks_like_the_sdks() -> None:
    calls: list[str] = []

    def counting(typename: str, field_names: object, **options: object) -> type:
        calls.append(typename)
        return collections.namedtuple(typename, field_names, **options)  # type: ignore[call-overload,no-any-return]

    namedtuple = made_once(counting, MODULE)
    first = namedtuple("SetTaskValuePayload", ("is_success", "task_id_key"))
    assert namedtuple("SetTaskValuePayload", ["is_success", "task_id_key"]) is first
    assert namedtuple("SetTaskValuePayload", "is_success task_id_key") is first
    assert namedtuple("Other", ("is_success", "task_id_key")) is not first
    assert namedtuple("SetTaskValuePayload", ("is_success",)) is not first
    assert calls == ["SetTaskValuePayload", "Other", "SetTaskValuePayload"]
    assert first._fields == ("is_success", "task_id_key") and first.__module__ == MODULE
    assert first(True, "TimerId") == (True, "TimerId")
    with_defaults = namedtuple("SetTaskValuePayload", ("a",), defaults=(1,))  # options: made as asked, each time
    assert with_defaults() == (1,) and namedtuple("SetTaskValuePayload", ("a",), defaults=(1,)) is not with_defaults


def _history(result: object) -> str:
    started = {"EventType": 12, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-12-04T06:49:13.25Z"}
    execution = {"EventType": 0, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-12-04T06:49:13.25Z",
                 "Name": "one", "Input": None, "Version": ""}
    scheduled = {"EventType": 4, "EventId": 0, "IsPlayed": False, "Timestamp": "2026-12-04T06:49:13.3Z",
                 "Name": "noop"}
    completed = {"EventType": 5, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-12-04T06:49:13.4Z",
                 "TaskScheduledId": 0, "Result": json.dumps(result)}
    return json.dumps({"history": [started, execution, scheduled, started, completed], "instanceId": "i",
                       "isReplaying": False, "parentInstanceId": None, "input": None})


def test_install_rebinds_once_and_orchestrations_replay_as_before() -> None:
    module = importlib.import_module(MODULE)
    before = module.namedtuple  # a host started earlier in this process may have installed it
    original = getattr(before, "original", before)

    def one(context: df.DurableOrchestrationContext):  # type: ignore[no-untyped-def]
        return (yield context.call_activity("noop", 1))

    handle = df.Orchestrator.create(one)
    module.namedtuple = original
    try:
        expected = [json.loads(handle(_history(value))) for value in (7, "x")]
        install()
        install()
        assert module.namedtuple is not original and module.namedtuple.original is original
        assert [json.loads(handle(_history(value))) for value in (7, "x")] == expected
        assert expected[0]["isDone"] and expected[0]["output"] == 7 and expected[1]["output"] == "x"
        executors = [module.TaskOrchestrationExecutor() for _ in range(2)]
        payloads = [next(iter(e.event_to_SetTaskValuePayload.values())) for e in executors]
        assert type(payloads[0]) is type(payloads[1])  # one class for every episode
    finally:
        module.namedtuple = before
