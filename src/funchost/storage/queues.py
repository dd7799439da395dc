"""The queue service Protocol: Azure Queue storage semantics, implemented by every backend.

Message `content` is the message *text* as stored by the service (already base64-encoded when
the app uses messageEncoding=base64); encoding and decoding are the trigger's and binding's
business, as in the Azure SDK. Errors are `funchost.errors` storage errors carrying Azure codes.
The argument rules (names, sizes, ranges) are in `queue_rules`, applied in front of every backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, Protocol


class QueueMessage(NamedTuple):
    """One message as a receive, peek or put returns it; immutable. A named tuple, not a frozen
    dataclass: made for every received message, and a frozen dataclass's `__init__` (a call of
    `object.__setattr__` per field) costs three times as much."""

    id: str
    content: str
    dequeue_count: int
    insertion_time: datetime
    expiration_time: datetime | None  # None = never expires (ttl -1)
    next_visible_time: datetime | None
    pop_receipt: str | None  # None for peeked messages


@dataclass(frozen=True)
class UpdateReceipt:
    pop_receipt: str
    next_visible_time: datetime


@dataclass(frozen=True)
class QueueProperties:
    name: str
    approximate_message_count: int
    metadata: Mapping[str, str] = field(default_factory=dict)


class QueueService(Protocol):
    account_name: str

    async def create_queue(self, name: str, metadata: Mapping[str, str] | None = None) -> bool:
        """Create; True if created, False if it already existed with the same metadata.
        Raises QueueAlreadyExists (409) if it exists with different metadata."""

    async def delete_queue(self, name: str) -> None:
        """Raises QueueNotFound."""

    async def queue_exists(self, name: str) -> bool: ...

    async def list_queues(self, prefix: str | None = None) -> list[str]: ...

    async def get_queue_properties(self, name: str) -> QueueProperties: ...

    async def set_queue_metadata(self, name: str, metadata: Mapping[str, str]) -> None: ...

    async def put_message(
        self,
        name: str,
        content: str,
        *,
        visibility_timeout: int = 0,
        time_to_live: int | None = None,  # seconds; None = 7 days; -1 = never
    ) -> QueueMessage:
        """Returns the new message (with its pop receipt). RequestBodyTooLarge over 64 KiB."""

    async def get_messages(
        self, name: str, *, max_messages: int = 1, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        """Receive up to 1..32 visible messages, making them invisible; dequeue count +1."""

    async def peek_messages(self, name: str, *, max_messages: int = 1) -> list[QueueMessage]: ...

    async def update_message(
        self,
        name: str,
        message_id: str,
        pop_receipt: str,
        *,
        visibility_timeout: int,
        content: str | None = None,
    ) -> UpdateReceipt:
        """PopReceiptMismatch (400) / MessageNotFound (404) as the service does."""

    async def delete_message(self, name: str, message_id: str, pop_receipt: str) -> None: ...

    async def clear_messages(self, name: str) -> None: ...

    async def oldest_insertion_time(self, name: str) -> datetime | None:
        """When the oldest message still in the queue was put, visible or not (None: empty).
        A backend that cannot see invisible messages answers for the visible ones."""

    async def aclose(self) -> None: ...
