"""Blob receipts: "this function has handled this blob version" (BlobReceiptManager, blob-trigger spec 3).

An empty block blob ``azure-webjobs-hosts/blobreceipts/{hostId}/{functionId}/{ETag}/{container}/{blob}``
(the ETag quoted, before the names so slashes in the blob name stay unambiguous). Metadata
``Incomplete`` marks one in progress; completion removes it under the receipt's 30-second lease.
Receipts live in storage, so they hold across restarts and across hosts sharing the account.
"""

from __future__ import annotations

from dataclasses import dataclass

from funchost.errors import (
    BlobNotFound,
    ContainerNotFound,
    LeaseConflict,
    PreconditionFailed,
    ResourceConflict,
    ResourceNotFound,
)
from funchost.storage.blobs import BlobService
from funchost.triggers.blob.options import RECEIPT_LEASE_SECONDS

HOSTS_CONTAINER = "azure-webjobs-hosts"
INCOMPLETE = "Incomplete"


def receipt_name(host_id: str, function_id: str, etag: str, container: str, blob_name: str) -> str:
    return f"blobreceipts/{host_id}/{function_id}/{etag}/{container}/{blob_name}"


@dataclass(frozen=True)
class BlobReceipt:
    completed: bool


class BlobReceiptManager:
    def __init__(self, blobs: BlobService) -> None:
        self.blobs = blobs

    async def read(self, name: str) -> BlobReceipt | None:
        try:
            props = await self.blobs.get_blob_properties(HOSTS_CONTAINER, name)
        except (BlobNotFound, ContainerNotFound):
            return None
        return BlobReceipt(completed=not any(k.lower() == INCOMPLETE.lower() for k in props.metadata))

    async def create(self, name: str) -> bool:
        """Put the incomplete receipt if none exists (If-None-Match: *); False when someone else did."""
        for attempt in (1, 2):
            try:
                await self.blobs.upload_blob(HOSTS_CONTAINER, name, b"", metadata={INCOMPLETE: INCOMPLETE},
                                             overwrite=False)
                return True
            except ContainerNotFound:
                if attempt == 2:
                    raise
                await self.blobs.create_container(HOSTS_CONTAINER, exist_ok=True)
            except (ResourceConflict, PreconditionFailed):
                return False
        return False

    async def acquire_lease(self, name: str) -> str | None:
        try:
            return await self.blobs.acquire_lease(HOSTS_CONTAINER, name, duration=RECEIPT_LEASE_SECONDS)
        except (LeaseConflict, ResourceNotFound):
            return None

    async def mark_completed(self, name: str, lease_id: str) -> None:
        """Drop ``Incomplete`` under the lease. The port sets metadata without a lease, so the receipt
        is rewritten (empty, no metadata: receipts carry no other) with the lease id: the same state,
        one conditional write."""
        try:
            await self.blobs.upload_blob(HOSTS_CONTAINER, name, b"", metadata={}, lease_id=lease_id)
        except (ResourceNotFound, PreconditionFailed, LeaseConflict):
            pass  # the receipt or our lease is gone: the next sweep decides again

    async def release(self, name: str, lease_id: str) -> None:
        try:
            await self.blobs.release_lease(HOSTS_CONTAINER, name, lease_id)
        except (ResourceNotFound, LeaseConflict):
            pass
