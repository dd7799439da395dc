"""HTTP trigger throughput, latency and start-up time: funchost vs bare uvicorn.

    python benchmarks/http_bench.py [--duration 5] [--connections 16] [--rounds 2] [--baseline-src DIR]

Targets, all started as separate processes and measured by the same load generator with the
same concurrency, interleaved round by round:

* ``funchost``: ``funchost start`` on a one-function app (``GET /api/hello`` -> "Hello, world!"),
  with the dashboard on (the default: every invocation goes into the history);
* ``no-dashboard`` / ``no-dashboard-async`` (with ``--compare-dashboard``): the same with
  ``--no-dashboard``;
* ``bare``: a raw ASGI hello-world callable on the same uvicorn (httptools + uvloop);
* ``starlette``: a Starlette app with one `PlainTextResponse` route on the same uvicorn;
* ``fastapi``: a FastAPI app with one ``async def`` GET route answering the same text
  (``response_class=PlainTextResponse``) on the same uvicorn: what a Python developer would
  write for an HTTP API, the reference for funchost's ``async def`` hello;
* ``fastapi-defaults``: the same FastAPI app on uvicorn's defaults, as ``uvicorn main:app`` or
  ``fastapi run`` serve it (an access log line per request, to /dev/null as funchost's console
  lines go): FastAPI with its defaults on, beside funchost with its own;
* ``funchost-async``: the same funchost process, an `async def` hello;
* ``workers-N`` / ``workers-N-async``: funchost with FUNCTIONS_WORKER_PROCESS_COUNT = N (the
  machine's cores);
* ``baseline`` (with ``--baseline-src``): the same app on funchost from another source tree
  (e.g. ``git worktree add /tmp/before <commit>``), to measure a change before and after in
  one run.

The load generator is ``wrk`` when installed (``apt-get install wrk``), else a keep-alive client
on raw sockets in its own process. Start-up time is measured from process spawn to the first
served ``GET /api/hello``. Output: ``benchmarks/results/http.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import same_run  # noqa: E402

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "http.json"
PATH = "/api/hello"
ASYNC_PATH = "/api/hello-async"

APP = textwrap.dedent('''
    import azure.functions as func

    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


    @app.route(route="hello", methods=["GET"])
    def hello(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("Hello, world!")


    @app.route(route="hello-async", methods=["GET"])
    async def hello_async(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("Hello, world!")
''')

BARE = textwrap.dedent('''
    import sys
    import uvicorn

    BODY = b"Hello, world!"
    HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        await send({"type": "http.response.body", "body": BODY})

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), lifespan="off", log_level="warning",
                access_log=False, server_header=False)
''')

STARLETTE = textwrap.dedent('''
    import sys
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def hello(request):
        return PlainTextResponse("Hello, world!")

    app = Starlette(routes=[Route("/api/hello", hello), Route("/api/hello-async", hello)])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), lifespan="off", log_level="warning",
                access_log=False, server_header=False)
''')

FASTAPI = textwrap.dedent('''
    import sys
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    app = FastAPI()

    @app.get("/api/hello", response_class=PlainTextResponse)
    async def hello():
        return "Hello, world!"

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), lifespan="off", log_level="warning",
                access_log=False, server_header=False)
''')

# The same FastAPI app as a developer runs it (`uvicorn main:app`, `fastapi run`): uvicorn's
# defaults, the access log line per request on (to /dev/null, as funchost's console lines are).
FASTAPI_DEFAULTS = re.sub(r"uvicorn\.run\(app, .*?\)\n", 'uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]))\n',
                          FASTAPI, flags=re.DOTALL)
assert FASTAPI_DEFAULTS.count("uvicorn.run(") == 1 and "access_log" not in FASTAPI_DEFAULTS

# A keep-alive HTTP/1.1 client on raw sockets, run in its own process: prints JSON.
CLIENT = textwrap.dedent('''
    import asyncio, json, sys, time

    port, connections, duration = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    REQUEST = f"GET {sys.argv[4]} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n".encode()

    async def worker(latencies, stop_at):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            writer.write(REQUEST)
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            length = 0
            for line in head.split(b"\\r\\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
        writer.close()

    async def main():
        latencies = []
        started = time.perf_counter()
        stop_at = started + duration
        await asyncio.gather(*(worker(latencies, stop_at) for _ in range(connections)))
        elapsed = time.perf_counter() - started
        latencies.sort()
        pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
        print(json.dumps({"requests": len(latencies), "rps": len(latencies) / elapsed,
                          "p50_ms": pick(0.50), "p90_ms": pick(0.90), "p99_ms": pick(0.99)}))

    try:
        import uvloop
        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
''')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(port: int, timeout: float = 30.0) -> float:
    """Poll until GET /api/hello answers 200; returns the monotonic time it did."""
    deadline = time.monotonic() + timeout
    request = f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(request)
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return time.monotonic()
        except OSError:
            pass
        time.sleep(0.005)
    raise RuntimeError(f"port {port} did not serve {PATH} within {timeout}s")


def start_funchost(app_dir: Path, data_dir: Path, port: int, src: Path | None = None,
                   workers: int = 1, extra: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """`funchost start`; from the source tree `src` (its `src/` folder first on the path) if given."""
    cli = "import sys; from funchost.cli import main; sys.exit(main())"
    # The storage endpoints off by setting, not flag: a --baseline-src tree may predate the flag.
    env = dict(os.environ, FUNCTIONS_WORKER_PROCESS_COUNT=str(workers), FUNCHOST_STORAGE_ENDPOINTS="off")
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src / "src"), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", cli, "start", str(app_dir), "--port", str(port),
                             "--data", str(data_dir), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def measure_startup(app_dir: Path, work: Path, runs: int,
                    trees: dict[str, Path | None]) -> dict[str, tuple[list[float], list[float]]]:
    """Per source tree (None: this one), the wall time from spawn to the first served request and
    the CPU time the process used by then (what a busy machine does not stretch); the trees
    alternate run by run, so load on the machine falls on each alike."""
    found: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in trees}
    for index in range(runs):
        for name, src in trees.items():
            times, cpu = found[name]
            port = free_port()
            spawned = time.monotonic()
            process = start_funchost(app_dir, work / f"startup-{name}-{index}", port, src)
            try:
                times.append((wait_ready(port) - spawned) * 1000)
                cpu.append((cpu_seconds(process.pid) or 0.0) * 1000)
            finally:
                stop(process)
    return found


def _startup_summary(times: list[float], cpu: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(times), 1), "runs": [round(t, 1) for t in times],
            "cpu_median": round(statistics.median(cpu), 1), "cpu_runs": [round(t, 1) for t in cpu]}


def _wrk_ms(text: str) -> float:
    number, unit = re.match(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def run_wrk(port: int, connections: int, duration: float, path: str = PATH) -> dict[str, float]:
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{int(duration)}s", "--latency",
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}  # type: ignore[union-attr]
    for quantile in ("50", "90", "99"):
        found = re.search(rf"^\s+{quantile}%\s+(\S+)", out, re.MULTILINE)
        result[f"p{quantile}_ms"] = _wrk_ms(found.group(1)) if found else float("nan")
    result["requests"] = float(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return result


def run_python_client(port: int, connections: int, duration: float, path: str = PATH) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CLIENT, str(port), str(connections), str(duration), path],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process and its children (Linux /proc: worker processes
    count), threads included; None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return total + sum(cpu_seconds(int(child)) or 0.0 for child in children)


def measured(load: Any, process: subprocess.Popen[bytes], port: int, connections: int,
             duration: float, path: str = PATH) -> dict[str, float]:
    """One load run, with the server's CPU time per request: unlike req/s, it hardly moves when
    other work shares the machine."""
    before = cpu_seconds(process.pid)
    sample: dict[str, float] = load(port, connections, duration, path)
    after = cpu_seconds(process.pid)
    if before is not None and after is not None and sample["requests"]:
        sample["cpu_us_per_request"] = (after - before) / sample["requests"] * 1e6
    return sample


def summarize(samples: list[dict[str, float]]) -> dict[str, Any]:
    keys = [key for key in ("rps", "p50_ms", "p90_ms", "p99_ms", "cpu_us_per_request") if key in samples[0]]
    return {key: round(statistics.median(s[key] for s in samples), 3) for key in keys} | {"rounds": samples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per target")
    parser.add_argument("--startup-runs", type=int, default=3)
    parser.add_argument("--client", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--baseline-src", type=Path, help="a funchost source tree to measure as 'baseline'")
    same_run.add_baseline_label(parser)
    parser.add_argument("--no-workers", action="store_true", help="skip the worker-process targets")
    parser.add_argument("--compare-dashboard", action="store_true",
                        help="also measure funchost with --no-dashboard, in the same rounds")
    args = parser.parse_args()
    client = args.client if args.client != "auto" else ("wrk" if shutil.which("wrk") else "python")
    load = run_wrk if client == "wrk" else run_python_client
    load_start = list(os.getloadavg())  # other work on the machine: say how busy it was

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        app_dir = work / "app"
        app_dir.mkdir()
        (app_dir / "function_app.py").write_text(APP)
        (app_dir / "host.json").write_text('{"version": "2.0"}')
        trees: dict[str, Path | None] = {"funchost": None}
        if args.baseline_src is not None:
            trees["baseline"] = args.baseline_src.resolve()
        startups = measure_startup(app_dir, work, args.startup_runs, trees)

        workers = os.cpu_count() or 2
        ports = {"bare": free_port(), "starlette": free_port(), "fastapi": free_port(), "fastapi-defaults": free_port(),
                 "funchost": free_port()}
        processes = {"bare": subprocess.Popen([sys.executable, "-c", BARE, str(ports["bare"])]),
                     "starlette": subprocess.Popen([sys.executable, "-c", STARLETTE, str(ports["starlette"])]),
                     "fastapi": subprocess.Popen([sys.executable, "-c", FASTAPI, str(ports["fastapi"])]),
                     "fastapi-defaults": subprocess.Popen([sys.executable, "-c", FASTAPI_DEFAULTS,
                                                           str(ports["fastapi-defaults"])],
                                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                     "funchost": start_funchost(app_dir, work / "data", ports["funchost"])}
        if not args.no_workers:
            ports["workers"] = free_port()
            processes["workers"] = start_funchost(app_dir, work / "workers-data", ports["workers"], workers=workers)
        if args.baseline_src is not None:
            ports["baseline"] = free_port()
            processes["baseline"] = start_funchost(app_dir, work / "baseline-data", ports["baseline"],
                                                   args.baseline_src.resolve())
        if args.compare_dashboard:
            ports["no-dashboard"] = free_port()
            processes["no-dashboard"] = start_funchost(app_dir, work / "no-dashboard-data", ports["no-dashboard"],
                                                       extra=("--no-dashboard",))
        # (target, process, path): the def and the async def hello on each funchost.
        targets = [("bare", "bare", PATH), ("starlette", "starlette", PATH), ("fastapi", "fastapi", PATH),
                   ("fastapi-defaults", "fastapi-defaults", PATH), ("funchost", "funchost", PATH),
                   ("funchost-async", "funchost", ASYNC_PATH)]
        if not args.no_workers:
            targets += [(f"workers-{workers}", "workers", PATH), (f"workers-{workers}-async", "workers", ASYNC_PATH)]
        if args.baseline_src is not None:
            targets += [("baseline", "baseline", PATH), ("baseline-async", "baseline", ASYNC_PATH)]
        if args.compare_dashboard:
            targets += [("no-dashboard", "no-dashboard", PATH), ("no-dashboard-async", "no-dashboard", ASYNC_PATH)]
        samples: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in targets}
        try:
            for port in ports.values():
                wait_ready(port)
                load(port, args.connections, 1.0)  # warm-up
            for _ in range(args.rounds):
                for name, key, path in targets:
                    samples[name].append(measured(load, processes[key], ports[key], args.connections,
                                                  args.duration, path))
        finally:
            for process in processes.values():
                stop(process)

    result: dict[str, Any] = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "cpus": os.cpu_count(), "client": client,
                        "load_average_start": load_start, "load_average_end": list(os.getloadavg())},
        "parameters": {"duration_s": args.duration, "connections": args.connections, "rounds": args.rounds,
                       "worker_processes": workers},
        "startup_ms": _startup_summary(*startups["funchost"]),
    } | {name: summarize(rounds) for name, rounds in samples.items()}
    bare = result["bare"]["rps"]
    result["ratios"] = {
        "funchost_vs_bare": round(result["funchost"]["rps"] / bare, 3),
        "funchost_async_vs_bare": round(result["funchost-async"]["rps"] / bare, 3),
        "starlette_vs_bare": round(result["starlette"]["rps"] / bare, 3),
        "fastapi_vs_bare": round(result["fastapi"]["rps"] / bare, 3),
        "funchost_async_vs_fastapi": round(result["funchost-async"]["rps"] / result["fastapi"]["rps"], 3),
        "funchost_async_vs_fastapi_defaults": round(result["funchost-async"]["rps"]
                                                    / result["fastapi-defaults"]["rps"], 3),
    }
    if not args.no_workers:
        result["ratios"]["workers_vs_one_process"] = round(result[f"workers-{workers}"]["rps"]
                                                           / result["funchost"]["rps"], 3)
        result["ratios"]["workers_async_vs_one_process"] = round(result[f"workers-{workers}-async"]["rps"]
                                                                 / result["funchost-async"]["rps"], 3)
    if "baseline" in samples:
        result["baseline_src"] = same_run.baseline_label(args)
        result["baseline_startup_ms"] = _startup_summary(*startups["baseline"])
        for suffix in ("", "-async"):
            current, before = result[f"funchost{suffix}"], result[f"baseline{suffix}"]
            result["ratios"][f"funchost{suffix}_vs_baseline"] = round(current["rps"] / before["rps"], 3)
            if "cpu_us_per_request" in current:
                result["ratios"][f"funchost{suffix}_vs_baseline_cpu"] = round(
                    current["cpu_us_per_request"] / before["cpu_us_per_request"], 3)
    if "no-dashboard" in samples:
        for suffix in ("", "-async"):
            on, off = result[f"funchost{suffix}"], result[f"no-dashboard{suffix}"]
            result["ratios"][f"dashboard_on_vs_off{suffix}"] = round(on["rps"] / off["rps"], 3)
            if "cpu_us_per_request" in on:
                result["ratios"][f"dashboard_on_vs_off{suffix}_cpu"] = round(
                    on["cpu_us_per_request"] / off["cpu_us_per_request"], 3)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(f"client: {client}, {args.connections} connections, {args.rounds} x {args.duration:g}s per target")
    print(f"{'target':18} {'req/s min':>10} {'median':>10} {'max':>10} {'p50 ms':>8} {'p99 ms':>8} {'CPU µs/req':>11}")
    for name in samples:
        row = result[name]
        rates = [r["rps"] for r in row["rounds"]]
        cpu = row.get("cpu_us_per_request", float("nan"))
        print(f"{name:18} {min(rates):>10.0f} {row['rps']:>10.0f} {max(rates):>10.0f} {row['p50_ms']:>8.2f} "
              f"{row['p99_ms']:>8.2f} {cpu:>11.1f}")
    print("ratios (medians):", json.dumps(result["ratios"]))
    print(f"load average at start {load_start[0]:.2f}, at end {os.getloadavg()[0]:.2f}")
    print(f"start-up (spawn -> first response): {result['startup_ms']['median']:.0f} ms "
          f"(CPU {result['startup_ms']['cpu_median']:.0f} ms)")
    if "baseline_startup_ms" in result:
        print(f"start-up of the baseline tree: {result['baseline_startup_ms']['median']:.0f} ms "
              f"(CPU {result['baseline_startup_ms']['cpu_median']:.0f} ms)")
    print(f"written to {RESULTS.relative_to(ROOT.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
