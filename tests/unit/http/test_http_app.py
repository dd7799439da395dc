"""The ASGI app in-process, with a fake of the invoker protocol: the request pipeline's rules."""

from __future__ import annotations

import asyncio
import json

import azure.functions as func
import httpx
import pytest
from azure.functions.http import HttpResponseConverter

from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.storage.secrets import FileSecrets
from funchost.triggers.http.app import REASON, create_asgi_app
from funchost.triggers.http.keys import KeyStore


@pytest.fixture
def keys(tmp_path) -> KeyStore:
    return KeyStore(FileSecrets(tmp_path), "master", {"default": "hostkey"}, {"eventgrid_extension": "syskey"},
                    {"secure": {"default": "fnkey"}})


def client_for(runtime, keys) -> httpx.AsyncClient:
    app = create_asgi_app(runtime, keys)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost:7071")


async def test_function_request_builds_the_invocation_as_the_host_does(make_runtime, function_factory, invoker, keys):
    runtime = make_runtime([function_factory("items", route="items/{id:int}", methods=["POST"])])
    async with client_for(runtime, keys) as client:
        response = await client.post("/api/items/5?q=1", json={"a": 1}, headers={"traceparent": "00-abc-def-01"})
    assert response.status_code == 200 and response.text == "ok"
    request = invoker.requests[0]
    assert request.reason == REASON
    assert request.trace_parent == "00-abc-def-01"
    req = func.get_binding_registry().get("httpTrigger").decode(request.trigger_value, trigger_metadata={})
    assert req.route_params == {"id": "5"} and req.params == {"q": "1"} and req.get_json() == {"a": 1}
    assert request.trigger_metadata["id"].value == "5"
    assert json.loads(request.trigger_metadata["Query"].value) == {"q": "1"}
    assert request.binding_data["a"] == 1


async def test_unmatched_route_and_wrong_method_are_404_with_empty_body(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("items", route="items/{id:int}", methods=["POST"])])
    async with client_for(runtime, keys) as client:
        for response in (await client.post("/api/items/x"), await client.get("/api/items/5"), await client.get("/api/zzz")):
            assert response.status_code == 404 and response.content == b""


async def test_home_page_and_disabled_home_page(make_runtime, keys):
    async with client_for(make_runtime([]), keys) as client:
        response = await client.get("/")
        assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    async with client_for(make_runtime([], settings={"AzureWebJobsDisableHomepage": "true"}), keys) as client:
        assert (await client.get("/")).status_code == 204


async def test_a_function_route_on_the_root_wins_over_the_home_page(make_runtime, function_factory, keys):
    # routePrefix "" and a catch-all route, as AsgiFunctionApp registers: "/" is the function's
    # (the host's HomepageMiddleware serves the page only when no function ran).
    runtime = make_runtime([function_factory("asgi", route="{*route}")], host_json={"extensions": {"http": {"routePrefix": ""}}})
    async with client_for(runtime, keys) as client:
        response = await client.get("/")
    assert response.status_code == 200 and response.text == "ok"


async def test_function_level_needs_a_function_or_master_key(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("secure", auth_level="FUNCTION")])
    async with client_for(runtime, keys) as client:
        denied = await client.get("/api/secure")
        assert denied.status_code == 401 and denied.content == b""
        assert (await client.get("/api/secure", headers={"x-functions-key": "fnkey"})).status_code == 200
        assert (await client.get("/api/secure?code=hostkey")).status_code == 200
        assert (await client.get("/api/secure?code=master")).status_code == 200
        assert (await client.get("/api/secure?code=syskey")).status_code == 401
        # the header wins over the query parameter
        assert (await client.get("/api/secure?code=fnkey", headers={"x-functions-key": "bad"})).status_code == 401



async def test_key_extraction_follows_the_host_header_first_code_case_insensitive(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("secure", auth_level="FUNCTION")])
    async with client_for(runtime, keys) as client:
        # query names are case-insensitive on ASP.NET
        assert (await client.get("/api/secure?CODE=hostkey")).status_code == 200
        # a present but empty header still wins: the code query value is not consulted
        assert (await client.get("/api/secure?code=hostkey", headers={"x-functions-key": ""})).status_code == 401

