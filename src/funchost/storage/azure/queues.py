"""`QueueService` over the official async SDK (`azure.storage.queue.aio`).

The SDK client is built with no message encode/decode policy: the Protocol works on message
*text* exactly as stored, and the queue trigger / output binding apply `messageEncoding` (base64
or none) themselves. So a message written by another client with `TextBase64EncodePolicy`, or as
plain text, reads back as the same text it has on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.storage.queue import QueueMessage as SdkMessage
from azure.storage.queue.aio import QueueClient, QueueServiceClient

from funchost.storage.azure.endpoints import Endpoint
from funchost.storage.azure.errors import translated
from funchost.storage.queues import QueueMessage, QueueProperties, UpdateReceipt

# Azure reports "never expires" (messagettl=-1) as 9999-12-31T23:59:59Z.
_NEVER_YEAR = 9999


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _expiry(value: datetime | None) -> datetime | None:
    value = _aware(value)
    return None if value is None or value.year >= _NEVER_YEAR else value


def _message(msg: SdkMessage, *, content: str | None = None) -> QueueMessage:
    return QueueMessage(
        id=msg.id,
        content=content if content is not None else (msg.content or ""),
        dequeue_count=int(msg.dequeue_count or 0),
        insertion_time=_aware(msg.inserted_on) or datetime.now(UTC),
        expiration_time=_expiry(msg.expires_on),
        next_visible_time=_aware(msg.next_visible_on),
        pop_receipt=msg.pop_receipt,
    )


class AzureQueueService:
    """One storage account's queue service, reached through `QueueServiceClient`."""

    def __init__(self, endpoint: Endpoint, **client_options: Any) -> None:
        self.account_name = endpoint.account_name
        self.endpoint = endpoint
        # message_encode_policy / message_decode_policy left unset = the SDK's no-op policies.
        self._client = QueueServiceClient(endpoint.account_url, credential=endpoint.credential, **client_options)
        self._queues: dict[str, QueueClient] = {}

    def _queue(self, name: str) -> QueueClient:
        client = self._queues.get(name)
        if client is None:
            client = self._queues[name] = self._client.get_queue_client(name)
        return client

    async def create_queue(self, name: str, metadata: Mapping[str, str] | None = None) -> bool:
        with translated():
            try:
                await self._queue(name).create_queue(metadata=dict(metadata) if metadata else None)
            except ResourceExistsError as exc:
                # 204 = it exists with the same metadata (the SDK raises for it); 409 = different.
                if exc.response is not None and exc.response.status_code == 204:
                    return False
                raise
        return True

    async def delete_queue(self, name: str) -> None:
        with translated():
            await self._queue(name).delete_queue()

    async def queue_exists(self, name: str) -> bool:
        with translated():
            try:
                await self._queue(name).get_queue_properties()
            except ResourceNotFoundError:
                return False
        return True

    async def list_queues(self, prefix: str | None = None) -> list[str]:
        with translated():
            return [q.name async for q in self._client.list_queues(name_starts_with=prefix)]

    async def get_queue_properties(self, name: str) -> QueueProperties:
        with translated():
            props = await self._queue(name).get_queue_properties()
        return QueueProperties(
            name=name,
            approximate_message_count=int(props.approximate_message_count or 0),
            metadata=dict(props.metadata or {}),
        )

    async def set_queue_metadata(self, name: str, metadata: Mapping[str, str]) -> None:
        with translated():
            await self._queue(name).set_queue_metadata(metadata=dict(metadata))

    async def put_message(
        self,
        name: str,
        content: str,
        *,
        visibility_timeout: int = 0,
        time_to_live: int | None = None,
    ) -> QueueMessage:
        with translated():
            sent = await self._queue(name).send_message(
                content,
                visibility_timeout=visibility_timeout or None,
                time_to_live=time_to_live,
            )
        return _message(sent, content=content)

    async def get_messages(
        self, name: str, *, max_messages: int = 1, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        # (max_messages < 1, which the SDK's pager would answer with nothing without asking the
        # service, never gets here: storage.validation checks the range first.)
        # Exactly one Get Messages call: the first page of the SDK's pager.
        pager = self._queue(name).receive_messages(
            messages_per_page=max_messages, max_messages=max_messages, visibility_timeout=visibility_timeout
        )
        with translated():
            async for page in pager.by_page():
                return [_message(m) async for m in page]
        return []

    async def peek_messages(self, name: str, *, max_messages: int = 1) -> list[QueueMessage]:
        with translated():
            peeked = await self._queue(name).peek_messages(max_messages=max_messages)
        return [_message(m) for m in peeked]

    async def update_message(
        self,
        name: str,
        message_id: str,
        pop_receipt: str,
        *,
        visibility_timeout: int,
        content: str | None = None,
    ) -> UpdateReceipt:
        with translated():
            updated = await self._queue(name).update_message(
                message_id, pop_receipt=pop_receipt, visibility_timeout=visibility_timeout, content=content
            )
        next_visible = _aware(updated.next_visible_on)
        if updated.pop_receipt is None or next_visible is None:  # the service always returns both
            raise RuntimeError("Update Message returned no pop receipt")
        return UpdateReceipt(pop_receipt=updated.pop_receipt, next_visible_time=next_visible)

    async def delete_message(self, name: str, message_id: str, pop_receipt: str) -> None:
        with translated():
            await self._queue(name).delete_message(message_id, pop_receipt=pop_receipt)

    async def clear_messages(self, name: str) -> None:
        with translated():
            await self._queue(name).clear_messages()

    async def oldest_insertion_time(self, name: str) -> datetime | None:
        """Of the visible messages only: the service offers no way to see invisible ones."""
        peeked = await self.peek_messages(name, max_messages=1)
        return peeked[0].insertion_time if peeked else None

    async def aclose(self) -> None:
        # Queue clients share the service client's transport; closing it closes them all.
        self._queues.clear()
        await self._client.close()

    def __repr__(self) -> str:
        return f"AzureQueueService(account={self.account_name!r}, url={self.endpoint.account_url!r})"
