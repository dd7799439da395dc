"""Queues on PostgreSQL: funchost hosts with `--storage postgres` next to pgqueuer, in the same run.

    python benchmarks/postgres_queue_bench.py      # [--messages 20000] [--rounds 3] [--pickups 200]

One PostgreSQL server started as the tests start it (`tests/support/postgres.py`: 127.0.0.1,
fsync off); rounds interleaved target by target, each draining a queue filled beforehand with
`--messages` messages through a no-op function:

* ``pgqueuer-32``: a pgqueuer `QueueManager` (asyncpg), batch size 32, `mode=drain`
  (`queue_peers_bench.pgqueuer_round`);
* ``funchost-pg-1``: one `funchost start APP --storage postgres --data <its own folder>` process on a
  fresh schema (`FUNCHOST_POSTGRES_SCHEMA`), default host.json (`{"version": "2.0"}`: its queue
  settings and the per-invocation console lines, written to a log file), the dashboard on,
  `AZURE_FUNCTIONS_ENVIRONMENT=Production`; the queue filled through the backend's queue service
  (`open_storage("postgres", ...)`, puts in parallel);
* ``funchost-pg-2hosts``: two such processes with separate data folders on one schema, draining
  one queue together (spawned together, as `queue_peers_bench` spawns its one process);
* ``funchost-pg-1-warning`` (with ``--quiet-row``): funchost-pg-1 with `queue_peers_bench`'s
  host.json (log level Warning: no console line per invocation);
* ``funchost-pg-1-async`` (with ``--async-row``): funchost-pg-1 with the no-op an ``async def``,
  as pgqueuer's entrypoint is (a ``def`` function runs on a thread, as the Python worker runs it);
* ``baseline-pg-1`` (with ``--baseline-src DIR``): funchost-pg-1 with the hosts run from another
  source tree (``git archive <commit> src | tar -x -C DIR``), before/after in one run; that tree
  also fills the queue (a newer one would migrate the schema past what its hosts accept), and the
  remaining count is read by SQL.

The drain rate runs from the first completed message to the last (`queue_peers_bench.watch`, the
remaining count from the queue's approximate count every 50 ms); CPU per message counts the draining
processes and the PostgreSQL server (postmaster and its children).

Cross-host pickup: two hosts running on an empty queue, `--pickups` messages put one at a time
(every ~20 ms) by this process's own backend (another host), each carrying its send time; the
function records ``time.time() - sent`` into a table on the same server. p50 / p95 / max.

`two_hosts_cpu_ceiling`: what two hosts could reach over one host if every core of the machine
were busy at the CPU per message (hosts and server) the two hosts measured; on a machine whose
cores one host nearly fills, this bounds the two-host ratio from above.

Output: `benchmarks/results/postgres_queue.json`.
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
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import same_run  # noqa: E402

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "postgres_queue.json"
sys.path.insert(0, str(ROOT))  # queue_peers_bench
sys.path.insert(0, str(ROOT.parent))  # tests.support

import queue_peers_bench as peers  # noqa: E402

PICKUP_FUNCTION = '''

import json as _json
import os as _os
import threading as _threading
import time as _time

import psycopg as _psycopg

_lock = _threading.Lock()
_conn = None


@app.queue_trigger(arg_name="msg", queue_name="pickup", connection="AzureWebJobsStorage")
def pickup(msg: func.QueueMessage) -> None:
    latency = _time.time() - _json.loads(msg.get_body())["sent"]
    global _conn
    with _lock:
        if _conn is None or _conn.closed:
            _conn = _psycopg.connect(_os.environ["FUNCHOST_POSTGRES"], autocommit=True)
        _conn.execute("INSERT INTO " + _os.environ["PICKUP_TABLE"] + " (latency, pid) VALUES (%s, %s)",
                      (latency, _os.getpid()))
'''
DEFAULT_HOST_JSON = '{"version": "2.0"}'
FILL_BATCH = 256


def encoded(body: dict[str, Any]) -> str:
    """The host's default messageEncoding is base64."""
    return base64.b64encode(json.dumps(body).encode()).decode()


def write_app(folder: Path, pickup: bool = False, quiet: bool = False, coroutine: bool = False) -> Path:
    """`queue_peers_bench`'s no-op app with the default host.json (and the pickup function);
    `quiet`: its host.json instead (log level Warning: no per-invocation console lines);
    `coroutine`: the no-op an `async def`, as pgqueuer's entrypoint is."""
    peers.write_app(folder)
    if coroutine:
        source = folder / "function_app.py"
        text = source.read_text()
        assert "\ndef noop(" in text, "queue_peers_bench.APP defines `def noop`"
        source.write_text(text.replace("\ndef noop(", "\nasync def noop("))
    if not quiet:
        (folder / "host.json").write_text(DEFAULT_HOST_JSON)
    if pickup:
        (folder / "function_app.py").write_text(peers.APP + PICKUP_FUNCTION)
    return folder


