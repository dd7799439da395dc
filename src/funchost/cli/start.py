"""`funchost start`: run a function app until Ctrl-C / SIGTERM, then stop gracefully."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path

from funchost import __version__, logs
from funchost.cli.storage import add_endpoint_arguments, endpoint_settings
from funchost.errors import FunchostError
from funchost.host import Host, HostConfig


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("start", help="run a function app",
                                   description="Run an Azure Functions Python v2 app (function_app.py).")
    parser.add_argument("app_dir", nargs="?", default=".", metavar="APP_DIR")
    parser.add_argument("--port", type=int, default=None, help="HTTP port (default: local.settings.json "
                        "Host.LocalHttpPort, else 7071; 0 picks a free port)")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    parser.add_argument("--storage", choices=("embedded", "azure"), default="embedded",
                        help="embedded SQLite storage (default) or the connection strings as given (Azurite/Azure)")
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="console output: text as Core Tools prints it, or NDJSON events")
    add_endpoint_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    output = args.output
    logs.configure(output)
    config = HostConfig(app_dir=Path(args.app_dir), data_dir=Path(args.data) if args.data else None,
                        storage=args.storage, port=args.port, bind=args.bind,
                        settings_override=endpoint_settings(args, Path(args.app_dir)))
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


def _run_loop(host: Host, output: str, started: float) -> int:
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is part of uvicorn[standard]
        runner = asyncio.Runner()
    with runner:
        return runner.run(_serve(host, output, started))


async def _serve(host: Host, output: str, started: float) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals_seen = 0

    def on_signal() -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signals_seen > 1:
            logs.print_line("Forced stop.", output=output, event="HostForcedStop")
            raise SystemExit(130)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    await host.start()
    _banner(host, output, started)
    await stop.wait()
    logs.print_line("Stopping host: in-flight work finishes, new work is refused...", output=output,
                    event="HostStopping")
    await host.stop()
    logs.print_line("Host stopped.", output=output, event="HostStopped")
    return 0


def _banner(host: Host, output: str, started: float) -> None:
    runtime = host.runtime
    assert runtime is not None
    elapsed = int((time.perf_counter() - started) * 1000)
    logs.print_line(f"funchost {__version__} (storage: {host.config.storage}, data: {host.data_dir})",
                    output=output, event="HostVersion", version=__version__, storage=host.config.storage,
                    dataDir=str(host.data_dir))
    logs.print_line("", output=output) if output == "text" else None
    logs.print_line("Functions:", output=output, event="FunctionsHeader") if output == "text" else None
    for name, description in host.describe_functions():
        if output == "text":
            print(f"\n\t{name}: {description}")
        else:
            logs.print_line(f"{name}: {description}", output=output, event="FunctionIndexed",
                            function=name, description=description)
    if output == "text":
        print()
    if host.keys is not None:
        for line in host.keys.describe():
            logs.print_line(line, output=output, event="HostKey")
    logs.print_line(f"Host started ({elapsed}ms). Listening on http://{host.config.bind}:{host.port}. "
                    "Press Ctrl+C to stop.", output=output, event="HostStarted", port=host.port,
                    startupMs=elapsed)
    sys.stdout.flush()


def _fail(exc: BaseException, output: str) -> int:
    if output == "json":
        logs.print_line(str(exc), output=output, event="HostError", error=str(exc))
    print(f"error: {exc}", file=sys.stderr, flush=True)
    return 1