async def test_admin_level_needs_the_master_key(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("ops", auth_level="ADMIN")])
    async with client_for(runtime, keys) as client:
        assert (await client.get("/api/ops?code=hostkey")).status_code == 401
        assert (await client.get("/api/ops?code=master")).status_code == 200


async def test_disabled_function_is_404_unless_called_with_the_master_key(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("hello")], settings={"AzureWebJobs.hello.Disabled": "true"})
    async with client_for(runtime, keys) as client:
        assert (await client.get("/api/hello")).status_code == 404
        assert (await client.get("/api/hello", headers={"x-functions-key": "master"})).status_code == 200


async def test_body_over_the_limit_is_413_and_not_invoked(make_runtime, function_factory, invoker, keys):
    runtime = make_runtime([function_factory("up")], settings={"FUNCTIONS_REQUEST_BODY_SIZE_LIMIT": "10"})
    async with client_for(runtime, keys) as client:
        assert (await client.post("/api/up", content=b"x" * 11)).status_code == 413
        assert (await client.post("/api/up", content=b"x" * 10)).status_code == 200

        async def chunks():
            yield b"x" * 6
            yield b"x" * 6

        assert (await client.post("/api/up", content=chunks())).status_code == 413
    assert len(invoker.requests) == 1


async def test_failed_invocation_is_500(make_runtime, function_factory, invoker, keys):
    invoker.respond = lambda r: InvocationResult(r.invocation_id, r.function.name, False, error=RuntimeError("x"))
    async with client_for(make_runtime([function_factory("bad")]), keys) as client:
        response = await client.get("/api/bad")
    assert response.status_code == 500


async def test_named_http_output_and_response_conversion(make_runtime, function_factory, invoker, keys):
    def respond(r: InvocationRequest) -> InvocationResult:
        datum = HttpResponseConverter.encode(func.HttpResponse("{}", status_code=201, mimetype="application/json"),
                                             expected_type=None)
        return InvocationResult(r.invocation_id, r.function.name, True, outputs={"res": datum})

    invoker.respond = respond
    async with client_for(make_runtime([function_factory("made", output="res")]), keys) as client:
        response = await client.get("/api/made")
    assert response.status_code == 201 and response.headers["content-type"] == "application/json"


async def test_custom_headers_from_host_json(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("hello")],
                           host_json={"extensions": {"http": {"customHeaders": {"X-Frame-Options": "DENY"}}}})
    async with client_for(runtime, keys) as client:
        assert (await client.get("/api/hello")).headers["x-frame-options"] == "DENY"


async def test_extension_mounts_come_first(make_runtime, function_factory, keys):
    async def mounted(scope, receive, send):
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"mounted"})

    runtime = make_runtime([function_factory("hooks", route="{*all}")])
    mount = runtime.services.mount("/runtime/webhooks/eventgrid", mounted)
    async with client_for(runtime, keys) as client:
        assert (await client.post("/runtime/webhooks/eventgrid?functionName=x")).status_code == 299
        assert (await client.post("/runtime/webhooks/eventgrid/sub")).status_code == 299
        assert (await client.post("/runtime/webhooks/eventgridx")).status_code == 404  # not under it
        assert (await client.get("/api/anything")).status_code == 200
        runtime.services.unmount(mount)
        assert (await client.post("/runtime/webhooks/eventgrid?functionName=x")).status_code == 404


async def test_request_queue_rejects_beyond_max_outstanding_with_429(make_runtime, function_factory, invoker, keys):
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def slow_invoke(request: InvocationRequest) -> InvocationResult:
        entered.set()
        await gate.wait()
        return InvocationResult(request.invocation_id, request.function.name, True)

    invoker.invoke = slow_invoke  # type: ignore[method-assign]
    runtime = make_runtime([function_factory("busy")],
                           host_json={"extensions": {"http": {"maxOutstandingRequests": 1}}})
    async with client_for(runtime, keys) as client:
        first = asyncio.create_task(client.get("/api/busy"))
        await asyncio.wait_for(entered.wait(), 5)
        rejected = await client.get("/api/busy")
        gate.set()
        assert (await first).status_code == 200
    assert rejected.status_code == 429
    assert rejected.headers["x-function-scaleout"] == "1"


