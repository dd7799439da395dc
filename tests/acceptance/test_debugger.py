"""`funchost start --debug`: a Debug Adapter Protocol client attaches, stops at a breakpoint in
function_app.py (a `def` function on the function thread pool), and continues."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import CLI, free_port, start_funchost, stop_funchost, wait_until
from tests.support.dap import DapClient

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="greet")
def greet(req: func.HttpRequest) -> func.HttpResponse:
    name = req.params.get("name", "nobody")
    greeting = f"hello {name}"
    return func.HttpResponse(greeting)
"""
BREAK_LINE = APP.splitlines().index('    greeting = f"hello {name}"') + 1


def attach(client: DapClient, source: Path) -> None:
    """What VS Code does for "Python: Attach"."""
    client.request("initialize", clientID="vscode", adapterID="debugpy", pathFormat="path",
                   linesStartAt1=True, columnsStartAt1=True)
    attached = client.send("attach", justMyCode=True)
    client.wait_event("initialized")
    breakpoints = client.request("setBreakpoints", source={"path": str(source)}, breakpoints=[{"line": BREAK_LINE}])
    assert breakpoints["body"]["breakpoints"][0]["verified"], breakpoints
    client.request("configurationDone")
    client.wait_response(attached)


def stop_at_breakpoint_and_continue(client: DapClient, base_url: str) -> None:
    answers: dict[str, httpx.Response] = {}
    caller = threading.Thread(target=lambda: answers.update(r=httpx.get(f"{base_url}/api/greet?name=ada", timeout=60)))
    caller.start()
    stopped = client.wait_event("stopped", match=lambda event: event["body"]["reason"] == "breakpoint")
    thread_id = stopped["body"]["threadId"]
    frame = client.request("stackTrace", threadId=thread_id, levels=1)["body"]["stackFrames"][0]
    assert frame["line"] == BREAK_LINE and frame["source"]["path"].endswith("function_app.py")
    value = client.request("evaluate", expression="name", frameId=frame["id"], context="watch")["body"]["result"]
    assert value == "'ada'"
    assert "r" not in answers  # the function is held at the breakpoint
    client.request("continue", threadId=thread_id)
    caller.join(30)
    assert answers["r"].status_code == 200 and answers["r"].text == "hello ada"


def test_a_dap_client_stops_at_a_breakpoint_in_a_def_function(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    debug_port = free_port()
    host = start_funchost(app, "--debug", str(debug_port), data_dir=tmp_path / "data")
    client = DapClient("127.0.0.1", debug_port)
    try:
        attach(client, (app / "function_app.py").resolve())
        stop_at_breakpoint_and_continue(client, host.base_url)
        assert f"Debugger listening on 127.0.0.1:{debug_port}" in host.output()
    finally:
        client.close()
        code, output = stop_funchost(host)
    assert code == 0, output


def test_debug_wait_loads_the_app_once_a_debugger_attached(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    debug_port, port = free_port(), free_port()
    log = tmp_path / "out.log"
    env = dict(os.environ, FUNCHOST_MASTER_KEY="k", PYTHONUNBUFFERED="1")
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-c", CLI, "start", str(app), "--port", str(port), "--data",
                                    str(tmp_path / "data"), "--debug", f"127.0.0.1:{debug_port}", "--debug-wait"],
                                   stdout=sink, stderr=subprocess.STDOUT, env=env)
    client = None
    try:
        wait_until(lambda: b"Waiting for a debugger" in log.read_bytes(), "the wait message", timeout=30)
        assert b"Host started" not in log.read_bytes()
        client = DapClient("127.0.0.1", debug_port)
        attach(client, (app / "function_app.py").resolve())
        wait_until(lambda: b"Host started" in log.read_bytes(), "the start after attaching", timeout=30)
        stop_at_breakpoint_and_continue(client, f"http://127.0.0.1:{port}")
    finally:
        if client is not None:
            client.close()
        process.terminate()
        process.wait(20)


def test_a_taken_debug_port_is_a_clear_error_at_start(tmp_path: Path) -> None:
    import socket

    app = write_app(tmp_path / "app", APP)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-c", CLI, "start", str(app), "--debug", str(port),
                               "--data", str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"--debug: port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "Host started" not in done.stdout


def test_the_debugger_stays_attached_across_a_reload(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    debug_port = free_port()
    host = start_funchost(app, "--reload", "--debug", str(debug_port), data_dir=tmp_path / "data")
    client = DapClient("127.0.0.1", debug_port)
    try:
        attach(client, (app / "function_app.py").resolve())
        (app / "function_app.py").write_text(APP.replace('"nobody"', '"someone"'), encoding="utf-8")
        wait_until(lambda: "Reloading..." in host.output() and host.output().count("Host started") == 2,
                   "the reload", timeout=10, hosts=[host])
        stop_at_breakpoint_and_continue(client, host.base_url)  # the breakpoint holds in the new code
    finally:
        client.close()
        code, output = stop_funchost(host)
    assert code == 0, output
