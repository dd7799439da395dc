"""Options and helpers shared by the resource commands (queue, blob, events, docs, timer)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from funchost.clock import SystemClock
from funchost.errors import FunchostError
from funchost.settings.app_settings import AppSettings
from funchost.settings.exported import exported_settings
from funchost.settings.local_settings import load_local_settings
from funchost.settings.postgres import SETTING as POSTGRES_SETTING
from funchost.settings.postgres import SOURCE_SETTING as POSTGRES_SOURCE
from funchost.storage.backend import BACKEND_MODULES
from funchost.storage.host_storage import HostStorage
from funchost.storage.host_storage import open_storage as open_host_storage

STORAGE_HELP = ("embedded SQLite storage in the data folder (default), the connection strings as given "
                "(azure: Azurite or Azure), or a PostgreSQL server shared by several hosts (postgres)")


def add_backend_options(parser: argparse.ArgumentParser, choices: tuple[str, ...] = tuple(BACKEND_MODULES)) -> None:
    """`--storage` and `--postgres`, as `funchost start` takes them."""
    parser.add_argument("--storage", choices=choices, default="embedded", help=STORAGE_HELP)
    parser.add_argument("--postgres", default=None, metavar="CONNINFO",
                        help=f"the PostgreSQL server of --storage postgres, a libpq URL or key=value string "
                             f"(default: the app setting or environment variable {POSTGRES_SETTING})")


def apply_backend_options(args: argparse.Namespace) -> None:
    """`--postgres` wins over the setting; set in the environment (which wins over local.settings.json),
    so the host, the app's own code and a supervisor's worker processes all see the same server,
    and the connection string never appears in a worker's command line."""
    conninfo = getattr(args, "postgres", None)
    if conninfo:
        os.environ[POSTGRES_SETTING] = conninfo
        os.environ[POSTGRES_SOURCE] = "--postgres"


def add_storage_options(parser: argparse.ArgumentParser, *, default_connection: str = "AzureWebJobsStorage") -> None:
    parser.add_argument("--app", default=".", metavar="APP_DIR",
                        help="function app folder (for local.settings.json and the data folder)")
    parser.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    add_backend_options(parser)
    parser.add_argument("--connection", default=None, metavar="SETTING",
                        help=f"connection setting name (default {default_connection})")


@dataclass
class StorageContext:
    app_dir: Path
    data_dir: Path
    settings: AppSettings
    storage: HostStorage


def open_storage(args: argparse.Namespace) -> StorageContext:
    apply_backend_options(args)
    app_dir = Path(args.app).resolve()
    data_dir = Path(args.data).resolve() if args.data else app_dir / ".funchost"
    local = load_local_settings(app_dir)
    settings = AppSettings(exported_settings(local, None))
    storage = open_host_storage(args.storage, data_dir, settings, SystemClock())
    return StorageContext(app_dir, data_dir, settings, storage)


def fail(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


Handler = Callable[[argparse.Namespace], "int | None"]


def report_errors(fn: Handler) -> Callable[[argparse.Namespace], int]:
    """Decorator for command handlers: FunchostError -> one clear line and exit code 1."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            return int(fn(args) or 0)
        except FunchostError as exc:
            return fail(str(exc))

    wrapper.__name__ = getattr(fn, "__name__", "handler")
    return wrapper


class Progress:
    """A one-line progress indicator on stderr (silent when stderr is not a terminal)."""

    def __init__(self, total: int | None, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self._tty = sys.stderr.isatty()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._tty:
            of = f"/{self.total}" if self.total is not None else ""
            print(f"\r{self.label}: {self.done}{of}", end="", file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self._tty:
            print(file=sys.stderr)


class Served(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def describe(self) -> list[str]: ...


def run_server(serve: Callable[[argparse.Namespace], Coroutine[Any, Any, int]], args: argparse.Namespace) -> int:
    """A `... serve` command: its coroutine run to the end; a FunchostError is one line and exit 1."""
    try:
        return asyncio.run(serve(args))
    except FunchostError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1


async def serve_until_stopped(server: Served, storage: HostStorage, title: str, footer: Callable[[], str]) -> int:
    """Start `server`, print `title`, its lines and `footer()` (ports chosen at start are known by
    then), serve until SIGINT / SIGTERM, then stop it and close its storage."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
        print(title, flush=True)
        for line in server.describe():
            print(line, flush=True)
        print(footer(), flush=True)
        await stop.wait()
    finally:
        await server.stop()
        await storage.aclose()
    return 0
