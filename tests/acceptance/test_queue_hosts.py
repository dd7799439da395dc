"""Queue trigger across real `funchost start` processes sharing one embedded storage folder."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import copy_example, run_cli, start_funchost, stop_funchost, wait_until

pytestmark = pytest.mark.acceptance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "queues"
TIMEOUT = 60.0


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return copy_example("queues", tmp_path)


cli = run_cli


def task_lines(log: Path) -> list[tuple[str, str, int, int]]:
    if not log.exists():
        return []
    lines = []
    for line in log.read_text().splitlines():
        kind, body, pid, count = line.split(" ")
        lines.append((kind, body, int(pid), int(count)))
    return lines


def wait_for(predicate, what: str, hosts=()) -> None:  # type: ignore[no-untyped-def]
    wait_until(predicate, what, TIMEOUT, hosts)


def test_two_hosts_share_a_queue_and_process_each_message_once(app: Path, tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "tasks.log"
    env = {"TASK_LOG": str(log)}
    hosts = [start_funchost(app, data_dir=data, env=env) for _ in range(2)]
    try:
        bodies = [f"job-{i}" for i in range(300)]
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        cli("queue", "send", "tasks", "--file", str(tmp_path / "bodies.txt"), "--app", str(app), "--data", str(data))
        # and a few through the HTTP function's queue output binding
        response = httpx.post(f"{hosts[0].base_url}/api/tasks?count=20", content=b"http", timeout=30)
        assert response.status_code == 202, response.text
        expected = set(bodies) | {f"http-{i}" for i in range(20)}
        wait_for(lambda: len(task_lines(log)) >= len(expected), "all tasks", hosts)
        time.sleep(0.5)  # nothing more may arrive
        done = [line for line in task_lines(log) if line[0] == "done"]
        counts = Counter(body for _, body, _, _ in done)
        assert set(counts) == expected
        assert max(counts.values()) == 1, [b for b, c in counts.items() if c > 1]
        assert all(count == 1 for *_, count in done)  # happy path: first delivery each time
        assert "tasks" in cli("queue", "list", "--app", str(app), "--data", str(data))
    finally:
        for host in hosts:
            stop_funchost(host)


def test_messages_of_a_killed_host_are_processed_by_another(app: Path, tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "tasks.log"
    visibility = {"FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "4", "TASK_LOG": str(log)}
    doomed = start_funchost(app, data_dir=data, env={**visibility, "SLOW_TASK_SECONDS": "600"})
    bodies = [f"slow-{i}" for i in range(5)]
    try:
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        cli("queue", "send", "tasks", "--file", str(tmp_path / "bodies.txt"), "--app", str(app), "--data", str(data))

        def all_received() -> bool:
            out = cli("queue", "peek", "tasks", "--json", "--app", str(app), "--data", str(data))
            return out.strip() == ""  # nothing visible: the doomed host holds every message

        wait_for(all_received, "the first host to receive the batch", [doomed])
    finally:
        doomed.process.send_signal(signal.SIGKILL)  # no graceful stop, no release
        doomed.process.wait(timeout=10)
    assert task_lines(log) == []

    survivor = start_funchost(app, data_dir=data, env={**visibility, "SLOW_TASK_SECONDS": "0"})
    try:
        wait_for(lambda: len(task_lines(log)) >= len(bodies), "the second host to finish the tasks", [survivor])
        lines = task_lines(log)
        assert sorted(body for _, body, _, _ in lines) == sorted(bodies)
        assert {pid for _, _, pid, _ in lines} == {survivor.process.pid}
        assert all(kind == "done" and count == 2 for kind, _, _, count in lines)  # second delivery
        assert os.path.exists(data)
    finally:
        code, output = stop_funchost(survivor)
    assert code == 0, output


def test_failing_task_is_poisoned_and_seen_by_the_poison_function(app: Path, tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "tasks.log"
    host = start_funchost(app, data_dir=data, env={"TASK_LOG": str(log)})
    try:
        cli("queue", "send", "tasks", "fail-once-and-for-all", "--app", str(app), "--data", str(data))
        wait_for(lambda: any(kind == "poison" for kind, *_ in task_lines(log)), "the poison function", [host])
        lines = task_lines(log)
        assert [count for kind, _, _, count in lines if kind == "failed"] == [1, 2, 3, 4, 5]
        assert [(kind, body, count) for kind, body, _, count in lines if kind == "poison"] == [
            ("poison", "fail-once-and-for-all", 1)]
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    assert "fail-once-and-for-all" not in output  # no raw poison body in any log line
