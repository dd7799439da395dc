"""An app built with func.WsgiFunctionApp around a plain WSGI callable works unchanged."""

from __future__ import annotations

from pathlib import Path

from funchost.testing import HostHarness, write_app

WSGI_APP = """
import azure.functions as func

def wsgi_app(environ, start_response):
    body = f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']} {environ.get('QUERY_STRING', '')}".encode()
    if environ["REQUEST_METHOD"] == "POST":
        body += b" " + environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-Wsgi", "yes")])
    return [body]

app = func.WsgiFunctionApp(app=wsgi_app, http_auth_level=func.AuthLevel.ANONYMOUS)
"""


async def test_wsgi_function_app_serves_requests(tmp_path: Path) -> None:
    write_app(tmp_path / "app", WSGI_APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        response = await host.http("GET", "/api/items/42?x=1")
        assert response.status_code == 201
        assert response.headers["x-wsgi"] == "yes"
        assert response.text == "GET /api/items/42 x=1"
        posted = await host.http("POST", "/api/anything", content=b"payload")
        assert posted.text == "POST /api/anything  payload"
