"""`funchost durable ...` on a data folder a host has written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from funchost.cli import main
from funchost.testing.harness import HostHarness, write_app

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context")
def waiter(context):
    value = yield context.wait_for_external_event("go")
    return value

@app.orchestration_trigger(context_name="context")
def greeter(context):
    return (yield context.call_activity("greet", context.get_input()))

@app.activity_trigger(input_name="name")
def greet(name):
    return f"hi {name}"
"""


async def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(args))  # the CLI runs its own event loop
    out, err = capsys.readouterr()
    return code, out, err


async def test_list_status_history_raise_terminate_purge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = write_app(tmp_path / "app", APP, host_json={"version": "2.0",
                                                      "extensions": {"durableTask": {"hubName": "CliHub"}}})
    data = tmp_path / "data"
    async with HostHarness(app, data_dir=data) as host:
        await host.durable.start("greeter", "ada", instance_id="g1")
        await host.durable.start("waiter", instance_id="w1")
        await host.durable.start("waiter", instance_id="w2")
    where = ["--app", str(app), "--data", str(data)]

    code, out, _ = await run(capsys, "durable", "list", *where)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["INSTANCE", "NAME", "STATUS", "CREATED", "UPDATED", "OUTPUT"]
    assert [row.split()[:3] for row in rows] == [["g1", "greeter", "Completed"], ["w1", "waiter", "Running"],
                                                 ["w2", "waiter", "Running"]]
    code, out, _ = await run(capsys, "durable", "list", "--status", "Running", "--output", "json", *where)
    assert [s["instanceId"] for s in json.loads(out)] == ["w1", "w2"]

    code, out, _ = await run(capsys, "durable", "status", "g1", "--output", "json", *where)
    assert json.loads(out)["output"] == "hi ada"
    code, out, _ = await run(capsys, "durable", "history", "g1", *where)
    assert "TaskCompleted" in out and "greet" in out and "ExecutionCompleted" in out
    code, out, _ = await run(capsys, "durable", "history", "g1", "--raw", *where)
    assert [e["EventType"] for e in json.loads(out)][:2] == [12, 0]

    code, out, err = await run(capsys, "durable", "raise", "w1", "go", '"now"', *where)
    assert code == 0 and "raised 'go'" in out, err
    code, out, _ = await run(capsys, "durable", "terminate", "w2", "--reason", "stop", *where)
    assert code == 0
    code, _, err = await run(capsys, "durable", "terminate", "missing", *where)
    assert code == 1 and "No instance with ID 'missing' was found." in err
    code, _, err = await run(capsys, "durable", "raise", "w1", "go", "not json", *where)
    assert code == 1 and "must be JSON" in err

    async with HostHarness(app, data_dir=data) as host:  # a host picks the event and the termination up
        await host.advance(5)  # the manual clock starts at the whole second before the CLI wrote
        assert (await host.durable.wait("w1"))["output"] == "now"
        assert (await host.durable.wait("w2"))["runtimeStatus"] == "Terminated"

    code, out, _ = await run(capsys, "durable", "purge", "--output", "json", *where)
    assert json.loads(out) == {"instancesDeleted": 3}
    code, out, _ = await run(capsys, "durable", "list", *where)
    assert out.strip() == "no instances"
    code, _, err = await run(capsys, "durable", "list", "--status", "Bogus", *where)
    assert code == 1 and "unknown runtime status" in err
