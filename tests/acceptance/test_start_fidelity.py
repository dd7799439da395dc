"""`funchost start` on an app written like the real ones: stock host.json, local ConnectionStrings,
`-> str` HTTP functions, stopped by a SIGTERM that arrives twice (as coreutils `timeout` sends it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import json
import os
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="env")
def env(req: func.HttpRequest) -> str:
    names = ("ConnectionStrings:Reports", "WEBSITE_HOSTNAME", "AZURE_FUNCTIONS_ENVIRONMENT")
    return func.HttpResponse(json.dumps({n: os.environ.get(n) for n in names}), mimetype="application/json")

@app.route(route="slow")
def slow(req: func.HttpRequest) -> func.HttpResponse:
    import time
    time.sleep(1.5)
    return func.HttpResponse("done")

@app.route(route="nothing")
def nothing(req: func.HttpRequest) -> func.HttpResponse:
    return None
"""

HOST_JSON = {  # the stock template, plus the marker the Functions host writes into files it creates
    "version": "2.0",
    "isDefaultHostConfig": True,
    "logging": {"applicationInsights": {"samplingSettings": {"isEnabled": True, "excludedTypes": "Request"}}},
    "extensionBundle": {"id": "Microsoft.Azure.Functions.ExtensionBundle", "version": "[4.*, 5.0.0)"},
}


def test_a_template_app_starts_quietly_gets_core_tools_settings_and_stops_on_a_doubled_sigterm(
        tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, host_json=HOST_JSON)
    settings = json.loads((app / "local.settings.json").read_text())
    settings["ConnectionStrings"] = {"Reports": "Server=reports;Database=r"}
    (app / "local.settings.json").write_text(json.dumps(settings))
    host = start_funchost(app, data_dir=tmp_path / "data")
    in_flight: list[httpx.Response] = []
    caller = threading.Thread(target=lambda: in_flight.append(httpx.get(f"{host.base_url}/api/slow", timeout=20)))
    try:
        found = httpx.get(f"{host.base_url}/api/env", timeout=10).json()
        assert found == {
            "ConnectionStrings:Reports": "Server=reports;Database=r",
            "WEBSITE_HOSTNAME": os.environ.get("WEBSITE_HOSTNAME", f"localhost:{host.port}"),
            "AZURE_FUNCTIONS_ENVIRONMENT": os.environ.get("AZURE_FUNCTIONS_ENVIRONMENT", "Development"),
        }
        assert httpx.get(f"{host.base_url}/api/nothing", timeout=10).status_code == 500  # as the worker fails it
        caller.start()
        assert host.wait_for_output("Executing 'Functions.slow'")
    finally:
        # One stop request delivered twice (coreutils `timeout` signals the child, then its group),
        # the second while the host still waits for the slow request.
        host.process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        host.process.send_signal(signal.SIGTERM)
        try:
            code = host.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            host.process.kill()
            raise
    if caller.ident is not None:
        caller.join(timeout=20)
    output = host.output()
    assert code == 0, output
    assert [(r.status_code, r.text) for r in in_flight] == [(200, "done")]
    assert "Host stopped." in output and "Forced stop." not in output
    started = output[:output.index("Host started")]
    for noise in ("Event Grid topic", "recognised but not emulated", "isDefaultHostConfig"):
        assert noise not in started, output


OLD_NAMES_HOST_JSON = {  # keys Azure's configuration binder ignores: an older name and a misremembered one
    "version": "2.0",
    "extensions": {"eventHubs": {"maxBatchSize": 64},
                   "queues": {"maxPollingIntervalInSeconds": 2, "batchSize": 4}},
}


def test_host_json_keys_azure_ignores_are_warned_about_once_and_the_app_starts(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, host_json=OLD_NAMES_HOST_JSON)
    host = start_funchost(app, "--no-storage-endpoints", data_dir=tmp_path / "data")
    try:
        assert httpx.get(f"{host.base_url}/api/env", timeout=10).status_code == 200
    finally:
        code, output = stop_funchost(host)
    assert code == 0
    for key, hint in [("extensions.eventHubs.maxBatchSize", "maxEventBatchSize"),
                      ("extensions.queues.maxPollingIntervalInSeconds", "maxPollingInterval")]:
        lines = [line for line in output.splitlines() if f"host.json: {key}: unknown key ignored" in line]
        assert len(lines) == 1, output
        assert f"did you mean '{hint}'?" in lines[0]
