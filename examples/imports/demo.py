"""End-to-end demo of the import/OCR pipeline on a real `funchost start` process.

Run it with `./scripts/demo` (or `python examples/imports/demo.py` inside the venv). It starts
the host on a free port with a temporary data folder, uploads a CSV and a PDF, submits imports
as two tenants, shows idempotency, a conflict, a business failure, a poisoned message ending in
quarantine, tenant isolation, and exits 0 only if every step behaved.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import jwt
from sample_files import tiny_pdf  # next to this script

APP = Path(__file__).resolve().parent
MASTER_KEY = "demo-master-key"
SECRET = secrets.token_urlsafe(32)  # a fresh secret per run: nothing published to refuse or reuse
CLI = [sys.executable, "-c", "import sys; from funchost.cli import main; sys.exit(main())"]
TIMEOUT = 60.0
CSV_OK = b"customerId,amount,currency\nC001,120.00,EUR\nC002,80.50,EUR\nC003,15,EUR\n"
CSV_BAD = b"customerId,amount\nC001,12\nZ999,abc\n"


class Demo:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.results: list[tuple[str, bool, str]] = []
        self.env = {**os.environ, "FUNCHOST_MASTER_KEY": MASTER_KEY, "IMPORTS_JWT_SECRET": SECRET,
                    "LEDGER_URL": f"{self.base}/api/ledger/entries", "LEDGER_FUNCTION_KEY": MASTER_KEY,
                    "PYTHONUNBUFFERED": "1",
                    # host.json says 30 s between deliveries of a failed message; the demo overrides
                    # it through an app setting (as on Azure) so the poison step takes seconds.
                    "AzureFunctionsJobHost__extensions__queues__visibilityTimeout": "00:00:01"}
        self.log = data / "host.log"
        self.process: subprocess.Popen[bytes] | None = None

    # -- host -----------------------------------------------------------------------------------

    def start(self) -> None:
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen([*CLI, "start", str(APP), "--port", str(self.port), "--data", str(self.data),
                                             "--no-storage-endpoints"],
                                            stdout=sink, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/admin/host/status", headers={"x-functions-key": MASTER_KEY}).status_code == 200:
                    print(f"host running on {self.base} (data: {self.data})")
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise SystemExit(f"the host did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
            print(f"host stopped (exit code {self.process.returncode})")

    def cli(self, *args: str, stdin: bytes | None = None) -> str:
        done = subprocess.run([*CLI, *args, "--app", str(APP), "--data", str(self.data)], input=stdin,
                              capture_output=True, env=self.env, timeout=60)
        if done.returncode != 0:
            raise SystemExit(f"funchost {' '.join(args)} failed: {done.stderr.decode()[-2000:]}")
        return done.stdout.decode()

    # -- calls ----------------------------------------------------------------------------------

    def headers(self, tenant: str, user: str) -> dict[str, str]:
        claims = {"tid": tenant, "oid": user, "exp": int(time.time()) + 3600}
        return {"x-functions-key": MASTER_KEY, "Authorization": f"Bearer {jwt.encode(claims, SECRET, 'HS256')}"}

    def submit(self, tenant: str, user: str, key: str, body: dict) -> httpx.Response:
        return httpx.post(f"{self.base}/api/imports", json=body, timeout=10,
                          headers={**self.headers(tenant, user), "Idempotency-Key": key})

    def status(self, tenant: str, job_id: str) -> httpx.Response:
        return httpx.get(f"{self.base}/api/imports/{job_id}", headers=self.headers(tenant, "viewer"), timeout=10)

    def wait_for(self, tenant: str, job_id: str, states: set[str]) -> dict:
        seen: list[str] = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            body = self.status(tenant, job_id).json()
            if not seen or seen[-1] != body.get("status"):
                seen.append(str(body.get("status")))
                print(f"    {job_id}: {body.get('status')}" + (f" ({body.get('reason')})" if body.get("reason") else ""))
            if body.get("status") in states:
                return body
            time.sleep(0.1)
        return {"status": seen[-1] if seen else None}

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        self.results.append((name, ok, detail))
        print(f"[{'ok' if ok else 'FAILED'}] {name}" + (f": {detail}" if detail else ""))

    # -- the scenario ---------------------------------------------------------------------------

    def run(self) -> None:
        files = self.data / "files"
        files.mkdir()
        (files / "orders.csv").write_bytes(CSV_OK)
        (files / "bad.csv").write_bytes(CSV_BAD)
        (files / "invoice.pdf").write_bytes(tiny_pdf("Invoice 2026-06 total 215.50 EUR"))
        for name, blob in (("orders.csv", "tenant-a/2026/orders.csv"), ("bad.csv", "tenant-a/2026/bad.csv"),
                           ("invoice.pdf", "tenant-a/scans/invoice.pdf"), ("orders.csv", "tenant-b/orders.csv")):
            self.cli("blob", "upload", "imports", blob, str(files / name), "--connection", "ImportsStorage")
        print("uploaded 4 blobs to container 'imports' of account 'imports'")

        body = {"containerName": "imports", "blobName": "tenant-a/2026/orders.csv"}
        first = self.submit("tenant-a", "alice", "order-import-1", body)
        self.check("submit returns 202 with a jobId", first.status_code == 202, first.text)
        job_id = first.json()["jobId"]
        again = self.submit("tenant-a", "alice", "order-import-1", {"blobName": body["blobName"],
                                                                    "containerName": "imports"})
        self.check("same key again -> same jobId", again.status_code == 202 and again.json()["jobId"] == job_id,
                   again.json().get("jobId", ""))
        conflict = self.submit("tenant-a", "alice", "order-import-1", {**body, "blobName": "tenant-a/2026/bad.csv"})
        self.check("same key, other body -> 409", conflict.status_code == 409, str(conflict.status_code))
        done = self.wait_for("tenant-a", job_id, {"Completed", "BusinessFailed", "NeedsAttention"})
        self.check("CSV import job Completed", done.get("status") == "Completed")

        other = self.submit("tenant-b", "bob", "order-import-1", {"containerName": "imports",
                                                                  "blobName": "tenant-b/orders.csv"})
        self.check("same key, other tenant -> its own job", other.status_code == 202 and other.json()["jobId"] != job_id)
        self.wait_for("tenant-b", other.json()["jobId"], {"Completed"})
        hidden = self.status("tenant-b", job_id)
        self.check("tenant-b cannot read tenant-a's job (404)", hidden.status_code == 404, str(hidden.status_code))
        spoof = self.submit("tenant-b", "bob", "spoof-1", body)
        self.check("tenant-b cannot import tenant-a's blob (403)", spoof.status_code == 403, str(spoof.status_code))

        bad = self.submit("tenant-a", "alice", "bad-import-1", {"containerName": "imports",
                                                                "blobName": "tenant-a/2026/bad.csv"})
        result = self.wait_for("tenant-a", bad.json()["jobId"], {"BusinessFailed", "Completed"})
        self.check("bad CSV ends BusinessFailed with a reason", result.get("status") == "BusinessFailed",
                   str(result.get("reason", ""))[:80])

        ocr_job = self.find_ocr_job()
        self.check("the PDF's BlobCreated event created an OCR job", ocr_job is not None, ocr_job or "")
        if ocr_job:
            result = self.wait_for("tenant-a", ocr_job, {"Completed", "BusinessFailed"})
            text = self.cli("blob", "download", "ocr-output", f"tenant-a/{ocr_job}.txt", "-",
                            "--connection", "ImportsStorage") if result.get("status") == "Completed" else ""
            self.check("OCR job Completed, text extracted with pypdf", "215.50" in text, text.strip()[:60])

        self.cli("queue", "send", "import-jobs", "not json at all", "--connection", "ImportsStorage")
        print("sent a poison message to import-jobs (processing fails 5 times, then quarantine)")
        items = self.wait_quarantine()
        self.check("poisoned message quarantined", len(items) == 1,
                   f"MessageHash={items[0]['message_hash'][:16]}..." if items else "none")
        listing = self.cli("blob", "list", "quarantine", "--connection", "ImportsStorage")
        self.check("raw message stored in the quarantine container", "import-jobs-poison/" in listing)
        self.check("raw poison body never logged", "not json at all" not in self.log.read_text())

        books = {tenant: httpx.get(f"{self.base}/api/ledger/entries", headers=self.headers(tenant, "auditor"),
                                   timeout=10).json()["entries"] for tenant in ("tenant-a", "tenant-b")}
        keys = [e["idempotencyKey"] for entries in books.values() for e in entries]
        self.check("ledger saw one entry per completed import job", len(keys) == len(set(keys)) == 2, ", ".join(keys))
        self.check("each tenant sees only its own ledger entries", [len(v) for v in books.values()] == [1, 1]
                   and all(e["entry"]["tenantId"] == t for t, v in books.items() for e in v))
        forged = httpx.post(f"{self.base}/api/ledger/entries", json={"tenantId": "tenant-a", "total": "0"},
                            headers={**self.headers("tenant-a", "alice"), "Idempotency-Key": f"{job_id}:ledger-post"},
                            timeout=10)
        self.check("a tenant's user cannot record ledger entries (403)", forged.status_code == 403,
                   str(forged.status_code))

    def find_ocr_job(self) -> str | None:
        deadline = time.monotonic() + TIMEOUT
        import sqlite3

        while time.monotonic() < deadline:
            try:
                with sqlite3.connect(self.data / "imports.db", timeout=10) as db:
                    row = db.execute("SELECT job_id FROM jobs WHERE job_id LIKE 'blob_%' AND blob_ref LIKE ?",
                                     ("%invoice.pdf%",)).fetchone()
                if row:
                    return str(row[0])
            except sqlite3.Error:
                pass
            time.sleep(0.2)
        return None

    def wait_quarantine(self) -> list[dict]:
        deadline = time.monotonic() + TIMEOUT * 4
        while time.monotonic() < deadline:
            items = httpx.get(f"{self.base}/api/quarantine", headers={"x-functions-key": MASTER_KEY},
                              timeout=10).json()["items"]
            if items:
                return items
            time.sleep(0.5)
        return []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="funchost-demo-") as tmp:
        demo = Demo(Path(tmp))
        demo.start()
        try:
            demo.run()
        finally:
            demo.stop()
        failed = [name for name, ok, _ in demo.results if not ok]
        print(f"\nsummary: {len(demo.results) - len(failed)}/{len(demo.results)} checks passed")
        for name in failed:
            print(f"  FAILED: {name}")
        if failed:
            print(f"\nhost log (tail):\n{(Path(tmp) / 'host.log').read_text()[-4000:]}")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
