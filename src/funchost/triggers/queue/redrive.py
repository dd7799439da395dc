"""Move messages from a queue's poison queue back to the queue: `funchost queue redrive`, the dashboard.

Each message is sent again with the same text (already encoded) as a fresh message, then
deleted from the poison queue: a crash in between leaves a duplicate, never a loss. The
messages are received with a visibility timeout while they move, so two redrives at once do
not move one message twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from funchost.errors import QueueNotFound
from funchost.storage.queues import QueueService
from funchost.triggers.queue.messages import POISON_SUFFIX

BATCH = 32  # the most one receive returns
MOVE_VISIBILITY = 60  # seconds a message being moved stays hidden from others


async def poison_count(service: QueueService, queue: str) -> int | None:
    """Messages in `<queue>-poison`; None when there is no poison queue."""
    try:
        return (await service.get_queue_properties(queue + POISON_SUFFIX)).approximate_message_count
    except QueueNotFound:
        return None


async def redrive(service: QueueService, queue: str, limit: int | None = None,
                  progress: Callable[[int], None] | None = None) -> int:
    """Move up to `limit` messages (all when None); returns how many moved."""
    source = queue + POISON_SUFFIX
    if not await service.queue_exists(source):
        return 0
    await service.create_queue(queue)
    moved = 0
    while limit is None or moved < limit:
        want = BATCH if limit is None else min(BATCH, limit - moved)
        batch = await service.get_messages(source, max_messages=want, visibility_timeout=MOVE_VISIBILITY)
        if not batch:
            break
        await asyncio.gather(*(service.put_message(queue, m.content) for m in batch))
        await asyncio.gather(*(service.delete_message(source, m.id, m.pop_receipt or "") for m in batch))
        moved += len(batch)
        if progress is not None:
            progress(len(batch))
    return moved
