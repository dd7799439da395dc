"""CPU cost of one invocation inside the host, without sockets or a load generator.

    python benchmarks/invocation_bench.py                    # [--calls 20000] [--rounds 3]
    python benchmarks/invocation_bench.py --baseline-src DIR # the same scenarios on another source tree
    python benchmarks/invocation_bench.py --dashboard both   # each scenario with the dashboard on and off
    python benchmarks/invocation_bench.py --only NAME,... --results FILE   # some scenarios, elsewhere

Each scenario runs in its own process (in-process host on the real clock, `logging` at WARNING
unless stated, CPU time of that process per call); with ``--baseline-src`` the baseline tree
(``git archive <commit> src | tar -x -C DIR``) and this one alternate round by round, so the
before/after ratio comes from one run on the same machine.

  executor-async          runtime.invoker.invoke() of an `async def` function with a `str`
                          trigger, host.json functionTimeout "-1": the middleware chain, argument
                          binding and the call
  executor-async-timeout  the same with the default functionTimeout (30 minutes): adds the timer
  http-async / http-def   one GET through the host's ASGI app (routing, request conversion,
                          invocation, response) for an `async def` and a `def` hello function
  http-async-logged       http-async with the two log lines written to the console (a buffer)
  queue-async / queue-def / queue-message
                          one queue message through the trigger's processor (decode, poison
                          check, invocation, delete) with storage calls that do nothing, for an
                          `async def` / `def` function taking `str`, and an `async def` taking
                          `func.QueueMessage`: the per-message cost beyond the storage calls
  servicebus-message / servicebus-batch / eventhubs-event / eventhubs-batch
                          the trigger's invocation request built from a received message or event
                          and invoked (`async def` taking `func.ServiceBusMessage` /
                          `func.EventHubEvent`, or a list of 100 of them): per message, without the
                          broker, settlement or checkpoints
  executor-async-otel / http-async-otel
                          executor-async / http-async with host.json telemetryMode OpenTelemetry,
                          exporting over OTLP/HTTP to a local sink that accepts everything: the
                          span, the metrics and the export thread's CPU are included

  fastapi-hello           (--only) the http-async request through a FastAPI app's ASGI callable
                          (one `async def` GET route answering the same text): the peer, in process
  history-http / history-queue / lines-http / lines-queue   (--only; not run by default)
                          the CPU the dashboard's history (the recorder, and its writer: each batch
                          ends with the batch written) or the two console lines (to /dev/null, as
                          `funchost start` writes them with stdout redirected) add per call to
                          http-async / queue-async, measured in one process: batches of 500 calls
                          alternate off and on (at least 60 on), the figure is the median of each on
                          batch's CPU time less the mean of the off batches beside it, so load on
                          the machine moves both sides alike
  lines-unbuffered-http / lines-unbuffered-queue   (--only; not run by default)
                          the two lines on a console that writes each line through (stdout
                          unbuffered: PYTHONUNBUFFERED, `python -u`; here a line-buffered
                          /dev/null as the process's sys.stdout), where the lines of a loop's
                          turns wait and go out together (`logs.ConsoleHandler`)
  history-path-http / history-path-queue   (--only; not run by default)
                          the history's cost on the invocation path alone: the same pairs with the
                          background writer stopped, each batch's records written after its time
                          is taken (what the recorder does per attempt, and what the records
                          waiting for the writer cost the rest of the call); history-http less
                          this is the writer's share

The dashboard (the invocation history's recorder and its batch writer) is on in every
scenario, as `funchost start` runs by default (``--dashboard on``); ``--dashboard off`` measures
with ``FUNCHOST_DASHBOARD=false``, and ``--dashboard both`` measures both, alternating round by
round, the off figures under ``<scenario>/no-dashboard``.

Results (min / median / max of the rounds, microseconds of CPU per call) are printed and written
to benchmarks/results/invocation.json (or --results).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import same_run  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "invocation.json"
SCENARIOS = ("executor-async", "executor-async-timeout", "http-async", "http-async-logged", "http-def",
             "queue-async", "queue-def", "queue-message", "executor-async-otel", "http-async-otel",
             "servicebus-message", "servicebus-batch", "eventhubs-event", "eventhubs-batch")
# What the dashboard's history and the two console lines add, each measured on and off in one
# process, batch by batch (not a default scenario: name them with --only).
PAIRED = ("history-http", "history-queue", "lines-http", "lines-queue", "history-path-http", "history-path-queue",
          "lines-unbuffered-http", "lines-unbuffered-queue")
PEERS = ("fastapi-hello",)  # the same request through FastAPI's ASGI app (--only; not run by default)
PAIRED_BATCH = 500  # calls per batch: the recorder's batch, written (flushed) inside the batch's time
PAIRED_BATCHES = 120  # batches per paired figure, half on and half off: fewer left the medians within ±2 µs

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.queue_trigger(arg_name="msg", queue_name="bench", connection="AzureWebJobsStorage")
async def on_message(msg: str) -> None:
    return None

@app.queue_trigger(arg_name="msg", queue_name="benchdef", connection="AzureWebJobsStorage")
def on_message_def(msg: str) -> None:
    return None

@app.queue_trigger(arg_name="msg", queue_name="benchtyped", connection="AzureWebJobsStorage")
async def on_queue_message(msg: func.QueueMessage) -> None:
    return None

@app.route(route="async")
async def hello_async(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("Hello, world!")

@app.route(route="def")
def hello_def(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("Hello, world!")
"""


