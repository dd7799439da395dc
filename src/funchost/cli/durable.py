"""`funchost durable list|status|history|raise|terminate|purge`: the task hub of a data folder.

Works on the embedded task hub directly, with or without a host running on the same folder (a
running host notices events and terminations within a second). The hub is the app's
(host.json ``extensions.durableTask.hubName``) unless ``--hub`` names another. Readable tables
by default; ``--output json`` prints the management API's JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from funchost.cli.common import StorageContext, add_storage_options, fail, open_storage, report_errors
from funchost.clock import SystemClock
from funchost.durable import history as h
from funchost.durable.client import DurableClient, Gone, NotFound
from funchost.durable.functions import DurableFunctions
from funchost.durable.hub import NotifyingHub
from funchost.durable.options import DurableTaskOptions, default_options, resolved_hub_name
from funchost.durable.shim import compact
from funchost.durable.status import history_payload, status_payload
from funchost.errors import ConfigError
from funchost.runtime.signals import Signals
from funchost.settings.host_json import load_host_json
from funchost.storage.durable import ALL_STATUSES, InstanceQuery

Action = Callable[[DurableClient, argparse.Namespace], Awaitable[int]]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("durable", help="list, inspect, raise events to, terminate and purge "
                                                   "Durable Functions instances")
    commands = parser.add_subparsers(dest="durable_command", metavar="ACTION", required=True)

    lst = commands.add_parser("list", help="orchestration instances, newest last")
    lst.add_argument("--status", default=None, help="runtime statuses, comma-separated (e.g. Running,Failed)")
    lst.add_argument("--prefix", default=None, help="instance id prefix")
    lst.add_argument("--top", type=int, default=100, help="at most this many (default 100)")
    _common(lst, _list)

    status = commands.add_parser("status", help="one instance's status")
    status.add_argument("instance")
    _common(status, _status)

    hist = commands.add_parser("history", help="one instance's history (current execution)")
    hist.add_argument("instance")
    hist.add_argument("--raw", action="store_true", help="the events as stored and replayed (JSON)")
    _common(hist, _history)

    raise_ = commands.add_parser("raise", help="raise an external event")
    raise_.add_argument("instance")
    raise_.add_argument("event")
    raise_.add_argument("payload", metavar="DATA", nargs="?", default="null", help="JSON data (default null)")
    _common(raise_, _raise)

    terminate = commands.add_parser("terminate", help="terminate a running instance")
    terminate.add_argument("instance")
    terminate.add_argument("--reason", default=None)
    _common(terminate, _terminate)

    purge = commands.add_parser("purge", help="delete instances with their history")
    purge.add_argument("instance", nargs="?", help="one instance; omit to purge by --status / --created-*")
    purge.add_argument("--status", default="Completed,Failed,Terminated",
                       help="statuses to purge when no instance is named (default %(default)s)")
    purge.add_argument("--created-from", default="0001-01-01T00:00:00Z", help="ISO time (default: any)")
    purge.add_argument("--created-to", default=None, help="ISO time (default: now)")
    _common(purge, _purge)


def _common(parser: argparse.ArgumentParser, action: Action) -> None:
    parser.add_argument("--hub", default=None, help="task hub name (default: the app's)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_storage_options(parser)
    parser.set_defaults(handler=report_errors(lambda args: _run(args, action)))


def _hub_name(ctx: StorageContext, override: str | None) -> str:
    if override:
        return override
    options = load_host_json(ctx.app_dir, ctx.settings).extensions.get("durableTask")
    chosen = options if isinstance(options, DurableTaskOptions) else default_options()
    return resolved_hub_name(chosen, lambda value: ctx.settings.resolve_tokens(value, where="hubName"))


def _run(args: argparse.Namespace, action: Action) -> int:
    async def main() -> int:
        ctx = open_storage(args)
        try:
            store = ctx.storage.task_hub(_hub_name(ctx, args.hub), args.connection)
            hub = NotifyingHub(store, Signals(), SystemClock())
            return await action(DurableClient(hub, DurableFunctions()), args)
        finally:
            await ctx.storage.aclose()

    return asyncio.run(main())


def _statuses(text: str | None) -> frozenset[str]:
    chosen = frozenset(s.strip() for s in (text or "").split(",") if s.strip())
    unknown = chosen - ALL_STATUSES
    if unknown:
        raise ConfigError(f"unknown runtime status {sorted(unknown)} (expected some of {sorted(ALL_STATUSES)})")
    return chosen


def _time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return h.parse_time(text if "T" in text else text + "T00:00:00")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- actions ----------------------------------------------------------------------------------------


async def _list(client: DurableClient, args: argparse.Namespace) -> int:
    page = await client.query(InstanceQuery(statuses=_statuses(args.status), prefix=args.prefix, top=args.top))
    statuses = [status_payload(record) for record in page.instances]
    if args.output == "json":
        print(json.dumps(statuses, indent=2))
        return 0
    if not statuses:
        print("no instances")
        return 0
    _table([[s["instanceId"], s["name"], s["runtimeStatus"], s["createdTime"], s["lastUpdatedTime"],
             _short(s["output"]) if s["output"] is not None else ""] for s in statuses],
           ["INSTANCE", "NAME", "STATUS", "CREATED", "UPDATED", "OUTPUT"])
    return 0


async def _status(client: DurableClient, args: argparse.Namespace) -> int:
    status = await client.status(args.instance)
    if status is None:
        return fail(f"no instance '{args.instance}' in task hub '{client.hub.name}'")
    if args.output == "json":
        print(json.dumps(status, indent=2))
        return 0
    for key in ("instanceId", "name", "runtimeStatus", "createdTime", "lastUpdatedTime", "input", "customStatus",
                "output"):
        value = status[key]
        print(f"{key}: {value if isinstance(value, str) else json.dumps(value)}")
    return 0


async def _history(client: DurableClient, args: argparse.Namespace) -> int:
    if await client.get(args.instance) is None:
        return fail(f"no instance '{args.instance}' in task hub '{client.hub.name}'")
    events = await client.hub.store.get_history(args.instance)
    if args.raw:
        print(json.dumps(events, indent=2))
        return 0
    shaped = history_payload(events, show_input=True, show_history_output=True)
    if args.output == "json":
        print(json.dumps(shaped, indent=2))
        return 0
    rows = []
    for event in shaped:
        detail = event.get("FunctionName") or event.get("Name") or event.get("OrchestrationStatus") or ""
        result = event.get("Result", event.get("Reason", event.get("Input", "")))
        rows.append([event.get("Timestamp", ""), event["EventType"], str(detail),
                     _short(result) if result not in (None, "") else ""])
    _table(rows, ["TIME", "EVENT", "NAME", "DETAIL"])
    return 0


async def _raise(client: DurableClient, args: argparse.Namespace) -> int:
    try:
        data = compact(json.loads(args.payload))
    except ValueError:
        return fail(f"the event data must be JSON, got {args.payload!r} (quote strings: '\"text\"')")
    try:
        await client.raise_event(args.instance, args.event, data)
    except (NotFound, Gone) as exc:
        return fail(str(exc))
    print(f"raised '{args.event}' for '{args.instance}'")
    return 0


async def _terminate(client: DurableClient, args: argparse.Namespace) -> int:
    try:
        await client.terminate(args.instance, args.reason)
    except (NotFound, Gone) as exc:
        return fail(str(exc))
    print(f"termination of '{args.instance}' requested")
    return 0


async def _purge(client: DurableClient, args: argparse.Namespace) -> int:
    if args.instance:
        try:
            deleted = await client.purge(args.instance)
        except NotFound as exc:
            return fail(str(exc))
    else:
        created_from = _time(args.created_from)
        assert created_from is not None
        deleted = await client.purge_by(created_from, _time(args.created_to), _statuses(args.status))
    if args.output == "json":
        print(json.dumps({"instancesDeleted": deleted}))
    else:
        print(f"{deleted} instance(s) purged", file=sys.stdout)
    return 0
