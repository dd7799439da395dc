"""The management API (HttpApiHandler) through the in-process host: routes, status codes, headers,
the system key, and the SDK's own client calling the local RPC endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from funchost.testing.harness import HostHarness, write_app

APP = """
import json
from datetime import timedelta
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="orchestrators/{functionName}")
@app.durable_client_input(client_name="client")
async def http_start(req: func.HttpRequest, client):
    instance_id = await client.start_new(req.route_params["functionName"], None, req.params.get("input"))
    return client.create_check_status_response(req, instance_id)

@app.route(route="client/{instanceId}")
@app.durable_client_input(client_name="client")
async def use_client(req: func.HttpRequest, client):
    instance_id = req.route_params["instanceId"]
    await client.raise_event(instance_id, "approval", {"ok": True})
    status = await client.get_status(instance_id)
    await client.signal_entity(df.EntityId("Counter", "c1"), "add", 2)
    entity = await client.read_entity_state(df.EntityId("Counter", "c1"))
    return func.HttpResponse(json.dumps({"status": status.runtime_status.value,
                                         "entity_exists": entity.entity_exists}))

@app.orchestration_trigger(context_name="context")
def waiter(context):
    value = yield context.wait_for_external_event("approval")
    return value

@app.orchestration_trigger(context_name="context")
def hello(context):
    name = context.get_input()
    greeting = yield context.call_activity("greet", name)
    return greeting

@app.activity_trigger(input_name="name")
def greet(name):
    return f"Hello {name}!"

@app.entity_trigger(context_name="context")
def Counter(context):
    value = context.get_state(lambda: 0)
    if context.operation_name == "add":
        value += context.get_input()
    context.set_state(value)
