"""Queue drain: funchost next to pgqueuer on PostgreSQL, in the same run.

    python benchmarks/queue_peers_bench.py          # [--messages 20000] [--rounds 3]

Every target is a separate process draining a queue filled beforehand with `--messages`
messages through a no-op function, rounds interleaved target by target:

* ``funchost-1`` / ``funchost-2``: `funchost start` on an app with one `def noop(msg: str)` queue
  function, the default host.json (``{"version": "2.0"}``: both console lines of every
  invocation written, to /dev/null; ``--warning-logs`` sets log level Warning instead, as
  `queue_bench.py` does), FUNCTIONS_WORKER_PROCESS_COUNT 1 and 2 (the machine's cores; ``--no-workers``
  skips 2), embedded storage;
* ``funchost-1-async`` (with ``--async-row``): funchost-1 with an ``async def`` no-op, the kind of
  entrypoint pgqueuer runs;
* ``funchost-1-pinned`` (with ``--pinned-row``): funchost-1 started under ``taskset -c N`` (the
  machine's last CPU), its event loop and function thread on one core (docs/worker-processes.md,
  "One core per process");
* ``funchost-1-no-thread`` (with ``--no-thread-row``): funchost-1 with each `def` call made on the
  event loop's thread (``benchmarks/hooks/no_thread``, a measurement only): the message's task
  still awaits the call's future, but nothing crosses to another thread;
* ``baseline-1`` / ``baseline-2`` (with ``--baseline-src DIR``): funchost-1 and funchost-2 from
  another source tree (``baseline-2`` unless ``--no-workers``);
* ``funchost-1-no-dashboard`` / ``funchost-2-no-dashboard`` (with ``--compare-dashboard``): the
  same with ``FUNCHOST_DASHBOARD=false`` (the dashboard and its invocation history are on by
  default, so the plain targets record every message's invocation);
* ``pgqueuer-10`` / ``pgqueuer-32``: a pgqueuer `QueueManager` (asyncpg) with an `async def`
  no-op entrypoint, batch size 10 and 32, `mode=drain`, on a PostgreSQL server started from the
  machine's binaries as the tests start it (`tests/support/postgres.py`: 127.0.0.1, fsync off).

The runner watches the remaining count (every 50 ms) and reports the drain rate from the first
completed message to the last (`messages_per_second`), and from process start to the last
(`with_startup_per_second`). Output: `benchmarks/results/queue_peers.json` with min / median / max
of the rounds and funchost's ratio to the fastest pgqueuer configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import same_run  # noqa: E402

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "queue_peers.json"
NO_THREAD_HOOK = ROOT / "hooks" / "no_thread"  # --no-thread-row: the `def` calls on the loop (a measurement)
sys.path.insert(0, str(ROOT.parent))  # tests.support.postgres

APP = textwrap.dedent("""
    import azure.functions as func

    app = func.FunctionApp()

    @app.queue_trigger(arg_name="msg", queue_name="bench", connection="AzureWebJobsStorage")
    def noop(msg: str) -> None:
        return None
