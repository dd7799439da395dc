"""Instructions per queue message of a serving host, counted by valgrind: a figure the machine's
noise does not move.

    python benchmarks/queue_instructions_bench.py                   # [--small 1000] [--large 9000]
    python benchmarks/queue_instructions_bench.py --baseline-src DIR --baseline-label "git archive <commit> src"
    python benchmarks/queue_instructions_bench.py --kind async      # the no-op as an `async def`

On 2 shared cores a drain's rate and CPU time move by 10-25 % from minute to minute, more than
most changes to the message path. The instructions a drain executes do not: `funchost start`
(the app and host.json of `queue_peers_bench.py`, the defaults: console lines to /dev/null, the
dashboard's history) runs under `valgrind --tool=cachegrind --cache-sim=no` until it has drained
a queue of `--small` and then of `--large` messages, and the difference of the two totals over the
difference of the sizes is the process's instructions per message, start-up and stop left out.
Repeated runs agree to about 0.3 %.

What it does not see: time in the kernel (futex wake-ups, the GIL handed between threads, the WAL's
writes) and how fast the instructions run (cache misses when a `def` function's thread runs on the
other core). valgrind runs one thread at a time, so a figure is the work, not the wall time: compare
it with `queue_peers_bench.py`'s rates, never instead of them. Needs `valgrind` on the PATH.

Output: `benchmarks/results/queue_instructions.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import queue_peers_bench
import same_run

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "queue_instructions.json"
POLL = 0.5  # seconds between looks at the remaining count (the host runs 30-60 times slower)


async def instructions(messages: int, kind: str, src: Path | None) -> int:
    """Instructions of one `funchost start` under cachegrind that drains `messages` messages."""
    work = Path(tempfile.mkdtemp(prefix="instructions-"))
    try:
        app, data, storage, service = await queue_peers_bench.filled_app(work, messages, kind == "async")
        env = dict(os.environ, AZURE_FUNCTIONS_ENVIRONMENT="Production", FUNCTIONS_WORKER_PROCESS_COUNT="1",
                   FUNCHOST_STORAGE_ENDPOINTS="off", FUNCHOST_DASHBOARD="true")
        if src is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src / "src"), env.get("PYTHONPATH")]))
        counts = work / "cachegrind.out"
        process = subprocess.Popen(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={counts}",
             sys.executable, "-m", "funchost", "start", str(app), "--data", str(data), "--port", "0"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while (await service.get_queue_properties("bench")).approximate_message_count > 0:
                if process.poll() is not None:
                    raise RuntimeError(f"the host exited with {process.returncode} before the queue was empty")
                await asyncio.sleep(POLL)
        finally:
            process.terminate()
            process.wait(timeout=300)
            await storage.aclose()
        found = re.search(r"^summary:\s+(\d+)", counts.read_text(), re.MULTILINE)
        if found is None:
            raise RuntimeError("cachegrind wrote no summary line")
        return int(found.group(1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def per_message(args: argparse.Namespace, src: Path | None) -> dict[str, Any]:
    small = await instructions(args.small, args.kind, src)
    large = await instructions(args.large, args.kind, src)
    return {"instructions_small": small, "instructions_large": large,
            "instructions_per_message": round((large - small) / (args.large - args.small))}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    trees: dict[str, Path | None] = {"current": None}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src.resolve()
    figures: dict[str, list[dict[str, Any]]] = {tree: [] for tree in trees}
    for index in range(args.rounds):
        order = list(trees.items()) if index % 2 == 0 else list(reversed(trees.items()))
        for tree, src in order:
            figure = await per_message(args, src)
            figures[tree].append(figure)
            print(f"round {index + 1} {tree:<8} {figure['instructions_per_message']:>9} instructions per message",
                  flush=True)
    medians = {tree: sorted(f["instructions_per_message"] for f in runs)[len(runs) // 2]
               for tree, runs in figures.items()}
    report: dict[str, Any] = {
        "environment": {"python": platform.python_version(), "platform": platform.platform(),
                        "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True,
                                                   text=True).stdout.strip()},
        "parameters": {"kind": args.kind, "small": args.small, "large": args.large, "rounds": args.rounds,
                       "host_json": queue_peers_bench.HOST_JSON, "baseline_src": same_run.baseline_label(args)},
        "instructions_per_message": medians,
        "runs": figures,
    }
    if "baseline" in medians:
        report["current_to_baseline"] = round(medians["current"] / medians["baseline"], 4)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000, help="messages of the shorter drain")
    parser.add_argument("--large", type=int, default=9000, help="messages of the longer drain")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kind", choices=("def", "async"), default="def")
    parser.add_argument("--baseline-src", type=Path, help="a funchost source tree measured in the same run")
    same_run.add_baseline_label(parser)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.large <= args.small:
        parser.error("--large must be more messages than --small")
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not on the PATH (the machine's package: valgrind)")
    report = asyncio.run(run(args))
    print(json.dumps(report["instructions_per_message"]),
          f"current / baseline {report['current_to_baseline']}" if "current_to_baseline" in report else "")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
