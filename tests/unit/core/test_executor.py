"""The executor: threads vs loop, context, return-value rules, Out, timeout, retry policies."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from azure.functions.meta import Datum

from funchost.errors import FunctionTimeoutError, InvocationError
from funchost.invocation.context import InvocationInfo, current_invocation
from funchost.invocation.contracts import InvocationRequest
from funchost.logs import CategoryFilter, TextFormatter, category_of
from funchost.runtime import registry
from funchost.testing import HostHarness, write_app

TIMER = Datum(json.dumps({"Schedule": {"AdjustForDST": True}, "ScheduleStatus": None, "IsPastDue": False}), "json")
NEVER = "0 0 0 1 1 *"  # once a year: the timer listener stays out of the way


def timer_request(host: HostHarness, name: str) -> InvocationRequest:
    return InvocationRequest(function=host.runtime.functions[name], trigger_value=TIMER, reason="test")


async def start(tmp_path: Path, code: str, **host_json: object) -> HostHarness:
    write_app(tmp_path / "app", code, host_json={"version": "2.0", **host_json})
    return await HostHarness(tmp_path / "app", data_dir=tmp_path / "data").start()


APP = f"""
import asyncio, threading, logging
import azure.functions as func
app = func.FunctionApp()
seen = {{}}

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
def sync_fn(t: func.TimerRequest, context: func.Context) -> None:
    seen["sync"] = (threading.current_thread().name, context.invocation_id, context.function_name,
                    context.function_directory, context.thread_local_storage.invocation_id, t.past_due)

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
async def async_fn(t: func.TimerRequest, context: func.Context) -> None:
    seen["async"] = (threading.current_thread().name, context.invocation_id)

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
def returns_value(t: func.TimerRequest):
    return "surprise"

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
async def hangs(t: func.TimerRequest) -> None:
    await asyncio.Event().wait()

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
def logs_something(t: func.TimerRequest) -> None:
    logging.getLogger("user").warning("hello from the function")
"""


async def test_sync_in_pool_async_on_loop_and_context(tmp_path: Path) -> None:
    host = await start(tmp_path, APP)
    try:
        import function_app  # the module the host imported

        sync_request = timer_request(host, "sync_fn")
        result = await host.runtime.invoker.invoke(sync_request)
        assert result.succeeded, result.error
        thread, inv_id, name, directory, tls_id, past_due = function_app.seen["sync"]
        assert thread.startswith("function")
        assert inv_id == sync_request.invocation_id == tls_id
        assert name == "sync_fn" and directory == str((tmp_path / "app").resolve())
        assert past_due is False
        result = await host.runtime.invoker.invoke(timer_request(host, "async_fn"))
        assert result.succeeded
        assert function_app.seen["async"][0] == "MainThread"
    finally:
        await host.stop()


GENERIC_BINDING_APP = f"""
import azure.functions as func
app = func.FunctionApp()

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
@app.generic_input_binding(arg_name="row", type="probeStore")
def returns_through_generic(t: func.TimerRequest, row):
    return VALUE

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
@app.generic_input_binding(arg_name="row", type="probeStore")
def returns_unencodable(t: func.TimerRequest, row):
    return object()
