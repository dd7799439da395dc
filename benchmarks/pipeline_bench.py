"""Import pipeline benchmark: intake throughput/latency vs a bare endpoint, and 202 -> Completed.

    python benchmarks/pipeline_bench.py [--requests 600] [--concurrency 8] [--rate 20] [--seconds 10] [--settle S]

Runs `funchost start examples/imports` (embedded storage, SQLite jobs DB) as a separate process:
0. intake alone: on a host whose queue workers are disabled (`AzureWebJobs.<name>.Disabled`, as
   on Azure), `GET /api/ping` and `POST /api/imports` as in 1; this is the intake path itself,
   without the same two cores also processing every accepted job;
1. `GET /api/ping` (a bare sync function on the same server) and `POST /api/imports` (JWT
   verification, body checks, blob policy, blob verification, canonical hash, one Job + Outbox
   transaction) are each driven with `--requests` requests by `--concurrency` clients; requests/s
   and p50/p99 latency, and the intake/ping ratio, on the full pipeline (workers running);
2. burst processing: the jobs DB is polled until the accepted burst is Completed (the steady-rate
   run starts after it; `--settle S` starts it a fixed S seconds after the burst instead);
3. end-to-end: imports submitted at `--rate` per second for `--seconds`; latency from the 202
   (the job's created_at) to Completed (finished_at), read from the jobs DB, p50/p99.
JSON goes to benchmarks/results/pipeline.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import jwt

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "imports"
CLI = [sys.executable, "-c", "import sys; from funchost.cli import main; sys.exit(main())"]
SECRET = "bench-only-jwt-secret-0123456789abcdef"
KEY = "bench-master-key"
CSV = b"customerId,amount,currency\nC001,10.00,EUR\nC002,5.25,EUR\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


async def drive(client: httpx.AsyncClient, make, total: int, concurrency: int) -> dict:  # type: ignore[no-untyped-def]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    counter = iter(range(total))

    async def worker() -> None:
        for i in counter:
            method, url, kwargs = make(i)
            start = time.perf_counter()
            response = await client.request(method, url, **kwargs)
            latencies.append(time.perf_counter() - start)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    return {"requests": total, "seconds": round(elapsed, 3), "requests_per_second": round(total / elapsed, 1),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 2), "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
            "statuses": statuses}


async def wait_until_completed(data: Path, expected: int, *, began: float, limit: float = 120.0) -> float | None:
    """Seconds until `expected` jobs are Completed in the jobs DB (None: not within `limit`)."""
    while time.perf_counter() - began < limit:
        with sqlite3.connect(data / "imports.db") as db:
            done = db.execute("SELECT COUNT(*) FROM jobs WHERE state = 'Completed'").fetchone()[0]
        if done >= expected:
            return round(time.perf_counter() - began, 3)
        await asyncio.sleep(0.05)
    return None


# Functions whose work follows an accepted import; disabled for the intake-alone measurement.
WORKERS_DISABLED = {f"AzureWebJobs.{name}.Disabled": "true"
                    for name in ("process_import", "process_ocr", "dispatch_outbox", "watchdog")}


@contextmanager
def running_host(folder: Path, settings: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """`funchost start` on a private copy of the app, with the sample CSV uploaded."""
    app, data = folder / "app", folder / "data"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns(".funchost", "__pycache__"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "FUNCHOST_MASTER_KEY": KEY, "IMPORTS_JWT_SECRET": SECRET,
           "LEDGER_URL": f"http://127.0.0.1:{port}/api/ledger/entries", "LEDGER_FUNCTION_KEY": KEY, **settings}
    subprocess.run([*CLI, "blob", "upload", "imports", "tenant-a/bench/orders.csv", "-", "--app", str(app),
                    "--data", str(data), "--connection", "ImportsStorage", "--content-type", "text/csv"],
                   input=CSV, check=True, capture_output=True, env=env)
    log = (folder / "host.log").open("wb")
    host = subprocess.Popen([*CLI, "start", str(app), "--port", str(port), "--data", str(data),
                             "--no-storage-endpoints"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{base}/admin/host/status", headers={"x-functions-key": KEY}).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base, data
    finally:
        host.send_signal(signal.SIGINT)
        host.wait(60)
        log.close()


def request_parts() -> tuple[dict[str, str], dict[str, str]]:
    """Headers (function key + a tenant-a JWT) and the import body every request uses."""
    token = jwt.encode({"tid": "tenant-a", "oid": "bench", "exp": int(time.time()) + 7200}, SECRET, "HS256")
    headers = {"x-functions-key": KEY, "Authorization": f"Bearer {token}"}
    return headers, {"containerName": "imports", "blobName": "tenant-a/bench/orders.csv"}


def new_client(args: argparse.Namespace, base: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, timeout=30, limits=httpx.Limits(max_connections=args.concurrency * 2))


async def ping_and_intake(client: httpx.AsyncClient, args: argparse.Namespace, key_prefix: str) -> dict:
    """`--requests` pings (after a warm-up), then as many imports with fresh idempotency keys."""
    headers, body = request_parts()
    await drive(client, lambda i: ("GET", "/api/ping", {}), 50, args.concurrency)  # warm-up
    ping = await drive(client, lambda i: ("GET", "/api/ping", {}), args.requests, args.concurrency)
    intake = await drive(client, lambda i: ("POST", "/api/imports", {
        "json": body, "headers": {**headers, "Idempotency-Key": f"{key_prefix}-{i}"}}), args.requests, args.concurrency)
    return {"ping": ping, "intake": intake,
            "intake_vs_ping": round(intake["requests_per_second"] / ping["requests_per_second"], 3)}


async def intake_phase(args: argparse.Namespace, base: str) -> dict:
    async with new_client(args, base) as client:
        return await ping_and_intake(client, args, "alone")


async def run(args: argparse.Namespace, base: str, data: Path) -> dict:
    headers, body = request_parts()
    async with new_client(args, base) as client:
        first = await ping_and_intake(client, args, "bench")
        ping, intake = first["ping"], first["intake"]
        # the accepted burst is processed by the same host: wait until it is done (every job
        # Completed) so the steady-rate run measures latency, not the tail of the burst's backlog
        if args.settle is None:
            drained_after = await wait_until_completed(data, args.requests, began=time.perf_counter())
        else:  # a fixed pause instead: the burst's backlog may overlap the steady-rate run
            drained_after = None
            await asyncio.sleep(args.settle)
        e2e_ids: list[str] = []
        total = int(args.rate * args.seconds)
        began = time.perf_counter()
        for i in range(total):
            target = began + i / args.rate
            await asyncio.sleep(max(0.0, target - time.perf_counter()))
            response = await client.post("/api/imports", json=body,
                                         headers={**headers, "Idempotency-Key": f"e2e-{i}"})
            e2e_ids.append(response.json()["jobId"])
        await wait_until_completed(data, args.requests + total, began=time.perf_counter())
    latencies, completed = [], 0
    with sqlite3.connect(data / "imports.db") as db:
        for job_id in e2e_ids:
            row = db.execute("SELECT state, created_at, finished_at FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            if row and row[0] == "Completed" and row[2]:
                completed += 1
                latencies.append((datetime.fromisoformat(row[2]) - datetime.fromisoformat(row[1])).total_seconds())
    e2e = {"rate_per_second": args.rate, "jobs": total, "completed": completed,
           "p50_ms": round(percentile(latencies, 0.5) * 1000, 2), "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
           "max_ms": round(max(latencies) * 1000, 2) if latencies else None,
           "mean_ms": round(statistics.mean(latencies) * 1000, 2) if latencies else None}
    burst = {"jobs": args.requests, "completed_after_last_202_seconds": drained_after,
             "jobs_per_second_incl_intake": round(args.requests / (intake["seconds"] + drained_after), 1)
             if drained_after is not None else None}
    return {"ping": ping, "intake": intake, "burst_processing": burst, "intake_vs_ping": round(intake["requests_per_second"] /
                                                                    ping["requests_per_second"], 3), "end_to_end": e2e}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=None,
                        help="start the steady-rate run this many seconds after the burst instead of after "
                             "the burst's jobs have completed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="funchost-bench-") as tmp:
        with running_host(Path(tmp) / "intake", WORKERS_DISABLED) as (base, _data):
            intake_only = asyncio.run(intake_phase(args, base))
        with running_host(Path(tmp) / "full", {}) as (base, data):
            figures = asyncio.run(run(args, base, data))
    figures["intake_alone"] = intake_only
    result = {"benchmark": "pipeline", "python": platform.python_version(), "cpus": os.cpu_count(),
              "parameters": vars(args), **figures}
    out = ROOT / "benchmarks" / "results" / "pipeline.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
