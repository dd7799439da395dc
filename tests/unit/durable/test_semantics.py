"""More orchestration semantics through the in-process host: durable HTTP, sub-orchestration
failures, entity deletion, waiting for completion in a client function, load-time errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from funchost.clock import ManualClock, SystemClock
from funchost.errors import AppLoadError
from funchost.testing.harness import HostHarness, write_app

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context")
def fetch(context):
    response = yield context.call_http("GET", context.get_input(), headers={"X-Probe": "1"})
    return response

@app.orchestration_trigger(context_name="context")
def parent(context):
    try:
        yield context.call_sub_orchestrator("child", "boom")
    except Exception as exc:
        return str(exc).splitlines()[0]

@app.orchestration_trigger(context_name="context")
def child(context):
    yield context.call_activity("explode", context.get_input())

@app.activity_trigger(input_name="value")
def explode(value):
    raise KeyError(value)

@app.orchestration_trigger(context_name="context")
def unserialisable(context):
    try:
        yield context.call_activity("make_set", 1)
    except Exception as exc:
        message = str(exc).splitlines()[0]
    return {"activity": message, "output": {1, 2}} if context.get_input() else message

@app.activity_trigger(input_name="value")
def make_set(value):
    return {value}

@app.entity_trigger(context_name="context")
def Box(context):
    if context.operation_name == "put":
        context.set_state(context.get_input())
    elif context.operation_name == "delete":
        context.destruct_on_exit()

@app.route(route="wait/{name}")
@app.durable_client_input(client_name="client")
async def wait(req: func.HttpRequest, client):
    instance_id = await client.start_new(req.route_params["name"], None, req.params.get("input"))
    return await client.wait_for_completion_or_create_check_status_response(req, instance_id, 10000, 100)
"""


@pytest.fixture
def web() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body = json.dumps({"probe": self.headers.get("X-Probe")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Served-By", "test")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/status"
    server.shutdown()


async def test_call_http_returns_the_durable_http_response(tmp_path: Path, web: str) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=SystemClock()) as host:
        instance = await host.durable.start("fetch", web)
        status = await host.durable.wait(instance)
        output = status["output"]
        assert output["statusCode"] == 200 and json.loads(output["content"]) == {"probe": "1"}
        assert output["headers"]["X-Served-By"] == "test" and "Content-Type" not in output["headers"]
        history = await host.durable.history(instance)
        scheduled = next(e for e in history if e["EventType"] == 4)
        assert scheduled["Name"] == "BuiltIn::HttpActivity"


async def test_a_failed_sub_orchestration_reaches_the_parent_with_the_childs_reason(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        instance = await host.durable.start("parent")
        status = await host.durable.wait(instance)
        assert status["runtimeStatus"] == "Completed"
        assert status["output"] == ("Orchestrator function 'child' failed: Activity function 'explode' failed: "
                                    "KeyError: 'boom' ")
        child = (await host.durable.history(instance))[2]
        assert child["EventType"] == 7 and child["InstanceId"].endswith(":0")


async def test_values_that_are_not_json_fail_with_the_libraries_messages(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        caught = await host.durable.wait(await host.durable.start("unserialisable"))
        assert caught["output"].startswith("Activity function 'make_set' failed: ValueError: activity trigger output "
                                           "must be json serializable")
        failed = await host.durable.wait(await host.durable.start("unserialisable", True))
        assert failed["runtimeStatus"] == "Failed"
        assert failed["output"] == "Orchestrator function 'unserialisable' failed: Object of type set is not JSON serializable"


async def test_an_entity_that_destructs_no_longer_exists(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=ManualClock()) as host:
        await host.durable.signal_entity("Box", "b", "put", {"a": 1})
        assert await host.durable.entity_state("Box", "b") == {"a": 1}
        await host.durable.signal_entity("Box", "b", "delete")
        assert await host.durable.entity_state("Box", "b") is None


async def test_a_client_function_can_wait_for_completion(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, clock=SystemClock()) as host:
        response = await host.http("GET", "/api/wait/parent")
        assert response.status_code == 200
        assert response.text.startswith("Orchestrator function 'child' failed")


async def test_load_errors_in_durable_client_functions_point_at_the_app(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP + """
@app.route(route="Box")
@app.durable_client_input(client_name="client")
async def box(req: func.HttpRequest, client):
    return func.HttpResponse("")
""")
    with pytest.raises(AppLoadError) as raised:
        async with HostHarness(app):
            pass
    assert raised.value.file is not None and raised.value.file.endswith("function_app.py")
    assert "does not have a unique function name" in str(raised.value)
