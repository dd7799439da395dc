"""Azure's argument rules applied in front of any backend (`queue_rules`, `blob_rules`).

A backend implements the primitives; these wrappers reject what the service would reject with
400 (names, metadata, message size, visibility and TTL ranges, lease ids and durations) before a
call reaches it, so every backend answers with the same codes and none carries its own copy of
the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any

from funchost.storage import blob_rules, queue_rules
from funchost.storage.blobs import BlobChangeListener, BlobListPage, BlobProperties, BlobService
from funchost.storage.queues import QueueMessage, QueueProperties, QueueService, UpdateReceipt

_name = queue_rules.validate_queue_name


class ValidatingQueueService:
    """`QueueService` with the Queue service's argument rules checked first."""

    def __init__(self, inner: QueueService) -> None:
        self.inner = inner
        self.account_name = inner.account_name

    async def create_queue(self, name: str, metadata: Mapping[str, str] | None = None) -> bool:
        _name(name)
        return await self.inner.create_queue(name, queue_rules.check_metadata(metadata) if metadata else None)

    async def delete_queue(self, name: str) -> None:
        await self.inner.delete_queue(_name(name))

    async def queue_exists(self, name: str) -> bool:
        return await self.inner.queue_exists(_name(name))

    async def list_queues(self, prefix: str | None = None) -> list[str]:
        return await self.inner.list_queues(prefix)

    async def get_queue_properties(self, name: str) -> QueueProperties:
        return await self.inner.get_queue_properties(_name(name))

    async def set_queue_metadata(self, name: str, metadata: Mapping[str, str]) -> None:
        await self.inner.set_queue_metadata(_name(name), queue_rules.check_metadata(metadata))

    async def put_message(
        self, name: str, content: str, *, visibility_timeout: int = 0, time_to_live: int | None = None
    ) -> QueueMessage:
        _name(name)
        queue_rules.check_message_text(content)
        queue_rules.check_put(visibility_timeout, time_to_live)
        return await self.inner.put_message(name, content, visibility_timeout=visibility_timeout,
                                            time_to_live=time_to_live)

    async def get_messages(
        self, name: str, *, max_messages: int = 1, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        _name(name)
        queue_rules.check_receive(max_messages, visibility_timeout)
        return await self.inner.get_messages(name, max_messages=max_messages, visibility_timeout=visibility_timeout)

    async def peek_messages(self, name: str, *, max_messages: int = 1) -> list[QueueMessage]:
        _name(name)
        queue_rules.check_count(max_messages)
        return await self.inner.peek_messages(name, max_messages=max_messages)

    async def update_message(
        self, name: str, message_id: str, pop_receipt: str, *, visibility_timeout: int, content: str | None = None
    ) -> UpdateReceipt:
        _name(name)
        if content is not None:
            queue_rules.check_message_text(content)
        queue_rules.check_update(visibility_timeout)
        return await self.inner.update_message(name, message_id, pop_receipt, visibility_timeout=visibility_timeout,
                                               content=content)

    def delete_message(self, name: str, message_id: str, pop_receipt: str) -> Coroutine[Any, Any, None]:
        """The inner service's call itself (one coroutine less per message); a bad name raises
        when called."""
        return self.inner.delete_message(_name(name), message_id, pop_receipt)

    async def clear_messages(self, name: str) -> None:
        await self.inner.clear_messages(_name(name))

    async def oldest_insertion_time(self, name: str) -> datetime | None:
        return await self.inner.oldest_insertion_time(_name(name))

    async def aclose(self) -> None:
        await self.inner.aclose()


def _lease_id(lease_id: str | None) -> None:
    if lease_id is not None:
        blob_rules.canonical_lease_id(lease_id)


class ValidatingBlobService:
    """`BlobService` with the Blob service's argument rules checked first."""

    def __init__(self, inner: BlobService) -> None:
        self.inner = inner
        self.account_name = inner.account_name

    async def create_container(self, name: str, *, exist_ok: bool = False, versioning: bool = False) -> bool:
        blob_rules.check_container_name(name)
        return await self.inner.create_container(name, exist_ok=exist_ok, versioning=versioning)

    async def delete_container(self, name: str) -> None:
        await self.inner.delete_container(name)

    async def container_exists(self, name: str) -> bool:
        return await self.inner.container_exists(name)

    async def list_containers(self, prefix: str | None = None) -> list[str]:
        return await self.inner.list_containers(prefix)

    async def upload_blob(
        self,
        container: str,
        name: str,
        data: bytes,
        *,
        content_type: str | None = None,
        metadata: Mapping[str, str] | None = None,
        overwrite: bool = True,
        if_match: str | None = None,
        lease_id: str | None = None,
    ) -> BlobProperties:
        blob_rules.check_blob_name(name)
        checked = blob_rules.check_metadata(metadata or {})
        _lease_id(lease_id)
        return await self.inner.upload_blob(container, name, data, content_type=content_type, metadata=checked,
                                            overwrite=overwrite, if_match=if_match, lease_id=lease_id)

    async def download_blob(
        self,
        container: str,
        name: str,
        *,
        offset: int = 0,
        length: int | None = None,
        version_id: str | None = None,
        if_match: str | None = None,
    ) -> tuple[bytes, BlobProperties]:
        blob_rules.check_range(offset, length)
        return await self.inner.download_blob(container, name, offset=offset, length=length,
                                              version_id=version_id, if_match=if_match)

    async def get_blob_properties(self, container: str, name: str, *, version_id: str | None = None) -> BlobProperties:
        return await self.inner.get_blob_properties(container, name, version_id=version_id)

    async def set_blob_metadata(self, container: str, name: str, metadata: Mapping[str, str]) -> BlobProperties:
        return await self.inner.set_blob_metadata(container, name, blob_rules.check_metadata(metadata))

    async def delete_blob(
        self, container: str, name: str, *, if_match: str | None = None, lease_id: str | None = None
    ) -> None:
        _lease_id(lease_id)
        await self.inner.delete_blob(container, name, if_match=if_match, lease_id=lease_id)

    async def list_blobs(
        self, container: str, *, prefix: str | None = None, marker: str | None = None, max_results: int = 5000
    ) -> BlobListPage:
        blob_rules.check_max_results(max_results)
        return await self.inner.list_blobs(container, prefix=prefix, marker=marker, max_results=max_results)

    async def acquire_lease(self, container: str, name: str, *, duration: int, lease_id: str | None = None) -> str:
        blob_rules.check_lease_duration(duration)
        _lease_id(lease_id)
        return await self.inner.acquire_lease(container, name, duration=duration, lease_id=lease_id)

    async def renew_lease(self, container: str, name: str, lease_id: str) -> None:
        _lease_id(lease_id)
        await self.inner.renew_lease(container, name, lease_id)

    async def release_lease(self, container: str, name: str, lease_id: str) -> None:
        _lease_id(lease_id)
        await self.inner.release_lease(container, name, lease_id)

    async def break_lease(self, container: str, name: str, *, break_period: int | None = None) -> int:
        blob_rules.check_break_period(break_period)
        return await self.inner.break_lease(container, name, break_period=break_period)

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        return self.inner.subscribe(listener)

    async def aclose(self) -> None:
        await self.inner.aclose()
