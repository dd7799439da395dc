"""In-process wake-ups: a put through this host's storage cuts its queue listeners' waits short.

A put to a queue publishes ``queue_topic(account, queue)``: the queue listener polls at once
instead of finishing its back-off, whoever put the message in this process (an output binding,
a poison copy, an Event Grid delivery, app code, an SDK client through the storage endpoints).
A message put invisible (a visibility timeout) wakes no one; an update that makes a message
visible at once (visibility timeout 0) wakes them as a put does. Puts by other processes are
found by polling, as on Azure. (Document writes wake the change feed only when the Cosmos DB output binding makes
them, see `bindings/cosmosdb.py`; other writes arrive after ``feedPollDelay``, as on Azure.)
"""

from __future__ import annotations

from funchost.runtime.signals import Signals, queue_topic
from funchost.storage.queues import QueueMessage, QueueService, UpdateReceipt


class WakingQueueService:
    def __init__(self, inner: QueueService, signals: Signals) -> None:
        self.inner = inner
        self.account_name = inner.account_name
        self._signals = signals
        # Everything but a put goes straight to the inner service.
        self.create_queue = inner.create_queue
        self.delete_queue = inner.delete_queue
        self.queue_exists = inner.queue_exists
        self.list_queues = inner.list_queues
        self.get_queue_properties = inner.get_queue_properties
        self.set_queue_metadata = inner.set_queue_metadata
        self.get_messages = inner.get_messages
        self.peek_messages = inner.peek_messages
        self.delete_message = inner.delete_message
        self.clear_messages = inner.clear_messages
        self.oldest_insertion_time = inner.oldest_insertion_time
        self.aclose = inner.aclose

    async def put_message(
        self, name: str, content: str, *, visibility_timeout: int = 0, time_to_live: int | None = None
    ) -> QueueMessage:
        message = await self.inner.put_message(name, content, visibility_timeout=visibility_timeout,
                                               time_to_live=time_to_live)
        if visibility_timeout == 0:  # a message put invisible cannot be received yet
            self._signals.publish(queue_topic(self.account_name, name))
        return message

    async def update_message(
        self, name: str, message_id: str, pop_receipt: str, *, visibility_timeout: int, content: str | None = None
    ) -> UpdateReceipt:
        receipt = await self.inner.update_message(name, message_id, pop_receipt,
                                                  visibility_timeout=visibility_timeout, content=content)
        if visibility_timeout == 0:
            self._signals.publish(queue_topic(self.account_name, name))
        return receipt
