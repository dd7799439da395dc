"""FUNCTIONS_WORKER_PROCESS_COUNT: one `funchost start` supervising worker processes of one app."""

from __future__ import annotations

import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import (
    RunningHost,
    copy_example,
    run_cli,
    start_funchost,
    stop_funchost,
    wait_until,
)

pytestmark = pytest.mark.acceptance
TIMEOUT = 60.0


def done_bodies(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    found = []
    for line in log.read_text().splitlines():
        kind, body, pid, _count = line.split(" ")
        if kind == "done":
            found.append((body, int(pid)))
    return found


def worker_pids(host: RunningHost) -> list[int]:
    match = re.findall(r"Worker processes: \d+ \(FUNCTIONS_WORKER_PROCESS_COUNT\), pids ([\d, ]+)\.", host.output())
    return [int(pid) for pid in match[-1].split(", ")] if match else []


def serving_pids(host: RunningHost, requests: int = 64) -> set[int]:
    """Which processes answer `requests` status calls made on fresh connections, 8 at a time."""

    def one(_: int) -> int:
        response = httpx.get(f"{host.base_url}/admin/host/status", headers=host.admin_headers, timeout=10,
                             follow_redirects=False)
        assert response.status_code == 200
        return int(response.json()["processId"])

    with ThreadPoolExecutor(8) as pool:
        return set(pool.map(one, range(requests)))


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_two_workers_share_the_port_and_the_queue_and_a_killed_one_is_restarted(tmp_path: Path) -> None:
    app, data, log = copy_example("queues", tmp_path), tmp_path / "data", tmp_path / "tasks.log"
    env = {"FUNCTIONS_WORKER_PROCESS_COUNT": "2", "FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "4", "TASK_LOG": str(log)}
    host = start_funchost(app, data_dir=data, env=env)
    try:
        wait_until(lambda: len(worker_pids(host)) == 2, "both workers", TIMEOUT, [host])
        first, second = worker_pids(host)
        assert host.output().count("Functions:") == 1  # one listing

        seen: set[int] = set()
        wait_until(lambda: seen.update(serving_pids(host)) or seen == {first, second},
                   "requests served by both workers", TIMEOUT, [host])

        bodies = [f"job-{i}" for i in range(400)]
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        run_cli("queue", "send", "tasks", "--file", str(tmp_path / "bodies.txt"), "--app", str(app),
                "--data", str(data))
        wait_until(lambda: len(done_bodies(log)) >= 50, "processing to begin", TIMEOUT, [host])
        os.kill(second, signal.SIGKILL)  # mid-drain: the messages it held come back after 4 s
        wait_until(lambda: "exited with signal SIGKILL" in host.output() and len(worker_pids(host)) == 2
                   and "Worker process 1" in host.output(), "the restart notice", TIMEOUT, [host])

        def restarted() -> bool:
            return any(pid not in (first, second) for pid in serving_pids(host, 16))

        wait_until(restarted, "the restarted worker to serve requests", TIMEOUT, [host])
        wait_until(lambda: {body for body, _ in done_bodies(log)} >= set(bodies), "every message", TIMEOUT, [host])
        assert {body for body, _ in done_bodies(log)} == set(bodies)  # nothing lost
        assert {pid for _, pid in done_bodies(log)} <= {first, second} | set(serving_pids(host, 16))
        workers_now = [pid for pid in serving_pids(host, 32)]
    finally:
        host.process.send_signal(signal.SIGINT)  # Ctrl-C on the supervisor: every worker stops
        code = host.process.wait(timeout=TIMEOUT)
    output = host.output()
    assert code == 0, output
    assert output.count("Host stopped.") == 2, output
    time.sleep(0.2)
    assert not any(alive(pid) for pid in [first, *workers_now])


def test_an_invalid_count_is_refused(tmp_path: Path) -> None:
    app = copy_example("queues", tmp_path)
    env = {"FUNCTIONS_WORKER_PROCESS_COUNT": "11"}
    with pytest.raises(AssertionError, match="FUNCTIONS_WORKER_PROCESS_COUNT=11"):
        start_funchost(app, data_dir=tmp_path / "data", env=env, timeout=20)


def test_stop_when_the_supervisor_is_killed(tmp_path: Path) -> None:
    app = copy_example("queues", tmp_path)
    host = start_funchost(app, data_dir=tmp_path / "data", env={"FUNCTIONS_WORKER_PROCESS_COUNT": "2"})
    try:
        wait_until(lambda: len(worker_pids(host)) == 2, "both workers", TIMEOUT, [host])
        pids = worker_pids(host)
    finally:
        host.process.send_signal(signal.SIGKILL)
        host.process.wait(timeout=10)
    wait_until(lambda: not any(alive(pid) for pid in pids), "orphaned workers to stop", TIMEOUT)
    stop_funchost(host)
