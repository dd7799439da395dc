"""Timer singleton across machines: two `funchost start --storage postgres` processes with
separate data folders on one schema; one runs the timer, the other takes over after a SIGKILL
(the listener lock is a blob lease on the server). The single-folder version is
test_timer_singleton.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.acceptance.support import copy_example, start_funchost, stop_funchost, wait_until
from tests.acceptance.test_timer_singleton import TAKEOVER_TIMEOUT, pids

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]


def test_one_of_two_hosts_on_one_server_runs_the_timer_and_the_other_takes_over(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    app, log = copy_example("timers", tmp_path), tmp_path / "timer.log"
    env = {"TIMER_LOG": str(log), "FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    args = ("--storage", "postgres", "--no-storage-endpoints")
    first = start_funchost(app, *args, data_dir=tmp_path / "data-a", env=env)
    second = None
    try:
        wait_until(lambda: first.process.pid in pids(log), "the first host's heartbeat", 20, [first])
        second = start_funchost(app, *args, data_dir=tmp_path / "data-b", env=env)
        mark = len(pids(log))
        time.sleep(4)
        assert set(pids(log)[mark:]) == {first.process.pid}, "both hosts ran the singleton timer"
        first.process.kill()  # the lock is not released: the lease has to run out on the server
        first.process.wait(timeout=10)
        mark = len(pids(log))
        wait_until(lambda: second.process.pid in pids(log)[mark:], "the second host to take over",
                   TAKEOVER_TIMEOUT, [second])
        time.sleep(2)
        assert set(pids(log)[mark:]) == {second.process.pid}
    finally:
        for host in (second, first):
            if host is not None:
                stop_funchost(host)
