"""Stage B: the shared internal queue ``azure-webjobs-blobtrigger-{hostId}``, one message per blob version.

BlobQueueTriggerExecutor on top of the queue trigger's processor, so visibility renewal, delete,
release and the poison rules are the queue trigger's (written once): after ``poisonBlobThreshold``
failed attempts the message goes, unchanged, to ``webjobs-blobtrigger-poison`` in the function's
storage account. Per message (blob-trigger spec 4.3): an unreadable message fails (and is retried,
then poisoned); an unknown function ID or a blob that no longer exists deletes it silently; on the
polling source a blob whose ETag changed since discovery is dropped and offered to discovery again
(the new version has its own receipt); on the Event Grid source the current content runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

from funchost.errors import BlobNotFound, ContainerNotFound, PreconditionFailed, StorageError
from funchost.indexing.spec import EMPTY, BindingSpec, FunctionSpec
from funchost.runtime.contracts import Runtime
from funchost.storage.queue_send import send_message
from funchost.storage.queues import QueueMessage, QueueService
from funchost.triggers.blob.messages import POISON_QUEUE, BlobTriggerMessage, InvalidTriggerMessage
from funchost.triggers.blob.options import SOURCE_POLLING, BlobTriggerOptions
from funchost.triggers.blob.trigger_data import BlobTarget, PreparedInvocation, prepare
from funchost.triggers.queue.messages import UndecodableMessage, decode_text
from funchost.triggers.queue.processor import QueueProcessor

log = logging.getLogger("funchost.blobs")

SHARED_LISTENER_ID = "SharedBlobQueueListener"  # the extension's function ID for this listener
EVENT_GRID_ATTEMPTS = 3  # reads of a blob rewritten while it was being downloaded


def shared_listener_spec() -> FunctionSpec:
    """The queue listener serves every blob function: it is named as the extension names it."""
    trigger = BindingSpec(SHARED_LISTENER_ID, "queueTrigger", "in", None, {}, is_trigger=True)
    return FunctionSpec(SHARED_LISTENER_ID, lambda: None, trigger, (trigger,), (), None, EMPTY, False, "", "", None)


@dataclass
class Registration:
    target: BlobTarget
    queues: QueueService  # the function's storage account: its poison queue
    rediscover: Callable[[str, str, str], None]  # polling: (account, container, name) changed


class BlobQueueProcessor(QueueProcessor):
    def __init__(self, runtime: Runtime, host_queues: QueueService, queue: str, options: BlobTriggerOptions,
                 receive_visibility: float) -> None:
        super().__init__(shared_listener_spec(), runtime, host_queues, queue, POISON_QUEUE,
                         options.queue_options(), receive_visibility)
        self.registrations: dict[str, Registration] = {}

    def register(self, function_id: str, short_name: str, registration: Registration) -> None:
        """Under both the function ID and the short name, as the extension registers them."""
        self.registrations[function_id] = registration
        self.registrations[short_name] = registration

    def unregister(self, function_id: str, short_name: str) -> None:
        self.registrations.pop(function_id, None)
        self.registrations.pop(short_name, None)

    async def execute(self, message: QueueMessage, body: bytes) -> bool:
        try:
            trigger = BlobTriggerMessage.from_json(body)
        except InvalidTriggerMessage as exc:
            log.error("Blob trigger message %s cannot be processed: %s", message.id, exc)
            return False
        registration = self.registrations.get(trigger.function_id)
        if registration is None:
            log.info("Blob '%s' will not be processed because function '%s' cannot be found. Message Id: '%s'.",
                     trigger.blob_name, trigger.function_id, message.id)
            return True
        try:
            prepared = await self._prepare(registration, trigger, message)
        except StorageError as exc:  # a failed attempt: released, retried, poisoned in the end
            log.warning("Blob '%s' could not be read for function '%s': %s", trigger.blob_name,
                        registration.target.function.name, exc)
            return False
        if prepared is None:
            return True
        try:
            result = await self.runtime.invoker.invoke(prepared.request)
        finally:
            prepared.close()
        return result.succeeded

    async def _prepare(self, registration: Registration, trigger: BlobTriggerMessage,
                       message: QueueMessage) -> PreparedInvocation | None:
        """The invocation for the blob as it is now; None when there is nothing (left) to run."""
        target = registration.target
        polling = target.source == SOURCE_POLLING
        for _ in range(EVENT_GRID_ATTEMPTS):
            try:
                props = await target.service.get_blob_properties(trigger.container, trigger.blob_name)
            except (BlobNotFound, ContainerNotFound):
                log.info("Blob '%s' will not be processed because the blob cannot be found. Message Id: '%s'.",
                         trigger.blob_name, message.id)
                return None
            if polling and props.etag != trigger.etag:
                registration.rediscover(target.service.account_name, trigger.container, trigger.blob_name)
                return None
            details = {"MessageId": message.id, "DequeueCount": message.dequeue_count,
                       "InsertedOn": message.insertion_time, "BlobCreated": props.creation_time.astimezone(UTC),
                       "BlobLastModified": props.last_modified.astimezone(UTC)}
            try:
                return await prepare(target, props, if_match=props.etag, details=details)
            except (BlobNotFound, ContainerNotFound):
                log.info("Blob '%s' was deleted before it could be read. Message Id: '%s'.",
                         trigger.blob_name, message.id)
                return None
            except PreconditionFailed:
                if polling:  # rewritten while being read: the new version is discovered on its own
                    registration.rediscover(target.service.account_name, trigger.container, trigger.blob_name)
                    return None
        raise PreconditionFailed(f"blob '{trigger.blob_name}' kept changing while it was being read")

    async def _copy_to_poison(self, text: str) -> None:
        """To the poison queue of the function's account (the host's when the function is unknown)."""
        queues = self.service
        try:
            trigger = BlobTriggerMessage.from_json(decode_text(text, self.options.message_encoding))
            registration = self.registrations.get(trigger.function_id)
            if registration is not None:
                queues = registration.queues
        except (InvalidTriggerMessage, UndecodableMessage):
            pass
        await send_message(queues, POISON_QUEUE, text, faults=self.runtime.faults)
