"""`funchost timer list|run`: inspect timer schedules and run a timer function now."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from funchost.cli.common import StorageContext, add_storage_options, fail, open_storage, report_errors
from funchost.errors import ConfigError
from funchost.triggers.timer.monitor import ScheduleMonitor, format_datetime
from funchost.triggers.timer.schedule import effective_use_monitor, next_occurrences
from funchost.triggers.timer.timezones import resolve_time_zone, zone_name

MASTER_KEY_SETTING = "FUNCHOST_MASTER_KEY"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("timer", help="list timer schedules and status, run a timer function now")
    commands = parser.add_subparsers(dest="timer_command", metavar="ACTION", required=True)

    lst = commands.add_parser("list", help="each timer function: schedule, next occurrences, last run, past due")
    lst.add_argument("--count", type=int, default=5, help="how many next occurrences to show (default 5)")
    lst.add_argument("--json", action="store_true", help="print one JSON object per timer")
    add_storage_options(lst)
    lst.set_defaults(handler=report_errors(_list))

    run = commands.add_parser("run", help="run a timer function now through a running host's admin API")
    run.add_argument("name", help="function name")
    run.add_argument("--url", default="http://localhost:7071", help="the running host (default %(default)s)")
    run.add_argument("--app", default=".", metavar="APP_DIR", help="function app folder (for the master key)")
    run.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    run.add_argument("--key", default=None, help="master key (default: FUNCHOST_MASTER_KEY or the data folder)")
    run.set_defaults(handler=report_errors(_run))


# --- list ------------------------------------------------------------------------------------------


def _timer_functions(ctx: StorageContext) -> list[Any]:
    from funchost.indexing.indexer import index_app

    return [f for f in index_app(ctx.app_dir, ctx.settings) if f.trigger_type == "timerTrigger"]


def _list(args: argparse.Namespace) -> int:
    ctx = open_storage(args)
    try:
        rows = asyncio.run(_collect(ctx, args.count))
    finally:
        asyncio.run(ctx.storage.aclose())
    if not rows:
        print("no timer functions in this app")
        return 0
    for row in rows:
        if args.json:
            print(json.dumps(row))
            continue
        print(f"{row['function']}: {row['schedule']} ({row['describe']}, time zone {row['timeZone']})")
        print(f"  useMonitor: {str(row['useMonitor']).lower()}  runOnStartup: {str(row['runOnStartup']).lower()}")
        if row["status"] is None:
            print("  status: none recorded" if row["useMonitor"] else "  status: not persisted (useMonitor off)")
        else:
            status = row["status"]
            print(f"  last run: {status['Last'] if status['Last'] != '0001-01-01T00:00:00' else 'never'}")
            print(f"  recorded next: {status['Next']}" + ("  PAST DUE" if row["pastDue"] else ""))
        print("  next occurrences:")
        for occurrence in row["next"]:
            print(f"    {occurrence}")
    return 0


async def _collect(ctx: StorageContext, count: int) -> list[dict[str, Any]]:
    from funchost.host import host_id_for
    from funchost.triggers.timer import function_schedule

    zone = resolve_time_zone(ctx.settings)
    host_id = host_id_for(ctx.app_dir, ctx.settings)
    monitor = ScheduleMonitor(ctx.storage.blobs(), host_id, zone)
    now = datetime.now(timezone.utc).astimezone(zone)
    rows = []
    for function in _timer_functions(ctx):
        schedule = function_schedule(function, zone)
        requested = function.trigger.get("useMonitor")
        use_monitor = effective_use_monitor(schedule, None if requested is None else bool(requested), now)
        status = await monitor.get_status(function.name) if use_monitor else None
        past_due = bool(status and status.next and now > status.next)
        rows.append({
            "function": function.name,
            "schedule": function.trigger.get("schedule"),
            "describe": schedule.describe(),
            "timeZone": zone_name(zone),
            "useMonitor": use_monitor,
            "runOnStartup": bool(function.trigger.get("runOnStartup")),
            "status": status.to_json() if status is not None else None,
            "pastDue": past_due,
            "next": [format_datetime(t) for t in next_occurrences(schedule, count, now)],
        })
    return rows


# --- run -------------------------------------------------------------------------------------------


def master_key(args: argparse.Namespace) -> str:
    if args.key:
        return str(args.key)
    if os.environ.get(MASTER_KEY_SETTING):
        return os.environ[MASTER_KEY_SETTING]
    from funchost.settings.local_settings import load_local_settings

    app_dir = Path(args.app).resolve()
    values = load_local_settings(app_dir).values
    if values.get(MASTER_KEY_SETTING):
        return str(values[MASTER_KEY_SETTING])
    data_dir = Path(args.data).resolve() if args.data else app_dir / ".funchost"
    keys_file = data_dir / "keys" / "host.json"
    try:
        stored = json.loads(keys_file.read_text(encoding="utf-8"))["masterKey"]["value"]
    except (OSError, KeyError, TypeError, json.JSONDecodeError):
        raise ConfigError(f"no master key: set {MASTER_KEY_SETTING}, pass --key, or start the host once so "
                          f"it writes {keys_file}") from None
    return str(stored)


def _run(args: argparse.Namespace) -> int:
    import httpx

    key = master_key(args)
    url = f"{args.url.rstrip('/')}/admin/functions/{args.name}"
    try:
        response = httpx.post(url, json={"input": ""}, headers={"x-functions-key": key}, timeout=30)
    except httpx.HTTPError as exc:
        return fail(f"could not reach the host at {args.url}: {exc}")
    if response.status_code == 202:
        print(f"'{args.name}' started on {args.url}")
        return 0
    if response.status_code == 404:
        return fail(f"the host at {args.url} has no function named '{args.name}'")
    if response.status_code == 401:
        return fail("the host rejected the master key")
    return fail(f"the host answered {response.status_code}: {response.text[:200]}")
