"""Blob trigger: time from upload to invocation, and the drain rate of a backlog, on embedded storage.

    python benchmarks/blob_trigger_bench.py                 # every scenario
    python benchmarks/blob_trigger_bench.py --blobs 200 --backlog 10000 --only backlog-polling

Scenarios (each in a fresh data folder, real clock, the real host without HTTP, a no-op
`def f(blob: func.InputStream)` reading the blob):
  latency-polling          blobs uploaded one by one through the host's storage (a write the host
                           sees at once through its journal wake-up), upload -> invocation
  latency-polling-external the same uploads through a second storage object on the data folder, as
                           another process (`funchost blob upload`) writes: found by the 2 s poll
  latency-eventgrid        the Event Grid source: upload -> embedded storage topic -> internal
                           queue -> invocation
  backlog-polling          N blobs written before the host starts (first start: every one is new),
                           host start -> N invocations: blobs/s including receipts and the queue

Results are printed and written to benchmarks/results/blob_trigger.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from funchost.clock import SystemClock
from funchost.host import Host, HostConfig
from funchost.settings.app_settings import AppSettings
from funchost.storage.blobs import BlobService
from funchost.storage.host_storage import HostStorage, open_storage

RESULTS = Path(__file__).resolve().parent / "results" / "blob_trigger.json"

APP = """
import time
import azure.functions as func

app = func.FunctionApp()
SEEN = {}

@app.blob_trigger(arg_name="blob", path="polled/{name}", connection="AzureWebJobsStorage")
def polled(blob: func.InputStream) -> None:
    blob.read()
    SEEN[blob.name] = time.perf_counter()

@app.blob_trigger(arg_name="blob", path="evented/{name}", connection="AzureWebJobsStorage",
                  source=func.BlobSource.EVENT_GRID)
def evented(blob: func.InputStream) -> None:
    blob.read()
    SEEN[blob.name] = time.perf_counter()
"""


def write_app(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "function_app.py").write_text(textwrap.dedent(APP))
    host = {"version": "2.0", "logging": {"logLevel": {"default": "Warning"}}}
    (folder / "host.json").write_text(json.dumps(host))
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))
    return folder


async def run_host(app: Path, data: Path) -> Host:
    host = Host(HostConfig(app_dir=app, data_dir=data, serve_http=False, clock=SystemClock(),
                           apply_environment=False, settings_override={"AZURE_FUNCTIONS_ENVIRONMENT": "Production"}))
    sys.modules.pop("function_app", None)
    host.load()
    await host.start()
    return host


def _seen() -> dict[str, float]:
    return sys.modules["function_app"].SEEN  # type: ignore[no-any-return]


def _summary(latencies: list[float]) -> dict[str, Any]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"blobs": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p99_ms": round(p99 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


async def _upload(service: BlobService, container: str, name: str) -> None:
    await service.upload_blob(container, name, b"x" * 1024)


async def latency(work: Path, count: int, container: str, *, external: bool) -> dict[str, Any]:
    app, data = write_app(work / "app"), work / "data"
    host = await run_host(app, data)
    runtime = host.runtime
    assert runtime is not None
    other: HostStorage | None = None
    service = runtime.storage.blobs()
    if external:
        other = open_storage("embedded", data, AppSettings({}, environ={}), SystemClock())
        service = other.blobs()
    await service.create_container(container, exist_ok=True)
    seen = _seen()
    latencies = []
    for i in range(count):
        name = f"b{i:05d}.bin"
        await _upload(service, container, name)
        uploaded = time.perf_counter()
        key = f"{container}/{name}"
        deadline = uploaded + 30
        while key not in seen and time.perf_counter() < deadline:
            await asyncio.sleep(0.001)
        latencies.append(seen[key] - uploaded)
    await host.stop()
    if other is not None:
        await other.aclose()
    return _summary(latencies)


async def backlog(work: Path, count: int) -> dict[str, Any]:
    app, data = write_app(work / "app"), work / "data"
    storage = open_storage("embedded", data, AppSettings({}, environ={}), SystemClock())
    service = storage.blobs()
    await service.create_container("polled")
    started = time.perf_counter()
    for start in range(0, count, 256):
        await asyncio.gather(*(_upload(service, "polled", f"b{i:06d}.bin")
                               for i in range(start, min(count, start + 256))))
    fill = count / (time.perf_counter() - started)
    await storage.aclose()
    started = time.perf_counter()
    host = await run_host(app, data)
    seen = _seen()
    while len(seen) < count:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    await host.stop()
    return {"blobs": count, "seconds": round(elapsed, 2), "blobs_per_second": round(count / elapsed),
            "prefill_uploads_per_second": round(fill)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blobs", type=int, default=200, help="uploads per latency scenario")
    parser.add_argument("--external-blobs", type=int, default=30, help="uploads for latency-polling-external")
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    scenarios = {
        "latency-polling": lambda w: latency(w, args.blobs, "polled", external=False),
        "latency-polling-external": lambda w: latency(w, args.external_blobs, "polled", external=True),
        "latency-eventgrid": lambda w: latency(w, args.blobs, "evented", external=False),
        "backlog-polling": lambda w: backlog(w, args.backlog),
    }
    results: dict[str, Any] = {}
    if RESULTS.exists():
        results = json.loads(RESULTS.read_text()).get("results", {})
    for name, run in scenarios.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="funchost-blobbench-") as work:
            results[name] = await run(Path(work))
        print(f"{name}: {results[name]}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                               "platform": platform.platform()}, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
