"""Start (or reuse) an Azurite server for tests and benchmarks.

Reuse: when ``AZURITE_BLOB_ENDPOINT`` and ``AZURITE_QUEUE_ENDPOINT`` are set (e.g. by CI), they
name a running Azurite, path-style with the account, e.g.
``http://127.0.0.1:10000/devstoreaccount1`` and ``http://127.0.0.1:10001/devstoreaccount1``; the
account is ``devstoreaccount1`` with its well-known key unless ``AZURITE_ACCOUNT_NAME`` /
``AZURITE_ACCOUNT_KEY`` say otherwise.

Otherwise Azurite is started from ``node_modules/.bin/azurite`` (``npm ci`` runs once if it is
missing) on 127.0.0.1 with free ports, in memory, strict (no loose mode), and stopped at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_BLOB = "AZURITE_BLOB_ENDPOINT"
ENV_QUEUE = "AZURITE_QUEUE_ENDPOINT"
ENV_ACCOUNT = "AZURITE_ACCOUNT_NAME"
ENV_KEY = "AZURITE_ACCOUNT_KEY"
START_TIMEOUT = 60.0  # seconds, bounded wait for the ports to accept connections


class AzuriteUnavailable(RuntimeError):
    """Azurite could not be started or reached; tests that need it fail with this message."""


@dataclass(frozen=True)
class AzuriteServer:
    blob_endpoint: str
    queue_endpoint: str
    account_name: str = DEVSTORE_ACCOUNT
    account_key: str = DEVSTORE_KEY
    started_here: bool = False
    table_endpoint: str | None = None  # AZURITE_TABLE_ENDPOINT when reused; always when started here

    @property
    def connection_string(self) -> str:
        table = f"TableEndpoint={self.table_endpoint};" if self.table_endpoint else ""
        return (
            "DefaultEndpointsProtocol=http;"
            f"AccountName={self.account_name};AccountKey={self.account_key};"
            f"BlobEndpoint={self.blob_endpoint};QueueEndpoint={self.queue_endpoint};{table}"
        )

    def __repr__(self) -> str:  # no key in test output
        return f"AzuriteServer(blob={self.blob_endpoint!r}, queue={self.queue_endpoint!r})"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepts(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 80), timeout=0.5):
            return True
    except OSError:
        return False


def azurite_executable() -> Path:
    """node_modules/.bin/azurite, installing it from the lockfile once if needed."""
    exe = REPO_ROOT / "node_modules" / ".bin" / "azurite"
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        raise AzuriteUnavailable(
            "Azurite is not installed (node_modules/.bin/azurite missing) and npm is not on PATH; "
            "install Node.js and run `npm ci` in the repository root"
        )
    command = [npm, "ci"] if (REPO_ROOT / "package-lock.json").exists() else [npm, "install"]
    print(f"\n[azurite] node_modules missing: running `{' '.join(command[1:])}` once ...", flush=True)
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    if result.returncode != 0 or not exe.exists():
        raise AzuriteUnavailable(f"`npm {command[1]}` failed ({result.returncode}): {result.stderr[-2000:]}")
    return exe


class _Process:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.workdir: tempfile.TemporaryDirectory[str] | None = None
        self.log_path: Path | None = None

    def start(self) -> AzuriteServer:
        exe = azurite_executable()
        blob_port, queue_port, table_port = _free_port(), _free_port(), _free_port()
        self.workdir = tempfile.TemporaryDirectory(prefix="azurite-")
        self.log_path = Path(self.workdir.name) / "azurite.log"
        args = [
            str(exe),
            "--silent",
            "--skipApiVersionCheck",
            "--inMemoryPersistence",
            "--disableTelemetry",
            "--blobHost", "127.0.0.1", "--blobPort", str(blob_port),
            "--queueHost", "127.0.0.1", "--queuePort", str(queue_port),
            "--tableHost", "127.0.0.1", "--tablePort", str(table_port),
        ]  # fmt: skip
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(args, cwd=self.workdir.name, stdout=log, stderr=subprocess.STDOUT)
        server = AzuriteServer(
            blob_endpoint=f"http://127.0.0.1:{blob_port}/{DEVSTORE_ACCOUNT}",
            queue_endpoint=f"http://127.0.0.1:{queue_port}/{DEVSTORE_ACCOUNT}",
            started_here=True,
            table_endpoint=f"http://127.0.0.1:{table_port}/{DEVSTORE_ACCOUNT}",
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AzuriteUnavailable(f"Azurite exited with code {self.proc.returncode}: {self._log_tail()}")
            if _accepts(server.blob_endpoint) and _accepts(server.queue_endpoint):
                return server
            time.sleep(0.1)  # waiting for an external process: real time is the point here
        self.stop()
        raise AzuriteUnavailable(f"Azurite did not accept connections within {START_TIMEOUT:.0f}s")

    def _log_tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None


_lock = threading.Lock()
_server: AzuriteServer | None = None
_process: _Process | None = None
_failure: AzuriteUnavailable | None = None


def server_from_env() -> AzuriteServer | None:
    blob, queue = os.environ.get(ENV_BLOB), os.environ.get(ENV_QUEUE)
    if not blob and not queue:
        return None
    if not (blob and queue):
        raise AzuriteUnavailable(f"set both {ENV_BLOB} and {ENV_QUEUE} (or neither)")
    return AzuriteServer(
        blob_endpoint=blob.rstrip("/"),
        queue_endpoint=queue.rstrip("/"),
        account_name=os.environ.get(ENV_ACCOUNT, DEVSTORE_ACCOUNT),
        account_key=os.environ.get(ENV_KEY, DEVSTORE_KEY),
        table_endpoint=(os.environ.get("AZURITE_TABLE_ENDPOINT") or "").rstrip("/") or None,
    )


def get_server() -> AzuriteServer:
    """The process-wide Azurite: reused from the environment, or started once (and stopped at exit)."""
    global _server, _process, _failure
    with _lock:
        if _server is not None:
            return _server
        if _failure is not None:
            raise _failure
        try:
            server = server_from_env()
            if server is not None:
                if not (_accepts(server.blob_endpoint) and _accepts(server.queue_endpoint)):
                    raise AzuriteUnavailable(f"{ENV_BLOB}/{ENV_QUEUE} are set but nothing answers there")
            else:
                _process = _Process()
                server = _process.start()
                atexit.register(stop_server)
        except AzuriteUnavailable as exc:
            _failure = exc
            raise
        _server = server
        return server


def stop_server() -> None:
    """Stop the Azurite this process started (idempotent; a reused server is left alone)."""
    global _server, _process
    with _lock:
        process, _process, _server = _process, None, None
    if process is not None:
        process.stop()
