"""`funchost events publish` and `funchost events status`.

``publish`` posts to the running host's topic endpoint (with the topic key from the data
folder); when no host answers it writes the events straight into the durable store, where the
next host to run (or one already polling the folder) delivers them. ``status`` shows the
deliveries of every subscription: delivered, pending retries with their next attempt,
dead-lettered and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from funchost.cli.common import add_backend_options, fail, open_storage, report_errors
from funchost.errors import FunchostError
from funchost.eventgrid.auth import KeyRing
from funchost.eventgrid.config import load_config
from funchost.eventgrid.endpoints import topic_path
from funchost.eventgrid.routing import route
from funchost.eventgrid.schema import PublishError, parse_events
from funchost.settings.local_settings import load_local_settings
from funchost.storage.secrets import FileSecrets


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("events", help="publish Event Grid events, show delivery status")
    commands = parser.add_subparsers(dest="events_command", metavar="SUBCOMMAND", required=True)

    publish = commands.add_parser("publish", help="publish events to a local topic")
    _common(publish)
    publish.add_argument("--topic", default=None, help="topic name (default: 'default', or 'cloudevents' with "
                                                       "--cloudevents)")
    publish.add_argument("--file", default=None, help="JSON file with one event or an array ('-' = stdin)")
    publish.add_argument("--type", dest="event_type", default=None, help="event type (builds one event)")
    publish.add_argument("--subject", default="", help="subject (Event Grid) / subject (CloudEvents)")
    publish.add_argument("--event-data", dest="event_data", default=None,
                         help="event data as JSON (or a plain string)")
    publish.add_argument("--id", dest="event_id", default=None, help="event id (default: a new GUID)")
    publish.add_argument("--source", default="/funchost/cli", help="CloudEvents source")
    publish.add_argument("--cloudevents", action="store_true", help="build a CloudEvents 1.0 event")
    publish.add_argument("--port", type=int, default=None, help="port of the running host (default: "
                                                               "local.settings.json Host.LocalHttpPort or 7071)")
    publish.add_argument("--direct", action="store_true", help="write into the store, do not call the host")
    publish.set_defaults(handler=cmd_publish)

    status = commands.add_parser("status", help="deliveries per subscription")
    _common(status)
    status.set_defaults(handler=cmd_status)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--app", default=".", metavar="APP_DIR", help="function app folder")
    parser.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    add_backend_options(parser, ("embedded", "postgres"))  # where the Event Grid store is


def _paths(args: argparse.Namespace) -> tuple[Path, Path]:
    app_dir = Path(args.app).resolve()
    data_dir = Path(args.data).resolve() if args.data else app_dir / ".funchost"
    return app_dir, data_dir


def build_events(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.file:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    if not args.event_type:
        raise FunchostError("give --file or --type (and optionally --subject, --event-data, --id)")
    data: Any = None
    if args.event_data is not None:
        try:
            data = json.loads(args.event_data)
        except ValueError:
            data = args.event_data
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    event_id = args.event_id or str(uuid.uuid4())
    if args.cloudevents:
        event: dict[str, Any] = {"specversion": "1.0", "id": event_id, "source": args.source,
                                 "type": args.event_type, "time": now}
        if args.subject:
            event["subject"] = args.subject
        if data is not None:
            event["data"] = data
        return [event]
    return [{"id": event_id, "subject": args.subject, "eventType": args.event_type, "eventTime": now,
             "data": data if data is not None else {}, "dataVersion": "1.0"}]


@report_errors
def cmd_publish(args: argparse.Namespace) -> int:
    app_dir, data_dir = _paths(args)
    events = build_events(args)
    topic = args.topic or ("cloudevents" if args.cloudevents else "default")
    cloud = "specversion" in events[0]
    body = json.dumps(events).encode()
    ctype = "application/cloudevents-batch+json; charset=utf-8" if cloud else "application/json; charset=utf-8"
    if not args.direct:
        port = args.port or load_local_settings(app_dir).local_http_port or 7071
        keys = KeyRing(FileSecrets(data_dir)).load().get(topic)
        if keys is not None:
            url = f"http://127.0.0.1:{port}{topic_path(topic)}"
            try:
                response = httpx.post(url, content=body, headers={"content-type": ctype, "aeg-sas-key": keys.key1},
                                      timeout=30)
            except httpx.ConnectError:
                response = None
            if response is not None:
                if response.status_code != 200:
                    return fail(f"the host answered {response.status_code}: {response.text}")
                print(f"published {len(events)} event(s) to topic '{topic}' through the running host")
                return 0
    return _publish_direct(args, app_dir, data_dir, topic, body, ctype, len(events))


def _publish_direct(args: argparse.Namespace, app_dir: Path, data_dir: Path, topic: str, body: bytes,
                    ctype: str, count: int) -> int:
    ctx = open_storage(argparse.Namespace(app=str(app_dir), data=str(data_dir), storage=args.storage,
                                          postgres=args.postgres, connection=None))
    from funchost.indexing.indexer import index_app

    functions = [f.name for f in index_app(app_dir, ctx.settings) if f.trigger_type == "eventGridTrigger"]
    config = load_config(app_dir, functions)
    found = config.topic(topic)
    if found is None or found.kind != "custom":
        return fail(f"there is no custom topic named '{topic}'")
    topic_id = found.resource_id()
    try:
        events = parse_events(body, ctype, found.input_schema, topic_id)
    except PublishError as exc:
        return fail(exc.message)
    routed = route(config, found.name, events, found.input_schema)

    async def append() -> None:
        try:
            await ctx.storage.eventgrid_store().append(found.name, found.input_schema, routed,
                                                       datetime.now(UTC).timestamp())
        finally:
            await ctx.storage.aclose()

    asyncio.run(append())
    print(f"stored {count} event(s) for topic '{topic}' ({sum(len(r.targets) for r in routed)} deliveries); "
          "a running host delivers them within a second")
    return 0


@report_errors
def cmd_status(args: argparse.Namespace) -> int:
    _, data_dir = _paths(args)
    if args.storage == "embedded" and not (data_dir / "eventgrid").exists():
        print("no Event Grid state yet (start the host or publish an event first)")
        return 0
    ctx = open_storage(argparse.Namespace(app=str(args.app), data=str(data_dir), storage=args.storage,
                                          postgres=args.postgres, connection=None))

    async def read() -> list[Any]:
        try:
            return await ctx.storage.eventgrid_store().stats()
        finally:
            await ctx.storage.aclose()

    stats = asyncio.run(read())
    if not stats:
        print("no deliveries yet")
        return 0
    print(f"{'SUBSCRIPTION':32} {'DELIVERED':>9} {'PENDING':>8} {'RETRYING':>8} {'DEAD-LETTERED':>13} "
          f"{'DROPPED':>8}  NEXT ATTEMPT")
    for s in stats:
        nxt = datetime.fromtimestamp(s.next_attempt, UTC).isoformat() if s.pending and s.next_attempt else "-"
        print(f"{s.subscription:32} {s.delivered:>9} {s.pending:>8} {s.retrying:>8} "
              f"{s.deadlettered + s.deadlettering:>13} {s.dropped:>8}  {nxt}")
    return 0