""")

PGQUEUER_WORKER = textwrap.dedent("""
    import asyncio, sys
    from datetime import timedelta
    import asyncpg
    from pgqueuer.adapters.persistence.queries import Queries
    from pgqueuer.core.qm import QueueManager
    from pgqueuer.domain.types import QueueExecutionMode

    async def main(url, batch):
        connection = await asyncpg.connect(url, server_settings={"search_path": "bench"})
        qm = QueueManager(Queries.from_asyncpg_connection(connection))

        @qm.entrypoint("noop")
        async def noop(job):
            return None

        await qm.run(batch_size=batch, mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1))

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
""")

POLL = 0.05
HOST_JSON: dict[str, Any] = {"version": "2.0"}  # the defaults (--warning-logs: log level Warning)


def write_app(folder: Path, coroutine: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "function_app.py").write_text(APP.replace("def noop", "async def noop") if coroutine else APP)
    (folder / "host.json").write_text(json.dumps(HOST_JSON))
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))
    return folder


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def tree_cpu(roots: list[int]) -> float:
    """User + system CPU seconds of the processes `roots` and all their descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[1])
                times[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    wanted = set(roots)
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    return sum(times.get(pid, 0.0) for pid in wanted)


async def watch(remaining: Callable[[], Awaitable[int]], total: int, process: subprocess.Popen[bytes],
                spawned: float, cpu_roots: list[int], timeout: float = 600.0) -> dict[str, float]:
    """Poll the remaining count until it reaches 0; rates from the first completion and from spawn,
    and the CPU time of the draining processes (and their database server) per message."""
    first_at: float | None = None
    first_remaining = total
    first_cpu = 0.0
    deadline = time.perf_counter() + timeout
    while True:
        left = await remaining()
        now = time.perf_counter()
        if first_at is None and left < total:
            first_at, first_remaining, first_cpu = now, left, tree_cpu(cpu_roots)
        if left == 0:
            break
        if process.poll() is not None and process.returncode != 0:
            raise RuntimeError(f"the drain process exited with {process.returncode}")
        if now > deadline:
            raise RuntimeError(f"{left} messages left after {timeout}s")
        await asyncio.sleep(POLL)
    cpu = tree_cpu(cpu_roots) - first_cpu
    assert first_at is not None
    drained = first_remaining  # messages completed after the first observation
    return {"messages_per_second": round(drained / max(now - first_at, 1e-9)),
            "with_startup_per_second": round(total / (now - spawned)), "seconds": round(now - spawned, 3),
            "cpu_us_per_message": round(cpu / max(drained, 1) * 1e6, 1)}


async def filled_app(work: Path, messages: int, coroutine: bool = False) -> tuple[Path, Path, Any, Any]:
    """The drain's app and data folder in `work`, with `messages` messages waiting in its queue:
    (app, data, the storage opened on it, its queue service)."""
    from funchost.clock import SystemClock
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.host_storage import open_storage

    app, data = write_app(work / "app", coroutine), work / "data"
    storage = open_storage("embedded", data, AppSettings({}, environ={}), SystemClock())
    service = storage.queues()
    await service.create_queue("bench")
    text = base64.b64encode(b'{"n": 1}').decode()
    for start in range(0, messages, 512):
        await asyncio.gather(*(service.put_message("bench", text) for _ in range(min(512, messages - start))))
    return app, data, storage, service


async def funchost_round(work: Path, messages: int, processes: int, src: Path | None = None,
                         dashboard: bool = True, coroutine: bool = False, cpu: int | None = None,
                         no_thread: bool = False) -> dict[str, float]:
    app, data, storage, service = await filled_app(work, messages, coroutine)
    env = dict(os.environ, AZURE_FUNCTIONS_ENVIRONMENT="Production", FUNCTIONS_WORKER_PROCESS_COUNT=str(processes),
               FUNCHOST_STORAGE_ENDPOINTS="off",  # not needed here; by setting, for --baseline-src trees
               FUNCHOST_DASHBOARD="true" if dashboard else "false")
    if src is not None:  # another source tree first on the path (before/after in one run)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src / "src"), env.get("PYTHONPATH")]))
    mark = work / "no-thread-hook-ran"
    if no_thread:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NO_THREAD_HOOK), env.get("PYTHONPATH")]))
        env["FUNCHOST_BENCH_NO_THREAD"] = str(mark)
    spawned = time.perf_counter()
    process = subprocess.Popen([*same_run.pinned_command(cpu), sys.executable, "-m", "funchost", "start", str(app), "--data", str(data),
                                "--port", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def remaining() -> int:
        return (await service.get_queue_properties("bench")).approximate_message_count

    try:
        figures = await watch(remaining, messages, process, spawned, [process.pid])
    finally:
        process.terminate()
        process.wait(timeout=60)
        await storage.aclose()
    if no_thread and not mark.exists():
        raise SystemExit("benchmarks/hooks/no_thread/sitecustomize.py did not run in the host: no figure without it")
    return figures


async def pgqueuer_round(dsn: str, postmaster: int, messages: int, batch: int) -> dict[str, float]:
    import asyncpg
    from pgqueuer.adapters.persistence.queries import Queries

    url = postgres_url(dsn)
    connection = await asyncpg.connect(url)
    try:
        queries = Queries.from_asyncpg_connection(connection)
        await connection.execute("DROP SCHEMA IF EXISTS bench CASCADE; CREATE SCHEMA bench")
        await connection.execute("SET search_path TO bench")
        await queries.install()
        for start in range(0, messages, 1000):
            n = min(1000, messages - start)
            await queries.enqueue(["noop"] * n, [b"x"] * n, [0] * n)
        spawned = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", PGQUEUER_WORKER, url, str(batch)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        async def remaining() -> int:
            return int(await connection.fetchval("SELECT count(*) FROM bench.pgqueuer"))

        try:
            # The server's CPU counts too: funchost's storage runs inside its own process.
            return await watch(remaining, messages, process, spawned, [process.pid, postmaster])
        finally:
            process.terminate()
            process.wait(timeout=60)
    finally:
        await connection.close()


def postgres_url(dsn: str) -> str:
    """The libpq key=value DSN of the test server as the URL asyncpg takes."""
    parts = dict(item.split("=", 1) for item in dsn.split())
    return f"postgresql://{parts.get('user', 'postgres')}@{parts['host']}:{parts['port']}/{parts.get('dbname', 'postgres')}"


def summary(rounds: list[dict[str, float]]) -> dict[str, Any]:
    rates = [r["messages_per_second"] for r in rounds]
    with_startup = [r["with_startup_per_second"] for r in rounds]
    cpu = [r["cpu_us_per_message"] for r in rounds]
    return {"min": min(rates), "median": statistics.median(rates), "max": max(rates),
            "with_startup_median": statistics.median(with_startup),
            "cpu_us_per_message": {"min": min(cpu), "median": statistics.median(cpu), "max": max(cpu)},
            "rounds": rounds}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.support.postgres import start_postgres

    load_start = list(os.getloadavg())  # other work on the machine: say how busy it was
    server = start_postgres()
    assert server.root is not None, "a PostgreSQL server started here (its CPU time is measured)"
    postmaster = int((server.root / "data" / "postmaster.pid").read_text().split()[0])
    targets: dict[str, Callable[[Path], Awaitable[dict[str, float]]]] = {
        "funchost-1": lambda w: funchost_round(w, args.messages, 1),
        "funchost-2": lambda w: funchost_round(w, args.messages, 2),
        "pgqueuer-10": lambda w: pgqueuer_round(server.dsn, postmaster, args.messages, 10),
        "pgqueuer-32": lambda w: pgqueuer_round(server.dsn, postmaster, args.messages, 32),
    }
    if args.no_workers:
        del targets["funchost-2"]
    if args.compare_dashboard:
        targets["funchost-1-no-dashboard"] = lambda w: funchost_round(w, args.messages, 1, dashboard=False)
        if not args.no_workers:
            targets["funchost-2-no-dashboard"] = lambda w: funchost_round(w, args.messages, 2, dashboard=False)
    if args.async_row:
        targets["funchost-1-async"] = lambda w: funchost_round(w, args.messages, 1, coroutine=True)
    if args.pin_cpu is not None:
        targets["funchost-1-pinned"] = lambda w: funchost_round(w, args.messages, 1, cpu=args.pin_cpu)
    if args.no_thread_row:
        targets["funchost-1-no-thread"] = lambda w: funchost_round(w, args.messages, 1, no_thread=True)
    if args.baseline_src is not None:
        targets["baseline-1"] = lambda w: funchost_round(w, args.messages, 1, args.baseline_src.resolve())
        if not args.no_workers:
            targets["baseline-2"] = lambda w: funchost_round(w, args.messages, 2, args.baseline_src.resolve())
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
    try:
        for _ in range(args.rounds):
            for name, target in targets.items():
                work = Path(tempfile.mkdtemp(prefix=f"peers-{name}-"))
                try:
                    rounds[name].append(await target(work))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                print(f"{name:24} {json.dumps(rounds[name][-1])}", flush=True)
    finally:
        server.stop()
    results = {name: summary(samples) for name, samples in rounds.items()}
    best_peer = max(results["pgqueuer-10"]["median"], results["pgqueuer-32"]["median"])
    return {
        "environment": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                        "load_average_start": load_start, "load_average_end": list(os.getloadavg())},
        "parameters": {"messages": args.messages, "rounds": args.rounds, "compare_dashboard": args.compare_dashboard,
                       "pinned_row": args.pinned_row, "no_thread_row": args.no_thread_row,
                       "host_json": HOST_JSON,
                       "baseline_src": same_run.baseline_label(args)},
        "results": results,
        "ratios_to_best_pgqueuer": {name: round(results[name]["median"] / best_peer, 2)
                                    for name in results if name.startswith("funchost")},
        # CPU per message of the best pgqueuer configuration over funchost's: above 1, funchost
        # needs less CPU per message (the figure a busy machine distorts least).
        "cpu_ratio_best_pgqueuer_to_funchost": {
            name: round(min(results[p]["cpu_us_per_message"]["median"] for p in ("pgqueuer-10", "pgqueuer-32"))
                        / results[name]["cpu_us_per_message"]["median"], 2)
            for name in results if name.startswith("funchost")},
        # With --compare-dashboard: msg/s with the dashboard on over off, per process count.
        "dashboard_on_to_off": {
            name: round(results[name]["median"] / results[f"{name}-no-dashboard"]["median"], 2)
            for name in ("funchost-1", "funchost-2") if f"{name}-no-dashboard" in results},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, help="a funchost source tree to measure as 'baseline-1'")
    same_run.add_baseline_label(parser)
    parser.add_argument("--compare-dashboard", action="store_true",
                        help="also drain with the dashboard off (FUNCHOST_DASHBOARD=false), same rounds")
    parser.add_argument("--no-workers", action="store_true", help="skip the two-process funchost targets")
    parser.add_argument("--async-row", action="store_true",
                        help="also funchost-1-async: the no-op as an `async def` (pgqueuer's entrypoint is one)")
    parser.add_argument("--pinned-row", action="store_true",
                        help="also funchost-1-pinned: funchost-1 under `taskset -c` on one CPU")
    parser.add_argument("--no-thread-row", action="store_true",
                        help="also funchost-1-no-thread: each `def` call made on the loop's thread "
                             "(a measurement of the thread's share, not a way to run apps)")
    parser.add_argument("--warning-logs", action="store_true",
                        help="host.json log level Warning (no console line per invocation) instead of the defaults")
    args = parser.parse_args()
    args.pin_cpu = same_run.cpu_to_pin(parser, "--pinned-row") if args.pinned_row else None
    if args.warning_logs:
        HOST_JSON["logging"] = {"logLevel": {"default": "Warning"}}
    report = asyncio.run(run(args))
    print(f"{'target':24} {'min':>8} {'median':>8} {'max':>8}  msg/s (first to last completion)   CPU us/msg")
    for name, row in report["results"].items():
        print(f"{name:24} {row['min']:>8.0f} {row['median']:>8.0f} {row['max']:>8.0f}"
              f"   {row['cpu_us_per_message']['median']:>10.1f}")
    print("funchost / best pgqueuer (msg/s medians):", report["ratios_to_best_pgqueuer"])
    print("load average at start / end:", report["environment"]["load_average_start"][0],
          report["environment"]["load_average_end"][0])
    print("best pgqueuer / funchost (CPU per message):", report["cpu_ratio_best_pgqueuer_to_funchost"])
    if report["dashboard_on_to_off"]:
        print("dashboard on / off (msg/s medians):", report["dashboard_on_to_off"])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {RESULTS.relative_to(ROOT.parent)}")


if __name__ == "__main__":
    main()
