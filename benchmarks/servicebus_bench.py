"""Service Bus trigger throughput on the embedded broker, beside the storage-queue trigger.

    python benchmarks/servicebus_bench.py                  # 10,000 messages per scenario
    python benchmarks/servicebus_bench.py --messages 20000 --only sb-drain-single,queue-drain
    python benchmarks/servicebus_bench.py --rounds 3 --baseline-src DIR   # before/after in one run

Scenarios (each in a fresh data folder, real clock, the real host without HTTP, a no-op function,
AZURE_FUNCTIONS_ENVIRONMENT=Production), all in the same run so the figures compare:
  queue-drain        storage queue trigger, default host.json (the reference)
  sb-drain-single    Service Bus queue trigger, cardinality one, default host.json
                     (maxConcurrentCalls 16 x CPUs, auto-complete, lock renewal on), `msg: str`
  sb-drain-single-message  the same with a `func.ServiceBusMessage` parameter
  sb-drain-batch     Service Bus queue trigger, cardinality many, maxMessageBatchSize 100,
                     `List[func.ServiceBusMessage]`
  sb-send            messages/s through the broker's send (500 per call), what the CLI uses

Each scenario runs in its own process; with --baseline-src DIR (a funchost tree, e.g.
`git archive <commit> src | tar -x -C DIR`) each also runs on that tree, alternating, and
--rounds gives min / median / max. Results are printed and written to
benchmarks/results/servicebus.json.
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
from funchost.storage.servicebus import OutgoingMessage
from funchost.storage.sqlite.backend import EmbeddedStorage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queue_bench  # noqa: E402  (the storage-queue reference scenario)
import same_run  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "servicebus.json"

APP = """
import azure.functions as func
from typing import List

app = func.FunctionApp()
COUNT = [0]

@app.service_bus_queue_trigger(arg_name="msg", queue_name="single", connection="ServiceBus")
def single(msg: str) -> None:
    COUNT[0] += 1

@app.service_bus_queue_trigger(arg_name="msg", queue_name="single_message", connection="ServiceBus")
def single_message(msg: func.ServiceBusMessage) -> None:
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
    for name in ("single", "single_message", "batch"):
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
    started, cpu_started = time.perf_counter(), time.process_time()
    host = Host(HostConfig(app_dir=app, data_dir=data, serve_http=False, clock=SystemClock(), apply_environment=False,
                           settings_override={"AZURE_FUNCTIONS_ENVIRONMENT": "Production"}))
    sys.modules.pop("function_app", None)
    host.load()
    await host.start()
    counter = sys.modules["function_app"].COUNT
    while counter[0] < count:
        await asyncio.sleep(0.01)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    await host.stop()
    return {"messages": count, "seconds": round(elapsed, 3), "messages_per_second": round(count / elapsed),
            "cpu_us_per_message": round(cpu / count * 1e6, 1), "prefill_sends_per_second": round(send_rate)}


SCENARIOS = ["queue-drain", "sb-drain-single", "sb-drain-single-message", "sb-drain-batch", "sb-send"]


async def child(name: str, messages: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"sbbench-{name}-") as tmp:
        work = Path(tmp)
        if name == "queue-drain":
            return await queue_bench.drain(work, messages, None)  # type: ignore[no-any-return]
        if name == "sb-drain-single":
            return await drain(work, "single", messages, None)
        if name == "sb-drain-single-message":
            return await drain(work, "single_message", messages, None)
        if name == "sb-drain-batch":
            return await drain(work, "batch", messages, {"maxMessageBatchSize": 100})
        rate = await prefill(work, "single", messages)
        return {"messages": messages, "messages_per_second": round(rate)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline-src", type=Path, help="a funchost source tree to measure as 'baseline'")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.messages))))
        return
    names = args.only.split(",") if args.only else SCENARIOS
    figures = same_run.rounds(__file__, names, ["--messages", str(args.messages)], args.rounds, args.baseline_src,
                              "messages_per_second")
    same_run.print_table(figures, names, "msg/s", 24)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "environment": {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                        "cpus": os.cpu_count(), "platform": platform.platform()},
        "parameters": {"messages": args.messages, "rounds": args.rounds,
                       "baseline_src": str(args.baseline_src) if args.baseline_src else None},
        "scenarios": figures["current"]}
    if "baseline" in figures:
        report["baseline"] = figures["baseline"]
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
