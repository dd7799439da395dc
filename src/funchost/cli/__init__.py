"""The `funchost` command. Each subcommand group lives in its own module with `register()`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from funchost import __version__

COMMAND_MODULES = (
    "funchost.cli.start",
    "funchost.cli.queue",
    "funchost.cli.servicebus",
    "funchost.cli.blob",
    "funchost.cli.timer",
    "funchost.cli.events",
    "funchost.cli.eventhubs",
    "funchost.cli.docs",
    "funchost.cli.storage",
    "funchost.cli.amqp",
    "funchost.cli.durable",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="funchost",
        description="Run and test Azure Functions Python v2 apps locally, with faithful triggers.",
    )
    parser.add_argument("--version", action="version", version=f"funchost {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code = handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`funchost ... | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
