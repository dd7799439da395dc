"""examples/durable through its own HTTP functions, on the manual clock."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from funchost.clock import ManualClock
from funchost.testing.harness import HostHarness

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "durable"


async def start(host: HostHarness, name: str, payload: Any = None) -> str:
    response = await host.http("POST", f"/api/orchestrators/{name}", json=payload)
    assert response.status_code == 202, response.text
    await host.wait_until_idle()
    return str(response.json()["id"])


async def test_every_pattern_of_the_example(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(EXAMPLE, app)
    async with HostHarness(app, clock=ManualClock()) as host:
        durable = host.durable
        chained = await start(host, "chaining")
        assert (await durable.wait(chained))["output"] == ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]

        fanned = await start(host, "fan_out_fan_in", {"count": 20})
        result = (await durable.wait(fanned))["output"]
        assert result["results"] == [i * i for i in range(20)] and result["total"] == sum(i * i for i in range(20))

        approved = await start(host, "approval", {"hours": 24})
        assert (await host.http("POST", f"/api/approvals/{approved}", json=True)).status_code == 202
        await host.wait_until_idle()
        assert (await durable.wait(approved))["output"] == "approved"
        ignored = await start(host, "approval", {"hours": 24})
        await host.advance(24 * 3600)
        assert (await durable.wait(ignored))["output"] == "escalated"

        watched = await start(host, "monitor", {"name": "backup", "interval": 600, "expires_after": 7200})
        await host.advance(1200)
        status = await durable.wait(watched)
        assert status["runtimeStatus"] == "Completed" and status["output"] == 3
        assert status["customStatus"] == {"checks": 3}

        assert (await host.http("POST", "/api/counters/k1?op=add", json=5)).status_code == 202
        await host.wait_until_idle()
        counted = await start(host, "counting", "k1")
        assert (await durable.wait(counted))["output"] == 6
        assert (await host.http("GET", "/api/counters/k1")).json() == 6
        assert (await host.http("GET", "/api/counters/none")).status_code == 404
