"""`funchost servicebus send|peek|list|dlq|redrive`: the Service Bus entities an app uses.

Works on the app's embedded namespace in its data folder (entities from Config.json, else
created on first send), or on a real namespace when `--connection` names a real connection
string. `--output json` prints one JSON object per line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from funchost.cli.common import Progress, add_backend_options, apply_backend_options, report_errors
from funchost.clock import SystemClock
from funchost.errors import ConfigError
from funchost.servicebus.namespaces import (
    DEFAULT_CONNECTION,
    ServiceBusNamespace,
    open_namespace,
    resolve_connection,
)
from funchost.servicebus.redrive import redrive
from funchost.settings.app_settings import AppSettings
from funchost.settings.exported import exported_settings
from funchost.settings.local_settings import load_local_settings
from funchost.storage.host_storage import open_storage
from funchost.storage.servicebus import EntityInfo, OutgoingMessage, ReceivedMessage, split_dead_letter


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--app", default=".", metavar="APP_DIR", help="function app folder")
    parser.add_argument("--data", default=None, metavar="DIR", help="data folder (default APP_DIR/.funchost)")
    parser.add_argument("--connection", default=None, metavar="SETTING",
                        help=f"connection setting name (default {DEFAULT_CONNECTION}; absent = embedded)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_backend_options(parser)  # --storage postgres: the namespaces the hosts share on the server


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("servicebus", help="send, peek, list, dead-letter and redrive Service Bus messages")
    commands = parser.add_subparsers(dest="servicebus_command", metavar="ACTION", required=True)

    send = commands.add_parser("send", help="send messages to a queue or topic")
    send.add_argument("entity")
    send.add_argument("message", nargs="?", help="message body; omit to read one body per line from --file or stdin")
    send.add_argument("--file", metavar="PATH")
    send.add_argument("--count", type=int, default=1, help="send MESSAGE this many times")
    send.add_argument("--session-id", default=None)
    send.add_argument("--message-id", default=None)
    send.add_argument("--content-type", default=None)
    send.add_argument("--subject", default=None)
    send.add_argument("--correlation-id", default=None)
    send.add_argument("--property", action="append", default=[], metavar="NAME=VALUE",
                      help="application property (repeatable; JSON values are parsed: n=1, ok=true)")
    send.add_argument("--ttl", type=float, default=None, help="time to live in seconds")
    send.add_argument("--delay", type=float, default=None, help="schedule the messages this many seconds ahead")
    _options(send)
    send.set_defaults(handler=report_errors(_send))

    peek = commands.add_parser("peek", help="show messages of a queue, subscription or DLQ without locking them")
    peek.add_argument("path", help="queue, topic/Subscriptions/sub, or .../$deadletterqueue")
    peek.add_argument("-n", "--max", type=int, default=32)
    _options(peek)
    peek.set_defaults(handler=report_errors(_peek))

    lst = commands.add_parser("list", help="entities with active, scheduled, deferred, locked and dead-letter counts")
    _options(lst)
    lst.set_defaults(handler=report_errors(_list))

    dlq = commands.add_parser("dlq", help="show dead-lettered messages with their reason")
    dlq.add_argument("path", help="queue or topic/Subscriptions/sub")
    dlq.add_argument("-n", "--max", type=int, default=32)
    _options(dlq)
    dlq.set_defaults(handler=report_errors(_dlq))

    redrive = commands.add_parser("redrive", help="send dead-lettered messages again and remove them from the DLQ")
    redrive.add_argument("path", help="queue or topic/Subscriptions/sub")
    redrive.add_argument("--to", default=None, metavar="ENTITY",
                         help="where to send them (default: the queue itself, or the subscription's topic)")
    redrive.add_argument("--max", type=int, default=None)
    _options(redrive)
    redrive.set_defaults(handler=report_errors(_redrive))


Action = Callable[[argparse.Namespace, ServiceBusNamespace], Awaitable[int]]


def _run(args: argparse.Namespace, action: Action) -> int:
    async def main() -> int:
        apply_backend_options(args)
        app_dir = Path(args.app).resolve()
        data_dir = Path(args.data).resolve() if args.data else app_dir / ".funchost"
        settings = AppSettings(exported_settings(load_local_settings(app_dir), None))
        storage = open_storage(args.storage, data_dir, settings, SystemClock())
        namespace = open_namespace(resolve_connection(args.connection, settings), storage, app_dir, settings)
        try:
            return await action(args, namespace)
        finally:
            if not namespace.embedded:
                await namespace.broker.aclose()
            await storage.aclose()

    return asyncio.run(main())


def _emit(args: argparse.Namespace, record: dict[str, Any], text: str) -> None:
    print(json.dumps(record, default=str) if args.output == "json" else text)


def _property(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ConfigError(f"--property needs NAME=VALUE, got {text!r}")
    try:
        return name, json.loads(raw)
    except ValueError:
        return name, raw


def _bodies(args: argparse.Namespace) -> list[bytes]:
    if args.message is not None:
        return [args.message.encode("utf-8")] * max(1, args.count)
    source = Path(args.file).read_text(encoding="utf-8") if args.file else sys.stdin.read()
    return [line.encode("utf-8") for line in source.splitlines() if line.strip()]


async def _send_action(args: argparse.Namespace, namespace: ServiceBusNamespace) -> int:
    await namespace.ensure_entity(args.entity)
    properties = dict(_property(p) for p in args.property)
    scheduled = datetime.now(UTC) + timedelta(seconds=args.delay) if args.delay else None
    messages = [OutgoingMessage(body, message_id=args.message_id, session_id=args.session_id,
                                content_type=args.content_type, subject=args.subject,
                                correlation_id=args.correlation_id, application_properties=properties,
                                time_to_live=args.ttl, scheduled_enqueue_time=scheduled)
                for body in _bodies(args)]
    progress = Progress(len(messages), f"sending to {args.entity}")
    numbers: list[int] = []
    for start in range(0, len(messages), 500):
        chunk = messages[start:start + 500]
        numbers += await namespace.broker.send(args.entity, chunk)
        progress.advance(len(chunk))
    progress.finish()
    _emit(args, {"entity": args.entity, "sent": len(messages), "sequenceNumbers": numbers},
          f"sent {len(messages)} message(s) to '{args.entity}'")
    return 0


def _send(args: argparse.Namespace) -> int:
    return _run(args, _send_action)


def _record(m: ReceivedMessage) -> dict[str, Any]:
    return {"sequenceNumber": m.sequence_number, "messageId": m.message_id, "state": m.state,
            "deliveryCount": m.delivery_count, "enqueuedTime": m.enqueued_time.isoformat(),
            "expiresAt": m.expires_at.isoformat() if m.expires_at else None, "sessionId": m.session_id,
            "contentType": m.content_type, "subject": m.subject, "applicationProperties": dict(m.application_properties),
            "deadLetterReason": m.dead_letter_reason, "deadLetterErrorDescription": m.dead_letter_error_description,
            "body": m.body.decode("utf-8", errors="replace")}


def _line(m: ReceivedMessage) -> str:
    session = f"  session={m.session_id}" if m.session_id else ""
    return (f"#{m.sequence_number}  {m.state}  delivered={m.delivery_count}  "
            f"enqueued={m.enqueued_time:%Y-%m-%d %H:%M:%S}{session}  {m.body.decode('utf-8', errors='replace')}")


async def _peek_action(args: argparse.Namespace, namespace: ServiceBusNamespace) -> int:
    messages = await namespace.broker.peek(args.path, args.max)
    for m in messages:
        _emit(args, _record(m), _line(m))
    if not messages and args.output == "text":
        print(f"(no messages in '{args.path}')")
    return 0


def _peek(args: argparse.Namespace) -> int:
    return _run(args, _peek_action)


def _info_record(info: EntityInfo) -> dict[str, Any]:
    return {"path": info.path, "kind": info.kind, "active": info.active, "scheduled": info.scheduled,
            "deferred": info.deferred, "locked": info.locked, "deadLetter": info.dead_letter,
            "requiresSession": info.properties.requires_session,
            "maxDeliveryCount": info.properties.max_delivery_count, "lockDuration": info.properties.lock_duration}


async def _list_action(args: argparse.Namespace, namespace: ServiceBusNamespace) -> int:
    await namespace.prepare()
    entities = await namespace.broker.list_entities()
    if args.output == "text":
        if not entities:
            print("(no entities)")
            return 0
        print(f"{'ENTITY':<48} {'KIND':<12} {'ACTIVE':>7} {'SCHED':>6} {'DEFER':>6} {'LOCKED':>7} {'DLQ':>6}")
    for info in entities:
        counts = "" if info.kind == "topic" else (f"{info.active:>7} {info.scheduled:>6} {info.deferred:>6} "
                                                   f"{info.locked:>7} {info.dead_letter:>6}")
        _emit(args, _info_record(info), f"{info.path:<48} {info.kind:<12} {counts}".rstrip())
    return 0


def _list(args: argparse.Namespace) -> int:
    return _run(args, _list_action)


async def _dlq_action(args: argparse.Namespace, namespace: ServiceBusNamespace) -> int:
    name, _ = split_dead_letter(args.path)
    messages = await namespace.broker.peek(f"{name}/$deadletterqueue", args.max)
    for m in messages:
        _emit(args, _record(m), f"{_line(m)}  reason={m.dead_letter_reason}: {m.dead_letter_error_description}")
    if not messages and args.output == "text":
        print(f"(no dead-lettered messages in '{name}')")
    return 0


def _dlq(args: argparse.Namespace) -> int:
    return _run(args, _dlq_action)


async def _redrive_action(args: argparse.Namespace, namespace: ServiceBusNamespace) -> int:
    source, target, moved = await redrive(namespace.broker, args.path, args.to, args.max)
    _emit(args, {"from": source, "to": target, "moved": moved}, f"moved {moved} message(s) from '{source}' to '{target}'")
    return 0


def _redrive(args: argparse.Namespace) -> int:
    return _run(args, _redrive_action)
