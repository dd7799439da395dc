"""Queue trigger throughput on embedded storage.

    python benchmarks/queue_bench.py                 # all scenarios, 10,000 messages
    python benchmarks/queue_bench.py --messages 20000
    python benchmarks/queue_bench.py --million       # also the 1,000,000-message backlog case

Scenarios (each in a fresh data folder, real clock, the real host without HTTP):
  drain-default    pre-filled queue drained through a no-op queue function, default host.json
  drain-batch32    the same with batchSize 32 / newBatchThreshold 64
  steady           a producer putting messages while the host consumes them
  enqueue-service  puts/s through the QueueService (what the CLI and the binding use)
  enqueue-cli      `funchost queue send --count N` as a process (includes start-up)
  enqueue-binding  puts/s through the queue output binding (function invoked N times)
  backlog-10k / backlog-1m (--million): per-message drain rate of the first 10,000 messages of
                   a 10,000 vs a 1,000,000 backlog

Results are printed and written to benchmarks/results/queue.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from funchost.clock import SystemClock
from funchost.host import Host, HostConfig
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import open_storage

RESULTS = Path(__file__).resolve().parent / "results" / "queue.json"
QUEUE = "bench"

APP = """
import azure.functions as func

app = func.FunctionApp()
COUNT = [0]

@app.queue_trigger(arg_name="msg", queue_name="bench", connection="AzureWebJobsStorage")
def noop(msg: str) -> None:
    COUNT[0] += 1

@app.queue_trigger(arg_name="msg", queue_name="fanin", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="out", queue_name="fanout", connection="AzureWebJobsStorage")
def relay(msg: str, out: func.Out[str]) -> None:
    out.set(msg)
