"""Fault points around every queue operation the host performs, whoever performs it.

The host hands out queue services through this wrapper, so the processor, the output binding,
Event Grid and app code using the host's storage all pass the same named points:

    queue.<op>.before   raise here: the operation never reaches storage
    queue.<op>.during   raise here: the operation IS applied, but the caller gets the error
                        (a lost response: the case that makes at-least-once delivery necessary)

for <op> in put, get, update, delete. (Callers add their own `.after` points where "the
operation succeeded and then the host died" matters, e.g. the queue processor and
`queue_sender.send`.) With nothing armed a call costs one attribute check.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import Any

from funchost.runtime.faults import FaultInjector
from funchost.storage.queues import QueueMessage, QueueService, UpdateReceipt


class FaultInjectingQueueService:
    def __init__(self, inner: QueueService, faults: FaultInjector) -> None:
        self.inner = inner
        self.account_name = inner.account_name
        self._faults = faults
        # Operations without fault points go straight to the backend.
        self.create_queue = inner.create_queue
        self.delete_queue = inner.delete_queue
        self.queue_exists = inner.queue_exists
        self.list_queues = inner.list_queues
        self.get_queue_properties = inner.get_queue_properties
        self.set_queue_metadata = inner.set_queue_metadata
        self.peek_messages = inner.peek_messages
        self.clear_messages = inner.clear_messages
        self.oldest_insertion_time = inner.oldest_insertion_time
        self.aclose = inner.aclose

    async def _before(self, op: str, details: Mapping[str, Any]) -> None:
        await self._faults.hit(f"queue.{op}.before", **details)

    async def _during(self, op: str, details: Mapping[str, Any]) -> None:
        await self._faults.hit(f"queue.{op}.during", **details)

    async def put_message(
        self, name: str, content: str, *, visibility_timeout: int = 0, time_to_live: int | None = None
    ) -> QueueMessage:
        if not self._faults.enabled:
            return await self.inner.put_message(name, content, visibility_timeout=visibility_timeout,
                                                time_to_live=time_to_live)
        details: dict[str, Any] = {"queue": name, "operation": "put"}
        await self._before("put", details)
        message = await self.inner.put_message(name, content, visibility_timeout=visibility_timeout,
                                               time_to_live=time_to_live)
        details["id"] = message.id
        await self._during("put", details)
        return message

    async def get_messages(
        self, name: str, *, max_messages: int = 1, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        if not self._faults.enabled:
            return await self.inner.get_messages(name, max_messages=max_messages,
                                                 visibility_timeout=visibility_timeout)
        details = {"queue": name, "operation": "get"}
        await self._before("get", details)
        messages = await self.inner.get_messages(name, max_messages=max_messages,
                                                 visibility_timeout=visibility_timeout)
        await self._during("get", details)
        return messages

    async def update_message(
        self, name: str, message_id: str, pop_receipt: str, *, visibility_timeout: int, content: str | None = None
    ) -> UpdateReceipt:
        if not self._faults.enabled:
            return await self.inner.update_message(name, message_id, pop_receipt,
                                                   visibility_timeout=visibility_timeout, content=content)
        details = {"queue": name, "operation": "update", "id": message_id}
        await self._before("update", details)
        receipt = await self.inner.update_message(name, message_id, pop_receipt,
                                                  visibility_timeout=visibility_timeout, content=content)
        await self._during("update", details)
        return receipt

    def delete_message(self, name: str, message_id: str, pop_receipt: str) -> Coroutine[Any, Any, None]:
        """The inner service's call itself while no fault is armed (one coroutine less per message)."""
        if not self._faults.enabled:
            return self.inner.delete_message(name, message_id, pop_receipt)
        return self._delete_with_faults(name, message_id, pop_receipt)

    async def _delete_with_faults(self, name: str, message_id: str, pop_receipt: str) -> None:
        details = {"queue": name, "operation": "delete", "id": message_id}
        await self._before("delete", details)
        await self.inner.delete_message(name, message_id, pop_receipt)
        await self._during("delete", details)
