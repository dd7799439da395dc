"""What a `def` function's trip to a thread and back costs on this machine, without funchost's
other work: one core against two.

    python benchmarks/thread_handoff_bench.py            # [--batches 4000] [--rounds 5]

A Functions host runs a `def` function on a thread and takes its result back on the event loop's
thread (the Python worker: `loop.run_in_executor` on a `ThreadPoolExecutor`, azure-semantics
2.3). Each scenario runs in a fresh process on uvloop (what `funchost start` runs) and repeats
what a queue trigger does with a batch: 16 tasks start at once, each awaits one call of a
no-op function, and the next batch starts when all 16 have their result. Scenarios:

  on-loop      the result set on the loop itself (`call_soon`): the tasks and futures alone,
               no second thread, the floor
  executor     `loop.run_in_executor` on a `ThreadPoolExecutor` of 1 000 threads: the worker's way
  funchost     funchost's function pool (`funchost.thread_pool.ThreadPool`), as `funchost start`
               runs a `def` function

Each runs as is (the scheduler places the threads on any CPU) and under `taskset -c` on the
machine's last CPU (every thread on one core), alternating round by round. The figures are calls
per second and the CPU time of the whole process per call; the ratio pinned / as-is says what
the hand-offs between two cores cost here. Written to benchmarks/results/thread_handoff.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import same_run

SCENARIOS = ("on-loop", "executor", "funchost")
BATCH = 16  # the queue trigger's default batchSize
RESULTS = Path(__file__).parent / "results" / "thread_handoff.json"


def noop() -> int:
    return 0


async def drive(scenario: str, batches: int) -> dict[str, Any]:
    """Batches of BATCH tasks, each awaiting one call of `noop` the scenario's way."""
    loop = asyncio.get_running_loop()
    if scenario == "executor":
        executor = ThreadPoolExecutor(max_workers=1000)

        def call() -> asyncio.Future[int]:
            return loop.run_in_executor(executor, noop)
    elif scenario == "funchost":
        from funchost.thread_pool import ThreadPool
        pool = ThreadPool(1000)

        def call() -> asyncio.Future[int]:
            future: asyncio.Future[int] = pool.run(noop)
            return future
    else:
        def call() -> asyncio.Future[int]:
            future: asyncio.Future[int] = loop.create_future()
            loop.call_soon(future.set_result, noop())
            return future

    async def one() -> None:
        await call()

    async def batch() -> None:
        await asyncio.gather(*(loop.create_task(one()) for _ in range(BATCH)))

    for _ in range(batches // 10):  # warm-up: threads started, caches filled
        await batch()
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        await batch()
    elapsed, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    calls = batches * BATCH
    return {"calls_per_s": round(calls / elapsed), "cpu_us_per_call": round(cpu_used / calls * 1e6, 2)}


def child(scenario: str, batches: int) -> None:
    import uvloop
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        print(json.dumps(runner.run(drive(scenario, batches))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", choices=SCENARIOS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.batches)
        return
    pin = same_run.cpu_to_pin(parser, "this benchmark")
    cpus = len(os.sched_getaffinity(0))
    if cpus < 2:
        parser.error("needs at least two CPUs to compare one core with all")
    runs: dict[str, list[dict[str, Any]]] = {f"{s}{suffix}": [] for s in SCENARIOS for suffix in ("", "-pinned")}
    for index in range(args.rounds):
        order = [(s, p) for s in SCENARIOS for p in (None, pin)]
        if index % 2:
            order.reverse()
        for scenario, pinned in order:
            name = scenario + ("-pinned" if pinned is not None else "")
            figure = same_run.run_child(__file__, ["--child", scenario, "--batches", str(args.batches)], None,
                                        cpu=pinned)
            runs[name].append(figure)
            print(f"round {index + 1} {name:<16} {figure['calls_per_s']:>8} calls/s "
                  f"{figure['cpu_us_per_call']:>7} us CPU per call", flush=True)
    table = {name: same_run.summary(figures, "calls_per_s") for name, figures in runs.items()}
    ratios = {s: round(table[f"{s}-pinned"]["median"] / table[s]["median"], 3) for s in SCENARIOS}
    print(f"\n{'scenario':<16} {'median':>8} {'min':>8} {'max':>8}  CPU us/call")
    for name, row in table.items():
        print(f"{name:<16} {row['median']:>8} {row['min']:>8} {row['max']:>8}  {row['cpu_us_median']:>10}")
    print("pinned / as-is: " + ", ".join(f"{s} {r}x" for s, r in ratios.items()))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({
        "batch": BATCH, "batches": args.batches, "rounds": args.rounds, "cpus": cpus,
        "python": sys.version.split()[0], "results": table, "pinned_over_as_is": ratios,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
