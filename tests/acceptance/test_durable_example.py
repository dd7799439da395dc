"""examples/durable on `funchost start`, every pattern driven over HTTP as its docstring says.

``POST /api/orchestrators/<name>`` with the input as JSON body, then poll ``statusQueryGetUri``;
approvals by ``POST /api/approvals/<instance id>``; the ``Counter`` entity through
``/api/counters/<key>``. Real time throughout: the timers are seconds long.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.acceptance.durable_support import poll, started
from tests.acceptance.support import RunningHost, copy_example, start_funchost, stop_funchost, wait_until

pytestmark = pytest.mark.acceptance


def start(host: RunningHost, name: str, payload: Any = None) -> str:
    return started(httpx.post(f"{host.base_url}/api/orchestrators/{name}", json=payload, timeout=30))


def instance_id(status_url: str) -> str:
    return status_url.split("/instances/", 1)[1].split("?", 1)[0]


def waiting_for_approval(host: RunningHost, status_url: str) -> bool:
    history = httpx.get(status_url + "&showHistory=true", timeout=10).json().get("historyEvents") or []
    return any(e.get("FunctionName") == "send_approval_request" and e["EventType"] == "TaskCompleted"
               for e in history)


def test_every_pattern_of_the_example_over_http(tmp_path: Path) -> None:
    host = start_funchost(copy_example("durable", tmp_path), data_dir=tmp_path / "data")
    try:
        chained = poll(host, start(host, "chaining"))
        assert chained["runtimeStatus"] == "Completed"
        assert chained["output"] == ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]

        fanned = poll(host, start(host, "fan_out_fan_in", {"count": 25}))["output"]
        assert fanned == {"results": [i * i for i in range(25)], "total": sum(i * i for i in range(25))}

        # Human interaction: approved, rejected, and no answer before the deadline (1.8 s here).
        for answer, expected in ((True, "approved"), (False, "rejected")):
            status_url = start(host, "approval", {"hours": 1})
            wait_until(lambda url=status_url: waiting_for_approval(host, url), "the approval request", 30, [host])
            sent = httpx.post(f"{host.base_url}/api/approvals/{instance_id(status_url)}", json=answer, timeout=10)
            assert sent.status_code == 202
            assert poll(host, status_url)["output"] == expected
        escalated = poll(host, start(host, "approval", {"hours": 0.0005}))
        assert escalated["runtimeStatus"] == "Completed" and escalated["output"] == "escalated"

        # Monitor: a check every half second until the job reports done at the third check.
        monitored = poll(host, start(host, "monitor", {"name": "backup", "interval": 0.5, "expires_after": 60}))
        assert monitored["output"] == 3 and monitored["customStatus"] == {"checks": 3}
        assert host.wait_for_output("ALERT: backup finished after 3 checks")

        # The Counter entity, signalled and read over HTTP, then called from an orchestration.
        assert httpx.get(f"{host.base_url}/api/counters/k1", timeout=10).status_code == 404
        added = httpx.post(f"{host.base_url}/api/counters/k1?op=add", json=5, timeout=10)
        assert added.status_code == 202
        wait_until(lambda: httpx.get(f"{host.base_url}/api/counters/k1", timeout=10).status_code == 200,
                   "the counter's first state", 30, [host])
        assert httpx.get(f"{host.base_url}/api/counters/k1", timeout=10).json() == 5
        assert poll(host, start(host, "counting", "k1"))["output"] == 6
        assert httpx.get(f"{host.base_url}/api/counters/k1", timeout=10).json() == 6
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
