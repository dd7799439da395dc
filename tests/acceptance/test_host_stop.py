"""The stop on SIGTERM: ordered (work in flight finishes with the storage endpoints still up, no
retry holds it) and bounded (ASPNETCORE_SHUTDOWNTIMEOUTSECONDS; what still runs is cancelled and
its message comes back, as after a crash), exit code 0 either way."""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import free_port, run_cli, start_funchost, stop_funchost, wait_until

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import os
import time
import azure.functions as func
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


def finish(name: str) -> None:
    # After a while, write through the storage endpoints, as apps using the SDKs do (no retries:
    # a refused connection fails the invocation at once).
    time.sleep(1.5)
    container = BlobServiceClient.from_connection_string(os.environ["SdkStorage"], retry_total=0).get_container_client("done")
    try:
        container.create_container()
    except ResourceExistsError:
        pass
    container.upload_blob(name, b"done", overwrite=True)


@app.route(route="work")
def work(req: func.HttpRequest) -> str:
    finish("http")
    return "done"


@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
def on_work(msg: func.QueueMessage) -> None:
    if msg.get_body() == b"hang":
        time.sleep(3600)  # a sync function the stop timeout has to give up on
    finish("queue")


@app.event_grid_trigger(arg_name="event")
def on_event(event: func.EventGridEvent) -> None:
    finish("eventgrid")


@app.queue_trigger(arg_name="msg", queue_name="failing", connection="AzureWebJobsStorage")
@app.retry(strategy="fixed_delay", max_retry_count="-1", delay_interval="00:01:00")
def failing(msg: func.QueueMessage) -> None:
    raise RuntimeError("always fails; retried every minute, forever")
"""


def _app(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """The app, its data folder, and the storage endpoints on free ports (`SdkStorage` names them)."""
    ports = [free_port() for _ in range(3)]
    sdk = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
           f"BlobEndpoint=http://127.0.0.1:{ports[0]}/{DEVSTORE_ACCOUNT}")
    app = write_app(tmp_path / "app", APP, settings={"SdkStorage": sdk})
    return app, tmp_path / "data", ["--storage-ports", ",".join(map(str, ports))]


def _publish(base_url: str, data: Path) -> None:
    key = json.loads((data / "eventgrid" / "keys.json").read_text())["topics"]["default"]["key1"]
    event = {"id": str(uuid.uuid4()), "eventType": "test.work", "subject": "work", "data": {},
             "dataVersion": "1.0", "eventTime": "2026-01-01T00:00:00Z"}
    response = httpx.post(f"{base_url}/eventgrid/topics/default/api/events", json=[event],
                          headers={"aeg-sas-key": key}, timeout=10)
    assert response.status_code == 200, response.text


def test_sigterm_lets_work_in_flight_finish_before_the_storage_endpoints_close(tmp_path: Path) -> None:
    app, data, storage_ports = _app(tmp_path)
    host = start_funchost(app, *storage_ports, data_dir=data)
    answers: list[httpx.Response] = []
    try:
        run_cli("queue", "send", "failing", "doomed", "--app", str(app), "--data", str(data))
        assert host.wait_for_output("Waiting for 00:01:00 before retrying"), host.output()
        run_cli("queue", "send", "work", "go", "--app", str(app), "--data", str(data))
        _publish(host.base_url, data)
        caller = threading.Thread(target=lambda: answers.append(httpx.get(f"{host.base_url}/api/work", timeout=20)))
        caller.start()
        for name in ("on_work", "on_event", "work"):
            assert host.wait_for_output(f"Executing 'Functions.{name}'"), host.output()
        started = time.monotonic()
        host.process.send_signal(signal.SIGTERM)
        host.process.wait(timeout=20)  # a minute's retry wait does not hold the stop
        stopped_after = time.monotonic() - started
        caller.join(timeout=20)
        assert [(r.status_code, r.text) for r in answers] == [(200, "done")]
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    for name in ("on_work", "on_event", "work"):
        assert f"Executed 'Functions.{name}' (Succeeded" in output, output
    assert "connection refused" not in output.lower() and "stop timeout" not in output, output
    assert stopped_after < 10, output


def test_the_stop_timeout_cancels_what_still_runs_and_its_message_comes_back(tmp_path: Path) -> None:
    app, data, storage_ports = _app(tmp_path)
    env = {"ASPNETCORE_SHUTDOWNTIMEOUTSECONDS": "2", "FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "2"}
    host = start_funchost(app, *storage_ports, data_dir=data, env=env)
    try:
        run_cli("queue", "send", "work", "hang", "--app", str(app), "--data", str(data))
        assert host.wait_for_output("Executing 'Functions.on_work'"), host.output()
        started = time.monotonic()
        host.process.send_signal(signal.SIGTERM)
        host.process.wait(timeout=20)  # without the bound: an hour
        stopped_after = time.monotonic() - started
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    assert "The stop timeout of 2s (ASPNETCORE_SHUTDOWNTIMEOUTSECONDS) has passed: cancelling 1" in output, output
    assert "Host stopped." in output
    assert 2 <= stopped_after < 10, output

    def came_back() -> bool:
        peeked = run_cli("queue", "peek", "work", "--json", "--app", str(app), "--data", str(data))
        return any(json.loads(line).get("dequeueCount") == 1 for line in peeked.splitlines() if line.strip())

    wait_until(came_back, "the cancelled message to be visible again", timeout=15)


ASGI_APP = """
import asyncio
import logging
from contextlib import asynccontextmanager

import azure.functions as func
from fastapi import FastAPI


@asynccontextmanager
async def lifespan(api):
    yield
    logging.info("lifespan shutdown ran")


api = FastAPI(lifespan=lifespan)


@api.get("/api/slow")
async def slow() -> dict:
    await asyncio.sleep(1.5)
    logging.info("slow request answered")
    return {"done": True}


app = func.AsgiFunctionApp(app=api, http_auth_level=func.AuthLevel.ANONYMOUS)
"""


def test_an_asgi_apps_lifespan_shuts_down_after_the_requests_in_flight(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    app = write_app(tmp_path / "app", ASGI_APP)
    host = start_funchost(app, "--no-storage-endpoints", data_dir=tmp_path / "data")
    answers: list[httpx.Response] = []
    try:
        caller = threading.Thread(target=lambda: answers.append(httpx.get(f"{host.base_url}/api/slow", timeout=20)))
        caller.start()
        assert host.wait_for_output("Executing 'Functions.http_app_func'"), host.output()
        host.process.send_signal(signal.SIGTERM)
        host.process.wait(timeout=20)
        caller.join(timeout=20)
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    assert [(r.status_code, r.json()) for r in answers] == [(200, {"done": True})]
    assert output.index("slow request answered") < output.index("lifespan shutdown ran"), output
