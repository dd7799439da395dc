"""The official Durable Functions v2 samples, unmodified, on `funchost start`, driven over HTTP.

As the tutorials the samples' READMEs point to (durable-functions-sequence, -cloud-backup,
blueprints): call the HTTP starter, take ``statusQueryGetUri`` from the 202 response (also the
``Location`` header) and poll it until the status is no longer Running. Sources and license of
the copies: ``durable_samples/SOURCE.md``. Each runs on the embedded store and on PostgreSQL
(`--storage postgres`, the task hub on the session's server).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.acceptance.durable_support import poll, started
from tests.acceptance.support import start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance

SAMPLES = Path(__file__).resolve().parent / "durable_samples"
GREETINGS = ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]


@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def storage(request: pytest.FixtureRequest) -> tuple[tuple[str, ...], dict[str, str]]:
    """The `funchost start` arguments and environment of each storage the samples run on."""
    if request.param == "embedded":
        return (), {}
    env = {"FUNCHOST_POSTGRES": request.getfixturevalue("postgres_dsn"),
           "FUNCHOST_POSTGRES_SCHEMA": request.getfixturevalue("postgres_schema")}
    return ("--storage", "postgres", "--no-storage-endpoints"), env


def copy_sample(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(SAMPLES / name, target)
    return target


def test_function_chaining(tmp_path: Path, storage: tuple[tuple[str, ...], dict[str, str]]) -> None:
    app = copy_sample("function_chaining", tmp_path)
    host = start_funchost(app, *storage[0], data_dir=tmp_path / "data", env=storage[1])
    try:
        status_url = started(httpx.get(f"{host.base_url}/api/orchestrators/my_orchestrator", timeout=30))
        status = poll(host, status_url)
        assert status["runtimeStatus"] == "Completed" and status["output"] == GREETINGS
        history = httpx.get(status_url + "&showHistory=true&showHistoryOutput=true", timeout=10).json()
        activities = [e for e in history["historyEvents"] if e["EventType"] == "TaskCompleted"]
        assert [(e["FunctionName"], e["Result"]) for e in activities] == [("say_hello", g) for g in GREETINGS]
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def test_blueprint_with_a_function_key(tmp_path: Path, storage: tuple[tuple[str, ...], dict[str, str]]) -> None:
    app = copy_sample("blueprint", tmp_path)
    host = start_funchost(app, *storage[0], data_dir=tmp_path / "data", env=storage[1])
    try:
        assert httpx.get(f"{host.base_url}/api/startOrchestrator", timeout=30).status_code == 401
        found = re.search(r"Host function key 'default': (\S+)", host.output())  # where the keys are kept
        assert found is not None, host.output()
        key = found.group(1)
        status_url = started(httpx.get(f"{host.base_url}/api/startOrchestrator?code={key}", timeout=30))
        status = poll(host, status_url)
        assert status["runtimeStatus"] == "Completed" and status["output"] == GREETINGS
        hello = httpx.get(f"{host.base_url}/api/HttpTrigger?name=Ada&code={key}", timeout=10)
        assert hello.text == "Hello, Ada. This HTTP triggered function executed successfully."
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


@pytest.mark.azurite
def test_fan_out_fan_in_backs_up_files_to_blob_storage(tmp_path: Path, azurite: Any,
                                                       storage: tuple[tuple[str, ...], dict[str, str]]) -> None:
    from azure.storage.blob import BlobServiceClient

    app = copy_sample("fan_in_fan_out", tmp_path)
    site = tmp_path / "site"
    files = {"E2_Copy/__init__.py": b"print('copy')\n", "E2_Copy/function.json": b"{}",
             "E2_List/__init__.py": b"x" * 1000, "other/__init__.py": b"ignored", "E2_List/notes.txt": b"ignored"}
    for relative, content in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(content)
    backups = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client("backups")
    if backups.exists():  # the sample uploads without overwrite: start from no backups on each storage
        backups.delete_container()
    env = {"AzureWebJobsStorage": azurite.connection_string, **storage[1]}
    host = start_funchost(app, *storage[0], data_dir=tmp_path / "data", env=env)
    try:
        response = httpx.post(f"{host.base_url}/api/orchestrators/E2_BackupSiteContent", json=str(site), timeout=30)
        status = poll(host, started(response))
        assert status["runtimeStatus"] == "Completed"
        assert status["output"] == len(b"print('copy')\n") + len(b"{}") + 1000
        names = {blob.name for blob in backups.list_blobs()}
        assert {"E2_Copy___init__.py", "E2_Copy_function.json", "E2_List___init__.py"} <= names
        empty = httpx.post(f"{host.base_url}/api/orchestrators/E2_BackupSiteContent", json="", timeout=30)
        failed = poll(host, started(empty))
        assert failed["runtimeStatus"] == "Failed"
        assert failed["output"] == "Orchestrator function 'E2_BackupSiteContent' failed: A directory path is required as input"
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
