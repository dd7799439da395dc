"""Event Hubs trigger throughput on the embedded broker, beside the storage-queue trigger.

    python benchmarks/eventhubs_bench.py                 # 5,000 events / messages per scenario
    python benchmarks/eventhubs_bench.py --events 20000
    python benchmarks/eventhubs_bench.py --rounds 3 --baseline-src DIR   # before/after in one run

Scenarios, each in a fresh data folder with the real host (no HTTP) on the system clock and a
no-op function, in the same run:
  eventhubs-single   a 4-partition hub filled beforehand, drained by a cardinality-one function
                     (one invocation and one checkpoint per event, as the extension does)
  eventhubs-batch    the same with cardinality many (maxEventBatchSize 100: one invocation and
                     one checkpoint per batch)
  queue-default      the storage-queue trigger draining the same number of messages, default host.json
  eventhubs-send     events/s appended through the broker (batches of 100, as the output binding
                     and SDK producers send)

Each scenario runs in its own process; with --baseline-src DIR (a funchost tree, e.g.
`git archive <commit> src | tar -x -C DIR`) each also runs on that tree, alternating, and
--rounds gives min / median / max. Results are printed and written to
benchmarks/results/eventhubs.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from funchost.clock import SystemClock
from funchost.host import Host, HostConfig
from funchost.settings.app_settings import AppSettings
from funchost.storage.eventhubs import EventToSend
from funchost.storage.sqlite.backend import EmbeddedStorage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import same_run  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "eventhubs.json"

APP = """
import azure.functions as func

app = func.FunctionApp()
COUNT = [0]

@app.event_hub_message_trigger(arg_name="event", event_hub_name="single", connection="EventHubs")
def single(event: func.EventHubEvent) -> None:
    COUNT[0] += 1

@app.event_hub_message_trigger(arg_name="events", event_hub_name="batch", connection="EventHubs",
                               cardinality="many")
def batch(events: list[func.EventHubEvent]) -> None:
    COUNT[0] += len(events)

@app.queue_trigger(arg_name="msg", queue_name="bench", connection="AzureWebJobsStorage")
def queue(msg: str) -> None:
    COUNT[0] += 1
"""


def write_app(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "function_app.py").write_text(textwrap.dedent(APP))
    (folder / "host.json").write_text(json.dumps({"version": "2.0", "logging": {"logLevel": {"default": "Warning"}}}))
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))
    return folder


async def fill_hub(data_dir: Path, hub: str, count: int) -> float:
    storage = EmbeddedStorage(data_dir, AppSettings({}, environ={}), SystemClock())
    broker = storage.eventhubs("localhost")
    await broker.create_hub(hub, partition_count=4)
    body = EventToSend(b'{"n": 1}')
    started = time.perf_counter()
    for start in range(0, count, 100):
        await broker.send(hub, [body] * min(100, count - start))
    rate = count / (time.perf_counter() - started)
    await storage.aclose()
    return rate


async def fill_queue(data_dir: Path, count: int) -> None:
    storage = EmbeddedStorage(data_dir, AppSettings({}, environ={}), SystemClock())
    service = storage.queues()
    await service.create_queue("bench")
    text = base64.b64encode(b'{"n": 1}').decode()
    for start in range(0, count, 256):
        await asyncio.gather(*(service.put_message("bench", text) for _ in range(min(256, count - start))))
    await storage.aclose()


async def drain(app: Path, data_dir: Path, count: int, only: str) -> dict[str, Any]:
    """Run the host with only `only` enabled until it has processed `count` items."""
    disabled = {f"AzureWebJobs.{name}.Disabled": "true" for name in ("single", "batch", "queue") if name != only}
    host = Host(HostConfig(app_dir=app, data_dir=data_dir, serve_http=False, settings_override=disabled,
                           apply_environment=False))
    host.load()
    module = sys.modules["function_app"]
    module.COUNT[0] = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    await host.start()
    while module.COUNT[0] < count:
        await asyncio.sleep(0.01)
        if time.perf_counter() - started > 600:
            raise TimeoutError(f"{only}: {module.COUNT[0]} of {count} after 600 s")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    await host.stop()
    return {"items": count, "seconds": round(elapsed, 3), "per_second": round(count / elapsed),
            "cpu_us_per_item": round(cpu / count * 1e6, 1)}


SCENARIOS = ["eventhubs-single", "eventhubs-batch", "queue-default", "eventhubs-send"]


async def child(name: str, events: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="eventhubs-bench-") as tmp:
        app, data = write_app(Path(tmp) / "app"), Path(tmp) / "data"
        if name == "eventhubs-send":
            return {"items": events, "per_second": round(await fill_hub(data, "single", events))}
        if name == "queue-default":
            await fill_queue(data, events)
            return await drain(app, data, events, "queue")
        hub = name.removeprefix("eventhubs-")
        await fill_hub(data, hub, events)
        return await drain(app, data, events, hub)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline-src", type=Path, help="a funchost source tree to measure as 'baseline'")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.events))))
        return
    names = args.only.split(",") if args.only else SCENARIOS
    figures = same_run.rounds(__file__, names, ["--events", str(args.events)], args.rounds, args.baseline_src,
                              "per_second")
    same_run.print_table(figures, names, "/s", 18)
    report: dict[str, Any] = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
        "parameters": {"events": args.events, "rounds": args.rounds,
                       "baseline_src": str(args.baseline_src) if args.baseline_src else None},
        "results": figures["current"]}
    if "baseline" in figures:
        report["baseline"] = figures["baseline"]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