"""


@pytest.mark.parametrize("value", ['"hi!"', 'b"bytes"', '{"hello": "world"}', "[1, 2, 3]", "12", "12.34", "True"])
async def test_a_binding_without_a_library_converter_takes_the_return_value(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    # The worker's generic_functions app: timer functions with a generic input binding return
    # values and no $return binding. A type the library has no converter for is the worker's
    # GenericBinding, which has an implicit output: the value is encoded, the call succeeds.
    monkeypatch.setitem(registry.BINDING_MODULES, "probeStore", "tests.unit.core.generic_binding_probe")
    host = await start(tmp_path, GENERIC_BINDING_APP.replace("VALUE", value))
    try:
        result = await host.runtime.invoker.invoke(timer_request(host, "returns_through_generic"))
        assert result.succeeded, result.error
        unencodable = await host.runtime.invoker.invoke(timer_request(host, "returns_unencodable"))
        assert not unencodable.succeeded and isinstance(unencodable.error, InvocationError)
    finally:
        await host.stop()


async def test_non_none_return_without_return_binding_fails(tmp_path: Path) -> None:
    host = await start(tmp_path, APP)
    try:
        result = await host.runtime.invoker.invoke(timer_request(host, "returns_value"))
        assert not result.succeeded
        assert isinstance(result.error, InvocationError)
        assert "without a $return binding returned a non-None value" in str(result.error)
    finally:
        await host.stop()


async def test_function_timeout_is_enforced_on_the_clock(tmp_path: Path) -> None:
    host = await start(tmp_path, APP, functionTimeout="00:00:05")
    try:
        task = asyncio.create_task(host.runtime.invoker.invoke(timer_request(host, "hangs")))
        await host.advance(4)
        assert not task.done()
        await host.advance(1)
        result = await asyncio.wait_for(task, 5)
        assert isinstance(result.error, FunctionTimeoutError)
        assert "Timeout value of 00:00:05 was exceeded by function: Functions.hangs" in str(result.error)
    finally:
        await host.stop()


def test_user_log_records_are_tagged_with_the_invocation() -> None:
    record = logging.LogRecord("user", logging.WARNING, __file__, 1, "hello", None, None)
    token = current_invocation.set(InvocationInfo("abc-123", "work"))
    try:
        assert CategoryFilter({"default": "Information"}).filter(record)
    finally:
        current_invocation.reset(token)
    assert record.category == "Function.work.User"
    assert record.invocation_id == "abc-123"
    assert "[Functions.work Id=abc-123] hello" in TextFormatter().format(record)


def test_host_categories_are_kept_and_funchost_loggers_are_mapped() -> None:
    cosmos = logging.LogRecord("Host.Triggers.CosmosDB", logging.INFO, __file__, 1, "lease", None, None)
    startup = logging.LogRecord("funchost.startup", logging.ERROR, __file__, 1, "in error", None, None)
    assert category_of(cosmos) == "Host.Triggers.CosmosDB"  # not Host.Host.Triggers.CosmosDB
    assert category_of(startup) == "Host.Startup"


def test_log_levels_follow_the_most_specific_category() -> None:
    levels = CategoryFilter({"default": "Warning", "Function.work": "Debug", "Function.work.User": "Error"})
    assert levels.threshold("Function.work.User") == logging.ERROR
    assert levels.threshold("Function.work") == logging.DEBUG
    assert levels.threshold("Function.other.User") == logging.WARNING


RETRY_APP = f"""
import azure.functions as func
app = func.FunctionApp()
calls = []

def record(context, clock_now):
    rc = context.retry_context
    calls.append((rc.retry_count, rc.max_retry_count,
                  rc.rpc_exception.message if rc.rpc_exception else None, clock_now()))

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
@app.retry(strategy="fixed_delay", max_retry_count="2", delay_interval="00:00:10")
def fixed(t: func.TimerRequest, context: func.Context) -> None:
    record(context, app.clock_now)
    raise ValueError(f"attempt {{len(calls)}} failed")

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
@app.retry(strategy="exponential_backoff", max_retry_count="4",
           minimum_interval="00:00:04", maximum_interval="00:00:20")
def exponential(t: func.TimerRequest, context: func.Context) -> None:
    record(context, app.clock_now)
    raise ValueError("nope")

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
@app.retry(strategy="fixed_delay", max_retry_count="-1", delay_interval="00:01:00")
def forever(t: func.TimerRequest, context: func.Context) -> None:
    record(context, app.clock_now)
    if len(calls) < 6:
        raise RuntimeError("not yet")
"""


async def _run_with_retries(tmp_path: Path, name: str, advance: float) -> tuple[object, list]:
    host = await start(tmp_path, RETRY_APP)
    try:
        import function_app

        function_app.app.clock_now = host.clock.monotonic
        task = asyncio.create_task(host.runtime.invoker.invoke(timer_request(host, name)))
        await host.advance(advance)
        result = await asyncio.wait_for(task, 5)
        return result, list(function_app.calls)
    finally:
        await host.stop()


async def test_fixed_delay_retries_with_retry_context(tmp_path: Path) -> None:
    result, calls = await _run_with_retries(tmp_path, "fixed", 100)
    assert not result.succeeded and result.attempts == 3  # 1 + max_retry_count
    assert [(c[0], c[1]) for c in calls] == [(0, 2), (1, 2), (2, 2)]
    assert calls[0][2] == ""  # no previous failure: the protobuf default, an empty RpcException
    assert calls[1][2] == "ValueError: attempt 1 failed"
    assert calls[2][2] == "ValueError: attempt 2 failed"
    assert [c[3] for c in calls] == [0, 10, 20]


async def test_exponential_backoff_delays_within_random_bounds(tmp_path: Path) -> None:
    result, calls = await _run_with_retries(tmp_path, "exponential", 1000)
    assert result.attempts == 5
    times = [c[3] for c in calls]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps[0] == pytest.approx(4)  # retry 1 = minimum
    assert 4 + 0.8 * 4 <= gaps[1] < 4 + 1.2 * 4  # min + r*2^0*min
    assert 4 + 0.8 * 8 <= gaps[2] < 4 + 1.2 * 8  # min + r*2^1*min
    assert gaps[3] == pytest.approx(20) or 4 + 0.8 * 16 <= gaps[3] <= 20  # capped at maximum


async def test_infinite_retries_stop_at_success(tmp_path: Path) -> None:
    result, calls = await _run_with_retries(tmp_path, "forever", 3600)
    assert result.succeeded and result.attempts == 6
    assert [c[0] for c in calls] == [0, 1, 2, 3, 4, 5]
    assert all(c[1] == -1 for c in calls)


OWN_TIMEOUT_APP = f"""
import azure.functions as func
app = func.FunctionApp()

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
async def own_timeout(t: func.TimerRequest) -> None:
    raise TimeoutError("the function's own timeout")
