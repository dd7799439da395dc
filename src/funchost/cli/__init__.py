"""The `funchost` command. Each subcommand group lives in its own module with `register()`,
named after the group (`funchost queue ...` is `funchost.cli.queue`)."""

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command group, or of the group `only` (the others not even imported:
    each imports what its commands need, and `funchost start` should not wait for the rest)."""
    parser = argparse.ArgumentParser(
        prog="funchost",
        description="Run and test Azure Functions Python v2 apps locally, with faithful triggers.",
    )
    parser.add_argument("--version", action="version", version=f"funchost {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if only is None else (only,):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def _command_module(argv: Sequence[str]) -> str | None:
    """The module of the group `argv` names first, when it names one (else the full parser:
    `--help`, `--version`, or a typo that argparse answers with the list of groups)."""
    name = f"funchost.cli.{argv[0]}" if argv else ""
    return name if name in COMMAND_MODULES else None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_module(arguments))
    args = parser.parse_args(arguments)
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
