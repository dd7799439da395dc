"""Payload encodings, result parsing, status reshaping and host.json `extensions.durableTask`."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from azure.functions.meta import Datum

from funchost.durable import history as h
from funchost.durable import protocol
from funchost.durable.options import parse, resolved_hub_name
from funchost.durable.status import history_payload
from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader


def test_activity_input_is_the_json_text_the_orchestrator_sent() -> None:
    datum = protocol.activity_datum('["\\"Tokyo\\""]')
    assert (datum.type, datum.value) == ("json", '"Tokyo"')
    assert protocol.activity_datum(None).value == "null"


def test_activity_results_are_stored_as_compact_json() -> None:
    assert protocol.activity_result(Datum('{"a": [1, 2]}', "json")) == '{"a":[1,2]}'
    assert protocol.activity_result(None) == "null"


def test_an_activity_failure_reads_as_the_extension_reports_it() -> None:
    try:
        raise ValueError("bad city")
    except ValueError as exc:
        reason, details = protocol.activity_failure("say_hello", exc)
    assert reason == "Activity function 'say_hello' failed: ValueError: bad city"
    parsed = json.loads(details)
    assert parsed["ClassName"] == "System.Exception" and parsed["Message"] == "ValueError: bad city"
    inner = parsed["InnerException"]["Message"]
    assert inner.startswith("Result: Failure\nException: ValueError: bad city\nStack: Traceback")
    assert "funchost" not in inner.split("Stack:", 1)[1].replace("test_protocol", "")


def test_the_orchestrator_state_is_read_from_a_result_or_from_a_failure() -> None:
    state = {"isDone": True, "actions": [[]], "output": 1, "schemaVersion": 2}
    assert protocol.orchestrator_result(Datum(json.dumps(state), "json"), None).state == state
    failure = Exception("boom\n\n$OutOfProcData$:" + json.dumps({**state, "error": "boom"}))
    assert protocol.orchestrator_result(None, failure).state == {**state, "error": "boom"}
    bare = protocol.orchestrator_result(None, RuntimeError("no state"))
    assert bare.state is None and bare.error is not None
    assert bare.error.startswith("One or more errors occurred. (Result: Failure\nException: RuntimeError: no state\n"
                                 "Stack: Traceback") and bare.error.endswith(")")
    invalid = protocol.orchestrator_result(Datum("not json", "json"), None)
    assert invalid.error == "Out of proc orchestrators must return a valid JSON schema"


def test_the_orchestrator_payload_carries_the_stored_input_as_a_json_token() -> None:
    payload = json.loads(protocol.orchestrator_payload([], instance_id="i", input_text='"\\"Tokyo\\""',
                                                       parent_instance_id="p", http_sleep_ms=5))
    assert payload["input"] == '"Tokyo"' and payload["parentInstanceId"] == "p"
    assert (payload["upperSchemaVersion"], payload["upperSchemaVersionNew"]) == (1, 2)
    assert payload["defaultHttpAsyncRequestSleepTimeMillseconds"] == 5


def test_times_use_newtonsoft_round_trip_format() -> None:
    moment = h.parse_time("2024-05-01T10:00:00.1234567Z")
    assert h.format_time(moment) == "2024-05-01T10:00:00.123456Z"
    assert h.format_time(h.parse_time("2024-05-01T10:00:00Z")) == "2024-05-01T10:00:00Z"
    assert h.status_time(moment) == "2024-05-01T10:00:00Z"
    assert h.parse_time("2024-05-01T12:00:00+02:00") == h.parse_time("2024-05-01T10:00:00Z")
    with pytest.raises(ValueError):
        h.parse_time("yesterday")


def test_history_is_reshaped_as_the_status_api_shows_it() -> None:
    now = h.parse_time("2024-05-01T10:00:00Z")
    events = [h.orchestrator_started(now),
              h.execution_started(now, instance_id="i", execution_id="e", name="orch", version="", input_text='"x"'),
              h.task_scheduled(now, 0, "act", '["1"]'), h.orchestrator_completed(now), h.orchestrator_started(now),
              h.task_completed(now, 0, '"r"'), h.timer_created(now, 1, now), h.timer_fired(now, 1, now),
              h.execution_completed(now, h.OrchestrationStatus.Completed, '"done"', 2), h.orchestrator_completed(now)]
    shaped = history_payload(events, show_input=True, show_history_output=True)
    assert [e["EventType"] for e in shaped] == ["ExecutionStarted", "TaskCompleted", "TimerCreated", "TimerFired",
                                                "ExecutionCompleted"]
    completed = shaped[1]
    assert (completed["FunctionName"], completed["Result"], completed["Input"]) == ("act", "r", '["1"]')
    assert "TaskScheduledId" not in completed and "EventId" not in completed and "IsPlayed" not in completed
    assert shaped[0]["FunctionName"] == "orch" and "OrchestrationInstance" not in shaped[0]
    assert shaped[4]["OrchestrationStatus"] == "Completed" and shaped[4]["Result"] == "done"
    assert "TimerId" not in shaped[3]
    quiet = history_payload(events, show_input=False, show_history_output=False)
    assert "Result" not in quiet[1] and "Input" not in quiet[1] and "Input" not in quiet[0]


def options(raw: dict[str, Any]) -> Any:
    reader = SectionReader(raw, "host.json: extensions.durableTask")
    parsed = parse(reader)
    reader.finish()
    return parsed


def test_durable_task_settings_that_apply_locally_are_read() -> None:
    parsed = options({"hubName": "MyHub", "maxConcurrentActivityFunctions": 3, "maxConcurrentOrchestratorFunctions": 2,
                      "maxEntityOperationBatchSize": 7, "overridableExistingInstanceStates": "anystate",
                      "storeInputsInOrchestrationHistory": True, "defaultVersion": "1.0",
                      "storageProvider": {"controlQueueVisibilityTimeout": "00:00:10",
                                          "workItemQueueVisibilityTimeout": "00:00:20"}})
    assert (parsed.hub_name, parsed.max_concurrent_activities, parsed.max_concurrent_orchestrations) == ("MyHub", 3, 2)
    assert parsed.max_entity_batch_size == 7 and parsed.overridable_states == "AnyState"
    assert parsed.store_inputs_in_history and parsed.default_version == "1.0"
    assert (parsed.orchestration_lease, parsed.activity_lease) == (10.0, 20.0)


def test_azure_only_settings_are_warned_once_and_bad_values_name_their_key(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="funchost.durable"):
        options({"extendedSessionsEnabled": True, "storageProvider": {"partitionCount": 4}})
    warned = [r.getMessage() for r in caplog.records]
    assert any("extensions.durableTask.extendedSessionsEnabled" in m for m in warned)
    assert any("storageProvider.partitionCount" in m for m in warned)
    with pytest.raises(ConfigError, match="MaxConcurrentActivityFunctions must be a positive integer value."):
        options({"maxConcurrentActivityFunctions": 0})
    with pytest.raises(ConfigError, match="A non-empty HubName configuration is required."):
        options({"hubName": " "})
    with pytest.raises(ConfigError, match="unknown key"):
        options({"hubname2": "x"})


def test_hub_names_resolve_settings_and_follow_the_storage_rules() -> None:
    parsed = options({"hubName": "%HUB%"})
    assert resolved_hub_name(parsed, lambda value: "Resolved1") == "Resolved1"
    with pytest.raises(ConfigError, match="should contain only alphanumeric characters"):
        resolved_hub_name(options({"hubName": "my-hub"}), None)