async def test_admin_requires_master_key_and_reports_status(make_runtime, keys):
    runtime = make_runtime([])
    runtime.services.status = lambda: {"id": "h", "state": "Running"}
    async with client_for(runtime, keys) as client:
        assert (await client.get("/admin/host/status")).status_code == 401
        assert (await client.get("/admin/host/status?code=hostkey")).status_code == 401
        response = await client.get("/admin/host/status", headers={"x-functions-key": "master"})
        assert response.json() == {"id": "h", "state": "Running"}
        assert (await client.get("/admin/host/ping")).status_code == 200


async def test_admin_invoke_validation(make_runtime, function_factory, invoker, keys):
    runtime = make_runtime([function_factory("hello")])
    headers = {"x-functions-key": "master"}
    async with client_for(runtime, keys) as client:
        assert (await client.post("/admin/functions/hello", headers=headers)).status_code == 400
        assert (await client.post("/admin/functions/hello", headers=headers, content=b"{nope")).status_code == 400
        assert (await client.post("/admin/functions/missing", headers=headers, json={"input": ""})).status_code == 404
        # An HTTP function: accepted, but the host cannot bind a string to an HttpRequest.
        assert (await client.post("/admin/functions/HELLO", headers=headers, json={"input": "x"})).status_code == 202
    assert invoker.requests == []


async def test_function_keys_endpoint_is_master_only(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("secure")])
    async with client_for(runtime, keys) as client:
        assert (await client.get("/admin/functions/secure/keys?code=fnkey")).status_code == 401
        response = await client.get("/admin/functions/secure/keys?code=master")
        assert response.json() == {"keys": [{"name": "default", "value": "fnkey"}]}
        assert (await client.get("/admin/functions/nope/keys?code=master")).status_code == 404


async def test_admin_routes_are_case_insensitive(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("secure")])
    runtime.services.status = lambda: {"id": "h", "state": "Running"}
    async with client_for(runtime, keys) as client:
        assert (await client.get("/Admin/Host/Status?code=master")).json() == {"id": "h", "state": "Running"}
        response = await client.get("/ADMIN/Functions/Secure/Keys?code=master")
        assert response.json() == {"keys": [{"name": "default", "value": "fnkey"}]}
        assert (await client.get("/Admin/Host/Ping")).status_code == 200


@pytest.mark.parametrize("status", [204, 304])
async def test_no_content_statuses_never_send_a_body(make_runtime, function_factory, invoker, keys, status):
    runtime = make_runtime([function_factory("empty")])
    datum = HttpResponseConverter.encode(func.HttpResponse("leak", status_code=status), expected_type=func.HttpResponse)
    invoker.respond = lambda r: InvocationResult(r.invocation_id, r.function.name, True, outputs={"$return": datum})
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    app = create_asgi_app(runtime, keys)
    await app({"type": "http", "method": "GET", "path": "/api/empty", "raw_path": b"/api/empty",
               "query_string": b"", "headers": [(b"host", b"localhost")]}, receive, send)
    start, body = sent
    assert start["status"] == status
    # a body (or a non-zero Content-Length) after a 204/304 would corrupt the keep-alive stream
    assert body["body"] == b""
    assert all(name != b"content-length" or value == b"0" for name, value in start["headers"])


async def test_a_deeply_nested_json_body_reaches_the_function(make_runtime, function_factory, invoker, keys):
    """The body is the function's business (the worker parses it only in get_json())."""
    runtime = make_runtime([function_factory("echo", methods=["POST"])])
    body = b"[" * 1000
    async with client_for(runtime, keys) as client:
        response = await client.post("/api/echo", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    req = func.get_binding_registry().get("httpTrigger").decode(invoker.requests[0].trigger_value, trigger_metadata={})
    assert req.get_body() == body


async def test_admin_invoke_with_a_body_nested_too_deeply_is_400(make_runtime, function_factory, keys):
    runtime = make_runtime([function_factory("hello")])
    async with client_for(runtime, keys) as client:
        response = await client.post("/admin/functions/hello", headers={"x-functions-key": "master"},
                                     content=b'{"input": ' + b"[" * 100_000)
    assert response.status_code == 400