MESSAGING_APP = """
import azure.functions as func
from typing import List
app = func.FunctionApp()

@app.service_bus_queue_trigger(arg_name="msg", queue_name="one", connection="ServiceBus")
async def sb_one(msg: func.ServiceBusMessage) -> None:
    return None

@app.service_bus_queue_trigger(arg_name="msgs", queue_name="many", connection="ServiceBus", cardinality="many")
async def sb_many(msgs: List[func.ServiceBusMessage]) -> None:
    return None

@app.event_hub_message_trigger(arg_name="event", event_hub_name="one", connection="EventHubs")
async def eh_one(event: func.EventHubEvent) -> None:
    return None

@app.event_hub_message_trigger(arg_name="events", event_hub_name="many", connection="EventHubs", cardinality="many")
async def eh_many(events: List[func.EventHubEvent]) -> None:
    return None
"""
BATCH = 100


async def cpu_per_call(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    for _ in range(min(calls, 500)):  # warm-up: plans, threads, caches
        await call()
    started = time.process_time()
    for i in range(calls):
        await call()
        if i % 64 == 0:
            await asyncio.sleep(0)  # let the loop run, as a server's would between requests
    return (time.process_time() - started) / calls * 1e6


DASHBOARD = {"FUNCHOST_DASHBOARD": "true"}  # the child's mode (--child-dashboard)


def _harness(tmp: str, host_json: dict[str, Any] | None = None, settings: dict[str, str] | None = None) -> Any:
    from funchost.clock import SystemClock
    from funchost.testing import HostHarness, write_app

    write_app(Path(tmp) / "app", APP, host_json=host_json)
    return HostHarness(Path(tmp) / "app", data_dir=Path(tmp) / "data", clock=SystemClock(),
                       settings={**DASHBOARD, **(settings or {})})


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


async def executor(calls: int, host_json: dict[str, Any], settings: dict[str, str] | None = None) -> float:
    from azure.functions.meta import Datum

    from funchost.invocation.contracts import InvocationRequest

    with tempfile.TemporaryDirectory() as tmp:
        async with _harness(tmp, host_json, settings) as host:
            function = host.runtime.functions["on_message"]
            invoker = host.runtime.invoker

            def call() -> Awaitable[Any]:
                return invoker.invoke(InvocationRequest(function=function, trigger_value=Datum("x", "string"),
                                                        reason="bench"))

            return await cpu_per_call(call, calls)


async def http(calls: int, path: str, logged: bool = False, host_json: dict[str, Any] | None = None,
               settings: dict[str, str] | None = None) -> float:
    from funchost import logs
    from funchost.triggers.http.keys import KeyStore
    from funchost.triggers.http.server import create_asgi_app

    with tempfile.TemporaryDirectory() as tmp:
        async with _harness(tmp, host_json, settings) as host:
            if logged:  # the console lines, as `funchost start` writes them, into a buffer
                sys.stdout, real = io.StringIO(), sys.stdout
                logs.configure("text")
            runtime = host.runtime
            keys = KeyStore.load_or_create(runtime.data_dir, runtime.settings, list(runtime.functions))
            app = create_asgi_app(runtime, keys)
            scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
                     "headers": [(b"host", b"localhost:7071"), (b"user-agent", b"wrk"), (b"accept", b"*/*")],
                     "scheme": "http", "server": ("127.0.0.1", 7071), "http_version": "1.1"}
            statuses: list[int] = []

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])

            def call() -> Awaitable[Any]:
                return app(dict(scope), receive, send)

            try:
                figure = await cpu_per_call(call, calls)
            finally:
                if logged:
                    sys.stdout = real
                    logging.getLogger().handlers.clear()
            assert set(statuses) == {200}, set(statuses)
            return figure


