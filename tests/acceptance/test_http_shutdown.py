"""Graceful stop on SIGTERM: an in-flight request completes, new connections are refused."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance
APP = Path(__file__).resolve().parents[2] / "examples" / "hello"


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return False
    except OSError:
        return True


def test_sigterm_finishes_in_flight_request_and_refuses_new_connections(tmp_path: Path) -> None:
    host = start_funchost(APP, data_dir=tmp_path / "data")
    result: dict[str, httpx.Response | BaseException] = {}

    def slow_call() -> None:
        try:
            result["response"] = httpx.get(f"{host.base_url}/api/slow", params={"seconds": "2"}, timeout=15)
        except BaseException as exc:  # reported by the assertion below
            result["response"] = exc

    caller = threading.Thread(target=slow_call)
    caller.start()
    try:
        assert host.wait_for_output("Executing 'Functions.slow'"), host.output()
        host.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 1.5
        refused = False
        while time.monotonic() < deadline and not refused:
            refused = _refused(host.port)
            time.sleep(0.05)
        assert refused, "new connections were still accepted while stopping"
        assert host.process.poll() is None, "the host exited before the in-flight request finished"
        caller.join(timeout=15)
        host.process.wait(timeout=20)  # the first SIGTERM alone stops it; a second would force
    finally:
        code, output = stop_funchost(host)
    response = result.get("response")
    assert isinstance(response, httpx.Response), f"{response!r}\n{output}"
    assert (response.status_code, response.text) == (200, "done")
    assert code == 0, output
