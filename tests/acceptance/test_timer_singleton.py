"""Timer singleton across real `funchost start` processes sharing one data folder.

The example app's `heartbeat` fires every second and appends ``heartbeat <pid>`` to TIMER_LOG.
Its host.json shortens the listener lock to 15 s and the recovery polling to 15 s, so a host
that dies without releasing the lock is replaced within about 30 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.acceptance.support import copy_example, start_funchost, stop_funchost, wait_until

pytestmark = pytest.mark.acceptance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "timers"
TAKEOVER_TIMEOUT = 60.0  # lease (15 s) + recovery poll (15 s) + start-up slack


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return copy_example("timers", tmp_path)


def pids(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("heartbeat ")]


def test_one_host_runs_the_timer_and_another_takes_over_after_a_kill(app: Path, tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "timer.log"
    env = {"TIMER_LOG": str(log)}
    first = start_funchost(app, data_dir=data, env=env)
    second = None
    try:
        wait_until(lambda: first.process.pid in pids(log), "the first host's heartbeat", 20, [first])
        second = start_funchost(app, data_dir=data, env=env)
        mark = len(pids(log))
        time.sleep(4)
        window = pids(log)[mark:]
        assert len(window) >= 2, "the timer stopped while a second host started"
        assert set(window) == {first.process.pid}, "both hosts ran the singleton timer"

        first.process.kill()  # SIGKILL: the lock is not released, the lease has to run out
        first.process.wait(timeout=10)
        killed_at = time.monotonic()
        mark = len(pids(log))
        wait_until(lambda: second.process.pid in pids(log)[mark:], "the second host to take over",
                   TAKEOVER_TIMEOUT, [second])
        took = time.monotonic() - killed_at
        assert took <= 15 + 15 + 5, f"takeover took {took:.1f}s"
        time.sleep(2)
        assert set(pids(log)[mark:]) == {second.process.pid}
        assert "Unable to acquire Singleton lock (Host.Functions.heartbeat.Listener)" in second.output()
    finally:
        for host in (second, first):
            if host is not None:
                stop_funchost(host)