async def fastapi_hello(calls: int) -> float:
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    app = FastAPI()

    @app.get("/api/async", response_class=PlainTextResponse)
    async def hello() -> str:
        return "Hello, world!"

    scope = {"type": "http", "method": "GET", "path": "/api/async", "raw_path": b"/api/async", "query_string": b"",
             "root_path": "", "headers": [(b"host", b"localhost:7071"), (b"user-agent", b"wrk"), (b"accept", b"*/*")],
             "scheme": "http", "server": ("127.0.0.1", 7071), "client": ("127.0.0.1", 50000), "http_version": "1.1",
             "asgi": {"version": "3.0"}}
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    figure = await cpu_per_call(lambda: app(dict(scope), receive, send), calls)
    assert set(statuses) == {200}, set(statuses)
    return figure


class _NoStorage:
    """A queue service whose calls do nothing: the processor's own cost per message."""

    account_name = "devstoreaccount1"

    async def delete_message(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def update_message(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no renewal or release expected")


async def queue(calls: int, function_name: str) -> float:
    from funchost.storage.queues import QueueMessage
    from funchost.triggers.queue import queues_options
    from funchost.triggers.queue.processor import QueueProcessor

    with tempfile.TemporaryDirectory() as tmp:
        async with _harness(tmp) as host:
            runtime = host.runtime
            processor = QueueProcessor(runtime.functions[function_name], runtime, _NoStorage(),  # type: ignore[arg-type]
                                       "bench", "bench-poison", queues_options(runtime), 600.0)
            now = datetime.now(UTC)
            message = QueueMessage(id="6d2ab4c8-3b0e-4a47-9f7e-0c5f0f2f8a11", content="eyJuIjogMX0=",
                                   dequeue_count=1, insertion_time=now, expiration_time=now + timedelta(days=7),
                                   next_visible_time=now + timedelta(minutes=10), pop_receipt="AgAAAAMAAAAAAAAA")

            def call() -> Awaitable[Any]:
                return processor.process(message)

            try:
                return await cpu_per_call(call, calls)
            finally:
                await processor.stop()


async def messaging(calls: int, name: str) -> float:
    """CPU per message of building a Service Bus / Event Hubs invocation and invoking it (the
    functions are disabled: no listener runs, the invoker is called directly)."""
    from funchost.clock import SystemClock
    from funchost.storage.eventhubs import ReceivedEvent
    from funchost.storage.servicebus import ReceivedMessage
    from funchost.testing import HostHarness, write_app
    from funchost.triggers.eventhub.events import PartitionInfo, batch_request, single_request
    from funchost.triggers.servicebus.messages import build_batch, build_single

    now = datetime.now(UTC)
    messages = [ReceivedMessage(body=b'{"n": 1}', message_id=f"{n:032x}", sequence_number=n, enqueued_time=now,
                                expires_at=now + timedelta(days=14), delivery_count=1, lock_token=f"token-{n}",
                                locked_until=now + timedelta(minutes=1), state="active",
                                application_properties={"source": "bench", "n": n}) for n in range(BATCH)]
    events = [ReceivedEvent("0", n, n * 100, now, b'{"n": 1}', properties={"source": "bench"}) for n in range(BATCH)]
    partition = PartitionInfo("localhost", "hub", "$Default", "0")
    disabled = {f"AzureWebJobs.{f}.Disabled": "true" for f in ("sb_one", "sb_many", "eh_one", "eh_many")}
    with tempfile.TemporaryDirectory() as tmp:
        write_app(Path(tmp) / "app", MESSAGING_APP, settings=disabled)
        async with HostHarness(Path(tmp) / "app", data_dir=Path(tmp) / "data", clock=SystemClock()) as host:
            functions, invoker = host.runtime.functions, host.runtime.invoker
            requests: dict[str, Callable[[], Any]] = {
                "servicebus-message": lambda: build_single(functions["sb_one"], messages[0], "one"),
                "servicebus-batch": lambda: build_batch(functions["sb_many"], messages, "many"),
                "eventhubs-event": lambda: single_request(functions["eh_one"], partition, events[0]),
                "eventhubs-batch": lambda: batch_request(functions["eh_many"], partition, events),
            }
            build = requests[name]
            first = await invoker.invoke(build())
            assert first.succeeded, first.error

            def call() -> Awaitable[Any]:
                return invoker.invoke(build())

            if name.endswith("-batch"):
                return await cpu_per_call(call, max(calls // (2 * BATCH), 20)) / BATCH
            return await cpu_per_call(call, calls // 2)


async def scenario(name: str, calls: int) -> float:
    logging.getLogger().setLevel(logging.WARNING)
    no_timeout = {"version": "2.0", "functionTimeout": "-1"}
    runs: dict[str, Callable[[], Awaitable[float]]] = {
        "executor-async": lambda: executor(calls, no_timeout),
        "executor-async-timeout": lambda: executor(calls, {"version": "2.0"}),
        "http-async": lambda: http(calls // 4, "/api/async"),
        "http-async-logged": lambda: http(calls // 4, "/api/async", logged=True),
        "http-def": lambda: http(calls // 4, "/api/def"),
        "queue-async": lambda: queue(calls // 2, "on_message"),
        "queue-def": lambda: queue(calls // 4, "on_message_def"),
        "queue-message": lambda: queue(calls // 2, "on_queue_message"),
        **{kind: (lambda kind=kind: messaging(calls, kind))
           for kind in ("servicebus-message", "servicebus-batch", "eventhubs-event", "eventhubs-batch")},
    }
    if name in PAIRED:
        return await paired(name, calls)
    if name == "fastapi-hello":
        return await fastapi_hello(calls // 4)
    if name.endswith("-otel"):
        with otlp_sink() as endpoint:
            settings = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
            otel = {**no_timeout, "telemetryMode": "OpenTelemetry"}
            if name == "executor-async-otel":
                return await executor(calls, otel, settings)
            return await http(calls // 4, "/api/async", host_json=otel, settings=settings)
    return await runs[name]()


async def paired_cost(call: Callable[[], Awaitable[Any]], toggle: Callable[[bool], Awaitable[None]],
                      calls: int, after: Callable[[], Awaitable[Any]] | None = None) -> float:
    """µs of CPU per call that `toggle(True)` adds: batches alternate off and on; each on batch's
    CPU time per call less the mean of the off batches just before and after it (so a change of
    the machine's load between batches moves both sides alike), the median of those differences
    (`toggle(on)` runs at the end of every batch too, so what it does, e.g. writing the history's
    batch, counts in the batch; `after`, if given, runs after each batch's time is taken)."""
    for _ in range(500):
        await call()
    times: list[float] = []  # off, on, off, on, ..., off
    for index in range(max(2 * (calls // PAIRED_BATCH), PAIRED_BATCHES) + 1):
        on = index % 2 == 1
        await toggle(on)
        started = time.process_time()
        for i in range(PAIRED_BATCH):
            await call()
            if i % 64 == 0:
                await asyncio.sleep(0)
        await toggle(on)
        times.append((time.process_time() - started) / PAIRED_BATCH * 1e6)
        if after is not None:
            await after()
    return statistics.median(times[i] - (times[i - 1] + times[i + 1]) / 2 for i in range(1, len(times) - 1, 2))


async def paired(name: str, calls: int) -> float:
    """The history's or the console lines' cost per call (`PAIRED`), on an in-process host."""
    from funchost import logs
    from funchost.dashboard.recorder import HistoryRecorder

    what, kind = name.split("-")[0], name.rsplit("-", 1)[1]
    path_only = "-path-" in name  # the history without its writer's share (`after` writes each batch)
    captured: dict[str, Any] = {}

    async def measure(call: Callable[[], Awaitable[Any]], calls: int) -> float:
        host = captured["host"]
        invoker = host.runtime.invoker
        observers = invoker._observers
        recorder = host.runtime.services.find(HistoryRecorder)
        results = logging.getLogger("funchost.results")
        real_stdout = sys.stdout
        if what == "lines":
            # The process's console for the run, as `funchost start` configures it: its stdout
            # redirected to /dev/null, block-buffered, or writing each line through (-unbuffered-).
            sys.stdout = open(os.devnull, "w", buffering=1 if "-unbuffered-" in name else -1)  # noqa: SIM115
            logs.configure("text")

        async def toggle(on: bool) -> None:
            if what == "history":
                invoker._observers = observers if on else ()
                if recorder is not None and not path_only:
                    await recorder.flush()  # this batch's records written within its time
            else:
                results.setLevel(logging.NOTSET if on else logging.WARNING)

        async def write_batch() -> None:
            await recorder.flush()

        if path_only:  # the writer task stopped: each batch is written by `after`, outside its time
            assert recorder is not None and recorder._task is not None
            recorder._task.cancel()
            await asyncio.gather(recorder._task, return_exceptions=True)
        try:
            return await paired_cost(call, toggle, calls, write_batch if path_only else None)
        finally:
            if what == "lines":
                logging.getLogger().handlers.clear()
                sys.stdout = real_stdout  # the child's result is printed there

    global cpu_per_call
    original, cpu_per_call = cpu_per_call, measure  # type: ignore[assignment]
    original_harness = globals()["_harness"]

    def harness(*args: Any, **kwargs: Any) -> Any:
        host = captured["host"] = original_harness(*args, **kwargs)
        return host

    globals()["_harness"] = harness
    try:
        if kind == "http":
            return await http(calls // 2, "/api/async")
        return await queue(calls, "on_message")
    finally:
        cpu_per_call = original
        globals()["_harness"] = original_harness


def run_child(name: str, calls: int, src: Path | None, dashboard: bool = True) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src / "src"), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, __file__, "--child", name, "--calls", str(calls),
                          "--child-dashboard", "true" if dashboard else "false"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def summary(values: list[float]) -> dict[str, Any]:
    return {"min_us": round(min(values), 2), "median_us": round(statistics.median(values), 2),
            "max_us": round(max(values), 2), "rounds": [round(v, 2) for v in values]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated scenario names")
    parser.add_argument("--baseline-src", type=Path, help="a funchost source tree to measure as 'baseline'")
    same_run.add_baseline_label(parser)
    parser.add_argument("--dashboard", choices=("on", "off", "both"), default="on",
                        help="measure with the dashboard's invocation history on (default), off, or both")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-dashboard", default="true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        DASHBOARD["FUNCHOST_DASHBOARD"] = args.child_dashboard
        print(asyncio.run(scenario(args.child, args.calls)))
        return
    scenario_names = args.only.split(",") if args.only else list(SCENARIOS)
    modes = {"on": (True,), "off": (False,), "both": (True, False)}[args.dashboard]
    names = [name + ("" if dashboard else "/no-dashboard") for name in scenario_names for dashboard in modes]
    trees: dict[str, Path | None] = {"current": None}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src.resolve()
    figures: dict[str, dict[str, list[float]]] = {tree: {name: [] for name in names} for tree in trees}
    for round_index in range(args.rounds):
        for name in names:
            order = list(trees.items()) if round_index % 2 == 0 else list(reversed(trees.items()))
            scenario_name, _, off = name.partition("/")
            for tree, src in order:
                figures[tree][name].append(run_child(scenario_name, args.calls, src, dashboard=not off))
    report: dict[str, Any] = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
        "parameters": {"calls": args.calls, "rounds": args.rounds, "dashboard": args.dashboard,
                       "baseline_src": same_run.baseline_label(args)},
        "scenarios": {name: summary(figures["current"][name]) for name in names},
    }
    if "baseline" in trees:
        report["baseline"] = {name: summary(figures["baseline"][name]) for name in names}
    print(f"{'scenario':24} {'min':>8} {'median':>8} {'max':>8}   us CPU per call" +
          ("   baseline median  ratio" if "baseline" in trees else ""))
    for name in names:
        row = report["scenarios"][name]
        line = f"{name:24} {row['min_us']:8.2f} {row['median_us']:8.2f} {row['max_us']:8.2f}"
        if "baseline" in trees:
            base = report["baseline"][name]["median_us"]
            line += f"   {base:15.2f}  {row['median_us'] / base:5.2f}"
        print(line)
    results = args.results.resolve()
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written to {results.relative_to(Path.cwd()) if results.is_relative_to(Path.cwd()) else results}")


if __name__ == "__main__":
    main()
