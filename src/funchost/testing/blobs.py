"""`harness.blobs`: upload blobs, see blob-trigger poison messages and receipts, as a user would.

Uploads go through the host's storage, so a blob trigger on the embedded store is woken at once;
`await host.advance(2)` (the discovery interval) lets it run on the manual clock::

    await host.blobs.upload("images", "cat.png", b"...")
    await host.advance(2)
    assert await host.blobs.poison() == [{"Type": "BlobTrigger", "FunctionId": "Host.Functions.resize", ...}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from funchost.errors import ContainerNotFound, QueueNotFound
from funchost.runtime.contracts import Runtime
from funchost.storage.blobs import BlobProperties, BlobService
from funchost.triggers.blob.messages import POISON_QUEUE, host_queue_name
from funchost.triggers.blob.receipts import HOSTS_CONTAINER
from funchost.triggers.queue.messages import UndecodableMessage, decode_text


class BlobTools:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def service(self, connection: str | None = None) -> BlobService:
        return self.runtime.storage.blobs(connection)

    async def upload(self, container: str, name: str, data: bytes | str, *, metadata: Mapping[str, str] | None = None,
                     content_type: str | None = None, connection: str | None = None) -> BlobProperties:
        """Write a blob (creating the container), overwriting one of the same name."""
        body = data.encode("utf-8") if isinstance(data, str) else data
        service = self.service(connection)
        try:
            return await service.upload_blob(container, name, body, metadata=metadata, content_type=content_type)
        except ContainerNotFound:
            await service.create_container(container, exist_ok=True)
            return await service.upload_blob(container, name, body, metadata=metadata, content_type=content_type)

    async def download(self, container: str, name: str, connection: str | None = None) -> bytes:
        data, _ = await self.service(connection).download_blob(container, name)
        return data

    async def delete(self, container: str, name: str, connection: str | None = None) -> None:
        await self.service(connection).delete_blob(container, name)

    async def names(self, container: str, prefix: str | None = None, connection: str | None = None) -> list[str]:
        names: list[str] = []
        marker: str | None = None
        try:
            while True:
                page = await self.service(connection).list_blobs(container, prefix=prefix, marker=marker)
                names.extend(p.name for p in page.items)
                marker = page.next_marker
                if not marker:
                    return names
        except ContainerNotFound:
            return []

    async def receipts(self, function_name: str | None = None) -> list[str]:
        """Receipt blob names of this host (``blobreceipts/{hostId}/...``), optionally of one function."""
        prefix = f"blobreceipts/{self.runtime.host_id}/"
        if function_name is not None:
            prefix += f"Host.Functions.{function_name}/"
        return await self.names(HOSTS_CONTAINER, prefix)

    async def poison(self, connection: str | None = None) -> list[dict[str, Any]]:
        """The trigger messages in ``webjobs-blobtrigger-poison``, parsed."""
        return [json.loads(text) for text in await self._bodies(POISON_QUEUE, connection)]

    async def pending(self) -> int:
        """Messages on this host's internal queue, visible or not."""
        try:
            props = await self.runtime.storage.queues(None).get_queue_properties(host_queue_name(self.runtime.host_id))
        except QueueNotFound:
            return 0
        return props.approximate_message_count

    async def _bodies(self, queue: str, connection: str | None) -> list[str]:
        try:
            messages = await self.runtime.storage.queues(connection).peek_messages(queue, max_messages=32)
        except QueueNotFound:
            return []
        encoding = _encoding(self.runtime)
        bodies = []
        for message in messages:
            try:
                bodies.append(decode_text(message.content, encoding).decode("utf-8", errors="replace"))
            except UndecodableMessage:
                bodies.append(message.content)
        return bodies


def _encoding(runtime: Runtime) -> str:
    from funchost.triggers.blob.options import blob_trigger_options

    return blob_trigger_options(runtime).message_encoding
