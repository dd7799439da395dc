"""`funchost amqp serve`: the AMQP endpoint alone over a data folder, and `funchost start`'s
`--amqp-port` / `--no-amqp` options.

For scripts and other apps using the Service Bus and Event Hubs SDKs without a function app; a
`funchost start` on the same data folder shares the brokers (and the port), and with
`--storage postgres` every host on the same server does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from funchost.cli.common import add_backend_options, apply_backend_options, run_server, serve_until_stopped
from funchost.errors import FunchostError
from funchost.settings.local_settings import load_local_settings

SETTING = "FUNCHOST_AMQP_ENDPOINT"


def add_amqp_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--amqp-port", metavar="PORT", default=None,
                       help="port of the AMQP endpoint for the Service Bus / Event Hubs SDKs (default 5672; "
                            "0 picks a free port)")
    group.add_argument("--no-amqp", action="store_true", help="do not serve the AMQP endpoint")


def amqp_settings(args: argparse.Namespace, app_dir: Path) -> dict[str, str]:
    """The FUNCHOST_AMQP_ENDPOINT override: the flags, else `on` unless the app sets it itself."""
    if args.no_amqp:
        return {SETTING: "off"}
    if args.amqp_port is not None:
        return {SETTING: str(args.amqp_port)}
    try:
        configured = any(k.upper() == SETTING for k in load_local_settings(app_dir).values)
    except FunchostError:
        configured = False
    if configured or any(k.upper() == SETTING for k in os.environ):
        return {}
    return {SETTING: "on"}


def amqp_arguments(args: argparse.Namespace) -> list[str]:
    """The flags as given, for the worker processes a supervisor starts."""
    if args.no_amqp:
        return ["--no-amqp"]
    return ["--amqp-port", str(args.amqp_port)] if args.amqp_port is not None else []


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("amqp", help="serve the embedded Service Bus and Event Hubs over AMQP",
                                   description="The AMQP 1.0 endpoint the Service Bus and Event Hubs SDKs reach.")
    commands = parser.add_subparsers(dest="amqp_command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the AMQP endpoint until Ctrl-C",
                                description="Serve the embedded Service Bus and Event Hubs brokers of a data "
                                            "folder on 127.0.0.1:5672 for the SDK clients (emulator connection "
                                            "string).")
    serve.add_argument("--data", default=".funchost", metavar="DIR", help="data folder (default ./.funchost)")
    serve.add_argument("--app", default=".", metavar="APP_DIR",
                       help="folder with the emulators' Config.json files, if any (default .)")
    serve.add_argument("--port", type=int, default=5672, help="port (default 5672; 0 picks a free port)")
    serve.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    add_backend_options(serve, ("embedded", "postgres"))  # postgres: the brokers the hosts share on the server
    serve.set_defaults(handler=run_serve)
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])


def run_serve(args: argparse.Namespace) -> int:
    return run_server(_serve, args)


async def _serve(args: argparse.Namespace) -> int:
    from funchost.amqp.server import AmqpSettings
    from funchost.amqp.service import build_endpoint
    from funchost.clock import SystemClock
    from funchost.runtime.signals import Signals
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.host_storage import open_storage

    apply_backend_options(args)
    data, app = Path(args.data).resolve(), Path(args.app).resolve()
    # The server of --storage postgres comes from --postgres or the environment; nothing else does.
    settings = AppSettings({}, environ={} if args.storage == "embedded" else None)
    signals = Signals()
    signals.bind_loop(asyncio.get_running_loop())
    # No host in this process: listeners of a `funchost start` elsewhere find new messages by polling.
    storage = open_storage(args.storage, data, settings, SystemClock(), signals=signals)
    endpoint = build_endpoint(storage, app, settings, signals, data, AmqpSettings(args.bind, args.port))
    return await serve_until_stopped(endpoint, storage, f"funchost AMQP endpoint (data: {data})",
                                     lambda: "Press Ctrl+C to stop.")
