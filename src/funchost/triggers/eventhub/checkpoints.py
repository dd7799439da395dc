"""Checkpoints and partition ownership in blobs, at the Event Hubs extension's layout.

Container `azure-webjobs-eventhub` of `AzureWebJobsStorage` (created at listener start), as the
SDK's `BlobCheckpointStoreInternal` writes it (servicebus-eventhubs 2.5):

    {fqns}/{hub}/{group}/ownership/{partition}    empty blob, metadata ownerid
    {fqns}/{hub}/{group}/checkpoint/{partition}   empty blob, metadata offset, sequencenumber
    {fqns}/{hub}/{group}/{partition}              legacy (Track 1) JSON checkpoint, read only

(namespace, hub and group lower-cased in the first two). A claim is a conditional write: with
the ETag last seen (If-Match) when a record exists, else a create (If-None-Match: *); losing the
race is not an error, the partition is simply not claimed. Checkpoints are unconditional. SDK
consumers using `BlobCheckpointStore` on the same container see and honour the same records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from funchost.errors import BlobNotFound, PreconditionFailed, ResourceConflict
from funchost.storage.blobs import BlobService

CONTAINER = "azure-webjobs-eventhub"
OWNER_ID = "ownerid"
OFFSET = "offset"
SEQUENCE_NUMBER = "sequencenumber"
NO_OFFSET = "no offset"  # a placeholder older SDKs wrote


@dataclass(frozen=True)
class Ownership:
    fully_qualified_namespace: str
    event_hub: str
    consumer_group: str
    partition_id: str
    owner_id: str
    last_modified: datetime | None = None
    etag: str | None = None


@dataclass(frozen=True)
class Checkpoint:
    partition_id: str
    offset: int | None
    sequence_number: int | None
    last_modified: datetime | None


def prefix(fqns: str, hub: str, group: str, kind: str) -> str:
    return f"{fqns.lower()}/{hub.lower()}/{group.lower()}/{kind}/"


def _int(text: str | None) -> int | None:
    if text is None or not text.strip() or text.strip().lower() == NO_OFFSET:
        return None
    try:
        return int(text)
    except ValueError:
        return None


class BlobCheckpointStore:
    def __init__(self, blobs: BlobService, container: str = CONTAINER) -> None:
        self.blobs = blobs
        self.container = container

    async def create_if_not_exists(self) -> None:
        await self.blobs.create_container(self.container, exist_ok=True)

    # -- ownership -------------------------------------------------------------------------------

    async def list_ownership(self, fqns: str, hub: str, group: str) -> list[Ownership]:
        start = prefix(fqns, hub, group, "ownership")
        found: list[Ownership] = []
        marker: str | None = None
        while True:
            page = await self.blobs.list_blobs(self.container, prefix=start, marker=marker)
            for blob in page.items:
                found.append(Ownership(fqns, hub, group, blob.name[len(start):], blob.metadata.get(OWNER_ID, ""),
                                       blob.last_modified, blob.etag.strip('"')))
            if not page.next_marker:
                return found
            marker = page.next_marker

    async def claim(self, desired: Iterable[Ownership]) -> list[Ownership]:
        """Claim (or renew, or relinquish with an empty owner) each; returns those that succeeded."""
        claimed: list[Ownership] = []
        for ownership in desired:
            name = prefix(ownership.fully_qualified_namespace, ownership.event_hub, ownership.consumer_group,
                          "ownership") + ownership.partition_id
            metadata = {OWNER_ID: ownership.owner_id}
            etag = ownership.etag
            try:
                if etag is not None:
                    try:
                        props = await self.blobs.upload_blob(self.container, name, b"", metadata=metadata,
                                                             if_match=f'"{etag}"')
                    except BlobNotFound:
                        etag = None  # deleted under us: claim it as new
                if etag is None:
                    props = await self.blobs.upload_blob(self.container, name, b"", metadata=metadata,
                                                         overwrite=False)
            except (PreconditionFailed, ResourceConflict):
                continue  # another processor changed or created it first: not ours
            claimed.append(replace(ownership, last_modified=props.last_modified, etag=props.etag.strip('"')))
        return claimed

    # -- checkpoints -----------------------------------------------------------------------------

    async def get_checkpoint(self, fqns: str, hub: str, group: str, partition_id: str) -> Checkpoint | None:
        name = prefix(fqns, hub, group, "checkpoint") + partition_id
        try:
            props = await self.blobs.get_blob_properties(self.container, name)
        except BlobNotFound:
            return await self._legacy(fqns, hub, group, partition_id)
        offset, sequence = _int(props.metadata.get(OFFSET)), _int(props.metadata.get(SEQUENCE_NUMBER))
        if offset is None and sequence is None:
            return None  # not a valid checkpoint: start from the initial offset
        return Checkpoint(partition_id, offset, sequence, props.last_modified)

    async def _legacy(self, fqns: str, hub: str, group: str, partition_id: str) -> Checkpoint | None:
        try:
            data, props = await self.blobs.download_blob(self.container, f"{fqns}/{hub}/{group}/{partition_id}")
        except BlobNotFound:
            return None
        try:
            doc = json.loads(data)
        except ValueError:
            return None
        if not isinstance(doc, dict) or "Offset" not in doc or not isinstance(doc.get("SequenceNumber"), int):
            return None
        offset = _int(doc.get("Offset") if isinstance(doc.get("Offset"), str) else None)
        return Checkpoint(partition_id, offset, doc["SequenceNumber"], props.last_modified)

    async def update_checkpoint(self, fqns: str, hub: str, group: str, partition_id: str,
                                offset: int, sequence_number: int) -> None:
        name = prefix(fqns, hub, group, "checkpoint") + partition_id
        metadata = {OFFSET: str(offset), SEQUENCE_NUMBER: str(sequence_number)}
        try:
            await self.blobs.set_blob_metadata(self.container, name, metadata)
        except BlobNotFound:
            await self.blobs.upload_blob(self.container, name, b"", metadata=metadata)

    async def list_checkpoints(self, fqns: str, hub: str, group: str) -> list[Checkpoint]:
        start = prefix(fqns, hub, group, "checkpoint")
        page = await self.blobs.list_blobs(self.container, prefix=start)
        return [Checkpoint(b.name[len(start):], _int(b.metadata.get(OFFSET)), _int(b.metadata.get(SEQUENCE_NUMBER)),
                           b.last_modified) for b in page.items]
