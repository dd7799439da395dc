"""`funchost storage serve`: the Blob, Queue and Table endpoints alone, over a data folder.

For other tools and languages (Storage Explorer, the JavaScript SDKs, scripts) without a function
app; a `funchost start` on the same data folder shares the data (and the ports). Also the
`--storage-ports` / `--no-storage-endpoints` options of `funchost start`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from funchost.cli.common import (
    add_backend_options,
    apply_backend_options,
    run_server,
    serve_until_stopped,
)
from funchost.clock import SystemClock
from funchost.errors import FunchostError
from funchost.settings.app_settings import AppSettings
from funchost.settings.local_settings import load_local_settings
from funchost.settings.postgres import SCHEMA_SETTING, SOURCE_SETTING
from funchost.settings.postgres import SETTING as POSTGRES_SETTING

SETTING = "FUNCHOST_STORAGE_ENDPOINTS"


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--storage-ports", metavar="BLOB,QUEUE,TABLE", default=None,
                       help="ports of the Blob/Queue/Table endpoints over embedded storage (default "
                            "10000,10001,10002; 0 picks free ports)")
    group.add_argument("--no-storage-endpoints", action="store_true",
                       help="do not serve the Blob/Queue/Table endpoints")


def endpoint_settings(args: argparse.Namespace, app_dir: Path) -> dict[str, str]:
    """The FUNCHOST_STORAGE_ENDPOINTS override: the flags, else `on` unless the app sets it itself."""
    if args.no_storage_endpoints:
        return {SETTING: "off"}
    if args.storage_ports:
        return {SETTING: args.storage_ports}
    try:
        configured = any(k.upper() == SETTING for k in load_local_settings(app_dir).values)
    except FunchostError:
        configured = False  # the host reports a broken local.settings.json itself
    if configured or any(k.upper() == SETTING for k in os.environ):
        return {}
    return {SETTING: "on"}


def endpoint_arguments(args: argparse.Namespace) -> list[str]:
    """The endpoint flags as given, for the worker processes a supervisor starts with the same options."""
    if args.no_storage_endpoints:
        return ["--no-storage-endpoints"]
    return ["--storage-ports", args.storage_ports] if args.storage_ports else []


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("storage", help="serve the embedded storage over the Azure Storage REST API",
                                   description="The embedded storage's Blob, Queue and Table endpoints.")
    commands = parser.add_subparsers(dest="storage_command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the Blob/Queue/Table endpoints until Ctrl-C",
                                description="Serve Blob (10000), Queue (10001) and Table (10002) endpoints over "
                                            "the embedded storage of a data folder, for devstoreaccount1 "
                                            "(UseDevelopmentStorage=true) and the accounts of --account.")
    serve.add_argument("--data", default=".funchost", metavar="DIR", help="data folder (default ./.funchost)")
    add_backend_options(serve, ("embedded", "postgres"))
    serve.add_argument("--ports", default="10000,10001,10002", metavar="BLOB,QUEUE,TABLE",
                       help="ports (default 10000,10001,10002; 0 picks free ports)")
    serve.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--account", action="append", default=[], metavar="NAME:KEY",
                       help="serve another account with this base64 key (repeatable)")
    serve.set_defaults(handler=run_serve)
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])


def run_serve(args: argparse.Namespace) -> int:
    return run_server(_serve, args)


async def _serve(args: argparse.Namespace) -> int:
    from funchost.storage.host_storage import open_storage
    from funchost.storage_endpoints.accounts import Accounts, parse_account_list
    from funchost.storage_endpoints.server import StorageEndpoints, data_identity, parse_setting
    from funchost.storage_endpoints.service import HostAccounts

    settings = parse_setting(args.ports, host=args.bind)
    if settings is None:
        raise FunchostError("--ports must be three ports BLOB,QUEUE,TABLE")
    data = Path(args.data).resolve()
    accounts = Accounts(parse_account_list(";".join(args.account), "--account")) if args.account else Accounts()
    clock = SystemClock()
    # No host in this process: the storage's rules apply, and listeners elsewhere find writes by polling.
    apply_backend_options(args)
    # Only the server's settings: the accounts are addressed by name, not through connection settings.
    server = {name: os.environ[name] for name in (POSTGRES_SETTING, SCHEMA_SETTING, SOURCE_SETTING)
              if name in os.environ}
    storage = open_storage(args.storage, data, AppSettings(server, environ={}), clock)
    root = data / "storage"
    endpoints = StorageEndpoints(HostAccounts(storage), accounts, clock, data_identity(storage.secrets()), settings,
                                 record_dir=root)
    def footer() -> str:
        return (f"Accounts: {', '.join(accounts.names)}. Connection string for devstoreaccount1:\n"
                f"  {endpoints.connection_string()}\nPress Ctrl+C to stop.")

    return await serve_until_stopped(endpoints, storage, f"funchost storage endpoints (data: {data})", footer)
