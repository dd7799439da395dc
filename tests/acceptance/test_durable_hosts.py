"""Durable Functions across real `funchost start` processes sharing one data folder.

Two hosts run examples/durable; a fan-out is started and one host is killed with SIGKILL while
activities are running. The survivor takes over the killed host's leases once they lapse
(``controlQueueVisibilityTimeout`` / ``workItemQueueVisibilityTimeout`` shortened to seconds),
and the orchestration completes with every activity's result exactly once in its output.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import copy_example, start_funchost, stop_funchost, wait_until

pytestmark = pytest.mark.acceptance

ITEMS = 40
LEASE = "00:00:04"


def work_log(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    return [(int(item), int(pid)) for item, pid in (line.split() for line in path.read_text().splitlines())]


def test_a_fan_out_survives_the_sigkill_of_a_host(tmp_path: Path) -> None:
    app = copy_example("durable", tmp_path)
    host_json = json.loads((app / "host.json").read_text())
    host_json["extensions"]["durableTask"].update({
        "maxConcurrentActivityFunctions": 4,
        "storageProvider": {"controlQueueVisibilityTimeout": LEASE, "workItemQueueVisibilityTimeout": LEASE},
    })
    (app / "host.json").write_text(json.dumps(host_json))
    log, data = tmp_path / "work.log", tmp_path / "data"
    env = {"WORK_SECONDS": "0.3", "WORK_LOG": str(log)}
    victim = start_funchost(app, data_dir=data, env=env)
    survivor = start_funchost(app, data_dir=data, env=env)
    hosts = [victim, survivor]
    try:
        response = httpx.post(f"{victim.base_url}/api/orchestrators/fan_out_fan_in", json={"count": ITEMS}, timeout=30)
        assert response.status_code == 202, response.text
        status_url = response.json()["statusQueryGetUri"].replace(f":{victim.port}/", f":{survivor.port}/")
        wait_until(lambda: len({pid for _, pid in work_log(log)}) == 2 and len(work_log(log)) >= 8,
                   "both hosts running activities", 60, hosts)
        os.kill(victim.process.pid, signal.SIGKILL)
        victim.process.wait(timeout=10)
        done_by_victim = {item for item, pid in work_log(log) if pid == victim.process.pid}
        deadline = time.monotonic() + 90
        status: dict[str, object] = {}
        while time.monotonic() < deadline:
            status = httpx.get(status_url, timeout=10).json()
            if status["runtimeStatus"] != "Running":
                break
            time.sleep(0.2)
        assert status.get("runtimeStatus") == "Completed", (status, survivor.output()[-3000:])
        output = status["output"]
        assert isinstance(output, dict)
        assert output["results"] == [i * i for i in range(ITEMS)]  # each result once, in order
        runs = Counter(item for item, _ in work_log(log))
        assert set(runs) == set(range(ITEMS))  # every activity ran; some twice after the kill (at least once)
        assert done_by_victim  # the killed host had really done part of the work
    finally:
        for host in hosts:
            if host.process.poll() is None:
                stop_funchost(host)
