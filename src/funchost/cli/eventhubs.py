"""`funchost eventhubs send|list|checkpoints`: work with the event hubs an app's triggers read.

Works on a data folder, with or without a running host (the embedded broker is a SQLite file
shared by every process on the folder; a running host sees new events within a second).
`--connection SETTING` resolves an app setting as a binding's `connection` does; by default the
embedded broker. `--output json` prints one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funchost.cli.common import StorageContext, add_backend_options, open_storage, report_errors
from funchost.errors import ConfigError
from funchost.runtime.signals import Signals
from funchost.storage.eventhubs import DEFAULT_CONSUMER_GROUP, EventToSend
from funchost.storage.host_storage import HostStorage
from funchost.testing.eventhubs import EventHubTools


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("eventhubs", help="send events, list hubs, show checkpoints")
    commands = parser.add_subparsers(dest="eventhubs_command", metavar="ACTION", required=True)

    send = commands.add_parser("send", help="send events to an event hub (one batch, one partition)")
    send.add_argument("hub")
    send.add_argument("body", nargs="?", help="event body; omit to read bodies from --file or stdin, one per line")
    send.add_argument("--file", metavar="PATH", help="read bodies from a file, one event per line")
    send.add_argument("--count", type=int, default=1, help="send the BODY this many times")
    send.add_argument("--partition-key", default=None)
    send.add_argument("--partition-id", default=None)
    send.add_argument("--property", action="append", default=[], metavar="NAME=VALUE",
                      help="an application property (repeatable)")
    _common(send)
    send.set_defaults(handler=report_errors(_send))

    lst = commands.add_parser("list", help="event hubs with partitions, sequence numbers and retained events")
    _common(lst)
    lst.set_defaults(handler=report_errors(_list))

    checkpoints = commands.add_parser("checkpoints", help="checkpoints, owners and unprocessed events per partition")
    checkpoints.add_argument("hub")
    checkpoints.add_argument("--consumer-group", default=DEFAULT_CONSUMER_GROUP)
    _common(checkpoints)
    checkpoints.set_defaults(handler=report_errors(_checkpoints))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--app", default=".", metavar="APP_DIR", help="function app folder")
    parser.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    parser.add_argument("--connection", default=None, metavar="SETTING",
                        help="Event Hubs connection setting (default: the embedded broker)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_backend_options(parser)  # --storage postgres: the namespace and checkpoints the hosts share


@dataclass
class _AppView:
    """What the Event Hubs service needs of a host, for a command run outside one."""

    app_dir: Path
    settings: Mapping[str, str]
    storage: HostStorage
    signals: Signals

    @property
    def is_development(self) -> bool:
        return str(self.settings.get("AZURE_FUNCTIONS_ENVIRONMENT") or "Development").lower() == "development"


def _run(args: argparse.Namespace, action: Callable[[EventHubTools], Awaitable[Any]]) -> int:
    async def main() -> Any:
        ctx: StorageContext = open_storage(args)
        view = _AppView(ctx.app_dir, ctx.settings, ctx.storage, Signals())
        tools = EventHubTools(view)
        try:
            return await action(tools)
        finally:
            await tools.service.aclose()
            await ctx.storage.aclose()

    result = asyncio.run(main())
    if args.output == "json":
        print(json.dumps(result, indent=2, default=str))
    else:
        for line in _text(args, result):
            print(line)
    return 0


def _properties(pairs: list[str]) -> dict[str, str]:
    props = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--property takes NAME=VALUE, got {pair!r}")
        props[name] = value
    return props


def _send(args: argparse.Namespace) -> int:
    if args.body is not None:
        bodies = [args.body.encode("utf-8")] * max(1, args.count)
    else:
        source = Path(args.file).read_text(encoding="utf-8") if args.file else sys.stdin.read()
        bodies = [line.encode("utf-8") for line in source.splitlines() if line.strip()]
    props = _properties(args.property)

    async def action(tools: EventHubTools) -> Any:
        target = tools.target(args.hub, args.connection)
        sent = await tools.service.send(target, [EventToSend(b, props) for b in bodies],
                                        partition_key=args.partition_key, partition_id=args.partition_id)
        return {"hub": args.hub, "sent": len(bodies),
                "events": [{"partitionId": e.partition_id, "sequenceNumber": e.sequence_number,
                            "offset": str(e.offset)} for e in sent]}

    return _run(args, action)


def _list(args: argparse.Namespace) -> int:
    async def action(tools: EventHubTools) -> Any:
        target = tools.target("any", args.connection)
        broker = tools.service.broker(target.connection)
        hubs = []
        for hub in await broker.list_hubs():
            partitions = []
            for pid in hub.partition_ids:
                p = await broker.partition_properties(hub.name, pid)
                partitions.append({"partitionId": pid, "beginningSequenceNumber": p.beginning_sequence_number,
                                   "lastEnqueuedSequenceNumber": p.last_enqueued_sequence_number,
                                   "retainedEvents": p.retained_events})
            hubs.append({"name": hub.name, "partitionCount": len(hub.partition_ids),
                         "consumerGroups": list(hub.consumer_groups), "retentionHours": hub.retention_seconds / 3600,
                         "partitions": partitions})
        return {"hubs": hubs}

    return _run(args, action)


def _checkpoints(args: argparse.Namespace) -> int:
    async def action(tools: EventHubTools) -> Any:
        target = tools.target(args.hub, args.connection)
        broker, hub = await tools.service.open_hub(target)
        checkpoints = await tools.checkpoints(hub.name, args.consumer_group, args.connection)
        owners = await tools.owners(hub.name, args.consumer_group, args.connection)
        rows = []
        for pid in hub.partition_ids:
            p = await broker.partition_properties(hub.name, pid)
            c = checkpoints.get(pid)
            done = c.sequence_number if c is not None and c.sequence_number is not None else -1
            rows.append({"partitionId": pid, "checkpointSequenceNumber": None if c is None else c.sequence_number,
                         "checkpointOffset": None if c is None or c.offset is None else str(c.offset),
                         "lastEnqueuedSequenceNumber": p.last_enqueued_sequence_number,
                         "unprocessed": max(0, p.last_enqueued_sequence_number - max(done, p.beginning_sequence_number - 1)),
                         "owner": owners.get(pid) or None})
        return {"hub": hub.name, "consumerGroup": args.consumer_group, "partitions": rows}

    return _run(args, action)


def _text(args: argparse.Namespace, result: Any) -> list[str]:
    if args.eventhubs_command == "send":
        where = sorted({e["partitionId"] for e in result["events"]})
        return [f"sent {result['sent']} event(s) to '{result['hub']}'" + (f" (partition {where[0]})" if where else "")]
    if args.eventhubs_command == "list":
        if not result["hubs"]:
            return ["(no event hubs)"]
        lines = [f"{'HUB':<32} {'PARTITIONS':>10} {'EVENTS':>8}  CONSUMER GROUPS"]
        for hub in result["hubs"]:
            events = sum(p["retainedEvents"] for p in hub["partitions"])
            lines.append(f"{hub['name']:<32} {hub['partitionCount']:>10} {events:>8}  {', '.join(hub['consumerGroups'])}")
        return lines
    lines = [f"{'PARTITION':>9} {'CHECKPOINT':>10} {'LAST':>8} {'UNPROCESSED':>11}  OWNER"]
    for row in result["partitions"]:
        checkpoint = "-" if row["checkpointSequenceNumber"] is None else str(row["checkpointSequenceNumber"])
        lines.append(f"{row['partitionId']:>9} {checkpoint:>10} {row['lastEnqueuedSequenceNumber']:>8} "
                     f"{row['unprocessed']:>11}  {row['owner'] or '-'}")
    return lines
