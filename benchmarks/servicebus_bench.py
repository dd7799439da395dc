"""Service Bus trigger throughput on the embedded broker, beside the storage-queue trigger.

    python benchmarks/servicebus_bench.py                  # 10,000 messages per scenario
    python benchmarks/servicebus_bench.py --messages 20000 --only sb-drain-single,queue-drain

Scenarios (each in a fresh data folder, real clock, the real host without HTTP, a no-op function,
AZURE_FUNCTIONS_ENVIRONMENT=Production), all in the same run so the figures compare:
  queue-drain        storage queue trigger, default host.json (the reference)
  sb-drain-single    Service Bus queue trigger, cardinality one, default host.json
                     (maxConcurrentCalls 16 x CPUs, auto-complete, lock renewal on)
  sb-drain-batch     Service Bus queue trigger, cardinality many, maxMessageBatchSize 100
  sb-send            messages/s through the broker's send (500 per call), what the CLI uses

Results are printed and written to benchmarks/results/servicebus.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from funchost.clock import SystemClock
from funchost.host import Host, HostConfig
from funchost.settings.app_settings import AppSettings
from funchost.storage.backend import EmbeddedStorage
from funchost.storage.servicebus import OutgoingMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queue_bench  # noqa: E402  (the storage-queue reference scenario)

RESULTS = Path(__file__).resolve().parent / "results" / "servicebus.json"

APP = """
import azure.functions as func
from typing import List

app = func.FunctionApp()
COUNT = [0]

@app.service_bus_queue_trigger(arg_name="msg", queue_name="single", connection="ServiceBus")
def single(msg: str) -> None:
    COUNT[0] += 1

@app.service_bus_queue_trigger(arg_name="msgs", queue_name="batch", connection="ServiceBus", cardinality="many")
def batch(msgs: List[func.ServiceBusMessage]) -> None:
    COUNT[0] += len(msgs)
"""


def write_app(folder: Path, service_bus: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "function_app.py").write_text(textwrap.dedent(APP))
    host: dict[str, Any] = {"version": "2.0", "logging": {"logLevel": {"default": "Warning"}}}
    if service_bus:
        host["extensions"] = {"serviceBus": service_bus}
    (folder / "host.json").write_text(json.dumps(host))
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))
    return folder


async def prefill(data: Path, queue: str, count: int) -> float:
    """Send `count` messages in calls of 500; returns messages/s."""
    storage = EmbeddedStorage(data, AppSettings({}, environ={}), SystemClock())
    broker = storage.servicebus("sbemulatorns")
    for name in ("single", "batch"):
        await broker.create_queue(name)
    started = time.perf_counter()
    for start in range(0, count, 500):
        n = min(500, count - start)
        await broker.send(queue, [OutgoingMessage(b'{"n": 1}') for _ in range(n)])
    elapsed = time.perf_counter() - started
    await storage.aclose()
    return count / elapsed if count else 0.0


async def drain(work: Path, queue: str, count: int, service_bus: dict[str, Any] | None) -> dict[str, Any]:
    app, data = write_app(work / "app", service_bus), work / "data"
    send_rate = await prefill(data, queue, count)
    started = time.perf_counter()
    host = Host(HostConfig(app_dir=app, data_dir=data, serve_http=False, clock=SystemClock(), apply_environment=False,
                           settings_override={"AZURE_FUNCTIONS_ENVIRONMENT": "Production"}))
    sys.modules.pop("function_app", None)
    host.load()
    await host.start()
    counter = sys.modules["function_app"].COUNT
    while counter[0] < count:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    await host.stop()
    return {"messages": count, "seconds": round(elapsed, 3), "messages_per_second": round(count / elapsed),
            "prefill_sends_per_second": round(send_rate)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    scenarios: dict[str, Any] = {
        "queue-drain": lambda w: queue_bench.drain(w, args.messages, None),
        "sb-drain-single": lambda w: drain(w, "single", args.messages, None),
        "sb-drain-batch": lambda w: drain(w, "batch", args.messages, {"maxMessageBatchSize": 100}),
    }
    results: dict[str, Any] = {}
    for name, run in scenarios.items():
        if wanted and name not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix=f"sbbench-{name}-") as work:
            results[name] = await run(Path(work))
        print(f"{name:<18} {results[name]['messages_per_second']:>8} msg/s  ({results[name]['seconds']} s)")
    if not wanted or "sb-send" in wanted:
        with tempfile.TemporaryDirectory(prefix="sbbench-send-") as work:
            rate = await prefill(Path(work), "single", args.messages)
        results["sb-send"] = {"messages": args.messages, "messages_per_second": round(rate)}
        print(f"{'sb-send':<18} {round(rate):>8} msg/s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    previous.setdefault("scenarios", {}).update(results)
    previous["environment"] = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                               "cpus": os.cpu_count(), "platform": platform.platform()}
    previous["parameters"] = {"messages": args.messages}
    RESULTS.write_text(json.dumps(previous, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
