"""Blob trigger: time from upload to invocation, and the drain rate of a backlog.

    python benchmarks/blob_trigger_bench.py                 # embedded storage, every scenario
    python benchmarks/blob_trigger_bench.py --azurite       # also the same on Azurite
    python benchmarks/blob_trigger_bench.py --blobs 200 --backlog 10000 --only backlog-polling

Scenarios (each in a fresh data folder, real clock, the real host without HTTP, a no-op
`def f(blob: func.InputStream)` reading the 1 KiB blob):
  latency-polling          blobs uploaded one by one through the host's storage (a write the host
                           sees at once through its journal wake-up), upload -> invocation
  latency-polling-external the same uploads through a second storage object on the data folder, as
                           another process (`funchost blob upload`) writes: found by the 2 s poll
  latency-eventgrid        the Event Grid source: upload -> embedded storage topic -> internal
                           queue -> invocation
  backlog-polling          N blobs written before the host starts (first start: every one is new),
                           host start -> N invocations: blobs/s including receipts and the queue
With --azurite, on `--storage azure` against Azurite (its path-style endpoint selects the 2-second
container scan; Azurite has no Event Grid, so that source is timed from the upload through the
webhook call a subscription makes): latency-polling-azurite, latency-eventgrid-azurite,
backlog-polling-azurite (--azurite-backlog blobs).

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
import uuid
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.azurite: the same Azurite launcher the tests use

from funchost.clock import SystemClock  # noqa: E402
from funchost.host import Host, HostConfig  # noqa: E402
from funchost.settings.app_settings import AppSettings  # noqa: E402
from funchost.storage.host_storage import HostStorage, open_storage  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "blob_trigger.json"

APP = """
import time
import azure.functions as func

app = func.FunctionApp()
SEEN = {}

@app.blob_trigger(arg_name="blob", path="%POLLED%/{name}", connection="AzureWebJobsStorage")
def polled(blob: func.InputStream) -> None:
    blob.read()
    SEEN[blob.name] = time.perf_counter()

@app.blob_trigger(arg_name="blob", path="%EVENTED%/{name}", connection="AzureWebJobsStorage",
                  source=func.BlobSource.EVENT_GRID)
def evented(blob: func.InputStream) -> None:
    blob.read()
    SEEN[blob.name] = time.perf_counter()
"""


class Target:
    """Where a scenario runs: embedded storage in its data folder, or Azurite with names of its own."""

    def __init__(self, work: Path, azurite: bool) -> None:
        self.app = work / "app"
        self.data = work / "data"
        suffix = uuid.uuid4().hex[:8]
        self.settings = {"AZURE_FUNCTIONS_ENVIRONMENT": "Production", "POLLED": f"polled-{suffix}",
                         "EVENTED": f"evented-{suffix}"}
        self.storage_kind = "embedded"
        if azurite:
            from tests.support.azurite import get_server

            self.storage_kind = "azure"
            self.settings.update({"AzureWebJobsStorage": get_server().connection_string,
                                  "AzureFunctionsWebHost__hostid": f"bench-{suffix}"})
        self.app.mkdir(parents=True, exist_ok=True)
        (self.app / "function_app.py").write_text(textwrap.dedent(APP))
        host = {"version": "2.0", "logging": {"logLevel": {"default": "Warning"}}}
        (self.app / "host.json").write_text(json.dumps(host))
        (self.app / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
            "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))

    def open_storage(self) -> HostStorage:
        return open_storage(self.storage_kind, self.data, AppSettings(self.settings, environ={}), SystemClock())

    async def run_host(self) -> Host:
        host = Host(HostConfig(app_dir=self.app, data_dir=self.data, serve_http=False, clock=SystemClock(),
                               storage=self.storage_kind, apply_environment=False, settings_override=self.settings))
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


async def _post_event(host: Host, container: str, name: str, etag: str) -> None:
    """What an Event Grid subscription sends to /runtime/webhooks/blobs, through the webhook's ASGI app."""
    from funchost.triggers.blob.hub import BlobTriggerHub
    from funchost.triggers.blob.webhook import BlobsWebhook

    assert host.runtime is not None
    hub = host.runtime.services.find(BlobTriggerHub)
    assert hub is not None
    event = [{"id": name, "eventType": "Microsoft.Storage.BlobCreated", "subject": name, "eventTime": "t",
              "data": {"eTag": etag.strip('"'), "blobType": "BlockBlob",
                       "url": f"http://127.0.0.1:10000/devstoreaccount1/{container}/{name}"}}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=BlobsWebhook(hub)), base_url="http://h") as client:
        response = await client.post("/runtime/webhooks/blobs?functionName=Host.Functions.evented", json=event,
                                     headers={"aeg-event-type": "Notification"})
    assert response.status_code == 202, response.text


