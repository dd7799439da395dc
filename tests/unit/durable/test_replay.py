"""Replay with the real SDK: sequence ids, completion rules and failures as DTFx and the extension
produce them (DurableTask.Core TaskOrchestrationContext, RetryInterceptor; OutOfProcOrchestrationShim)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import azure.durable_functions as df

from funchost.durable import history as h

from .driver import Driver


def chain(context: df.DurableOrchestrationContext) -> Any:
    first = yield context.call_activity("say_hello", "Tokyo")
    second = yield context.call_activity("say_hello", "Seattle")
    return [first, second]


def test_a_chain_schedules_one_activity_per_episode_and_completes_with_the_output() -> None:
    driver = Driver(chain, activities=("say_hello",))
    first = driver.start()
    assert driver.kinds(first) == ["OrchestratorStarted", "ExecutionStarted", "TaskScheduled", "OrchestratorCompleted"]
    scheduled = first.history[2]
    assert (scheduled["EventId"], scheduled["Name"], scheduled["Input"]) == (0, "say_hello", '["\\"Tokyo\\""]')
    assert [a.task_id for a in first.activities] == [0]
    driver.deliver(driver.completed(0, "Hello Tokyo!"))
    assert driver.scheduled(1)["Name"] == "say_hello" and driver.status == "Running"
    last = driver.deliver(driver.completed(1, "Hello Seattle!"))
    assert driver.kinds(last)[-2:] == ["ExecutionCompleted", "OrchestratorCompleted"]
    assert last.history[-2]["EventId"] == 2  # the completion takes the next sequence number, as DTFx's does
    assert driver.status == "Completed" and driver.output == ["Hello Tokyo!", "Hello Seattle!"]


def test_the_sdk_sees_past_events_as_played_and_the_new_episode_as_not() -> None:
    driver = Driver(chain, activities=("say_hello",))
    driver.start()
    driver.deliver(driver.completed(0, "a"))
    payload = driver.payloads[-1]
    flags = [(h.EventType(e["EventType"]).name, e["IsPlayed"]) for e in payload["history"]]
    assert flags[:4] == [("OrchestratorStarted", True), ("ExecutionStarted", True), ("TaskScheduled", True),
                         ("OrchestratorCompleted", True)]
    assert flags[4:] == [("OrchestratorStarted", False), ("TaskCompleted", False)]
    assert payload["isReplaying"] is True and payload["upperSchemaVersionNew"] == 2
    assert "maximumShortTimerDuration" not in payload  # no long-timer splitting on this task hub


def fan_out(context: df.DurableOrchestrationContext) -> Any:
    tasks = [context.call_activity("work", i) for i in range(3)]
    results = yield context.task_all(tasks)
    return sum(results)


def test_a_fan_out_schedules_every_child_in_one_episode_and_waits_for_all() -> None:
    driver = Driver(fan_out, activities=("work",))
    first = driver.start()
    assert [a.task_id for a in first.activities] == [0, 1, 2]
    driver.deliver(driver.completed(2, 20), driver.completed(0, 0))
    assert driver.status == "Running"
    driver.deliver(driver.completed(1, 10))
    assert driver.status == "Completed" and driver.output == 30


def test_a_duplicated_task_result_is_dropped_before_the_sdk_sees_it() -> None:
    driver = Driver(fan_out, activities=("work",))
    driver.start()
    driver.deliver(driver.completed(0, 1))
    commit = driver.deliver(driver.completed(0, 1), driver.completed(1, 2))
    assert driver.kinds(commit) == ["OrchestratorStarted", "TaskCompleted", "OrchestratorCompleted"]


def retrying(context: df.DurableOrchestrationContext) -> Any:
    options = df.RetryOptions(first_retry_interval_in_milliseconds=5000, max_number_of_attempts=2)
    try:
        return (yield context.call_activity_with_retry("flaky", options, "x"))
    except Exception as exc:
        return f"gave up: {str(exc).splitlines()[0]}"


def test_retries_put_a_timer_between_attempts_and_a_dummy_timer_after_the_last() -> None:
    driver = Driver(retrying, activities=("flaky",))
    driver.start()
    driver.deliver(driver.failed(0, "Activity function 'flaky' failed: ValueError: no"))
    timer = driver.scheduled(1)
    assert timer["EventType"] == h.EventType.TimerCreated
    assert h.parse_time(timer["FireAt"]) - h.parse_time(driver.history[-3]["Timestamp"]) == timedelta(seconds=5)
    driver.deliver(driver.fired(1))
    assert driver.scheduled(2)["Name"] == "flaky"
    driver.deliver(driver.failed(2, "Activity function 'flaky' failed: ValueError: again"))
    dummy = driver.scheduled(3)
    assert dummy["EventType"] == h.EventType.TimerCreated
    assert dummy["FireAt"] == dummy["Timestamp"]  # fires at once ("Dummy timer for back-compat")
    assert driver.status == "Running"
    driver.deliver(driver.fired(3))
    assert driver.status == "Completed"
    assert driver.output == "gave up: Activity function 'flaky' failed: ValueError: again "


def approval(context: df.DurableOrchestrationContext) -> Any:
    timeout = context.create_timer(context.current_utc_datetime + timedelta(days=3))
    approved = context.wait_for_external_event("Approval")
    winner = yield context.task_any([approved, timeout])
    if winner == approved:
        if context.get_input() == "cancel":
            timeout.cancel()
        return approved.result
    return "timed out"


def test_an_uncancelled_timer_keeps_a_finished_orchestrator_running_until_it_fires() -> None:
    driver = Driver(approval)
    driver.start("keep")
    driver.deliver(driver.raised("Approval", "yes"))
    assert driver.status == "Running" and driver.record.output is None
    driver.deliver(driver.fired(0))
    assert driver.status == "Completed" and driver.output == "yes"


def test_a_cancelled_timer_does_not_hold_the_orchestration() -> None:
    driver = Driver(approval)
    driver.start("cancel")
    driver.deliver(driver.raised("Approval", "yes"))
    assert driver.status == "Completed" and driver.output == "yes"


def test_an_event_raised_before_the_orchestrator_waits_is_buffered() -> None:
    driver = Driver(approval)
    started = h.execution_started(driver.now, instance_id="abc", execution_id="exec1", name="orch", version="",
                                  input_text=json.dumps(json.dumps("cancel")))
    driver.record = driver.record.__class__(**{**driver.record.__dict__, "input": started["Input"]})
    driver.deliver(started, driver.raised("Approval", "early"), execution_id=None)
    assert driver.status == "Completed" and driver.output == "early"


counter = {"calls": 0}


def changing(context: df.DurableOrchestrationContext) -> Any:
    counter["calls"] += 1
    name = "first" if counter["calls"] == 1 else "second"
    yield context.call_activity(name, 1)
    yield context.call_activity("first", 2)
    return "done"


def test_a_replay_that_schedules_something_else_fails_with_the_non_determinism_message() -> None:
    counter["calls"] = 0
    driver = Driver(changing, activities=("first", "second"))
    driver.start()
    commit = driver.deliver(driver.completed(0, None))
    assert driver.status == "Failed"
    assert driver.record.output == (
        "Non-Deterministic workflow detected: A previous execution of this orchestration scheduled an activity "
        "task with sequence number 0 named 'first', but the current orchestration replay instead scheduled an "
        "activity task named 'second' with this sequence number.  Was a change made to the orchestrator code "
        "after this instance had already started running?")
    assert driver.kinds(commit)[-2] == "ExecutionCompleted"


def shrinking(context: df.DurableOrchestrationContext) -> Any:
    counter["calls"] += 1
    if counter["calls"] == 1:
        yield context.call_activity("first", 1)
    timer = yield context.create_timer(context.current_utc_datetime)
    return timer


def test_a_replay_that_no_longer_schedules_a_recorded_task_fails() -> None:
    counter["calls"] = 0
    driver = Driver(shrinking, activities=("first",))
    driver.start()
    driver.deliver(driver.completed(0, None))
    assert driver.status == "Failed"
    assert driver.record.output.startswith(
        "Non-Deterministic workflow detected: A previous execution of this orchestration scheduled an activity "
        "task with sequence number 0 named 'first', but the current orchestration replay instead produced a "
        "CreateTimerOrchestratorAction action with this sequence number.")


def calls_unknown(context: df.DurableOrchestrationContext) -> Any:
    yield context.call_activity("missing", 1)


def test_an_unknown_activity_fails_the_orchestration_with_the_extension_message() -> None:
    driver = Driver(calls_unknown, activities=("a", "b"))
    commit = driver.start()
    assert driver.status == "Failed" and not commit.activities
    assert driver.record.output == (
        "Orchestrator function 'orch' failed: The function 'missing' doesn't exist, is disabled, or is not an "
        "activity function. Additional info: The following are the known activity functions: 'a', 'b'.")


def raising(context: df.DurableOrchestrationContext) -> Any:
    yield context.call_activity("a", 1)
    raise ValueError("the input is wrong")


def test_an_orchestrator_exception_fails_with_its_message() -> None:
    driver = Driver(raising, activities=("a",))
    driver.start()
    commit = driver.deliver(driver.completed(0, 1))
    assert driver.status == "Failed"
    assert driver.record.output == "Orchestrator function 'orch' failed: the input is wrong"
    completed = commit.history[-2]
    assert completed["OrchestrationStatus"] == h.OrchestrationStatus.Failed


def looping(context: df.DurableOrchestrationContext) -> Any:
    n = context.get_input()
    yield context.call_activity("a", n)
    context.continue_as_new(n + 1)


def test_continue_as_new_starts_a_new_execution_with_the_new_input_and_carries_late_events() -> None:
    driver = Driver(looping, activities=("a",))
    driver.start(1)
    commit = driver.deliver(driver.completed(0, None), driver.raised("late", 7))
    assert commit.reset_history and commit.update.status == "ContinuedAsNew"
    restarted, carried = commit.messages
    assert restarted.event["EventType"] == h.EventType.ExecutionStarted
    assert json.loads(json.loads(restarted.event["Input"])) == 2
    assert restarted.execution_id == commit.update.execution_id != "exec1"
    assert carried.event["Name"] == "late"


def sub(context: df.DurableOrchestrationContext) -> Any:
    result = yield context.call_sub_orchestrator("child", "x")
    return result


def test_a_sub_orchestration_gets_the_execution_and_sequence_as_its_id() -> None:
    driver = Driver(sub, orchestrators=("child",))
    commit = driver.start()
    (child,) = commit.instances
    assert child.instance_id == "exec1:0" and child.name == "child"
    assert child.started["ParentInstance"]["TaskScheduleId"] == 0
    assert json.loads(json.loads(child.input)) == "x"
    driver.deliver(h.sub_orchestration_completed(driver.now, 0, json.dumps("y")))
    assert driver.output == "y"


def entity_user(context: df.DurableOrchestrationContext) -> Any:
    entity = df.EntityId("Counter", "k")
    context.signal_entity(entity, "add", 1)
    value = yield context.call_entity(entity, "get")
    return value


def test_entity_calls_send_request_messages_and_wait_for_the_response_event() -> None:
    driver = Driver(entity_user, entities=("counter",))
    commit = driver.start()
    signal, call = commit.messages
    assert signal.instance_id == call.instance_id == "@counter@k"
    request = json.loads(call.event["Input"])
    assert request["op"] == "get" and "signal" not in request and request["parent"] == "abc"
    assert json.loads(signal.event["Input"])["signal"] is True
    assert [e["Name"] for e in commit.history if e["EventType"] == h.EventType.EventSent] == ["op", "op"]
    response = h.event_raised(driver.now, request["id"], json.dumps({"result": "5"}))
    driver.deliver(response)
    assert driver.status == "Completed" and driver.output == 5


def status_setter(context: df.DurableOrchestrationContext) -> Any:
    context.set_custom_status({"stage": "waiting"})
    yield context.wait_for_external_event("go")
    return None


def test_custom_status_is_stored_compact_and_a_none_output_is_null() -> None:
    driver = Driver(status_setter)
    driver.start()
    assert driver.record.custom_status == '{"stage":"waiting"}'
    driver.deliver(driver.raised("go", 1))
    assert driver.status == "Completed" and driver.record.output is None


def too_many(context: df.DurableOrchestrationContext) -> Any:
    yield context.task_all([context.call_activity("a", i) for i in range(3)])


def test_max_orchestration_actions_is_enforced_once_the_scheduled_tasks_are_done() -> None:
    driver = Driver(too_many, activities=("a",), max_actions=2)
    first = driver.start()
    assert [a.task_id for a in first.activities] == [0, 1] and driver.status == "Running"
    driver.deliver(driver.completed(0, None), driver.completed(1, None))
    assert driver.status == "Failed"
    assert "Maximum amount of orchestration actions (2) has been reached." in driver.record.output