"""


def write_app(folder: Path, queues: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "function_app.py").write_text(textwrap.dedent(APP))
    host = {"version": "2.0", "logging": {"logLevel": {"default": "Warning"}}}
    if queues:
        host["extensions"] = {"queues": queues}
    (folder / "host.json").write_text(json.dumps(host))
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))
    return folder


async def prefill(data_dir: Path, count: int, queue: str = QUEUE) -> float:
    """Put `count` messages through the service; returns messages/s."""
    storage = open_storage("embedded", data_dir, AppSettings({}, environ={}), SystemClock())
    service = storage.queues()
    await service.create_queue(queue)
    text = base64.b64encode(b'{"n": 1}').decode()
    started = time.perf_counter()
    window = 512
    for start in range(0, count, window):
        n = min(window, count - start)
        await asyncio.gather(*(service.put_message(queue, text) for _ in range(n)))
    elapsed = time.perf_counter() - started
    await storage.aclose()
    return count / elapsed


def _counter() -> list[int]:
    return sys.modules["function_app"].COUNT  # type: ignore[no-any-return]


async def run_host(app: Path, data: Path) -> Host:
    host = Host(HostConfig(app_dir=app, data_dir=data, serve_http=False, clock=SystemClock(),
                           apply_environment=False, settings_override={"AZURE_FUNCTIONS_ENVIRONMENT": "Production"}))
    sys.modules.pop("function_app", None)
    host.load()
    await host.start()
    return host


async def drain(work: Path, count: int, queues: dict[str, Any] | None, *, measure: int | None = None) -> dict[str, Any]:
    app, data = write_app(work / "app", queues), work / "data"
    fill_rate = await prefill(data, count)
    started = time.perf_counter()
    host = await run_host(app, data)
    target = measure or count
    counter = _counter()
    while counter[0] < target:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    await host.stop()
    return {"messages": target, "backlog": count, "seconds": round(elapsed, 3),
            "messages_per_second": round(target / elapsed), "prefill_puts_per_second": round(fill_rate)}


async def steady(work: Path, count: int) -> dict[str, Any]:
    app, data = write_app(work / "app"), work / "data"
    await prefill(data, 0)
    host = await run_host(app, data)
    service = host.runtime.storage.queues()  # type: ignore[union-attr]
    text = base64.b64encode(b"x").decode()
    counter = _counter()
    started = time.perf_counter()
    for start in range(0, count, 256):
        n = min(256, count - start)
        await asyncio.gather(*(service.put_message(QUEUE, text) for _ in range(n)))
    produced = time.perf_counter() - started
    while counter[0] < count:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    await host.stop()
    return {"messages": count, "seconds": round(elapsed, 3), "messages_per_second": round(count / elapsed),
            "producer_seconds": round(produced, 3)}


class _NoopInvoker:
    """Stands in for the executor: isolates the trigger + storage cost per message."""

    def __init__(self) -> None:
        self.count = 0

    async def invoke(self, request: Any) -> Any:
        from funchost.invocation.contracts import InvocationResult

        self.count += 1
        return InvocationResult(request.invocation_id, request.function.name, True)


async def trigger_only(work: Path, count: int, queues: dict[str, Any]) -> dict[str, Any]:
    from funchost.indexing.spec import BindingSpec, FunctionSpec
    from funchost.runtime.contracts import Runtime
    from funchost.settings.host_json import parse_host_json
    from funchost.triggers.queue import SUPPORT

    data = work / "data"
    await prefill(data, count)
    settings = AppSettings({"AZURE_FUNCTIONS_ENVIRONMENT": "Production"}, environ={})
    invoker = _NoopInvoker()
    options = parse_host_json({"version": "2.0", "extensions": {"queues": queues}})
    runtime = Runtime(app_dir=work, data_dir=data, clock=SystemClock(), settings=settings, options=options,
                      storage=open_storage("embedded", data, settings, SystemClock()), invoker=invoker)
    trigger = BindingSpec("msg", "queueTrigger", "in", None, {"queueName": QUEUE}, is_trigger=True)
    function = FunctionSpec("noop", lambda msg: None, trigger, (trigger,), (), None, None, False,
                            "function_app.py", ".", None)
    listener = SUPPORT.create_listener(function, runtime)
    started = time.perf_counter()
    await listener.start()
    while invoker.count < count:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    await listener.stop()
    await runtime.storage.aclose()
    return {"messages": count, "seconds": round(elapsed, 3), "messages_per_second": round(count / elapsed),
            "note": "listener + processor + embedded storage, no-op invoker instead of the executor"}


async def enqueue_binding(work: Path, count: int) -> dict[str, Any]:
    from funchost.runtime import registry

    app, data = write_app(work / "app"), work / "data"
    host = await run_host(app, data)
    runtime = host.runtime
    assert runtime is not None
    await host.listeners["relay"].stop() if "relay" in host.listeners else None
    function = runtime.functions["relay"]
    support = registry.trigger_support("queueTrigger")
    requests = [await support.admin_request(function, runtime, {"input": f"m{i}"}) for i in range(count)]
    started = time.perf_counter()
    for start in range(0, count, 64):
        results = await asyncio.gather(*(runtime.invoker.invoke(r) for r in requests[start:start + 64]))
        assert all(r.succeeded for r in results)
    elapsed = time.perf_counter() - started
    written = (await runtime.storage.queues().get_queue_properties("fanout")).approximate_message_count
    await host.stop()
    return {"messages": written, "seconds": round(elapsed, 3), "messages_per_second": round(written / elapsed)}


def enqueue_cli(work: Path, count: int) -> dict[str, Any]:
    app = write_app(work / "app")
    command = [sys.executable, "-c", "import sys; from funchost.cli import main; sys.exit(main())",
               "queue", "send", "cliq", "payload", "--count", str(count), "--app", str(app)]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    return {"messages": count, "seconds": round(elapsed, 3), "messages_per_second": round(count / elapsed),
            "note": "includes interpreter start-up"}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--million", action="store_true", help="also measure a 1,000,000-message backlog")
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    args = parser.parse_args()
    n = args.messages
    scenarios: dict[str, Any] = {
        "drain-default": lambda w: drain(w, n, None),
        "drain-batch32": lambda w: drain(w, n, {"batchSize": 32, "newBatchThreshold": 64}),
        "trigger-only-default": lambda w: trigger_only(w, n, {}),
        "trigger-only-batch32": lambda w: trigger_only(w, n, {"batchSize": 32, "newBatchThreshold": 64}),
        "steady": lambda w: steady(w, n),
        "enqueue-service": lambda w: _service_rate(w, n),
        "enqueue-cli": lambda w: asyncio.to_thread(enqueue_cli, w, n),
        "enqueue-binding": lambda w: enqueue_binding(w, min(n, 5000)),
        "backlog-10k": lambda w: drain(w, 10_000, None, measure=10_000),
    }
    if args.million:
        scenarios["backlog-1m"] = lambda w: drain(w, 1_000_000, None, measure=10_000)
    wanted = set(args.only.split(",")) if args.only else set(scenarios)
    results: dict[str, Any] = {}
    for name, run in scenarios.items():
        if name not in wanted:
            continue
        work = Path(tempfile.mkdtemp(prefix=f"queue-bench-{name}-"))
        try:
            results[name] = await run(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{name:<16} {json.dumps(results[name])}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    previous.update({"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                 "platform": platform.platform()}})
    previous.setdefault("results", {}).update(results)
    RESULTS.write_text(json.dumps(previous, indent=2) + "\n")


async def _service_rate(work: Path, count: int) -> dict[str, Any]:
    rate = await prefill(work / "data", count)
    return {"messages": count, "messages_per_second": round(rate)}


if __name__ == "__main__":
    asyncio.run(main())
