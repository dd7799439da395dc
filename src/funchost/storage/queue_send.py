"""Sending a message to a queue: the one way the host (and code running in it) does it.

Used by the queue output binding, the queue trigger's poison copies, `funchost.testing`,
Event Grid's storage-queue destination and the reference pipeline. The service is the host's
(`HostStorage.queues`), so the put passes Azure's rules, the ``queue.put.before/during`` fault
points and wakes this host's listeners of that queue at once.
"""

from __future__ import annotations

from funchost.errors import QueueNotFound, ResourceConflict
from funchost.runtime.faults import NO_FAULTS, FaultInjector
from funchost.storage.queues import QueueMessage, QueueService


async def send_message(service: QueueService, queue: str, text: str, *, time_to_live: int | None = None,
                       create_queue: bool = True, faults: FaultInjector = NO_FAULTS) -> QueueMessage:
    """Put `text` (already encoded as the queue expects) and return the stored message.

    A missing queue is created and the put repeated, as the extension's
    AddMessageAndCreateIfNotExists does; `create_queue=False` lets QueueNotFound through (Event
    Grid delivers only to queues that exist). ``queue.put.after`` fires once the message is
    stored: "sent, and then the sender failed".
    """
    try:
        message = await service.put_message(queue, text, time_to_live=time_to_live)
    except QueueNotFound:
        if not create_queue:
            raise
        try:
            await service.create_queue(queue)
        except ResourceConflict:
            pass  # created concurrently by someone else
        message = await service.put_message(queue, text, time_to_live=time_to_live)
    if faults.enabled:
        await faults.hit("queue.put.after", queue=queue, id=message.id)
    return message
