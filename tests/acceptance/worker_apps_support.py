"""Run the Python worker's own end-to-end apps (`worker_apps/`, unmodified) on `funchost start`.

The worker's tests (`tests/endtoend/test_*_functions.py` in Azure/azure-functions-python-worker)
drive each app through a real host: `WebHost.request(method, path)` prefixes `api/` unless
`no_prefix=True`, and a test `test_X` may have a `check_log_X(host_out)` that reads the host's
console output with each line's leading `[timestamp]` removed and the line stripped
(`tests/utils/testutils.py`, `WebHostTestCaseMeta`). `WorkerAppHost` gives the same two tools.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.acceptance.support import RunningHost, start_funchost

WORKER_APPS = Path(__file__).resolve().parent / "worker_apps"
REQUEST_TIMEOUT = 10.0
START_TIMEOUT = 60.0  # generous: CI machines run other suites at the same time
STOP_TIMEOUT = 20.0
PARALLEL_STARTS = 3  # two cores: more at once only queue up behind each other's imports

# The worker's own expression (testutils.py), kept as it is: greedy up to the last `]`.
TIMESTAMP = re.compile(r"^\[\d+(\/|-)\d+(\/|-)\d+T*\d+\:\d+\:\d+.*(A|P)*M*\]")


@dataclass
class WorkerAppHost:
    host: RunningHost
    route_prefix: str = "api"

    @property
    def base_url(self) -> str:
        return self.host.base_url

    def request(self, method: str, path: str, *, no_prefix: bool = False, **kwargs: Any) -> httpx.Response:
        """`WebHost.request` of the worker's test utilities."""
        prefix = "" if no_prefix or not self.route_prefix else f"{self.route_prefix}/"
        kwargs.setdefault("timeout", REQUEST_TIMEOUT)
        return httpx.request(method, f"{self.base_url}/{prefix}{path}", **kwargs)

    def host_out(self) -> list[str]:
        """The console output as `check_log_*` sees it: timestamps trimmed, lines stripped."""
        return [TIMESTAMP.sub("", line).strip() for line in self.host.output().splitlines()]

    def wait_for_log(self, predicate: Callable[[list[str]], bool], what: str, timeout: float = 20.0) -> list[str]:
        """Poll the output until `predicate(host_out)` holds (bounded); returns that output."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.host_out()
            if predicate(lines):
                return lines
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}\n" + "\n".join(lines[-60:]))
            time.sleep(0.1)


def poll(request: Callable[[], httpx.Response], accept: Callable[[httpx.Response], bool], what: str,
         timeout: float = 20.0) -> httpx.Response:
    """Repeat `request` until `accept(response)` (the worker's tests sleep and retry instead)."""
    deadline = time.monotonic() + timeout
    while True:
        response = request()
        if accept(response):
            return response
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}: last answer {response.status_code} {response.text[:300]}")
        time.sleep(0.1)


def copy_app(relative: str, target_root: Path) -> Path:
    """A private copy of `worker_apps/<relative>` (imports must not write into the repository)."""
    target = target_root / relative.replace("/", "__")
    shutil.copytree(WORKER_APPS / relative, target, ignore=shutil.ignore_patterns("__pycache__", ".funchost"))
    return target


Prepare = Callable[[Path], None]  # called with the app's data folder before its host starts


def start_app(relative: str, root: Path, env: Mapping[str, str] | None = None,
              prepare: Prepare | None = None) -> WorkerAppHost:
    app = copy_app(relative, root)
    data = root / f"{app.name}-data"
    if prepare is not None:
        prepare(data)
    host = start_funchost(app, data_dir=data, env=env, timeout=START_TIMEOUT)
    return WorkerAppHost(host)


def start_apps(relatives: list[str], root: Path, prepare: Mapping[str, Prepare] | None = None,
               env: Mapping[str, str] | None = None) -> dict[str, WorkerAppHost]:
    """Start several apps (each with `env` added to its environment), a few at a time; all or none."""
    prepare = prepare or {}
    with ThreadPoolExecutor(max_workers=PARALLEL_STARTS) as pool:
        futures = {name: pool.submit(start_app, name, root, env, prepare.get(name)) for name in relatives}
    hosts: dict[str, WorkerAppHost] = {}
    failures: list[BaseException] = []
    for name, future in futures.items():
        error = future.exception()
        if error is None:
            hosts[name] = future.result()
        else:
            failures.append(error)
    if failures:
        stop_all(hosts.values())
        raise failures[0]
    return hosts


def stop_all(hosts: Iterable[WorkerAppHost]) -> None:
    """Stop every host at once (SIGTERM to all, then wait); each must exit cleanly, as after Ctrl+C."""
    processes = [(h.host, h.host.process) for h in hosts]
    for _, process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    failures = []
    for host, process in processes:
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.returncode != 0:
            failures.append(f"exit code {process.returncode}:\n{host.output()[-3000:]}")
    assert not failures, "\n\n".join(failures)
