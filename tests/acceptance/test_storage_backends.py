"""The same app runs unchanged on `--storage embedded` and on `--storage azure` (Azurite).

`examples/storage`: an HTTP function enqueues through a queue output binding, a queue trigger
writes a blob through a blob output binding. funchost runs as a real process; the test talks to
it over HTTP and reads the blob through the matching storage backend.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import free_port
from tests.support.azurite import AzuriteServer, AzuriteUnavailable, get_server

from funchost.clock import SystemClock
from funchost.errors import BlobNotFound, ContainerNotFound
from funchost.settings.app_settings import AppSettings
from funchost.storage.backend import create_backend

pytestmark = pytest.mark.acceptance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "storage"
START_TIMEOUT = 60.0
RESULT_TIMEOUT = 60.0
_SCRIPT = Path(sys.executable).with_name("funchost")
FUNCHOST = (
    [str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "import sys; from funchost.cli import main; sys.exit(main())"]
)


def _azurite() -> AzuriteServer:
    try:
        return get_server()
    except AzuriteUnavailable as exc:
        pytest.fail(f"this test needs Azurite, which is unavailable: {exc}", pytrace=False)


class Running:
    def __init__(self, proc: subprocess.Popen[str], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def start_app(tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    started: list[Running] = []

    def start(storage: str, env: dict[str, str]) -> Running:
        app = tmp_path / f"app-{storage}"
        shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns(".funchost", "__pycache__"))
        port = free_port()
        log = tmp_path / f"funchost-{storage}.log"
        command = [*FUNCHOST, "start", str(app), "--port", str(port),
                   "--storage", storage, "--data", str(tmp_path / f"data-{storage}")]  # fmt: skip
        with open(log, "w") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                    env={**os.environ, **env}, start_new_session=True)  # fmt: skip
        running = Running(proc, port, log)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.proc.poll() is None:
            running.proc.send_signal(signal.SIGINT)
            try:
                running.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                running.proc.kill()
                running.proc.wait(timeout=10)


async def _wait_http(running: Running) -> None:
    deadline = asyncio.get_running_loop().time() + START_TIMEOUT
    async with httpx.AsyncClient() as client:
        while asyncio.get_running_loop().time() < deadline:
            if running.proc.poll() is not None:
                pytest.fail(f"funchost exited with {running.proc.returncode}:\n{running.output()}")
            try:
                await client.get(running.base + "/")
                return
            except httpx.TransportError:
                await asyncio.sleep(0.2)  # waiting for another process to listen
    pytest.fail(f"funchost did not listen within {START_TIMEOUT:.0f}s:\n{running.output()}")


async def _run_job(running: Running, storage: str, settings: dict[str, str], data_dir: Path) -> str:
    await _wait_http(running)
    job_id = uuid.uuid4().hex[:12]
    async with httpx.AsyncClient() as client:
        response = await client.post(running.base + "/api/jobs", json={"id": job_id}, timeout=30)
    assert response.status_code == 202, response.text
    assert response.json() == {"queued": job_id}

    backend = create_backend(storage, data_dir, AppSettings(settings, environ={}), SystemClock())
    try:
        blobs = backend.blobs()
        deadline = asyncio.get_running_loop().time() + RESULT_TIMEOUT
        while True:
            try:
                data, _ = await blobs.download_blob("storage-results", f"{job_id}.txt")
                return data.decode("utf-8")
            except (BlobNotFound, ContainerNotFound):
                if asyncio.get_running_loop().time() > deadline or running.proc.poll() is not None:
                    pytest.fail(
                        f"no result blob for job {job_id} within {RESULT_TIMEOUT:.0f}s:\n{running.output()}"
                    )
                await asyncio.sleep(0.2)
    finally:
        await backend.aclose()


def _stop(running: Running) -> int:
    running.proc.send_signal(signal.SIGINT)
    return running.proc.wait(timeout=30)


async def test_example_app_runs_on_embedded_storage(start_app, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    running = start_app("embedded", {})
    settings = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
    result = await _run_job(running, "embedded", settings, tmp_path / "data-embedded")
    assert result.startswith("job ") and result.endswith(" done")
    assert _stop(running) == 0, running.output()


@pytest.mark.azurite
async def test_example_app_runs_unchanged_on_azurite(start_app, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = _azurite()
    settings = {"AzureWebJobsStorage": server.connection_string}
    running = start_app("azure", settings)
    result = await _run_job(running, "azure", settings, tmp_path / "data-azure")
    assert result.startswith("job ") and result.endswith(" done")
    assert _stop(running) == 0, running.output()
    output = running.output()
    assert server.account_key not in output and "AccountKey" not in output  # no secret in any log line
    assert not (tmp_path / "data-azure" / "storage").exists()  # nothing went to embedded storage
