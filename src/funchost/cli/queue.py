"""`funchost queue send|peek|list|clear|redrive`: work with queues the app's triggers read."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from funchost.cli.common import Progress, StorageContext, add_storage_options, open_storage, report_errors
from funchost.storage.queues import QueueService
from funchost.triggers.queue.messages import POISON_SUFFIX, UndecodableMessage, decode_text, encode_body
from funchost.triggers.queue.redrive import poison_count, redrive

ENCODINGS = ("base64", "none")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("queue", help="send, peek, list, clear and redrive queue messages")
    commands = parser.add_subparsers(dest="queue_command", metavar="ACTION", required=True)

    send = commands.add_parser("send", help="put messages on a queue (created if missing)")
    send.add_argument("queue")
    send.add_argument("message", nargs="?", help="message body; omit to read bodies from --file or stdin")
    send.add_argument("--file", metavar="PATH", help="read bodies from a file, one message per line")
    send.add_argument("--count", type=int, default=1, help="send the MESSAGE body this many times")
    send.add_argument("--encoding", choices=ENCODINGS, default="base64",
                      help="message text encoding (default base64, as the trigger expects)")
    send.add_argument("--ttl", type=int, default=None, help="time to live in seconds (-1 = never)")
    send.add_argument("--delay", type=int, default=0, help="initial visibility delay in seconds")
    add_storage_options(send)
    send.set_defaults(handler=report_errors(_send))

    peek = commands.add_parser("peek", help="show visible messages without receiving them")
    peek.add_argument("queue")
    peek.add_argument("-n", "--max", type=int, default=32, help="how many (1-32)")
    peek.add_argument("--encoding", choices=ENCODINGS, default="base64")
    peek.add_argument("--json", action="store_true", help="one JSON object per message")
    add_storage_options(peek)
    peek.set_defaults(handler=report_errors(_peek))

    lst = commands.add_parser("list", help="queues with length, oldest message age and poison count")
    lst.add_argument("--prefix", default=None)
    add_storage_options(lst)
    lst.set_defaults(handler=report_errors(_list))

    clear = commands.add_parser("clear", help="delete every message in a queue")
    clear.add_argument("queue")
    add_storage_options(clear)
    clear.set_defaults(handler=report_errors(_clear))

    redrive = commands.add_parser("redrive", help="move messages from QUEUE-poison back to QUEUE")
    redrive.add_argument("queue")
    redrive.add_argument("--max", type=int, default=None, help="move at most this many")
    add_storage_options(redrive)
    redrive.set_defaults(handler=report_errors(_redrive))


def _run(args: argparse.Namespace, action) -> int:  # type: ignore[no-untyped-def]
    async def main() -> int:
        ctx = open_storage(args)
        try:
            return int(await action(ctx, ctx.storage.queues(args.connection)) or 0)
        finally:
            await ctx.storage.aclose()

    return asyncio.run(main())


def _bodies(args: argparse.Namespace) -> list[bytes]:
    if args.message is not None:
        return [args.message.encode("utf-8")] * max(1, args.count)
    source = Path(args.file).read_text(encoding="utf-8") if args.file else sys.stdin.read()
    return [line.encode("utf-8") for line in source.splitlines() if line.strip()]


def _send(args: argparse.Namespace) -> int:
    async def action(ctx: StorageContext, service: QueueService) -> int:
        bodies = _bodies(args)
        await service.create_queue(args.queue)
        progress = Progress(len(bodies), f"sending to {args.queue}")
        window = 256  # concurrent puts: the embedded store commits them in groups
        for start in range(0, len(bodies), window):
            chunk = bodies[start:start + window]
            await asyncio.gather(*(service.put_message(args.queue, encode_body(b, args.encoding),
                                                       visibility_timeout=args.delay, time_to_live=args.ttl)
                                   for b in chunk))
            progress.advance(len(chunk))
        progress.finish()
        print(f"sent {len(bodies)} message(s) to '{args.queue}'")
        return 0

    return _run(args, action)


def _text(content: str, encoding: str) -> str:
    try:
        return decode_text(content, encoding).decode("utf-8", errors="replace")
    except UndecodableMessage:
        return content


def _peek(args: argparse.Namespace) -> int:
    async def action(ctx: StorageContext, service: QueueService) -> int:
        messages = await service.peek_messages(args.queue, max_messages=args.max)
        for m in messages:
            body = _text(m.content, args.encoding)
            if args.json:
                print(json.dumps({"id": m.id, "dequeueCount": m.dequeue_count,
                                  "insertionTime": m.insertion_time.isoformat(), "body": body}))
            else:
                print(f"{m.id}  dequeued={m.dequeue_count}  inserted={m.insertion_time:%Y-%m-%d %H:%M:%S}  {body}")
        if not messages and not args.json:
            print(f"(no visible messages in '{args.queue}')")
        return 0

    return _run(args, action)


async def _oldest_age(service: QueueService, queue: str) -> float | None:
    when = await service.oldest_insertion_time(queue)
    return None if when is None else (datetime.now(UTC) - when).total_seconds()


def _list(args: argparse.Namespace) -> int:
    async def action(ctx: StorageContext, service: QueueService) -> int:
        names = await service.list_queues(args.prefix)
        if not names:
            print("(no queues)")
            return 0
        print(f"{'QUEUE':<40} {'LENGTH':>8} {'OLDEST':>10} {'POISON':>8}")
        for name in names:
            if name.endswith(POISON_SUFFIX) and name[: -len(POISON_SUFFIX)] in names:
                continue  # shown as the POISON column of its queue
            length = (await service.get_queue_properties(name)).approximate_message_count
            age = await _oldest_age(service, name)
            poison_name = name + POISON_SUFFIX
            poison = ((await service.get_queue_properties(poison_name)).approximate_message_count
                      if poison_name in names else 0)
            print(f"{name:<40} {length:>8} {_age(age):>10} {poison:>8}")
        return 0

    return _run(args, action)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _clear(args: argparse.Namespace) -> int:
    async def action(ctx: StorageContext, service: QueueService) -> int:
        await service.clear_messages(args.queue)
        print(f"cleared '{args.queue}'")
        return 0

    return _run(args, action)


def _redrive(args: argparse.Namespace) -> int:
    async def action(ctx: StorageContext, service: QueueService) -> int:
        source = args.queue + POISON_SUFFIX
        total = await poison_count(service, args.queue)
        if total is None:
            print(f"no poison queue '{source}'")
            return 0
        progress = Progress(total if args.max is None else min(total, args.max),
                            f"redriving {source} -> {args.queue}")
        moved = await redrive(service, args.queue, args.max, progress.advance)
        progress.finish()
        print(f"moved {moved} message(s) from '{source}' to '{args.queue}'")
        return 0

    return _run(args, action)
