"""A frozen process (SIGSTOP) holding the jobs database's write lock does not stall intake on a
healthy host for the 30 s busy timeout: requests get a quick 503 with Retry-After, reads and
liveness keep answering, and after SIGCONT the retried requests are accepted and processed."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import copy_example, run_cli, start_funchost, stop_funchost, wait_until
from tests.support.pipeline import CSV_OK, SECRET, token

pytestmark = pytest.mark.acceptance

BUSY_TIMEOUT = 30.0  # SQLite busy timeout of the jobs DB: what a request waited before the fix
# Opens the jobs DB, takes the write lock as a host's transaction does, and freezes itself there.
FREEZER = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE jobs SET updated_at = updated_at")
print("locked", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
conn.execute("ROLLBACK")
"""


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("T")


def test_a_frozen_lock_holder_gets_intake_a_quick_503_then_retries_are_accepted(tmp_path: Path) -> None:
    app = copy_example("imports", tmp_path)
    data = tmp_path / "data"
    csv = tmp_path / "orders.csv"
    csv.write_bytes(CSV_OK)
    run_cli("blob", "upload", "imports", "tenant-a/orders.csv", str(csv), "--app", str(app), "--data", str(data),
            "--connection", "ImportsStorage")
    host = start_funchost(app, data_dir=data, env={"IMPORTS_JWT_SECRET": SECRET, "IMPORTS_INTAKE_WAIT_SECONDS": "1"})
    headers = {**host.admin_headers, "Authorization": f"Bearer {token()}"}
    body = {"containerName": "imports", "blobName": "tenant-a/orders.csv"}

    def submit(key: str) -> tuple[httpx.Response, float]:
        started = time.monotonic()
        response = httpx.post(f"{host.base_url}/api/imports", json=body, timeout=60,
                              headers={**headers, "Idempotency-Key": key})
        return response, time.monotonic() - started

    def state(job_id: str) -> str:
        return str(httpx.get(f"{host.base_url}/api/imports/{job_id}", headers=headers, timeout=10).json()["status"])

    freezer = None
    try:
        first, _ = submit("before-freeze")
        assert first.status_code == 202, first.text
        first_job = first.json()["jobId"]
        wait_until(lambda: state(first_job) == "Completed", "the first job", 60, [host])

        freezer = subprocess.Popen([sys.executable, "-c", FREEZER, str(data / "imports.db")], stdout=subprocess.PIPE,
                                   text=True)
        assert freezer.stdout is not None and freezer.stdout.readline().strip() == "locked"
        wait_until(lambda: _stopped(freezer.pid), "the lock holder to freeze", 10, [host])

        keys = [f"during-freeze-{i}" for i in range(8)]  # more requests than the intake has threads
        with concurrent.futures.ThreadPoolExecutor(len(keys)) as pool:
            answers = list(pool.map(submit, keys))
        assert [r.status_code for r, _ in answers] == [503] * len(keys), [r.text for r, _ in answers]
        assert all(r.headers.get("Retry-After") == "5" for r, _ in answers)
        assert max(seconds for _, seconds in answers) < BUSY_TIMEOUT / 2  # not the busy timeout
        assert httpx.get(f"{host.base_url}/api/ping", timeout=10).status_code == 200
        assert state(first_job) == "Completed"  # reads take no write lock

        os.kill(freezer.pid, signal.SIGCONT)  # it rolls back and exits
        assert freezer.wait(10) == 0
        retried = [submit(key)[0] for key in keys]
        assert [r.status_code for r in retried] == [202] * len(keys)
        jobs = {r.json()["jobId"] for r in retried}
        wait_until(lambda: all(state(j) == "Completed" for j in jobs), "the retried jobs", 90, [host])
        ledger = httpx.get(f"{host.base_url}/api/ledger/entries", headers=headers, timeout=10).json()["entries"]
        posted = [e["idempotencyKey"] for e in ledger]
        assert sorted(posted) == sorted(f"{j}:ledger-post" for j in {first_job, *jobs})  # one effect each
    finally:
        if freezer is not None and freezer.poll() is None:
            freezer.send_signal(signal.SIGCONT)
            freezer.kill()
            freezer.wait(10)
        stop_funchost(host)
