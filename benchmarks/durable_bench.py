"""Durable Functions on funchost's task hub, and DBOS as the peer on the same store, in one run.

    python benchmarks/durable_bench.py                       # defaults below
    python benchmarks/durable_bench.py --chains 100 --fanouts 20 --latency 300
    python benchmarks/durable_bench.py --peer none           # funchost only
    python benchmarks/durable_bench.py --storage postgres    # both on one throwaway PostgreSQL

`--storage embedded` (the default): funchost's SQLite task hub, DBOS's SQLite system database.
`--storage postgres`: a PostgreSQL server started for the run (127.0.0.1 only, as the tests
start theirs), funchost's task hub in one schema (`--storage postgres`), DBOS's system database
in a database of its own on the same server.

Scenarios (fresh data folder each, real clock, no-op activities):
  chain-10      --chains orchestrations of 10 activities one after the other, started together;
                orchestrations per second from the first start to the last completion
  fan-out-100   --fanouts orchestrations of 100 parallel activities (task_all), started together
  latency-1     --latency orchestrations of one activity, one after the other: start -> Completed,
                p50 / p99 / max in milliseconds

funchost runs the real host in-process (executor, dispatchers, SQLite task hub, the SDK replaying
each episode); orchestrations are started through the durable client the management API uses.
DBOS runs in a child process with the same three shapes written the DBOS way: a workflow of 10
steps, a workflow enqueueing 100 steps on a queue and collecting their results, a one-step
workflow. Results: benchmarks/results/durable.json (durable-postgres.json with --storage postgres).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
RESULTS = {"embedded": ROOT / "results" / "durable.json", "postgres": ROOT / "results" / "durable-postgres.json"}

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context")
def chain(context):
    for i in range(10):
        yield context.call_activity("noop", i)
    return "done"

@app.orchestration_trigger(context_name="context")
def fan_out(context):
    results = yield context.task_all([context.call_activity("noop", i) for i in range(100)])
    return len(results)

@app.orchestration_trigger(context_name="context")
def one_step(context):
    return (yield context.call_activity("noop", 1))

@app.activity_trigger(input_name="value")
def noop(value):
    return value
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def latency_summary(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(samples, 0.5) * 1000, 2), "p99_ms": round(percentile(samples, 0.99) * 1000, 2),
            "max_ms": round(max(samples) * 1000, 2), "mean_ms": round(statistics.mean(samples) * 1000, 2)}


# -- funchost ---------------------------------------------------------------------------------------


async def funchost_run(args: argparse.Namespace, dsn: str | None) -> dict[str, Any]:
    from funchost.clock import SystemClock
    from funchost.durable.service import DurableService
    from funchost.host import Host, HostConfig

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="durable-bench-") as tmp:
        app = Path(tmp) / "app"
        app.mkdir()
        (app / "function_app.py").write_text(textwrap.dedent(APP))
        (app / "host.json").write_text(json.dumps({"version": "2.0", "logging": {"logLevel": {"default": "Warning"}}}))
        server = {"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": "funchost_bench"} if dsn else {}
        host = Host(HostConfig(app_dir=app, data_dir=Path(tmp) / "data", serve_http=False, clock=SystemClock(),
                               storage=args.storage, settings_override=server))
        host.load()
        await host.start()
        try:
            service = host.runtime.services.find(DurableService)  # type: ignore[union-attr]
            assert service is not None
            watcher = CompletionWatcher(service.hub)
            client = service.client
            results["chain-10"] = await _throughput(client, watcher, "chain", args.chains)
            results["fan-out-100"] = await _throughput(client, watcher, "fan_out", args.fanouts)
            samples = []
            for _ in range(args.latency):
                started = time.perf_counter()
                instance = await client.start_new("one_step", None, None)
                await watcher.wait([instance])
                samples.append(time.perf_counter() - started)
            results["latency-1"] = latency_summary(samples)
        finally:
            await host.stop()
    return results


class CompletionWatcher:
    """Notices completions as the host commits them, by an episode's commit or a session's step
    (no polling of the task hub, which would compete with the dispatchers for the database)."""

    def __init__(self, hub: Any) -> None:
        self.completed: set[str] = set()
        self._changed = asyncio.Event()
        commit = hub.commit

        async def watched(item: Any, outcome: Any) -> Any:
            done = await commit(item, outcome)
            if outcome.update.status == "Completed":
                self.completed.add(item.instance.instance_id)
                self._changed.set()
            return done

        hub.commit = watched
        commit_session = getattr(hub, "commit_session", None)

        async def watched_session(item: Any, outcome: Any, *args: Any) -> Any:
            done = await commit_session(item, outcome, *args)  # type: ignore[misc]
            if done.committed is not None and outcome.update.status == "Completed":
                self.completed.add(item.instance.instance_id)
                self._changed.set()
            return done

        if commit_session is not None:  # a session's step commits the episode with the result
            hub.commit_session = watched_session

    async def wait(self, instances: list[str]) -> None:
        while not set(instances) <= self.completed:
            self._changed.clear()
            await self._changed.wait()


async def _throughput(client: Any, watcher: CompletionWatcher, name: str, count: int) -> dict[str, Any]:
    started = time.perf_counter()
    ids = [await client.start_new(name, None, None) for _ in range(count)]
    await watcher.wait(ids)
    elapsed = time.perf_counter() - started
    return {"orchestrations": count, "seconds": round(elapsed, 3), "per_second": round(count / elapsed, 2)}


# -- DBOS (child process) ---------------------------------------------------------------------------


def dbos_run(args: argparse.Namespace, dsn: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dbos-bench-") as tmp:
        command = [sys.executable, __file__, "--dbos-child", "--chains", str(args.chains), "--fanouts",
                   str(args.fanouts), "--latency", str(args.latency), "--dbos-url", dbos_url(dsn)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"the DBOS run failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def dbos_url(dsn: str | None) -> str:
    """DBOS's system database: a SQLite file, or a database of its own on the run's server."""
    if dsn is None:
        return "sqlite:///dbos.sqlite"
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(dsn)
    return f"postgresql://{parts.get('user', 'postgres')}@{parts['host']}:{parts['port']}/dbos_bench"


def dbos_child(args: argparse.Namespace) -> None:
    from dbos import DBOS, DBOSConfig

    url = args.dbos_url if not args.dbos_url.startswith("sqlite:///") else f"sqlite:///{Path.cwd() / 'dbos.sqlite'}"
    DBOS(config=DBOSConfig(name="durable-bench", system_database_url=url, log_level="WARNING",
                           run_admin_server=False))

    @DBOS.step()
    def noop(value: int) -> int:
        return value

    @DBOS.workflow()
    def chain() -> str:
        for i in range(10):
            noop(i)
        return "done"

    @DBOS.workflow()
    def fan_out() -> int:
        handles = [queue.enqueue(noop, i) for i in range(100)]
        return len([handle.get_result() for handle in handles])

    @DBOS.workflow()
    def one_step() -> int:
        return noop(1)

    DBOS.launch()
    # Polled every second by default; 50 ms, as funchost's fastest poll.
    queue = DBOS.register_queue("fan-out", polling_interval_sec=0.05)
    results: dict[str, Any] = {}
    for label, workflow, count in (("chain-10", chain, args.chains), ("fan-out-100", fan_out, args.fanouts)):
        started = time.perf_counter()
        handles = [DBOS.start_workflow(workflow) for _ in range(count)]
        for handle in handles:
            handle.get_result()
        elapsed = time.perf_counter() - started
        results[label] = {"workflows": count, "seconds": round(elapsed, 3), "per_second": round(count / elapsed, 2)}
    samples = []
    for _ in range(args.latency):
        started = time.perf_counter()
        DBOS.start_workflow(one_step).get_result()
        samples.append(time.perf_counter() - started)
    results["latency-1"] = latency_summary(samples)
    DBOS.destroy()
    print(json.dumps(results))


# -- report -----------------------------------------------------------------------------------------


def ratios(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, float]:
    return {
        "chain-10 throughput (funchost / dbos)": round(ours["chain-10"]["per_second"] / peer["chain-10"]["per_second"], 2),
        "fan-out-100 throughput (funchost / dbos)": round(
            ours["fan-out-100"]["per_second"] / peer["fan-out-100"]["per_second"], 2),
        "latency p50 (funchost / dbos)": round(ours["latency-1"]["p50_ms"] / peer["latency-1"]["p50_ms"], 2),
        "latency p99 (funchost / dbos)": round(ours["latency-1"]["p99_ms"] / peer["latency-1"]["p99_ms"], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", type=int, default=50)
    parser.add_argument("--fanouts", type=int, default=10)
    parser.add_argument("--latency", type=int, default=200)
    parser.add_argument("--peer", choices=("dbos", "none"), default="dbos")
    parser.add_argument("--storage", choices=("embedded", "postgres"), default="embedded")
    parser.add_argument("--dbos-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dbos-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dbos_child:
        dbos_child(args)
        return 0
    server = start_server() if args.storage == "postgres" else None
    try:
        report = run(args, server.dsn if server is not None else None)
    finally:
        if server is not None:
            server.stop()
    if server is not None:
        report["environment"]["postgres"] = server.version
    RESULTS[args.storage].parent.mkdir(parents=True, exist_ok=True)
    RESULTS[args.storage].write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


def run(args: argparse.Namespace, dsn: str | None) -> dict[str, Any]:
    ours = asyncio.run(funchost_run(args, dsn))
    report: dict[str, Any] = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "cpus": os.cpu_count(), "platform": platform.platform(), "storage": args.storage},
        "parameters": {"chains": args.chains, "fanouts": args.fanouts, "latency": args.latency},
        "funchost": ours,
    }
    if args.peer == "dbos":
        import importlib.metadata

        peer = dbos_run(args, dsn)
        report["dbos"] = {"version": importlib.metadata.version("dbos"), **peer}
        report["ratios"] = ratios(ours, peer)
    return report


class PgServer:
    """The run's own PostgreSQL (tests/support/postgres.py starts it on a free 127.0.0.1 port)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(ROOT.parent))  # tests.support
        import psycopg
        from tests.support.postgres import start_postgres

        self._server = start_postgres()
        self.dsn = self._server.dsn
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            self.version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
            conn.execute("CREATE DATABASE dbos_bench")

    def stop(self) -> None:
        self._server.stop()


def start_server() -> PgServer:
    return PgServer()


if __name__ == "__main__":
    sys.exit(main())
