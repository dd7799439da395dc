"""Durable functions under the host's per-function isolation (docs/isolation.md).

A durable function with a bad binding is in error and the rest of the app runs; a task hub that
cannot be opened is a listener failure of every durable trigger, retried until it opens (the
extension starts its task hub worker from the triggers' listeners, DurableTaskListener).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.durable.service import DurableService
from funchost.testing.harness import HostHarness, write_app

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context", orchestration="@reserved")
def reserved(context):
    return "never"

@app.orchestration_trigger(context_name="context")
def greet(context):
    return (yield context.call_activity("hello", context.get_input()))

@app.orchestration_trigger(context_name="context")
def forward(context):
    return (yield context.call_activity("enqueue", "x"))

@app.activity_trigger(input_name="city")
def hello(city):
    return f"Hello {city}!"

@app.activity_trigger(input_name="value")
@app.queue_output(arg_name="out", queue_name="Not_A_Queue", connection="AzureWebJobsStorage")
def enqueue(value, out):
    out.set(value)
"""


async def test_a_durable_function_with_a_bad_binding_is_in_error_and_the_rest_runs(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, data_dir=tmp_path / "data", clock=ManualClock()) as host:
        errors = host.runtime.function_errors
        assert errors.of("reserved") == ["Orchestration names must not start with @."]
        [queue_error] = errors.of("enqueue")
        assert queue_error.startswith("queue output 'out': InvalidResourceName: invalid queue name 'not_a_queue'")
        assert errors.of("greet") == [] and errors.of("hello") == []
        assert {"reserved", "enqueue"}.isdisjoint(host.runtime.functions)

        greeted = await host.durable.start("greet", "Tokyo")
        assert (await host.durable.wait(greeted))["output"] == "Hello Tokyo!"
        # The function in error is not registered: an orchestration calling it fails at once.
        forwarded = await host.durable.start("forward")
        status = await host.durable.wait(forwarded)
        assert status["runtimeStatus"] == "Failed"
        assert "The function 'enqueue' doesn't exist, is disabled, or is not an activity function." in status["output"]


async def test_a_task_hub_that_cannot_be_opened_puts_the_durable_triggers_in_error_until_it_opens(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = write_app(tmp_path / "app", APP)
    data = tmp_path / "data"
    hub_file = data / "storage" / "devstoreaccount1" / "durable" / "testhubname.sqlite"
    hub_file.mkdir(parents=True)  # a folder where the database file should be: SQLite cannot open it
    caplog.set_level(logging.INFO, logger="funchost.startup")
    async with HostHarness(app, data_dir=data, clock=ManualClock()) as host:
        [reason] = host.runtime.function_errors.of("greet")
        assert reason.startswith("The listener for function 'Functions.greet' was unable to start. ")
        assert "unable to open database file" in reason
        assert host.runtime.function_errors.of("hello") == [reason.replace("'Functions.greet'", "'Functions.hello'")]
        service = host.runtime.services.find(DurableService)
        assert service is not None and not service.worker_started

        hub_file.rmdir()
        await host.advance(30)  # the listener retries: 2 s, then about 4, 8, 16 s
        assert "Listener successfully started for function 'Functions.greet' after" in caplog.text
        assert host.runtime.function_errors.of("greet") == [] and host.runtime.function_errors.of("hello") == []
        assert service.worker_started
        greeted = await host.durable.start("greet", "Lima")
        assert (await host.durable.wait(greeted))["output"] == "Hello Lima!"


async def test_the_task_hub_worker_stops_with_the_last_durable_listener(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    host = await HostHarness(app, data_dir=tmp_path / "data", clock=ManualClock()).start()
    try:
        service = host.runtime.services.find(DurableService)
        assert service is not None and service.worker_started
        listeners = [host.host.listeners[name] for name in ("greet", "forward", "hello")]
        for listener in listeners[:-1]:
            await listener.stop()
            assert service.worker_started  # other durable listeners still run
        await listeners[-1].stop()
        assert not service.worker_started
    finally:
        await host.stop()
