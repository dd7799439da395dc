"""Three `funchost start` processes on one data folder share a four-partition change feed:
every change is processed, the leases spread 2/1/1, and a SIGKILLed host's leases are taken
over after expiry without losing a change."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.acceptance.support import CLI, copy_example, free_port

from funchost.documents import connect

pytestmark = pytest.mark.acceptance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "changefeed"
DEADLINE = 60.0


def wait_for(what: str, check: Callable[[], bool], timeout: float = DEADLINE) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return copy_example("changefeed", tmp_path)


@pytest.fixture
def hosts(app: Path, tmp_path: Path) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    env = dict(os.environ, CHANGEFEED_LOG=str(tmp_path / "changes.log"), PYTHONUNBUFFERED="1")

    def start() -> subprocess.Popen[bytes]:
        out = open(tmp_path / f"host{len(started)}.out", "wb")  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-c", CLI,
                                 "start", str(app), "--port", str(free_port()),
                                 "--data", str(tmp_path / "data")], stdout=out, stderr=subprocess.STDOUT, env=env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in started:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_three_hosts_share_the_leases_and_survive_a_killed_host(tmp_path: Path, hosts) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    client = connect("CosmosDB", data_dir=data)
    db = client.create_database_if_not_exists("db")
    items = db.create_container_if_not_exists("items", "/pk", partitions=4)
    log_file = tmp_path / "changes.log"

    def lease_owners() -> list[str | None]:
        try:
            docs = db.get_container_client("leases").read_all_items()
        except Exception:
            return []
        return [d.get("Owner") for d in docs if ".." in d["id"]]

    def processed() -> list[dict[str, object]]:
        if not log_file.exists():
            return []
        return [json.loads(line) for line in log_file.read_text().splitlines() if line.strip()]

    first = hosts()
    wait_for("the first host to create the four leases", lambda: len(lease_owners()) == 4 and all(lease_owners()))
    hosts()
    hosts()

    def spread() -> list[int]:
        return sorted(collections.Counter(o for o in lease_owners() if o).values())

    wait_for("leases spread 2/1/1", lambda: spread() == [1, 1, 2])
    time.sleep(3)  # stays balanced over several acquire intervals
    assert spread() == [1, 1, 2]

    batch1 = [f"a{i}" for i in range(40)]
    for doc_id in batch1:
        items.upsert_item({"id": doc_id, "pk": f"k{doc_id}"})
    wait_for("the first 40 changes", lambda: set(batch1) <= {p["id"] for p in processed()})
    assert len({p["pid"] for p in processed()}) == 3  # every host processed its share

    victim = first  # it started with all four leases and kept at least one
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    batch2 = [f"b{i}" for i in range(40)]
    for doc_id in batch2:
        items.upsert_item({"id": doc_id, "pk": f"k{doc_id}"})
    wait_for("the killed host's leases to be taken over (2/2)", lambda: spread() == [2, 2], timeout=30)
    wait_for("every change after the kill", lambda: set(batch2) <= {p["id"] for p in processed()}, timeout=30)
    late = {p["pid"] for p in processed() if str(p["id"]).startswith("b")}
    assert victim.pid not in late and len(late) == 2
    copies = db.get_container_client("copies")
    # The function logs a change before it returns; its output binding writes the copy after.
    wait_for("every change copied", lambda: {d["id"] for d in copies.read_all_items()} >= set(batch1) | set(batch2),
             timeout=30)