class Server:
    """The PostgreSQL server of the run, and one schema per round."""

    def __init__(self) -> None:
        from tests.support.postgres import start_postgres

        self.server = start_postgres()
        assert self.server.root is not None, "a PostgreSQL server started here (its CPU time is measured)"
        self.dsn = self.server.dsn
        self.postmaster = int((self.server.root / "data" / "postmaster.pid").read_text().split()[0])
        self._count = 0

    def schema(self, name: str) -> str:
        self._count += 1
        return f"{name.replace('-', '_')}_{self._count}"

    def drop(self, schema: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
                                        (schema, schema + "\\_\\_%")).fetchall():
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')

    def stop(self) -> None:
        self.server.stop()


def open_client(dsn: str, schema: str, data: Path) -> Any:
    """The backend a host opens, in this process: another host of the same deployment."""
    from funchost.clock import SystemClock
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.host_storage import open_storage

    settings = AppSettings({"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": schema}, environ={})
    return open_storage("postgres", data, settings, SystemClock())


def host_env(server: Server, schema: str, **extra: str) -> dict[str, str]:
    return dict(os.environ, AZURE_FUNCTIONS_ENVIRONMENT="Production", FUNCHOST_POSTGRES=server.dsn,
                FUNCHOST_POSTGRES_SCHEMA=schema, PYTHONUNBUFFERED="1", **extra)


