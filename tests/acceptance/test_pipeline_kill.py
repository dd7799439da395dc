"""A worker process killed mid-job: its lease expires, another host completes the job, and the
downstream ledger sees one effect (real `funchost start` processes sharing one data folder)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import CLI, start_funchost, stop_funchost
from tests.support.pipeline import APP_DIR, CSV_OK, SECRET, token

pytestmark = pytest.mark.acceptance


class SlowLedger(BaseHTTPRequestHandler):
    """Records each Idempotency-Key; answers a new key only after a delay (time to kill the host)."""

    keys: list[str] = []
    first_seen = threading.Event()
    delay = 30.0

    def do_POST(self) -> None:  # noqa: N802
        key = self.headers.get("Idempotency-Key", "")
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        new = key not in self.keys
        self.keys.append(key)
        if new:
            self.first_seen.set()
            time.sleep(self.delay)
        body = json.dumps({"entryId": "led_1", "idempotencyKey": key}).encode()
        self.send_response(201 if new else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_killed_worker_lease_expires_and_another_host_completes_once(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(APP_DIR, app, ignore=shutil.ignore_patterns(".funchost", "__pycache__"))
    data = tmp_path / "data"
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowLedger)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"LEDGER_URL": f"http://127.0.0.1:{server.server_port}/entries", "IMPORTS_JWT_SECRET": SECRET,
           "IMPORTS_LEASE_SECONDS": "2", "FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "3", "LEDGER_TIMEOUT_SECONDS": "60"}
    csv = tmp_path / "file.csv"
    csv.write_bytes(CSV_OK)
    first = start_funchost(app, data_dir=data, env=env)
    second = None
    try:
        subprocess.run([sys.executable, "-c", CLI, "blob", "upload", "imports", "tenant-a/k/file.csv", str(csv),
                        "--app", str(app), "--data", str(data), "--connection", "ImportsStorage"],
                       check=True, capture_output=True, timeout=60)
        headers = {**first.admin_headers, "Authorization": f"Bearer {token()}", "Idempotency-Key": "kill-1"}
        response = httpx.post(f"{first.base_url}/api/imports", headers=headers, timeout=10,
                              json={"containerName": "imports", "blobName": "tenant-a/k/file.csv"})
        assert response.status_code == 202, response.text
        job_id = response.json()["jobId"]
        assert SlowLedger.first_seen.wait(30), first.output()[-3000:]
        first.process.kill()  # mid-job: effect sent, completion never recorded
        first.process.wait(10)
        SlowLedger.delay = 0
        second = start_funchost(app, data_dir=data, env=env)
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            status = httpx.get(f"{second.base_url}/api/imports/{job_id}", timeout=5,
                               headers={**second.admin_headers, "Authorization": f"Bearer {token()}"}).json()
            if status["status"] == "Completed":
                break
            time.sleep(0.2)
        assert status is not None and status["status"] == "Completed", (status, second.output()[-3000:])
        assert status["attempts"] >= 2
        assert set(SlowLedger.keys) == {f"{job_id}:ledger-post"}  # one effect, re-sent with the same key
    finally:
        if second is not None:
            stop_funchost(second)
        if first.process.poll() is None:
            stop_funchost(first)
        server.shutdown()
