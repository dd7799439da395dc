"""`funchost start`: run a function app until Ctrl-C / SIGTERM, then stop gracefully."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import sys
import time
from pathlib import Path

from funchost import __version__, logs
from funchost.cli import supervisor
from funchost.cli.amqp import add_amqp_arguments, amqp_arguments, amqp_settings
from funchost.cli.common import add_backend_options, apply_backend_options
from funchost.cli.storage import add_endpoint_arguments, endpoint_arguments, endpoint_settings
from funchost.dashboard.service import DashboardService
from funchost.errors import FunchostError
from funchost.host import DEFAULT_PORT, Host, HostConfig
from funchost.settings.local_settings import load_local_settings
from funchost.storage_endpoints.peer_watch import PeerWatch


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("start", help="run a function app",
                                   description="Run an Azure Functions Python v2 app (function_app.py).")
    parser.add_argument("app_dir", nargs="?", default=".", metavar="APP_DIR")
    parser.add_argument("--port", type=int, default=None, help="HTTP port (default: local.settings.json "
                        "Host.LocalHttpPort, else 7071; 0 picks a free port)")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    add_backend_options(parser)
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="console output: text as Core Tools prints it, or NDJSON events")
    add_endpoint_arguments(parser)
    add_amqp_arguments(parser)
    parser.add_argument("--no-dashboard", action="store_true",
                        help="do not serve the dashboard at /_funchost/ nor record the invocation history")
    parser.add_argument("--reload", action="store_true",
                        help="restart the app when its .py files, host.json or local.settings.json change")
    parser.add_argument("--debug", metavar="[HOST:]PORT", default=None,
                        help="run the functions under debugpy listening there (default host 127.0.0.1)")
    parser.add_argument("--debug-wait", action="store_true",
                        help="wait for a debugger to attach before loading the app (port 5678 without --debug)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    young_generation_as_in_python_313()
    output = args.output
    apply_backend_options(args)
    if not supervisor.is_worker():
        try:
            count = _worker_process_count(Path(args.app_dir))
        except FunchostError as exc:
            return _fail(exc, output)
        if count > 1 and not (args.reload or args.debug is not None or args.debug_wait):
            return _supervise(args, count)
        if count > 1:  # one process to reload and to debug: docs/dev-loop.md
            logs.print_line(f"{supervisor.SETTING}={count} is not used with --reload or --debug: "
                            "one process runs the functions.", output=output, event="HostSingleProcess")
    logs.configure(output)
    config = HostConfig(app_dir=Path(args.app_dir), data_dir=Path(args.data) if args.data else None,
                        storage=args.storage, port=args.port, bind=args.bind,
                        settings_override={**endpoint_settings(args, Path(args.app_dir)),
                                           **amqp_settings(args, Path(args.app_dir)),
                                           **({"FUNCHOST_DASHBOARD": "false"} if args.no_dashboard else {})},
                        listen_fd=supervisor.inherited_listen_fd())
    if args.debug is not None or args.debug_wait:  # docs/dev-loop.md
        from funchost.devloop.debugger import start_debugger

        try:
            start_debugger(args.debug, wait=args.debug_wait, output=output)
        except FunchostError as exc:
            return _fail(exc, output)
    if args.reload:
        from funchost.devloop.reload import run_reloading

        return run_reloading(config, output, started)
    host = Host(config)
    try:
        runtime = host.load()
    except FunchostError as exc:
        return _fail(exc, output)
    if not host.functions:
        return _fail(FunchostError(f"no functions are defined in {runtime.app_dir / 'function_app.py'}: "
                                   "decorate functions with @app.route, @app.queue_trigger, ..."), output)
    logs.configure(output, runtime.options.log_levels)
    try:
        return _run_loop(host, output, started)
    except FunchostError as exc:
        return _fail(exc, output)


PYTHON_311_YOUNG_THRESHOLD = 700  # gc.get_threshold()[0] of Python 3.11 and 3.12
PYTHON_313_YOUNG_THRESHOLD = 2000  # the same from 3.13 on (Python/gc.c, _PyGC_InitState)


def young_generation_as_in_python_313() -> None:
    """Collect the youngest generation after 2 000 net allocations, as Python 3.13 does, not
    after 700. A queue drain keeps a few hundred objects per batch of messages alive across a
    function's thread hop: at 700, young collections ran about once per 50 messages, each walking
    and promoting the batch's live objects (2 µs of the loop per message, benchmarks/README.md,
    "Twelfth pass"). Set before the app loads, so a threshold the app sets itself wins; left alone
    when the interpreter's threshold is not its default (set by PYTHON* options or a wrapper)."""
    threshold = gc.get_threshold()
    if threshold[0] == PYTHON_311_YOUNG_THRESHOLD:
        gc.set_threshold(PYTHON_313_YOUNG_THRESHOLD, *threshold[1:])


def _worker_process_count(app_dir: Path) -> int:
    """FUNCTIONS_WORKER_PROCESS_COUNT from the environment, else local.settings.json Values."""
    value = os.environ.get(supervisor.SETTING)
    if value is None:
        value = load_local_settings(app_dir).values.get(supervisor.SETTING)
    return supervisor.process_count(value)


def _supervise(args: argparse.Namespace, count: int) -> int:
    port = args.port
    if port is None:
        port = load_local_settings(Path(args.app_dir)).local_http_port or DEFAULT_PORT
    argv = [str(args.app_dir), "--bind", args.bind, "--storage", args.storage, "--output", args.output]
    if args.data:
        argv += ["--data", str(args.data)]
    argv += endpoint_arguments(args) + amqp_arguments(args)
    if args.no_dashboard:
        argv += ["--no-dashboard"]
    try:
        return supervisor.Supervisor(argv, count, args.bind, port, args.output).run()
    except OSError as exc:
        return _fail(FunchostError(f"cannot listen on {args.bind}:{port} ({exc.strerror or exc})"), args.output)


