"""The warmup trigger: ``/admin/warmup`` runs the function named ``warmup`` (any method, no key),
as the Python worker's own end-to-end app `warmup_functions_stein` expects."""

from __future__ import annotations

from pathlib import Path

from funchost.testing import HostHarness, write_app

# The worker's tests/endtoend/warmup_functions/warmup_functions_stein app, plus a second
# warmup-triggered function under another name (valid, never run) and a file to see runs.
APP = """
import logging
import os
import azure.functions as func

app = func.FunctionApp()

@app.warm_up_trigger('warmup')
def warmup(warmup) -> None:
    logging.info('Function App instance is warm')
    with open(os.environ["WARM_LOG"], "a") as log:
        log.write(type(warmup).__name__ + "\\n")
    if os.environ.get("WARM_FAIL"):
        raise RuntimeError("cold")

@app.warm_up_trigger('ctx')
def other_name(ctx) -> None:
    with open(os.environ["WARM_LOG"], "a") as log:
        log.write("other\\n")
"""

NO_WARMUP = """
import azure.functions as func
app = func.FunctionApp()

@app.route(route="hello")
def hello(req: func.HttpRequest) -> str:
    return "hi"
"""


async def test_admin_warmup_runs_the_warmup_function_without_a_key(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "warm.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    write_app(tmp_path / "app", APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        assert host.runtime.function_errors.of("warmup") == [] and host.runtime.function_errors.of("other_name") == []
        assert (await host.http("GET", "/admin/warmup")).status_code == 200
        assert (await host.http("POST", "/ADMIN/Warmup")).status_code == 200  # any method, any case
        rows = {row.name: row for row in host.host.describe_functions()}
        assert rows["warmup"].description.endswith("/admin/warmup")
        assert "never run" in rows["other_name"].description
    assert log.read_text().splitlines() == ["WarmUpContext", "WarmUpContext"]  # never the other function


async def test_a_failing_warmup_function_answers_500(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WARM_LOG", str(tmp_path / "warm.log"))
    monkeypatch.setenv("WARM_FAIL", "1")
    write_app(tmp_path / "app", APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        assert (await host.http("GET", "/admin/warmup")).status_code == 500


async def test_without_a_warmup_function_the_route_still_answers_200(tmp_path: Path) -> None:
    write_app(tmp_path / "app", NO_WARMUP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        assert (await host.http("GET", "/admin/warmup")).status_code == 200
        assert (await host.http("GET", "/admin/host/status")).status_code == 401  # the rest still needs the key