"""


@pytest.fixture
async def host(tmp_path: Path) -> Any:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as running:
        running.http_client = running._http_client()  # creates the key store, as a served host has
        yield running


def keys(host: HostHarness) -> Any:
    return host.runtime.services.keys


async def api(host: HostHarness, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = await host.http(method, f"/runtime/webhooks/durabletask/{path}", key="master", **kwargs)
    await host.wait_until_idle()
    return response


async def test_the_sdk_starter_answers_202_with_the_management_links(host: HostHarness) -> None:
    response = await host.http("GET", "/api/orchestrators/hello?input=Tokyo")
    assert response.status_code == 202
    body = response.json()
    assert response.headers["location"] == body["statusQueryGetUri"] and response.headers["retry-after"] == "10"
    system_key = keys(host).system_key("durabletask_extension")
    assert body["statusQueryGetUri"] == (f"http://localhost:7071/runtime/webhooks/durabletask/instances/{body['id']}"
                                        f"?taskHub=TestHubName&connection=Storage&code={system_key}")
    assert body["rewindPostUri"].endswith(f"/rewind?reason={{text}}&taskHub=TestHubName&connection=Storage"
                                          f"&code={system_key}")
    await host.wait_until_idle()
    status = await host.http("GET", body["statusQueryGetUri"].removeprefix("http://localhost:7071"))
    assert status.status_code == 200 and "location" not in status.headers
    assert status.json()["output"] == "Hello Tokyo!" and status.json()["input"] == '"Tokyo"'


async def test_the_public_api_needs_the_system_key_or_the_master_key(host: HostHarness) -> None:
    instance = await host.durable.start("waiter")
    path = f"/runtime/webhooks/durabletask/instances/{instance}"
    assert (await host.http("GET", path)).status_code == 401
    assert (await host.http("GET", path, key=keys(host).host_function_keys["default"])).status_code == 401
    system = keys(host).system_key("durabletask_extension")
    running = await host.http("GET", f"{path}?code={system}")
    assert running.status_code == 202
    assert running.headers["location"] == f"http://localhost:7071{path}?code={system}"
    assert running.headers["retry-after"] == "5"


async def test_unknown_instances_and_routes_are_404_with_an_empty_body(host: HostHarness) -> None:
    missing = await api(host, "GET", "instances/nope")
    assert missing.status_code == 404 and missing.content == b""
    assert (await api(host, "GET", "orchestrators/hello")).status_code == 404
    assert (await api(host, "GET", "nothing/here")).status_code == 404


async def test_starting_over_http_validates_like_the_extension(host: HostHarness) -> None:
    started = await api(host, "POST", "orchestrators/hello/my-id", json=json.dumps("Lima"))  # as the SDK posts it
    assert started.status_code == 202 and started.json()["id"] == "my-id"
    assert "rewindPostUri" not in started.json()
    assert (await api(host, "GET", "instances/my-id")).json()["output"] == "Hello Lima!"
    # A plain JSON string is the orchestration input as is: the SDK's get_input() cannot decode it (as on Azure).
    await api(host, "POST", "orchestrators/hello/plain", json="Lima")
    plain = (await api(host, "GET", "instances/plain")).json()
    assert plain["runtimeStatus"] == "Failed"
    assert plain["output"] == "Orchestrator function 'hello' failed: Expecting value: line 1 column 1 (char 0)"
    unknown = await api(host, "POST", "orchestrators/nope", json=1)
    assert unknown.status_code == 400
    assert unknown.json()["Message"] == "One or more of the arguments submitted is incorrect"
    assert unknown.json()["ExceptionMessage"].startswith(
        "The function 'nope' doesn't exist, is disabled, or is not an orchestrator function.")
    bad = await api(host, "POST", "orchestrators/hello", content=b"{nope", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["Message"] == "Invalid JSON content"
    at = await api(host, "POST", "orchestrators/hello/%40bad")
    assert at.status_code == 400
    assert at.json()["ExceptionMessage"] == "instanceId (Parameter 'Orchestration instance ids must not start with @.')"
    await api(host, "POST", "orchestrators/waiter/busy")
    duplicate = await api(host, "POST", "orchestrators/waiter/busy")
    assert duplicate.status_code == 500
    assert duplicate.json()["ExceptionMessage"] == "An Orchestration instance with the status Running already exists."


async def test_raise_event_checks_the_instance_and_the_content_type(host: HostHarness) -> None:
    instance = await host.durable.start("waiter")
    plain = await api(host, "POST", f"instances/{instance}/raiseEvent/approval", content=b"1",
                      headers={"content-type": "text/plain"})
    assert plain.status_code == 400 and plain.json() == {"Message": "Only application/json request content is supported"}
    assert (await api(host, "POST", "instances/nope/raiseEvent/approval", json=1)).status_code == 404
    assert (await api(host, "POST", f"instances/{instance}/raiseEvent/approval", json={"a": 1})).status_code == 202
    assert (await api(host, "GET", f"instances/{instance}")).json()["output"] == {"a": 1}
    assert (await api(host, "POST", f"instances/{instance}/raiseEvent/approval", json=1)).status_code == 410


async def test_terminate_suspend_resume_and_their_gone_answers(host: HostHarness) -> None:
    instance = await host.durable.start("waiter")
    assert (await api(host, "POST", f"instances/{instance}/suspend?reason=pause")).status_code == 202
    assert (await api(host, "GET", f"instances/{instance}")).json()["runtimeStatus"] == "Suspended"
    await api(host, "POST", f"instances/{instance}/raiseEvent/approval", json="while suspended")
    assert (await api(host, "GET", f"instances/{instance}")).json()["runtimeStatus"] == "Suspended"
    assert (await api(host, "POST", f"instances/{instance}/resume?reason=go")).status_code == 202
    resumed = (await api(host, "GET", f"instances/{instance}")).json()
    assert resumed["runtimeStatus"] == "Completed" and resumed["output"] == "while suspended"
    other = await host.durable.start("waiter")
    assert (await api(host, "POST", f"instances/{other}/terminate?reason=enough")).status_code == 202
    terminated = (await api(host, "GET", f"instances/{other}?showHistory=true")).json()
    assert terminated["runtimeStatus"] == "Terminated" and terminated["output"] == "enough"
    assert [e["EventType"] for e in terminated["historyEvents"]][-2:] == ["ExecutionTerminated", "ExecutionCompleted"]
    assert (await api(host, "POST", f"instances/{other}/terminate")).status_code == 410
    assert (await api(host, "POST", "instances/nope/terminate")).status_code == 404


async def test_list_purge_and_restart(host: HostHarness) -> None:
    first = await host.durable.start("hello", "a", instance_id="one")
    await host.durable.start("waiter", instance_id="two")
    listed = await api(host, "GET", "instances/?runtimeStatus=Running")
    assert [s["instanceId"] for s in listed.json()] == ["two"] and "x-ms-continuation-token" in listed.headers
    paged = await api(host, "GET", "instances/?top=1")
    assert len(paged.json()) == 1 and paged.headers["x-ms-continuation-token"]
    restarted = await api(host, "POST", f"instances/{first}/restart?restartWithNewInstanceId=false")
    assert restarted.status_code == 202 and restarted.json()["id"] == "one"
    renewed = await api(host, "POST", f"instances/{first}/restart")
    assert renewed.json()["id"] != "one"
    missing = await api(host, "POST", "instances/nope/restart")
    assert missing.status_code == 400
    assert missing.json()["Message"] == "InstanceId does not match a valid orchestration instance."
    no_from = await api(host, "DELETE", "instances/")
    assert no_from.status_code == 400 and no_from.json() == "Please provide value for 'createdTimeFrom' parameter."
    purged = await api(host, "DELETE", "instances/one")
    assert purged.status_code == 200 and purged.json() == {"instancesDeleted": 1}
    assert (await api(host, "DELETE", "instances/one")).status_code == 404
    by_filter = await api(host, "DELETE", "instances/?createdTimeFrom=2000-01-01T00:00:00Z&runtimeStatus=Completed")
    assert by_filter.status_code == 200 and by_filter.json() == {"instancesDeleted": 1}
    assert (await api(host, "DELETE", "instances/?createdTimeFrom=2000-01-01&runtimeStatus=Completed")).status_code == 404


async def test_entity_signals_and_state_over_http(host: HostHarness) -> None:
    assert (await api(host, "GET", "entities/Counter/k")).status_code == 404
    assert (await api(host, "POST", "entities/Counter/k?op=add", json="5")).status_code == 202
    state = await api(host, "GET", "entities/counter/k")
    assert state.status_code == 200 and state.json() == 5
    listed = await api(host, "GET", "entities/Counter?fetchState=true")
    assert listed.json()[0]["entityId"] == {"name": "counter", "key": "k"} and listed.json()[0]["state"] == 5
    unknown = await api(host, "POST", "entities/Nope/k?op=x")
    assert unknown.status_code == 400
    assert "is not an entity function" in unknown.json()["ExceptionMessage"]


async def test_the_sdk_client_methods_reach_the_rpc_endpoint(host: HostHarness) -> None:
    instance = await host.durable.start("waiter")
    response = await host.http("GET", f"/api/client/{instance}")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "Running", "entity_exists": False}
    await host.wait_until_idle()
    status = await host.durable.status(instance)
    # The SDK's raise_event sends its data as a JSON string: the orchestrator receives the JSON text.
    assert status["runtimeStatus"] == "Completed" and status["output"] == '{"ok": true}'
    assert await host.durable.entity_state("Counter", "c1") == 2
