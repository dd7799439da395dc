"""Durable Functions across machines: `funchost start --storage postgres` processes with separate
data folders on one PostgreSQL schema share the task hub through the server and nothing else.

A fan-out started on host A survives A's SIGKILL in the middle of its activities: host B takes
the orchestration and the unfinished activities over once A's leases lapse, and the output holds
every activity's result exactly once (an activity A was running when it died runs again; its
result is still delivered once). A third host started on an empty data folder reads the
instance through the Durable HTTP API.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.acceptance.durable_support import poll, started
from tests.acceptance.support import RunningHost, copy_example, start_funchost, stop_funchost, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]

ITEMS = 24
LEASE = "00:00:03"  # how soon B may take over what A held (controlQueue/workItemQueueVisibilityTimeout)


def make_app(tmp_path: Path) -> Path:
    app = copy_example("durable", tmp_path)
    host = json.loads((app / "host.json").read_text())
    host["extensions"]["durableTask"].update({
        "maxConcurrentActivityFunctions": 4,
        "storageProvider": {"controlQueueVisibilityTimeout": LEASE, "workItemQueueVisibilityTimeout": LEASE}})
    (app / "host.json").write_text(json.dumps(host))
    return app


def runs(log: Path) -> list[tuple[int, int]]:
    """(item, pid) of each `work` activity that ran to its end."""
    if not log.exists():
        return []
    return [(int(item), int(pid)) for item, pid in (line.split() for line in log.read_text().splitlines())]


def test_a_fan_out_survives_the_kill_of_its_host_and_a_new_host_reads_it(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    app, log = make_app(tmp_path), tmp_path / "work.log"
    env = {"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema,
           "WORK_SECONDS": "0.25", "WORK_LOG": str(log)}
    args = ("--storage", "postgres", "--no-storage-endpoints", "--no-amqp")
    first = start_funchost(app, *args, data_dir=tmp_path / "data-a", env=env)
    hosts: list[RunningHost] = [first]
    try:
        response = httpx.post(f"{first.base_url}/api/orchestrators/fan_out_fan_in", json={"count": ITEMS}, timeout=30)
        status_url = started(response)
        wait_until(lambda: len(runs(log)) >= 6, "host A to be in the middle of the fan-out", 30, hosts)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
        at_kill = runs(log)
        assert len(at_kill) < ITEMS - 4, "the fan-out was nearly over before the kill"

        second = start_funchost(app, *args, data_dir=tmp_path / "data-b", env=env)
        hosts.append(second)
        status = poll(second, status_url.replace(first.base_url, second.base_url), timeout=60)
        assert status["runtimeStatus"] == "Completed", status
        assert status["output"] == {"results": [i * i for i in range(ITEMS)], "total": sum(i * i for i in range(ITEMS))}

        done = runs(log)
        assert sorted(set(item for item, _ in done)) == list(range(ITEMS))
        after = [item for item, pid in done if pid == second.process.pid]
        assert after, "host B ran none of the activities"
        again = [item for item, n in Counter(item for item, _ in done).items() if n > 1]
        assert len(again) <= 4, again  # at most what A was running when it died (4 at a time)
        history = httpx.get(status_url.replace(first.base_url, second.base_url)
                            + "&showHistory=true&showHistoryOutput=true", timeout=10).json()["historyEvents"]
        completed = [e["Result"] for e in history if e["EventType"] == "TaskCompleted"]
        assert sorted(completed) == [i * i for i in range(ITEMS)], completed  # each result delivered once

        third = start_funchost(app, *args, data_dir=tmp_path / "data-c", env=env)
        hosts.append(third)
        read = httpx.get(status_url.replace(first.base_url, third.base_url), timeout=10)
        assert read.status_code == 200 and read.json()["runtimeStatus"] == "Completed"
        assert read.json()["output"] == status["output"]
        print(f"{len(at_kill)} of {ITEMS} activities done at the kill; {len(after)} run by host B, "
              f"{len(again)} of them again")
    finally:
        if first.process.poll() is None:
            first.process.kill()
        outputs = [stop_funchost(host) for host in hosts[1:]]
    for code, output in outputs:
        assert code == 0, output
