"""An AsgiFunctionApp's lifespan: started by its first request, shut down when the host stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from funchost.testing import HostHarness, write_app

pytest.importorskip("fastapi")

ASGI_APP = """
from contextlib import asynccontextmanager

import azure.functions as func
from fastapi import FastAPI

events = []


@asynccontextmanager
async def lifespan(api):
    events.append("startup")
    yield
    events.append("shutdown")


api = FastAPI(lifespan=lifespan)


@api.get("/api/ping")
async def ping():
    return {"events": events}


app = func.AsgiFunctionApp(app=api, http_auth_level=func.AuthLevel.ANONYMOUS)
"""


async def test_stopping_the_host_runs_the_apps_shutdown_handlers(tmp_path: Path) -> None:
    write_app(tmp_path / "app", ASGI_APP)
    host = await HostHarness(tmp_path / "app", data_dir=tmp_path / "data").start()
    import function_app

    try:
        assert (await host.http("GET", "/api/ping")).json() == {"events": ["startup"]}
    finally:
        await host.stop()
    assert function_app.events == ["startup", "shutdown"]
    assert function_app.app.startup_task_done is False  # AsgiFunctionApp.__del__ has nothing left to do


async def test_an_app_that_never_started_is_not_shut_down(tmp_path: Path) -> None:
    write_app(tmp_path / "app", ASGI_APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data"):
        import function_app
    assert function_app.events == []
