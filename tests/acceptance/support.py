"""Run `funchost start` as a real process for acceptance tests.

    host = start_funchost(app_dir, data_dir=tmp_path / "data")
    httpx.get(f"{host.base_url}/api/hello")
    code, output = stop_funchost(host)

Readiness is `GET /admin/host/status` answering 200 with the master key, which the host serves
only after every listener has started. The master key is fixed through `FUNCHOST_MASTER_KEY`.
Output (stdout and stderr) goes to a file, so a chatty host never blocks on a full pipe.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

MASTER_KEY = "acceptance-master-key"
CLI = "import sys; from funchost.cli import main; sys.exit(main())"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_example(name: str, tmp_path: Path) -> Path:
    """A private copy of `examples/<name>` (the test's data must not land in the repository)."""
    target = tmp_path / "app"
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(".funchost", "__pycache__", "*.log"))
    return target


def run_cli(*args: str, timeout: float = 60, env: Mapping[str, str] | None = None) -> str:
    """Run a `funchost` command to completion (`env` added to this process's); it must succeed.
    Returns its stdout."""
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_until(predicate: Callable[[], bool], what: str, timeout: float,
               hosts: Iterable[RunningHost] = ()) -> None:
    """Poll `predicate` every 0.1 s (bounded); on timeout fail with the hosts' recent output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    outputs = "\n".join(h.output()[-3000:] for h in hosts)
    pytest.fail(f"timed out waiting for {what}\n{outputs}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningHost:
    process: subprocess.Popen[bytes]
    port: int
    master_key: str
    output_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_headers(self) -> dict[str, str]:
        return {"x-functions-key": self.master_key}

    def output(self) -> str:
        return self.output_path.read_text(encoding="utf-8", errors="replace")

    def wait_for_output(self, text: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            time.sleep(0.05)
        return False


class HostDidNotStart(AssertionError):
    pass


def start_funchost(
    app_dir: Path | str,
    *extra_args: str,
    data_dir: Path | str,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    master_key: str = MASTER_KEY,
    timeout: float = 30.0,
    cwd: Path | str | None = None,
) -> RunningHost:
    """Start `funchost start APP_DIR --port P --data DIR [extra_args]` and wait until it serves."""
    port = port or free_port()
    data = Path(data_dir)
    data.mkdir(parents=True, exist_ok=True)
    output_path = data.parent / f"funchost-{port}.log"
    environment = dict(os.environ)
    environment.update({"FUNCHOST_MASTER_KEY": master_key, "PYTHONUNBUFFERED": "1"})
    environment.update(env or {})
    args: Sequence[str] = [sys.executable, "-c", CLI, "start", str(app_dir), "--port", str(port),
                           "--data", str(data), *extra_args]
    with output_path.open("wb") as sink:
        process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, env=environment,
                                   cwd=str(cwd) if cwd else None)
    host = RunningHost(process, port, master_key, output_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise HostDidNotStart(f"funchost exited with {process.returncode}:\n{host.output()}")
        try:
            response = httpx.get(f"{host.base_url}/admin/host/status", headers=host.admin_headers, timeout=1.0)
            if response.status_code == 200:
                return host
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    stop_funchost(host, timeout=5)
    raise HostDidNotStart(f"funchost did not answer within {timeout}s:\n{host.output()}")


def stop_funchost(host: RunningHost, timeout: float = 20.0) -> tuple[int, str]:
    """SIGTERM, then SIGKILL after `timeout`; returns (exit code, output)."""
    process = host.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    return int(process.returncode), host.output()
