"""CPU cost of one invocation inside the host, without sockets or a load generator.

    python benchmarks/invocation_bench.py              # [--calls 20000] [--rounds 5]

Scenarios (in-process host on the real clock, `logging` at WARNING, CPU time of this process):
  executor-async          runtime.invoker.invoke() of an `async def` function with a `str`
                          trigger, host.json functionTimeout "-1": the middleware chain, argument
                          binding and the call
  executor-async-timeout  the same with the default functionTimeout (30 minutes): adds the timer
  http-async / http-def   one GET through the host's ASGI app (routing, request conversion,
                          invocation, response) for an `async def` and a `def` hello function
  *-otel                  the same with host.json telemetryMode OpenTelemetry, exporting over
                          OTLP/HTTP to a local sink that accepts everything (`--no-otel` skips
                          them): the span, metrics and the export thread's CPU are included

Results (median and best of the rounds, microseconds per call) are printed and written to
benchmarks/results/invocation.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from azure.functions.meta import Datum

from funchost.clock import SystemClock
from funchost.invocation.contracts import InvocationRequest
from funchost.testing import HostHarness, write_app

RESULTS = Path(__file__).resolve().parent / "results" / "invocation.json"

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.queue_trigger(arg_name="msg", queue_name="bench", connection="AzureWebJobsStorage")
async def on_message(msg: str) -> None:
    return None

@app.route(route="async")
async def hello_async(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("Hello, world!")

@app.route(route="def")
def hello_def(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("Hello, world!")
"""


async def cpu_per_call(call: Callable[[], Awaitable[Any]], calls: int, rounds: int) -> dict[str, float]:
    results = []
    for _ in range(rounds):
        started = time.process_time()
        for i in range(calls):
            await call()
            if i % 64 == 0:
                await asyncio.sleep(0)  # let the loop run, as a server's would between requests
        results.append((time.process_time() - started) / calls * 1e6)
    return {"median_us": round(statistics.median(results), 2), "best_us": round(min(results), 2)}


@contextmanager
def otlp_sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint that reads and accepts every export (what a collector costs us)."""

    class Accept(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Accept)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def executor(calls: int, rounds: int, host_json: dict[str, Any],
                   settings: dict[str, str] | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        write_app(Path(tmp) / "app", APP, host_json=host_json)
        async with HostHarness(Path(tmp) / "app", data_dir=Path(tmp) / "data", clock=SystemClock(),
                               settings=settings) as host:
            function = host.runtime.functions["on_message"]
            invoker = host.runtime.invoker

            def call() -> Awaitable[Any]:
                return invoker.invoke(InvocationRequest(function=function, trigger_value=Datum("x", "string"),
                                                        reason="bench"))

            return await cpu_per_call(call, calls, rounds)


async def http(calls: int, rounds: int, path: str, host_json: dict[str, Any] | None = None,
               settings: dict[str, str] | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        write_app(Path(tmp) / "app", APP, host_json=host_json)
        async with HostHarness(Path(tmp) / "app", data_dir=Path(tmp) / "data", clock=SystemClock(),
                               settings=settings) as host:
            from funchost.triggers.http.keys import KeyStore
            from funchost.triggers.http.server import create_asgi_app

            runtime = host.runtime
            keys = KeyStore.load_or_create(runtime.data_dir, runtime.settings, list(runtime.functions))
            app = create_asgi_app(runtime, keys)
            scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
                     "headers": [(b"host", b"localhost:7071")], "scheme": "http", "server": ("127.0.0.1", 7071)}
            statuses: list[int] = []

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])

            def call() -> Awaitable[Any]:
                return app(dict(scope), receive, send)

            figures = await cpu_per_call(call, calls, rounds)
            assert set(statuses) == {200}, set(statuses)
            return figures


async def run(args: argparse.Namespace) -> dict[str, Any]:
    logging.getLogger().setLevel(logging.WARNING)
    no_timeout = {"version": "2.0", "functionTimeout": "-1"}
    scenarios = {
        "executor-async": await executor(args.calls, args.rounds, no_timeout),
        "executor-async-timeout": await executor(args.calls, args.rounds, {"version": "2.0"}),
        "http-async": await http(args.calls // 4, args.rounds, "/api/async"),
        "http-def": await http(args.calls // 4, args.rounds, "/api/def"),
    }
    if args.otel:
        with otlp_sink() as endpoint:
            settings = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
            otel = {**no_timeout, "telemetryMode": "OpenTelemetry"}
            scenarios["executor-async-otel"] = await executor(args.calls, args.rounds, otel, settings)
            scenarios["http-async-otel"] = await http(args.calls // 4, args.rounds, "/api/async", otel, settings)
    return scenarios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-otel", dest="otel", action="store_false", help="skip the telemetry-on scenarios")
    args = parser.parse_args()
    scenarios = asyncio.run(run(args))
    for name, figures in scenarios.items():
        print(f"{name:24} {figures['median_us']:8.2f} us CPU per call (best {figures['best_us']:.2f})")
    report = {"environment": {"python": platform.python_version(), "machine": platform.machine(),
                              "cpus": os.cpu_count()},
              "parameters": vars(args), "scenarios": scenarios}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written to {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


if __name__ == "__main__":
    main()