def spawn_host(app: Path, data: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen([sys.executable, "-m", "funchost", "start", str(app), "--storage", "postgres",
                                 "--data", str(data), "--no-storage-endpoints", "--no-amqp", "--port", "0"],
                                env=env, stdout=sink, stderr=subprocess.STDOUT)


def stop_hosts(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


async def fill(dsn: str, schema: str, data: Path, messages: int) -> None:
    """`messages` messages on the queue `bench` of `schema`, put in parallel by a backend of this
    process's funchost (of the baseline tree when run as `FILLER` with it first on the path: a
    newer tree would migrate the schema past what the baseline's hosts accept)."""
    storage = open_client(dsn, schema, data)
    try:
        service = storage.queues()
        await service.create_queue("bench")
        text = encoded({"n": 1})
        for start in range(0, messages, FILL_BATCH):
            await asyncio.gather(*(service.put_message("bench", text)
                                   for _ in range(min(FILL_BATCH, messages - start))))
    finally:
        await storage.aclose()


FILLER = ("import asyncio, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
          "import postgres_queue_bench as b; "
          "asyncio.run(b.fill(sys.argv[2], sys.argv[3], Path(sys.argv[4]), int(sys.argv[5])))")


async def funchost_round(server: Server, work: Path, messages: int, hosts: int,
                         quiet: bool = False, src: Path | None = None, coroutine: bool = False) -> dict[str, float]:
    import psycopg
    from psycopg import sql as pgsql

    schema = server.schema(f"drain-{hosts}")
    app = write_app(work / "app", quiet=quiet, coroutine=coroutine)
    counter = await psycopg.AsyncConnection.connect(server.dsn, autocommit=True)
    try:
        env = host_env(server, schema)
        if src is None:
            await fill(server.dsn, schema, work / "filler", messages)
        else:  # another source tree first on the path of the hosts and the filler (before/after in one run)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src / "src"), env.get("PYTHONPATH")]))
            subprocess.run([sys.executable, "-c", FILLER, str(ROOT), server.dsn, schema, str(work / "filler"),
                            str(messages)], env=env, check=True)
        spawned = time.perf_counter()
        processes = [spawn_host(app, work / f"data-{i}", env, work / f"host-{i}.log") for i in range(hosts)]

        hosts_pids = [p.pid for p in processes]
        first: list[float] = []  # the hosts' and the server's CPU seconds at the first completion

        cursor = await counter.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = "
                                       "'queue_messages' AND (table_schema = %s OR starts_with(table_schema, %s))",
                                       (schema, schema + "__"))
        table = pgsql.SQL("{}.queue_messages").format(pgsql.Identifier((await cursor.fetchone() or ("",))[0]))

        async def remaining() -> int:  # counted by SQL: a backend of this tree would migrate the schema
            cursor = await counter.execute(pgsql.SQL("SELECT count(*) FROM {}").format(table))
            left = int((await cursor.fetchone() or (0,))[0])
            if left < messages and not first:
                first.extend([peers.tree_cpu(hosts_pids), peers.tree_cpu([server.postmaster]), left])
            return left

        try:
            result = await peers.watch(remaining, messages, processes[0], spawned, hosts_pids + [server.postmaster])
            if any(p.poll() is not None for p in processes):
                raise RuntimeError("a host exited during the drain (its log: host-N.log)")
            # The same window split between the hosts and the server: `watch` counts the messages
            # completed after its first observation (`first[2]` left then).
            drained = max(1.0, first[2])
            result["hosts_cpu_us_per_message"] = round((peers.tree_cpu(hosts_pids) - first[0]) / drained * 1e6, 1)
            result["server_cpu_us_per_message"] = round(
                (peers.tree_cpu([server.postmaster]) - first[1]) / drained * 1e6, 1)
            return result
        finally:
            stop_hosts(processes)
    finally:
        await counter.close()
        server.drop(schema)


async def wait_for(check: Callable[[], Awaitable[bool]], what: str, timeout: float,
                   processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if any(p.poll() is not None for p in processes):
            raise RuntimeError(f"a host exited while waiting for {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} within {timeout}s")
        await asyncio.sleep(0.05)


async def pickup_round(server: Server, work: Path, count: int, spacing: float, settle: float) -> dict[str, Any]:
    """Two hosts idle on an empty queue; `count` messages put one at a time by this process."""
    import psycopg

    schema = server.schema("pickup")
    table = f"{schema}.pickups"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {table} (latency double precision, pid int)")

    def recorded() -> list[tuple[float, int]]:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            return [(float(a), int(b)) for a, b in conn.execute(f"SELECT latency, pid FROM {table}")]

    app = write_app(work / "app", pickup=True)
    storage = open_client(server.dsn, schema, work / "sender")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        service = storage.queues()
        await service.create_queue("pickup")
        env = host_env(server, schema, PICKUP_TABLE=table)
        processes = [spawn_host(app, work / f"data-{i}", env, work / f"host-{i}.log") for i in range(2)]
        # Both hosts up: each has run a warm-up message (puts until both process ids are recorded).
        warm = 0

        async def both_running() -> bool:
            nonlocal warm
            pids = {pid for _, pid in await asyncio.to_thread(recorded)}
            if len(pids) < 2:
                warm += 1
                await service.put_message("pickup", encoded({"sent": time.time(), "warm": True}))
                await asyncio.sleep(0.2)
            return len(pids) >= 2

        await wait_for(both_running, "pickups on both hosts", 60, processes)
        await asyncio.sleep(settle)  # the listeners back off their polls, as on an idle queue
        await wait_for(lambda: _count_is(service, 0), "an empty queue", 30, processes)
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(f"TRUNCATE {table}")
        for _ in range(count):
            await service.put_message("pickup", encoded({"sent": time.time()}))
            await asyncio.sleep(spacing)

        async def all_recorded() -> bool:
            return len(await asyncio.to_thread(recorded)) >= count

        await wait_for(all_recorded, "every pickup recorded", 60, processes)
        found = recorded()
    finally:
        stop_hosts(processes)
        await storage.aclose()
        server.drop(schema)
    latencies = sorted(latency * 1000 for latency, _ in found)
    per_host = sorted(sum(1 for _, pid in found if pid == p.pid) for p in processes)
    return {"count": len(latencies), "p50_ms": round(percentile(latencies, 50), 2),
            "p95_ms": round(percentile(latencies, 95), 2), "max_ms": round(latencies[-1], 2),
            "per_host": per_host}


async def _count_is(service: Any, wanted: int) -> bool:
    return int((await service.get_queue_properties("pickup")).approximate_message_count) == wanted


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile of sorted values."""
    index = max(0, min(len(values) - 1, round(p / 100 * len(values) + 0.5) - 1))
    return values[index]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    load_start = os.getloadavg()
    server = Server()
    targets: dict[str, Callable[[Path], Awaitable[dict[str, float]]]] = {
        "pgqueuer-32": lambda w: peers.pgqueuer_round(server.dsn, server.postmaster, args.messages, 32),
        "funchost-pg-1": lambda w: funchost_round(server, w, args.messages, 1),
        "funchost-pg-2hosts": lambda w: funchost_round(server, w, args.messages, 2),
    }
    if args.quiet_row:
        targets["funchost-pg-1-warning"] = lambda w: funchost_round(server, w, args.messages, 1, quiet=True)
    if args.async_row:
        targets["funchost-pg-1-async"] = lambda w: funchost_round(server, w, args.messages, 1, coroutine=True)
    if args.baseline_src is not None:
        baseline = args.baseline_src.resolve()
        targets["baseline-pg-1"] = lambda w: funchost_round(server, w, args.messages, 1, src=baseline)
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
    pickups: dict[str, Any] = {}
    try:
        for _ in range(args.rounds):
            for name, target in targets.items():
                work = Path(tempfile.mkdtemp(prefix=f"pgq-{name}-"))
                try:
                    rounds[name].append(await target(work))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                print(f"{name:20} {json.dumps(rounds[name][-1])}", flush=True)
        if args.pickups:
            work = Path(tempfile.mkdtemp(prefix="pgq-pickup-"))
            try:
                pickups = await pickup_round(server, work, args.pickups, args.spacing, args.settle)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(f"{'pickup':20} {json.dumps(pickups)}", flush=True)
    finally:
        server.stop()
    results = {name: peers.summary(samples) for name, samples in rounds.items()}

    def ratio(a: str, b: str) -> float:
        return round(results[a]["median"] / results[b]["median"], 2)

    # The most two hosts could reach on this machine: every core busy at the CPU per message (hosts
    # and server) they measured, over one host's rate. Above 1.6 only where the cores allow it.
    two_hosts_cpu = results["funchost-pg-2hosts"]["cpu_us_per_message"]["median"]
    ceiling = (os.cpu_count() or 1) * 1e6 / two_hosts_cpu / results["funchost-pg-1"]["median"]

    return {
        "environment": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                        "load_average_start": [round(x, 2) for x in load_start],
                        "load_average_end": [round(x, 2) for x in os.getloadavg()]},
        "parameters": {"messages": args.messages, "rounds": args.rounds, "pickups": args.pickups,
                       "quiet_row": args.quiet_row, "async_row": args.async_row,
                       "baseline_src": same_run.baseline_label(args),
                       "pickup_spacing_s": args.spacing, "host_json": json.loads(DEFAULT_HOST_JSON)},
        "results": results,
        "ratios": {"funchost-pg-1 / pgqueuer-32": ratio("funchost-pg-1", "pgqueuer-32"),
                   "funchost-pg-2hosts / funchost-pg-1": ratio("funchost-pg-2hosts", "funchost-pg-1"),
                   **({"baseline-pg-1 / pgqueuer-32": ratio("baseline-pg-1", "pgqueuer-32")}
                      if "baseline-pg-1" in results else {}),
                   **({"funchost-pg-1-async / pgqueuer-32": ratio("funchost-pg-1-async", "pgqueuer-32")}
                      if "funchost-pg-1-async" in results else {})},
        # Medians of the rounds, draining processes + server (`watch`), and split for the hosts.
        "cpu_us_per_message": {name: row["cpu_us_per_message"]["median"] for name, row in results.items()},
        "cpu_us_per_message_split": {
            name: {part: statistics.median(r[f"{part}_cpu_us_per_message"] for r in samples)
                   for part in ("hosts", "server")}
            for name, samples in rounds.items() if name.startswith("funchost")},
        "two_hosts_cpu_ceiling": round(ceiling, 2),
        "cross_host_pickup": pickups,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pickups", type=int, default=200, help="cross-host pickup messages (0: skip)")
    parser.add_argument("--spacing", type=float, default=0.02, help="seconds between pickup messages")
    parser.add_argument("--settle", type=float, default=3.0, help="idle seconds before the pickups")
    parser.add_argument("--async-row", action="store_true",
                        help="also funchost-pg-1 with an `async def` no-op (pgqueuer's entrypoint is one)")
    parser.add_argument("--quiet-row", action="store_true",
                        help="also 'funchost-pg-1-warning': host.json log level Warning (no console line per call)")
    parser.add_argument("--baseline-src", type=Path,
                        help="a funchost source tree to run as 'baseline-pg-1' (its hosts only; the queue is filled by this tree)")
    same_run.add_baseline_label(parser)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    print(f"{'target':20} {'min':>8} {'median':>8} {'max':>8}  msg/s (first to last completion)   CPU us/msg")
    for name, row in report["results"].items():
        print(f"{name:20} {row['min']:>8.0f} {row['median']:>8.0f} {row['max']:>8.0f}"
              f"   {row['cpu_us_per_message']['median']:>10.1f}")
    print("ratios (msg/s medians):", report["ratios"])
    print("CPU us per message, hosts / server:", report["cpu_us_per_message_split"])
    print("two hosts / one host if every core were busy at the two hosts' CPU per message:",
          report["two_hosts_cpu_ceiling"])
    print("cross-host pickup:", report["cross_host_pickup"])
    print("load average start / end:", report["environment"]["load_average_start"],
          report["environment"]["load_average_end"])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