"""


async def test_a_functions_own_timeout_error_is_not_a_function_timeout(tmp_path: Path) -> None:
    host = await start(tmp_path, OWN_TIMEOUT_APP, functionTimeout="00:00:05")
    try:
        result = await host.runtime.invoker.invoke(timer_request(host, "own_timeout"))
        assert type(result.error) is TimeoutError
        assert "own timeout" in str(result.error)
    finally:
        await host.stop()


CONTEXT_LOG_APP = f"""
import logging
import azure.functions as func
from funchost.invocation.context import current_invocation
app = func.FunctionApp()
seen = []

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
async def async_logs(t: func.TimerRequest) -> None:
    seen.append(current_invocation.get().invocation_id)

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
def sync_logs(t: func.TimerRequest) -> None:
    seen.append(current_invocation.get().invocation_id)
"""


@pytest.mark.parametrize("timeout", ["00:00:05", "-1"])
async def test_invocation_id_is_visible_inside_sync_and_async_functions(tmp_path: Path, timeout: str) -> None:
    host = await start(tmp_path, CONTEXT_LOG_APP, functionTimeout=timeout)
    try:
        import function_app

        for name in ("async_logs", "sync_logs"):
            request = timer_request(host, name)
            assert (await host.runtime.invoker.invoke(request)).succeeded
            assert function_app.seen[-1] == request.invocation_id
    finally:
        await host.stop()


async def test_a_stop_during_a_retry_wait_marks_the_result_abandoned(tmp_path: Path) -> None:
    host = await start(tmp_path, RETRY_APP)
    try:
        import function_app

        function_app.app.clock_now = host.clock.monotonic
        task = asyncio.create_task(host.runtime.invoker.invoke(timer_request(host, "fixed")))
        await host.advance(1)  # first attempt failed; waiting 10 s for the retry
        await host.runtime.invoker.stop()
        result = await asyncio.wait_for(task, 5)
        assert not result.succeeded and result.abandoned and result.attempts == 1
    finally:
        await host.stop()


async def test_exhausted_retries_are_not_abandoned(tmp_path: Path) -> None:
    result, _ = await _run_with_retries(tmp_path, "fixed", 100)
    assert not result.succeeded and not result.abandoned


DISABLED_APP = """
import azure.functions as func
app = func.FunctionApp()
RUNS = []

@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
def worker(msg: func.QueueMessage) -> None:
    RUNS.append(msg.get_body().decode())
"""


async def test_a_disabled_function_has_no_listener(tmp_path: Path) -> None:
    write_app(tmp_path / "app", DISABLED_APP)
    host = HostHarness(tmp_path / "app", data_dir=tmp_path / "data",
                       settings={"AzureWebJobs.worker.Disabled": "true"})
    await host.start()
    try:
        await host.queues.create("work")
        await host.queues.send("work", "job")
        await host.advance(30)
        assert host.runtime.functions["worker"].func.__globals__["RUNS"] == []
        assert await host.queues.count("work") == 1  # the message waits for an enabled host
        assert "worker" not in host.host.listeners
        assert {r.name: r.description for r in host.host.describe_functions()}["worker"] == "queueTrigger (disabled)"
    finally:
        await host.stop()


NO_POLICY_APP = f"""
import azure.functions as func
app = func.FunctionApp()
seen = []

@app.timer_trigger(arg_name="t", schedule="{NEVER}")
def no_policy(t: func.TimerRequest, context: func.Context) -> None:
    rc = context.retry_context
    seen.append((rc.retry_count, rc.max_retry_count, rc.rpc_exception.message, rc.rpc_exception.stack_trace))
"""


async def test_the_retry_context_exists_without_a_retry_policy(tmp_path: Path) -> None:
    host = await start(tmp_path, NO_POLICY_APP)
    try:
        import function_app

        result = await host.runtime.invoker.invoke(timer_request(host, "no_policy"))
        assert result.succeeded, result.error
        assert function_app.seen == [(0, 0, "", "")]
    finally:
        await host.stop()
