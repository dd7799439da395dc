"""Two `funchost start` processes on one data folder share a four-partition event hub: the
partitions split 2/2, a SIGKILLed host's partitions are taken over once its ownerships expire,
and no event is lost (some may be processed twice: at-least-once)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.acceptance.support import CLI, RunningHost, start_funchost, stop_funchost, wait_until

pytestmark = pytest.mark.acceptance

APP = '''
import os
import azure.functions as func

app = func.FunctionApp()

@app.event_hub_message_trigger(arg_name="event", event_hub_name="shared", connection="EventHubs")
def work(event: func.EventHubEvent) -> None:
    with open(os.environ["EVENTS_LOG"], "a") as log:
        log.write(f"{os.getpid()} {event.get_body().decode()}\\n")
'''
HOST_JSON = {"version": "2.0", "extensions": {"eventHubs": {
    "loadBalancingUpdateInterval": "00:00:01", "partitionOwnershipExpirationInterval": "00:00:06"}}}


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_hosts_split_partitions_and_survive_a_kill(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "function_app.py").write_text(APP)
    (app / "host.json").write_text(json.dumps(HOST_JSON))
    (app / "local.settings.json").write_text(json.dumps({"Values": {"FUNCTIONS_WORKER_RUNTIME": "python"}}))
    data, log = tmp_path / "data", tmp_path / "events.log"
    env = {"EVENTS_LOG": str(log)}
    where = ["--app", str(app), "--data", str(data)]

    def owners() -> list[str]:
        rows = json.loads(cli("eventhubs", "checkpoints", "shared", "--output", "json", *where))["partitions"]
        return [r["owner"] or "" for r in rows]

    def processed() -> list[tuple[int, str]]:
        if not log.exists():
            return []
        return [(int(p), b) for p, b in (line.split(" ", 1) for line in log.read_text().splitlines() if line)]

    def send(prefix: str) -> set[str]:
        """40 events, one batch of 10 per partition, sent by another process (the CLI)."""
        bodies = [f"{prefix}{i}" for i in range(40)]
        for pid in range(4):
            (tmp_path / "chunk.txt").write_text("\n".join(bodies[pid::4]))
            cli("eventhubs", "send", "shared", "--file", str(tmp_path / "chunk.txt"), "--partition-id", str(pid),
                *where)
        return set(bodies)

    hosts: list[RunningHost] = []
    try:
        hosts.append(start_funchost(app, data_dir=data, env=env))
        hosts.append(start_funchost(app, data_dir=data, env=env))
        wait_until(lambda: sorted(owners().count(o) for o in set(owners())) == [2, 2] and "" not in owners(),
                   "the partitions to split 2/2", 30, hosts)
        first = send("a")
        wait_until(lambda: first <= {b for _, b in processed()}, "the first 40 events", 30, hosts)
        assert {p for p, _ in processed()} == {h.process.pid for h in hosts}  # both hosts did their share

        victim, survivor = hosts
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(timeout=10)
        second = send("b")
        wait_until(lambda: len(set(owners())) == 1 and "" not in owners(), "the survivor to own all 4", 40, hosts)
        wait_until(lambda: second <= {b for _, b in processed()}, "every event sent after the kill", 30, hosts)
        late = {p for p, b in processed() if b.startswith("b")}
        assert late == {survivor.process.pid}
        assert first | second <= {b for _, b in processed()}  # nothing lost
    finally:
        for host in hosts:
            if host.process.poll() is None:
                stop_funchost(host)
