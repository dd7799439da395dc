"""`funchost start` as a user meets it: broken apps, invocation log lines, NDJSON output.

An app the worker refuses (import or syntax error, no app or two apps, parameters that do not
match the bindings) does not start; a single function in error does not stop the others
(test_isolation.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import CLI, start_funchost, stop_funchost

from funchost.testing import write_app

LOGGING_APP = """
import logging
import time
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    logging.info("user says hello")
    return func.HttpResponse("hi")

@app.route(route="blocking")
async def blocking(req: func.HttpRequest) -> func.HttpResponse:
    time.sleep(3)  # blocks the event loop, as a mistaken async function does
    return func.HttpResponse("done")

@app.route(route="printing")
async def printing(req: func.HttpRequest) -> func.HttpResponse:
    print("printed by the function")
    return func.HttpResponse("printed")

@app.route(route="fail")
async def fail(req: func.HttpRequest) -> func.HttpResponse:
    raise ValueError("broken on purpose")
"""


def run_start(app_dir: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CLI, "start", str(app_dir), "--port", "0", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("code", "expected", "line"), [
    ("import azure.functions as func\napp = func.FunctionApp()\ndef x(:\n    pass\n", "SyntaxError", 3),
    ("import azure.functions as func\nimport missing_module_xyz\napp = func.FunctionApp()\n",
     "ModuleNotFoundError: No module named 'missing_module_xyz'", 2),
    ("import azure.functions as func\na = func.FunctionApp()\nb = func.FunctionApp()\n",
     "More than one top level function app instances", None),
    ("import azure.functions as func\napp = func.FunctionApp()\n\n"
     "@app.route(route='x')\n"
     "def extra(req: func.HttpRequest, surprise: str) -> func.HttpResponse:\n    pass\n",
     "declared in Python but not in function.json", 4),
    ("import azure.functions as func\napp = func.FunctionApp()\n", "no functions are defined", None),
])
def test_broken_app_names_the_problem_and_exits_1(tmp_path: Path, code: str, expected: str,
                                                  line: int | None) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "function_app.py").write_text(code)
    result = run_start(app)
    assert result.returncode == 1
    assert expected in result.stderr
    assert "0 functions" not in result.stdout + result.stderr
    if line is not None:
        assert f"function_app.py:{line}" in result.stderr


def test_a_host_json_value_of_the_wrong_type_names_its_path_and_stops_the_start(tmp_path: Path) -> None:
    """Unknown keys are warnings (as the host's configuration binder ignores them:
    test_start_fidelity.py); a value the options cannot take still stops the start."""
    write_app(tmp_path / "app", LOGGING_APP,
              host_json={"version": "2.0", "extensions": {"queues": {"batchSize": "four"}}})
    result = run_start(tmp_path / "app")
    assert result.returncode == 1
    assert "host.json: extensions.queues.batchSize: must be an integer" in result.stderr


@pytest.mark.parametrize("stdout", ["unbuffered", "block-buffered"])
def test_text_output_has_invocation_lines_and_tagged_user_logs(tmp_path: Path, stdout: str) -> None:
    """On either kind of stdout (a file here) the lines wait and go out together; what a function
    prints still comes between its two lines, and the lines come out while the host runs."""
    write_app(tmp_path / "app", LOGGING_APP)
    env = {"PYTHONUNBUFFERED": ""} if stdout == "block-buffered" else {}  # empty: Python buffers stdout
    host = start_funchost(tmp_path / "app", data_dir=tmp_path / "data", env=env)
    try:
        assert httpx.get(f"{host.base_url}/api/hello").text == "hi"
        assert httpx.get(f"{host.base_url}/api/printing").text == "printed"
        assert httpx.get(f"{host.base_url}/api/fail").status_code == 500
        assert host.wait_for_output("Executed 'Functions.fail' (Failed")
    finally:
        code, output = stop_funchost(host)
    assert code == 0
    assert "Executing 'Functions.hello' (Reason=" in output
    executed = [line for line in output.splitlines() if "Executed 'Functions.hello' (Succeeded, Id=" in line]
    assert executed and "Duration=" in executed[0]
    invocation_id = executed[0].split("Id=")[1].split(",")[0]
    assert f"[Functions.hello Id={invocation_id}] user says hello" in output
    # What a function prints comes between its two lines (the lines wait on either stdout).
    assert output.index("Executing 'Functions.printing'") < output.index("printed by the function") \
        < output.index("Executed 'Functions.printing'")
    assert "ValueError: broken on purpose" in output
    assert "Host stopped." in output


def test_a_function_that_blocks_the_loop_has_its_executing_line_out_while_it_runs(tmp_path: Path) -> None:
    """The lines wait up to 2 ms for more (stdout is unbuffered here); the console's own thread
    writes them, so a function that blocks the event loop does not hold back its Executing line."""
    write_app(tmp_path / "app", LOGGING_APP)
    host = start_funchost(tmp_path / "app", data_dir=tmp_path / "data")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            answer = pool.submit(httpx.get, f"{host.base_url}/api/blocking", timeout=30)
            assert host.wait_for_output("Executing 'Functions.blocking'", timeout=2.5)
            assert not answer.done()  # still running
            assert answer.result().text == "done"
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def test_json_output_is_ndjson_events(tmp_path: Path) -> None:
    write_app(tmp_path / "app", LOGGING_APP)
    host = start_funchost(tmp_path / "app", "--output", "json", data_dir=tmp_path / "data")
    try:
        httpx.get(f"{host.base_url}/api/hello")
        assert host.wait_for_output('"FunctionCompleted"')
    finally:
        code, output = stop_funchost(host)
    assert code == 0
    events = [json.loads(line) for line in output.splitlines() if line.strip()]
    kinds = {e.get("event") for e in events}
    assert {"FunctionIndexed", "HostStarted", "FunctionStarted", "FunctionCompleted", "HostStopped"} <= kinds
    completed = next(e for e in events if e.get("event") == "FunctionCompleted")
    assert completed["function"] == "hello" and completed["succeeded"] is True
    user = next(e for e in events if e["message"] == "user says hello")
    assert user["invocationId"] == completed["invocationId"]
    assert user["category"] == "Function.hello.User"


MODULES_APP = """
import sys
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="modules")
def modules(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("\\n".join(sorted(sys.modules)))
"""


def test_an_http_app_starts_without_what_it_does_not_use(tmp_path: Path) -> None:
    """Start-up time: the other command groups, httpx (webhooks, the HTTP activity, the storage
    endpoints' peer check) and the OpenTelemetry SDK load when something needs them, not at start.
    The function runs in the host's process, so it sees what the host imported."""
    app = write_app(tmp_path / "app", MODULES_APP)
    host = start_funchost(app, data_dir=tmp_path / "data", env={"FUNCHOST_STORAGE_ENDPOINTS": "off"})
    try:
        loaded = set(httpx.get(f"{host.base_url}/api/modules", timeout=10).text.split())
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    assert "funchost.cli.start" in loaded and "funchost.durable.service" in loaded  # a real answer
    unused = {"httpx", "opentelemetry.sdk", "funchost.testing", "funchost.cli.events", "funchost.cli.queue",
              "funchost.cli.servicebus"}
    assert not unused & loaded, sorted(unused & loaded)


THRESHOLD_APP = """
import gc
import os
import azure.functions as func
if os.environ.get("APP_THRESHOLD"):
    gc.set_threshold(int(os.environ["APP_THRESHOLD"]))
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="threshold")
def threshold(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(str(gc.get_threshold()[0]))
"""


@pytest.mark.parametrize(("app_threshold", "serving"), [("", "2000"), ("5000", "5000")])
def test_the_serving_host_collects_young_objects_as_python_313_unless_the_app_chose(
        tmp_path: Path, app_threshold: str, serving: str) -> None:
    """Python 3.11's default of 700 becomes 3.13's 2 000 before the app loads: a threshold the
    app sets itself stays."""
    write_app(tmp_path / "app", THRESHOLD_APP)
    host = start_funchost(tmp_path / "app", data_dir=tmp_path / "data", env={"APP_THRESHOLD": app_threshold})
    try:
        assert httpx.get(f"{host.base_url}/api/threshold").text == serving
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output

