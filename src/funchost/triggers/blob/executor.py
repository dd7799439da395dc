"""From a discovered blob to a queued trigger message, once per function and blob version.

BlobTriggerExecutor (blob-trigger spec 3.3): match the function's path pattern, read the blob's
ETag, then the receipt ``blobreceipts/{hostId}/{functionId}/{ETag}/...``: completed means done;
otherwise create it (incomplete), take its 30-second lease, check again, enqueue the trigger message
on ``azure-webjobs-blobtrigger-{hostId}``, mark the receipt completed and release the lease. The
receipt completes when the message is *queued*: failures of the function belong to the queue
(retries, then the poison queue). A crash between enqueue and completion can queue a version
twice (at-least-once), as on Azure.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from funchost.errors import BlobNotFound, ContainerNotFound
from funchost.runtime.faults import FaultInjector
from funchost.storage.blobs import BlobProperties
from funchost.storage.queue_send import send_message
from funchost.storage.queues import QueueService
from funchost.triggers.blob.messages import BlobTriggerMessage
from funchost.triggers.blob.receipts import BlobReceiptManager, receipt_name
from funchost.triggers.blob.trigger_data import BlobTarget
from funchost.triggers.queue.messages import encode_body

log = logging.getLogger("funchost.blobs")


@dataclass
class BlobTriggerExecutor:
    target: BlobTarget
    function_id: str
    host_id: str
    receipts: BlobReceiptManager
    host_queues: QueueService
    host_queue: str
    message_encoding: str
    faults: FaultInjector

    @property
    def container(self) -> str:
        return self.target.pattern.container

    async def execute(self, container: str, blob_name: str, listed: BlobProperties | None = None) -> bool:
        """True when the blob needs nothing more from this function (handled, skipped or queued).

        `listed`: the properties a listing or the change journal just gave (the ETag the extension
        reads with Get Blob Properties); a newer version is discovered on its own."""
        name = self.target.function.name
        if self.target.pattern.match(container, blob_name) is None:
            log.debug("Blob '%s' will be skipped for function '%s' because it does not match the pattern '%s'.",
                      blob_name, name, self.target.pattern)
            return True
        try:
            props = listed or await self.target.service.get_blob_properties(container, blob_name)
        except (BlobNotFound, ContainerNotFound):
            log.debug("Blob '%s' will be skipped for function '%s' because its ETag cannot be found. "
                      "The blob may have been deleted.", blob_name, name)
            return True
        receipt = receipt_name(self.host_id, self.function_id, props.etag, container, blob_name)
        found = await self.receipts.read(receipt)
        if found is not None and found.completed:
            log.debug("Blob '%s' will be skipped for function '%s' because this blob with ETag '%s' has "
                      "already been processed.", blob_name, name, props.etag)
            return True
        if found is None and not await self.receipts.create(receipt):
            return False  # created meanwhile by another host: look again next time
        lease_id = await self.receipts.acquire_lease(receipt)
        if lease_id is None:
            return False
        try:
            again = await self.receipts.read(receipt)
            if again is not None and again.completed:
                return True
            message = BlobTriggerMessage(self.function_id, props.blob_type, container, blob_name, props.etag)
            body = encode_body(message.to_json().encode("utf-8"), self.message_encoding)
            await send_message(self.host_queues, self.host_queue, body, faults=self.faults)
            log.debug("Blob '%s' for function '%s' (ETag %s) enqueued on '%s'.", blob_name, name, props.etag,
                      self.host_queue)
            await self.receipts.mark_completed(receipt, lease_id)
        finally:
            await self.receipts.release(receipt, lease_id)
        return True
