"""`-> str` on an HTTP function that returns a func.HttpResponse works, as in the Python worker
(which encodes outputs with the binding's converter whatever the annotation; the worker's own
end-to-end Service Bus app relies on it)."""

from __future__ import annotations

from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="page")
def page(req: func.HttpRequest) -> str:
    return func.HttpResponse('{"ok": true}', mimetype="application/json", status_code=201)

@app.route(route="text")
def text(req: func.HttpRequest) -> str:
    return "plain"
"""


async def test_http_response_returned_from_a_str_annotated_function(tmp_path):
    async with HostHarness(write_app(tmp_path / "app", APP)) as host:
        response = await host.http("GET", "/api/page")
        assert (response.status_code, response.json()) == (201, {"ok": True})
        assert response.headers["content-type"].startswith("application/json")
        plain = await host.http("GET", "/api/text")
        assert (plain.status_code, plain.text) == (200, "plain")