async def latency(target: Target, count: int, source: str, *, external: bool = False) -> dict[str, Any]:
    host = await target.run_host()
    runtime = host.runtime
    assert runtime is not None
    other = target.open_storage() if external else None
    service = (other or runtime.storage).blobs()
    container = target.settings["POLLED" if source == "polled" else "EVENTED"]
    await service.create_container(container, exist_ok=True)
    seen = _seen()
    latencies = []
    for i in range(count):
        name = f"b{i:05d}.bin"
        props = await service.upload_blob(container, name, b"x" * 1024)
        uploaded = time.perf_counter()
        if source == "evented" and target.storage_kind == "azure":
            await _post_event(host, container, name, props.etag)
        key = f"{container}/{name}"
        deadline = uploaded + 30
        while key not in seen and time.perf_counter() < deadline:
            await asyncio.sleep(0.001)
        latencies.append(seen[key] - uploaded)
    await host.stop()
    if other is not None:
        await other.aclose()
    return _summary(latencies)


async def backlog(target: Target, count: int) -> dict[str, Any]:
    storage = target.open_storage()
    service = storage.blobs()
    container = target.settings["POLLED"]
    await service.create_container(container, exist_ok=True)
    started = time.perf_counter()
    for start in range(0, count, 128):
        await asyncio.gather(*(service.upload_blob(container, f"b{i:06d}.bin", b"x" * 1024)
                               for i in range(start, min(count, start + 128))))
    fill = count / (time.perf_counter() - started)
    await storage.aclose()
    started = time.perf_counter()
    host = await target.run_host()
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
    parser.add_argument("--external-blobs", type=int, default=30, help="uploads for the 2-second-poll scenarios")
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--azurite", action="store_true", help="also run the scenarios on Azurite")
    parser.add_argument("--azurite-backlog", type=int, default=2_000)
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    scenarios: dict[str, Any] = {
        "latency-polling": (False, lambda t: latency(t, args.blobs, "polled")),
        "latency-polling-external": (False, lambda t: latency(t, args.external_blobs, "polled", external=True)),
        "latency-eventgrid": (False, lambda t: latency(t, args.blobs, "evented")),
        "backlog-polling": (False, lambda t: backlog(t, args.backlog)),
    }
    if args.azurite:
        scenarios.update({
            "latency-polling-azurite": (True, lambda t: latency(t, args.external_blobs, "polled")),
            "latency-eventgrid-azurite": (True, lambda t: latency(t, args.blobs, "evented")),
            "backlog-polling-azurite": (True, lambda t: backlog(t, args.azurite_backlog)),
        })
    results: dict[str, Any] = {}
    if RESULTS.exists():
        results = json.loads(RESULTS.read_text()).get("results", {})
    for name, (on_azurite, run) in scenarios.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="funchost-blobbench-") as work:
            results[name] = await run(Target(Path(work), on_azurite))
        print(f"{name}: {results[name]}", flush=True)
    if args.azurite:
        from tests.support.azurite import stop_server

        stop_server()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                               "platform": platform.platform()}, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
