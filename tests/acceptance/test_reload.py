"""`funchost start --reload`: a save restarts the app on the same port, after in-flight work."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost, wait_until

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import time

import azure.functions as func

import helpers

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="version")
def version(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("VERSION " + helpers.SUFFIX)


@app.route(route="slow")
def slow(req: func.HttpRequest) -> func.HttpResponse:
    time.sleep(1.0)  # in flight at the save; the reload still has to answer within 2 s of it
    return func.HttpResponse("slow done")
"""


def body(host_url: str, path: str = "/api/version") -> str:
    try:
        response = httpx.get(f"{host_url}{path}", timeout=5)
    except httpx.TransportError:
        return ""
    return f"{response.status_code} {response.text}"


def test_a_save_serves_the_new_code_on_the_same_port_after_in_flight_requests(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP.replace("VERSION", "one"), files={"helpers.py": 'SUFFIX = "a"\n'})
    host = start_funchost(app, "--reload", data_dir=tmp_path / "data")
    try:
        assert body(host.base_url) == "200 one a"
        slow: dict[str, str] = {}
        caller = threading.Thread(target=lambda: slow.update(result=body(host.base_url, "/api/slow")))
        caller.start()
        wait_until(lambda: "Executing 'Functions.slow'" in host.output(), "the slow request in flight",
                   timeout=10, hosts=[host])
        saved = time.monotonic()
        (app / "function_app.py").write_text(APP.replace("VERSION", "two"), encoding="utf-8")
        wait_until(lambda: body(host.base_url) == "200 two a", "the new response", timeout=10, hosts=[host])
        assert time.monotonic() - saved < 2.0
        caller.join(10)
        assert slow["result"] == "200 slow done"  # drained before the restart, not cut off
        # A module the app imports is reloaded too, and the port is still the same one.
        (app / "helpers.py").write_text('SUFFIX = "b"\n', encoding="utf-8")
        wait_until(lambda: body(host.base_url) == "200 two b", "the helper's change", timeout=10, hosts=[host])
        # requirements.txt and the data folder are not watched.
        (app / "requirements.txt").write_text("azure-functions\n", encoding="utf-8")
        time.sleep(1.0)
        assert host.output().count("Reloading...") == 2
        assert "Detected changes in function_app.py" in host.output()
        assert "Detected changes in helpers.py (modified)" in host.output()
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def test_a_syntax_error_waits_for_the_fix(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP.replace("VERSION", "one"), files={"helpers.py": 'SUFFIX = "a"\n'})
    host = start_funchost(app, "--reload", data_dir=tmp_path / "data")
    try:
        (app / "function_app.py").write_text(APP.replace("VERSION", "two") + "\ndef broken(:\n", encoding="utf-8")
        wait_until(lambda: "SyntaxError" in host.output(), "the syntax error", timeout=10, hosts=[host])
        assert "function_app.py:" in host.output()
        assert host.process.poll() is None  # still running, waiting for the next save
        unavailable = httpx.get(f"{host.base_url}/api/version", timeout=5)
        assert unavailable.status_code == 503 and "SyntaxError" in unavailable.text
        (app / "function_app.py").write_text(APP.replace("VERSION", "three"), encoding="utf-8")
        wait_until(lambda: body(host.base_url) == "200 three a", "the fixed app", timeout=10, hosts=[host])
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def test_reload_runs_one_process_whatever_the_worker_process_count(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP.replace("VERSION", "one"), files={"helpers.py": 'SUFFIX = "a"\n'})
    host = start_funchost(app, "--reload", data_dir=tmp_path / "data", env={"FUNCTIONS_WORKER_PROCESS_COUNT": "2"})
    try:
        assert "FUNCTIONS_WORKER_PROCESS_COUNT=2 is not used with --reload or --debug" in host.output()
        assert "Worker processes:" not in host.output()  # not supervised: a save reaches the only process
        (app / "function_app.py").write_text(APP.replace("VERSION", "two"), encoding="utf-8")
        wait_until(lambda: body(host.base_url) == "200 two a", "the new response", timeout=10, hosts=[host])
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


SETTINGS_APP = """
import os

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="greeting")
def greeting(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(os.environ.get("GREETING", "(unset)"))
"""


def test_local_settings_and_host_json_saves_reload_with_a_fresh_environment(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", SETTINGS_APP, settings={"GREETING": "hello"})
    host = start_funchost(app, "--reload", data_dir=tmp_path / "data")
    try:
        assert body(host.base_url, "/api/greeting") == "200 hello"
        settings = json.loads((app / "local.settings.json").read_text(encoding="utf-8"))
        del settings["Values"]["GREETING"]  # a removed setting is gone after the reload, not left over
        (app / "local.settings.json").write_text(json.dumps(settings), encoding="utf-8")
        wait_until(lambda: body(host.base_url, "/api/greeting") == "200 (unset)", "the setting removed",
                   timeout=10, hosts=[host])
        assert "Detected changes in local.settings.json (modified)" in host.output()
        # host.json is read afresh too: routePrefix moves the function.
        (app / "host.json").write_text(json.dumps({"version": "2.0", "extensions": {"http": {"routePrefix": "v2"}}}),
                                       encoding="utf-8")
        wait_until(lambda: body(host.base_url, "/v2/greeting") == "200 (unset)", "the new route prefix",
                   timeout=10, hosts=[host])
        assert "Detected changes in host.json (modified)" in host.output()
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
