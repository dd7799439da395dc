"""`funchost start --storage postgres` as a user runs it: where the server comes from, what the
banner says is shared, and a clear exit when the server cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.acceptance.support import CLI, free_port, run_cli, start_funchost, stop_funchost

from funchost.testing import write_app

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> str:
    return "hello"
"""


def _start(app: Path, data: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FUNCHOST_POSTGRES")}
    return subprocess.run([sys.executable, "-c", CLI, "start", str(app), "--data", str(data), "--port", "0",
                           "--no-storage-endpoints", "--no-amqp", "--storage", "postgres", *args],
                          capture_output=True, text=True, timeout=60, env={**environment, **env})


def test_an_unreachable_server_stops_the_start_naming_it_but_never_the_password(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    port = free_port()  # nothing listens there
    done = _start(app, tmp_path / "data", "--postgres", f"postgresql://app:s3cret-pw@127.0.0.1:{port}/orders",
                  env={})
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"cannot reach PostgreSQL at 127.0.0.1:{port}/orders as app (from --postgres)" in done.stderr
    assert "s3cret-pw" not in done.stdout + done.stderr

    from_setting = _start(app, tmp_path / "data", env={"FUNCHOST_POSTGRES": f"host=127.0.0.1 port={port} "
                                                                            "user=app password=s3cret-pw"})
    assert from_setting.returncode == 1
    assert "(from app setting 'FUNCHOST_POSTGRES')" in from_setting.stderr
    assert "s3cret-pw" not in from_setting.stdout + from_setting.stderr


def test_without_a_server_setting_the_start_says_how_to_give_one(tmp_path: Path) -> None:
    done = _start(write_app(tmp_path / "app", APP), tmp_path / "data", env={})
    assert done.returncode == 1
    assert "FUNCHOST_POSTGRES" in done.stderr and "--postgres CONNINFO" in done.stderr


def test_the_banner_says_everything_is_shared_through_the_server_but_the_history(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    app = write_app(tmp_path / "app", APP)
    host = start_funchost(app, "--storage", "postgres", "--postgres", postgres_dsn, "--no-storage-endpoints",
                          "--no-amqp", data_dir=tmp_path / "data", env={"FUNCHOST_POSTGRES_SCHEMA": postgres_schema})
    code, output = stop_funchost(host)
    assert code == 0, output
    assert "(storage: postgres," in output
    shared = next(line for line in output.splitlines() if line.startswith("Shared through PostgreSQL"))
    assert f"schema {postgres_schema}" in shared
    for service in ("queues", "blobs", "Event Grid", "keys", "tables", "documents", "Durable task hubs",
                    "Service Bus", "Event Hubs"):
        assert service in shared, service
    assert "(the dashboard's invocation history stays per host)" in shared
    assert "Still in this host's data folder" not in output  # nothing an app depends on stays local


def test_resource_commands_on_separate_data_folders_share_the_server(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    """`--storage postgres --postgres CONNINFO` on a resource group: what one machine's command
    writes, another machine's (another data folder) reads."""
    app = write_app(tmp_path / "app", APP)
    source = tmp_path / "report.csv"
    source.write_text("a,b\n1,2\n")
    env = {"FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    server = ("--storage", "postgres", "--postgres", postgres_dsn, "--app", str(app))
    run_cli("blob", "upload", "reports", "2026/report.csv", str(source), *server, "--data", str(tmp_path / "one"),
            env=env)
    listed = run_cli("blob", "list", "reports", *server, "--data", str(tmp_path / "two"), env=env)
    assert "2026/report.csv" in listed
    read = run_cli("blob", "download", "reports", "2026/report.csv", "-", *server, "--data", str(tmp_path / "two"),
                   env=env)
    assert read == "a,b\n1,2\n"
