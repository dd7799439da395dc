"""Send dead-lettered Service Bus messages again and remove them from the dead-letter queue:
`funchost servicebus redrive`, the dashboard.

A message's copy keeps its body and properties (without the dead-letter reason and
description); it is sent before the original is completed, so a crash in between duplicates,
never loses. A subscription's messages go back to its topic by default, as Service Bus
Explorer's resubmit does; a queue's to the queue.
"""

from __future__ import annotations

import asyncio

from funchost.storage.servicebus import OutgoingMessage, ReceivedMessage, ServiceBusBroker, split_dead_letter

BATCH = 100
DEAD_LETTER_PROPERTIES = ("DeadLetterReason", "DeadLetterErrorDescription")


def default_target(path: str) -> str:
    parts = path.split("/")
    return parts[0] if len(parts) == 3 and parts[1].lower() == "subscriptions" else path


def copy_of(m: ReceivedMessage) -> OutgoingMessage:
    return OutgoingMessage(m.body, message_id=m.message_id, content_type=m.content_type,
                           correlation_id=m.correlation_id, subject=m.subject, to=m.to, reply_to=m.reply_to,
                           reply_to_session_id=m.reply_to_session_id, session_id=m.session_id,
                           partition_key=m.partition_key,
                           application_properties={k: v for k, v in m.application_properties.items()
                                                   if k not in DEAD_LETTER_PROPERTIES})


async def redrive(broker: ServiceBusBroker, path: str, target: str | None = None,
                  limit: int | None = None) -> tuple[str, str, int]:
    """(the dead-letter queue, where the messages went, how many) for `path`'s dead letters."""
    name, _ = split_dead_letter(path)
    source = f"{name}/$deadletterqueue"
    target = target or default_target(name)
    moved = 0
    while limit is None or moved < limit:
        want = BATCH if limit is None else min(BATCH, limit - moved)
        batch = await broker.receive(source, want)
        if not batch:
            break
        await broker.send(target, [copy_of(m) for m in batch])
        await asyncio.gather(*(broker.complete(source, m.lock_token or "") for m in batch))
        moved += len(batch)
    return source, target, moved
