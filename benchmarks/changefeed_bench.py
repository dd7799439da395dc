"""Change feed trigger: documents/s from upsert to invocation, and lag at a steady write rate.

    python benchmarks/changefeed_bench.py [--backlog 2000] [--rate 200] [--seconds 12]

Runs the real listener (leases, balancer, per-lease processors) over the embedded store with
the system clock; the function is a recording invoker, so the figures are the trigger's cost
(feed reads, checkpoints, lease upkeep), not a user function's. Output:
``benchmarks/results/changefeed.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "changefeed"))

from funchost.clock import SystemClock  # noqa: E402
from funchost.documents.estimator import estimate  # noqa: E402
from funchost.invocation.contracts import InvocationRequest, InvocationResult  # noqa: E402
from support import listener, make_containers, make_runtime, trigger_function  # noqa: E402


class RecordingInvoker:
    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.latencies: list[float] = []
        self.batches = 0

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        now = time.time()
        self.batches += 1
        for doc in json.loads(request.trigger_value.value):
            if doc["id"] not in self.seen:
                self.seen[doc["id"]] = now
                if "t" in doc:
                    self.latencies.append(now - doc["t"])
        return InvocationResult(request.invocation_id, request.function.name, True)


async def backlog(n: int, partitions: int, max_items: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        invoker = RecordingInvoker()
        runtime = make_runtime(Path(tmp), SystemClock(), invoker)  # type: ignore[arg-type]
        items = await make_containers(runtime, partitions=partitions)
        store = runtime.storage.documents("CosmosDB")
        docs = [{"id": f"d{i}", "pk": f"k{i % 97}", "n": i} for i in range(n)]
        await asyncio.gather(*(store.upsert_item("db", "items", d) for d in docs))
        cf = listener(trigger_function(startFromBeginning=True, maxItemsPerInvocation=max_items), runtime)
        started = time.perf_counter()
        await cf.start()
        while len(invoker.seen) < n:
            await asyncio.sleep(0.005)
        elapsed = time.perf_counter() - started
        await cf.stop()
        del items
        return {"documents": n, "partitions": partitions, "max_items_per_invocation": max_items,
                "seconds": round(elapsed, 3), "documents_per_second": round(n / elapsed, 1),
                "invocations": invoker.batches}


async def steady(rate: int, seconds: float, poll_delay_ms: int, partitions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        invoker = RecordingInvoker()
        runtime = make_runtime(Path(tmp), SystemClock(), invoker)  # type: ignore[arg-type]
        items = await make_containers(runtime, partitions=partitions)
        store = runtime.storage.documents("CosmosDB")
        cf = listener(trigger_function(feedPollDelay=poll_delay_ms), runtime)
        await cf.start()
        while len(cf.processors) < partitions:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # first reads ("now") done
        total = int(rate * seconds)
        lags: list[int] = []
        started = time.perf_counter()
        for i in range(total):
            await items.upsert_item({"id": f"s{i}", "pk": f"k{i % 97}", "t": time.time()})
            if i % max(1, rate // 4) == 0:
                lags.append((await estimate(store, "db", "items", store, "db", "leases")).total)
            delay = started + (i + 1) / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        write_seconds = time.perf_counter() - started
        deadline = time.perf_counter() + poll_delay_ms / 1000 + 10
        while len(invoker.seen) < total and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        await cf.stop()
        lat = sorted(invoker.latencies)
        return {"rate_per_second": rate, "achieved_write_rate": round(total / write_seconds, 1),
                "feed_poll_delay_ms": poll_delay_ms, "documents": total, "delivered": len(invoker.seen),
                "latency_ms": {"p50": round(1000 * statistics.median(lat), 1),
                               "p95": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1),
                               "max": round(1000 * lat[-1], 1)},
                "estimated_lag": {"mean": round(statistics.mean(lags), 1), "max": max(lags)}}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backlog", type=int, default=2000)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args()
    results = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "system": platform.system()},
        "backlog": [await backlog(args.backlog, 4, 100), await backlog(args.backlog, 4, 1000)],
        "steady": [await steady(args.rate, args.seconds, 5000, 4), await steady(args.rate, args.seconds, 100, 4)],
    }
    out = ROOT / "benchmarks" / "results" / "changefeed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
