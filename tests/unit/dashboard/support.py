"""An app with one function of each kind the dashboard shows, run in-process with the dashboard on."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from funchost.dashboard.service import DashboardService
from funchost.testing import HostHarness, write_app

APP = """
import logging
import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    logging.info("hello from <script>alert(1)</script>")
    return func.HttpResponse("hi", status_code=201)

@app.route(route="boom")
def boom(req: func.HttpRequest) -> func.HttpResponse:
    logging.warning("about to fail")
    raise ValueError("boom <b>bad</b>")

@app.queue_trigger(arg_name="msg", queue_name="orders", connection="AzureWebJobsStorage")
def orders(msg: func.QueueMessage) -> None:
    logging.info("order %s", msg.get_body().decode())

@app.timer_trigger(arg_name="timer", schedule="0 */5 * * * *", run_on_startup=False)
def tick(timer: func.TimerRequest) -> None:
    logging.info("tick")

@app.generic_trigger(arg_name="x", type="nopeTrigger")
def broken(x: str) -> None:
    pass
"""

SECRET = "DefaultEndpointsProtocol=https;AccountName=secretacct;AccountKey=c2VjcmV0LWtleS12YWx1ZQ=="


@asynccontextmanager
async def dashboard_host(tmp_path: Path, app: str = APP, **settings: str) -> AsyncIterator[HostHarness]:
    folder = write_app(tmp_path / "app", app, settings={"SomeSecretConnection": SECRET})
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)  # `funchost start` logs at INFO; the harness leaves logging alone
    try:
        async with HostHarness(folder, data_dir=tmp_path / "data",
                               settings={"FUNCHOST_DASHBOARD": "true", **settings}) as host:
            await host.http("GET", "/admin/host/ping")  # the in-process client creates the keys
            yield host
    finally:
        root.setLevel(level)


def dashboard(host: HostHarness) -> DashboardService:
    service = host.runtime.services.find(DashboardService)
    assert service is not None
    return service


async def flushed(host: HostHarness) -> None:
    """Write what the recorder holds now (its writer would within `flush_interval`)."""
    await host.wait_until_idle()
    recorder = dashboard(host).recorder
    assert recorder is not None
    await recorder.flush()


async def page(host: HostHarness, path: str, **kwargs: Any) -> httpx.Response:
    response = await host.http("GET", f"/_funchost/{path}", key="master", **kwargs)
    return response


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


def cookie_of(response: httpx.Response) -> str:
    header = response.headers["set-cookie"]
    return header.split(";", 1)[0]


async def sign_in(host: HostHarness, path: str = "functions") -> httpx.Response:
    """Open `path` with ?code=<master key>, as a browser would, from a client that keeps no cookies
    (so every later request says exactly which cookie it sends)."""
    from funchost.triggers.http.server import create_asgi_app

    keys = host.runtime.services.keys
    assert keys is not None
    separator = "&" if "?" in path else "?"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_asgi_app(host.runtime, keys)),
                                 base_url="http://localhost:7071") as client:
        return await client.get(f"/_funchost/{path}{separator}code={keys.master_key}")
