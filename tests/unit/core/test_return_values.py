"""Return values as the Python worker encodes them: `$return` through the binding's own converter.

The worker checks and encodes the return annotation with the binding's converter (the generic
str / bytes rule covers parameters only) and encodes every returned value, None included
(`dispatcher.py` `to_outgoing_proto`, `functions.py` `get_function_return_type`).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from funchost.errors import AppLoadError, InvocationError
from funchost.indexing.indexer import index_app
from funchost.settings.app_settings import AppSettings
from funchost.testing import HostHarness, write_app

APP = """
import json
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="str-annotated")
def str_annotated(req: func.HttpRequest) -> str:
    return func.HttpResponse("created", status_code=201, headers={"x-kind": "response"})

@app.route(route="plain-str")
def plain_str(req: func.HttpRequest) -> str:
    return "plain text"

@app.route(route="returns-none")
def returns_none(req: func.HttpRequest) -> func.HttpResponse:
    return None

@app.route(route="returns-dict")
def returns_dict(req: func.HttpRequest):
    return {"a": 1}

@app.route(route="unset-out", binding_arg_name="res")
def unset_out(req: func.HttpRequest, res: func.Out[func.HttpResponse]) -> None:
    pass

@app.route(route="enqueue")
@app.queue_output(arg_name="msg", queue_name="out", connection="AzureWebJobsStorage")
def enqueue(req: func.HttpRequest, msg: func.Out[func.QueueMessage]) -> func.HttpResponse:
    msg.set(42)
    return func.HttpResponse("sent")

@app.queue_trigger(arg_name="item", queue_name="incoming", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="$return", queue_name="forwarded", connection="AzureWebJobsStorage")
def forward(item: func.QueueMessage) -> str:
    return func.QueueMessage(body=b"forwarded " + item.get_body())

@app.queue_trigger(arg_name="item", queue_name="in-none", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="$return", queue_name="never", connection="AzureWebJobsStorage")
def forward_none(item: func.QueueMessage) -> str:
    return None
"""


async def _host(tmp_path: Path) -> HostHarness:
    write_app(tmp_path / "app", APP)
    return await HostHarness(tmp_path / "app", data_dir=tmp_path / "data").start()


async def test_a_str_annotated_http_function_returning_a_response_sends_that_response(tmp_path: Path) -> None:
    async with await _host(tmp_path) as host:
        response = await host.http("GET", "/api/str-annotated")
        assert response.status_code == 201
        assert response.text == "created"
        assert response.headers["x-kind"] == "response"
        plain = await host.http("GET", "/api/plain-str")
        assert (plain.status_code, plain.text) == (200, "plain text")


async def test_none_or_a_dict_from_an_http_return_fails_the_invocation(tmp_path: Path) -> None:
    async with await _host(tmp_path) as host:
        assert (await host.http("GET", "/api/returns-none")).status_code == 500
        assert (await host.http("GET", "/api/returns-dict")).status_code == 500
        encoder = host.runtime.invoker.plan(host.runtime.functions["returns_dict"]).return_encoder
        assert encoder is not None
        with pytest.raises(InvocationError, match='unsupported type "http" for Python type "dict"'):
            encoder({"a": 1})


async def test_an_unset_http_out_parameter_answers_200_as_the_hosts_ok_result(tmp_path: Path) -> None:
    async with await _host(tmp_path) as host:
        response = await host.http("GET", "/api/unset-out")
        assert (response.status_code, response.content) == (200, b"")


async def test_a_value_the_out_converter_cannot_encode_fails_instead_of_a_generic_fallback(tmp_path: Path) -> None:
    async with await _host(tmp_path) as host:
        assert (await host.http("GET", "/api/enqueue")).status_code == 500
        assert await host.queues.peek("out") == []


async def test_a_str_annotated_queue_return_of_a_queue_message_is_put(tmp_path: Path) -> None:
    async with await _host(tmp_path) as host:
        await host.queues.send("incoming", "order 1")
        await host.advance(1)
        messages = await host.queues.peek("forwarded")
        assert [base64.b64decode(m.content) for m in messages] == [b"forwarded order 1"]


async def test_none_from_a_queue_return_fails_the_invocation(tmp_path: Path) -> None:
    async with await _host(tmp_path) as host:
        result = await host.invoke("forward_none", "x")
        assert not result.succeeded
        assert 'unsupported type "queue" for Python type "NoneType"' in str(result.error)


def test_the_return_annotation_is_checked_against_the_bindings_converter(tmp_path: Path) -> None:
    write_app(tmp_path / "app", """
        import azure.functions as func
        app = func.FunctionApp()

        @app.route(route="x")
        def f(req: func.HttpRequest) -> bytes:
            return b"x"
    """)
    with pytest.raises(AppLoadError, match='Python return annotation "bytes" does not match binding type "http"'):
        index_app(tmp_path / "app", AppSettings({}, environ={}))