def _run_loop(host: Host, output: str, started: float) -> int:
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is part of uvicorn[standard]
        runner = asyncio.Runner()
    with runner:
        return runner.run(_serve(host, output, started))


# A repeat this soon is the same stop request delivered twice: coreutils `timeout` signals the
# child and then its whole process group, so one `timeout` can deliver SIGTERM twice.
DUPLICATE_SIGNAL_WINDOW = 1.0  # seconds


class StopRequests:
    """The first stop signal stops gracefully; a repeat within the window is the same request;
    a later one (Ctrl+C pressed again while stopping) forces the stop."""

    def __init__(self, window: float = DUPLICATE_SIGNAL_WINDOW) -> None:
        self.window = window
        self._first: float | None = None

    def on_signal(self, now: float) -> str:
        """'stop', 'duplicate' or 'force', for a signal received at monotonic time `now`."""
        if self._first is None:
            self._first = now
            return "stop"
        return "duplicate" if now - self._first < self.window else "force"


async def _serve(host: Host, output: str, started: float) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    requests = StopRequests()

    def on_signal() -> None:
        decision = requests.on_signal(time.monotonic())
        if decision == "force":
            logs.print_line("Forced stop.", output=output, event="HostForcedStop")
            raise SystemExit(130)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    await host.start()
    if not supervisor.quiet_start():
        _banner(host, output, started)
    # What start-up created lives as long as the host: out of the collector's full passes, which
    # otherwise walk all of it (60-100 ms each, several a minute under load; benchmarks/README.md).
    gc.freeze()
    if supervisor.is_worker():
        supervisor.announce_ready()
        orphan_watch = loop.create_task(_stop_when_orphaned(os.getppid(), stop))
    await stop.wait()
    logs.print_line("Stopping host: in-flight work finishes, new work is refused...", output=output,
                    event="HostStopping")
    await host.stop()
    if supervisor.is_worker():
        orphan_watch.cancel()
    logs.print_line("Host stopped.", output=output, event="HostStopped")
    if not host.stopped_in_time:
        _exit_now()  # the threads of sync functions cancelled at the stop timeout are not waited for
    return 0


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


async def _stop_when_orphaned(parent: int, stop: asyncio.Event) -> None:
    """A worker whose supervisor is gone (killed) stops gracefully instead of running on."""
    while os.getppid() == parent:
        await asyncio.sleep(1.0)
    stop.set()


def _banner(host: Host, output: str, started: float) -> None:
    runtime = host.runtime
    assert runtime is not None
    elapsed = int((time.perf_counter() - started) * 1000)
    storage = runtime.storage.kind  # `azure` when another app's host serves the endpoints
    logs.print_line(f"funchost {__version__} (storage: {storage}, data: {host.data_dir})",
                    output=output, event="HostVersion", version=__version__, storage=storage,
                    dataDir=str(host.data_dir))
    peer = runtime.services.find(PeerWatch)
    if peer is not None:
        logs.print_line(peer.describe(), output=output, event="HostStorageShared")
    sharing = getattr(runtime.storage.backend, "sharing", None)  # --storage postgres
    if sharing is not None:
        where, shared, local = sharing()
        _sharing_lines(where, shared, local, output)
    logs.print_line("", output=output) if output == "text" else None
    logs.print_line("Functions:", output=output, event="FunctionsHeader") if output == "text" else None
    for row in host.describe_functions():
        if output == "text":
            print(f"\n\t{row.name}: {row.description}")
            for error in row.errors:
                where = f" ({Path(row.file).name}:{row.line})" if row.file and row.line else ""
                print(f"\t\tin error{where}: {error}")
        else:
            logs.print_line(f"{row.name}: {row.description}", output=output, event="FunctionIndexed",
                            function=row.name, description=row.description, errors=row.errors,
                            file=row.file, line=row.line)
    if output == "text":
        print()
    if host.keys is not None:
        for line in host.keys.describe():
            logs.print_line(line, output=output, event="HostKey")
    dashboard = runtime.services.find(DashboardService)
    if dashboard is not None:
        logs.print_line(f"Dashboard: {dashboard.url()} (open it once with ?code=<master key>)", output=output,
                        event="HostDashboard", url=dashboard.url())
    logs.print_line(f"Host started ({elapsed}ms). Listening on http://{host.config.bind}:{host.port}. "
                    "Press Ctrl+C to stop.", output=output, event="HostStarted", port=host.port,
                    startupMs=elapsed)
    sys.stdout.flush()


PER_HOST = "the dashboard's invocation history"  # per host by design (its page says so)


def _sharing_lines(where: str, shared: list[str], local: list[str], output: str) -> None:
    """Which services this host shares through its server and which it still keeps in its data
    folder (hosts on other machines do not see those)."""
    logs.print_line(f"Shared through {where}: {', '.join(shared)} ({PER_HOST} stays per host).", output=output,
                    event="HostStorageServer", server=where, shared=shared)
    if local:
        logs.print_line(f"Still in this host's data folder (not shared with hosts on other machines): "
                        f"{', '.join(local)}.", output=output, event="HostStorageLocal", local=local)


def _fail(exc: BaseException, output: str) -> int:
    if output == "json":
        logs.print_line(str(exc), output=output, event="HostError", error=str(exc))
    print(f"error: {exc}", file=sys.stderr, flush=True)
    return 1
