"""Per-message rules of the queue trigger (azure-semantics 1.4-1.6): poison checks, visibility
renewal, delete on success, release or poison on failure.

Nothing here decides *when* to fetch; that is the listener's job. Storage errors that mean "the
lease is gone" (PopReceiptMismatch, 404, 409) are expected and swallowed, as WebJobs does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from funchost.errors import PopReceiptMismatch, ResourceConflict, ResourceNotFound
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationResult
from funchost.runtime.contracts import Runtime
from funchost.storage.queue_send import send_message
from funchost.storage.queues import QueueMessage, QueueService
from funchost.triggers.queue.keeper import VisibilityKeeper
from funchost.triggers.queue.messages import UndecodableMessage, build_request, decode_text, encode_body
from funchost.triggers.queue.options import QueuesOptions, renewal_timing

log = logging.getLogger("funchost.queues")

# Errors that mean the message (or our hold on it) is gone: give up quietly.
LOST = (PopReceiptMismatch, ResourceNotFound, ResourceConflict)


@dataclass(slots=True)
class HeldMessage:
    """The message as we currently hold it: renewals replace the pop receipt."""

    message: QueueMessage
    pop_receipt: str
    next_visible: datetime | None


class QueueProcessor:
    def __init__(
        self,
        function: FunctionSpec,
        runtime: Runtime,
        service: QueueService,
        queue: str,
        poison_queue: str | None,
        options: QueuesOptions,
        receive_visibility: float,
    ) -> None:
        self.function = function
        self.runtime = runtime
        self.service = service
        self.queue = queue
        self.poison_queue = poison_queue
        self.options = options
        self.receive_visibility = receive_visibility
        interval, minimum = renewal_timing(receive_visibility)
        self.keeper: VisibilityKeeper[HeldMessage] = VisibilityKeeper(
            f"queue '{queue}'", runtime.clock, self._renew, interval=interval, minimum=minimum)

    async def process(self, message: QueueMessage, executed: Callable[[], None] | None = None) -> None:
        """Run one received message to completion; never raises storage errors of a lost lease.
        `executed()` is called once its function has returned, before the delete or release (the
        listener's next fetch waits for that, not for the delete)."""
        held = HeldMessage(message, message.pop_receipt or "", message.next_visible_time)
        try:
            body = decode_text(message.content, self.options.message_encoding)
        except UndecodableMessage:
            log.warning("Message decoding has failed! Check MessageEncoding settings. MessageId=%s.", message.id)
            if self.poison_queue is not None:
                await self._copy_to_poison(message.content)
                await self._delete(held)
            return
        if message.dequeue_count > self.options.max_dequeue_count:
            await self._poison(held, body)
            return
        hold = self.keeper.hold(held)
        try:
            outcome = await self.execute(message, body)
            succeeded = outcome if isinstance(outcome, bool) else outcome.succeeded
        finally:
            renewing = self.keeper.release(hold)
            if executed is not None:
                executed()
            if renewing is not None:
                await renewing
        if succeeded:
            await self._delete(held)
        elif self.poison_queue is None:
            # No poison queue: leave it invisible until its visibility lapses (no fast loop).
            return
        elif message.dequeue_count >= self.options.max_dequeue_count:
            await self._poison(held, body)
        else:
            await self._release(held)

    def execute(self, message: QueueMessage, body: bytes) -> Awaitable[InvocationResult | bool]:
        """Run the function for one message (visibility held): the invocation's result, or a bool;
        success deletes the message. The blob trigger's internal queue overrides this (same poison
        rules, its own dispatch). Here it is the invocation itself, no coroutine of its own."""
        # The clock is read only for a message without an insertion time (it stands in for it).
        request = build_request(self.function, message, body, self.queue,
                                message.insertion_time or self.runtime.clock.now())
        return self.runtime.invoker.invoke(request)

    async def stop(self) -> None:
        await self.keeper.stop()

    # -- storage steps ---------------------------------------------------------------------------

    async def _renew(self, held: HeldMessage) -> bool:
        try:
            receipt = await self.service.update_message(
                self.queue, held.message.id, held.pop_receipt, visibility_timeout=int(self.receive_visibility))
        except LOST:
            return False
        held.pop_receipt = receipt.pop_receipt
        held.next_visible = receipt.next_visible_time
        return True

    async def _delete(self, held: HeldMessage) -> None:
        faults = self.runtime.faults
        try:
            await self.service.delete_message(self.queue, held.message.id, held.pop_receipt)
        except LOST as exc:
            log.debug("delete of message %s on '%s' skipped: %s", held.message.id, self.queue, exc.code)
            return
        if faults.enabled:
            await faults.hit("queue.delete.after", queue=self.queue, id=held.message.id)

    async def _release(self, held: HeldMessage) -> None:
        faults = self.runtime.faults
        try:
            receipt = await self.service.update_message(
                self.queue, held.message.id, held.pop_receipt,
                visibility_timeout=int(self.options.visibility_timeout))
        except LOST as exc:
            log.debug("release of message %s on '%s' skipped: %s", held.message.id, self.queue, exc.code)
            return
        held.pop_receipt = receipt.pop_receipt
        await faults.hit("queue.update.after", queue=self.queue, id=held.message.id)

    async def _poison(self, held: HeldMessage, body: bytes) -> None:
        if self.poison_queue is None:
            return  # nowhere to move it: it stays invisible until its visibility lapses
        log.warning("Message has reached MaxDequeueCount of %d. Moving message to queue '%s'.",
                    self.options.max_dequeue_count, self.poison_queue)
        await self._copy_to_poison(encode_body(body, self.options.message_encoding))
        await self._delete(held)

    async def _copy_to_poison(self, text: str) -> None:
        if self.poison_queue is not None:
            await send_message(self.service, self.poison_queue, text, faults=self.runtime.faults)
