"""The dashboard under FUNCTIONS_WORKER_PROCESS_COUNT: worker processes share one invocation
history in the data folder, so whichever process serves the page lists every invocation."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost, wait_until
from tests.acceptance.test_worker_processes import worker_pids

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import os
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="pid")
def pid(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(str(os.getpid()))
"""
MAX_CALLS = 48  # fewer than a page of the history (50)


def test_worker_processes_share_the_invocation_history(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    host = start_funchost(app, data_dir=tmp_path / "data", env={"FUNCTIONS_WORKER_PROCESS_COUNT": "2"})
    try:
        wait_until(lambda: len(worker_pids(host)) == 2, "both workers", 60, [host])

        def call(_: int) -> str:
            return httpx.get(f"{host.base_url}/api/pid", timeout=10).text  # a new connection each time

        served_by: set[str] = set()
        calls = 0
        with ThreadPoolExecutor(8) as pool:
            while len(served_by) < 2 and calls < MAX_CALLS:  # which worker accepts is the kernel's choice
                served_by.update(pool.map(call, range(8)))
                calls += 8
        assert len(served_by) == 2, f"both workers should have served requests, got {served_by}"

        def listed() -> int:
            page = httpx.get(f"{host.base_url}/_funchost/invocations?function=pid", headers=host.admin_headers,
                             timeout=10)
            assert page.status_code == 200
            return len(re.findall(r'href="/_funchost/invocations/[0-9a-f-]{36}"', page.text))

        wait_until(lambda: listed() == calls, "every invocation in the shared history", 30, [host])
        assert host.output().count("Dashboard: ") == 1  # one banner for the whole host
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def test_no_dashboard_reaches_the_worker_processes(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    host = start_funchost(app, "--no-dashboard", data_dir=tmp_path / "data",
                          env={"FUNCTIONS_WORKER_PROCESS_COUNT": "2"})
    try:
        for _ in range(8):
            response = httpx.get(f"{host.base_url}/_funchost/functions", headers=host.admin_headers, timeout=10)
            assert response.status_code == 404
        assert not (tmp_path / "data" / "dashboard").exists()
    finally:
        stop_funchost(host)
