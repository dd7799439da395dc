"""The Event Hubs broker Protocol (the port), with the service's rules.

An event hub is a set of partitions, each an append-only log: every event gets the partition's
next sequence number (from 0) and an offset (a growing position in the log), and stays readable
until the hub's retention period has passed. A send is one batch: all of it lands in ONE
partition, chosen by the partition key's hash (as the service hashes it, see
`eventhub_partitioning`), an explicit partition id, or round robin across sends. Reading never
removes anything; consumer groups are independent views whose positions (checkpoints) are kept
by the consumer, not by the broker.

Rules enforced here for every backend: entity names (1-256 characters for hubs, 1-50 for
consumer groups; letters, digits, '.', '-', '_', starting and ending with a letter or digit), the
1 MB limit of one publish (Standard tier), partition counts 1..32.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from funchost.errors import InvalidResourceName, ResourceNotFound, StorageError

DEFAULT_CONSUMER_GROUP = "$Default"
DEFAULT_PARTITION_COUNT = 4
MAX_PARTITION_COUNT = 32
MAX_PUBLISH_BYTES = 1024 * 1024  # one send (an event or a batch) on Standard: 1 MB
DEFAULT_RETENTION_SECONDS = 24 * 3600.0  # one day, the Standard tier's default retention
EVENT_OVERHEAD_BYTES = 64  # what funchost counts per event beyond body, properties and key

_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


class EventHubNotFound(ResourceNotFound):
    code = "MessagingEntityNotFound"


class ConsumerGroupNotFound(ResourceNotFound):
    code = "MessagingEntityNotFound"


class MessageSizeExceeded(StorageError):
    code, status = "MessageSizeExceeded", 413


def entity_key(name: str) -> str:
    """Event Hubs entity names are case-insensitive."""
    return name.lower()


def validate_hub_name(name: str) -> None:
    if not isinstance(name, str) or not 1 <= len(name) <= 256 or not _NAME.match(name):
        raise InvalidResourceName(
            f"the event hub name {name!r} is invalid: 1-256 characters, letters, digits, periods, hyphens and "
            "underscores, starting and ending with a letter or digit")


def validate_consumer_group_name(name: str) -> None:
    if isinstance(name, str) and name.lower() == DEFAULT_CONSUMER_GROUP.lower():
        return
    if not isinstance(name, str) or not 1 <= len(name) <= 50 or not _NAME.match(name):
        raise InvalidResourceName(
            f"the consumer group name {name!r} is invalid: 1-50 characters, letters, digits, periods, hyphens and "
            "underscores, starting and ending with a letter or digit")


def validate_partition_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITION_COUNT:
        raise InvalidResourceName(f"the partition count must be between 1 and {MAX_PARTITION_COUNT}, got {count!r}")


@dataclass(frozen=True)
class EventToSend:
    body: bytes
    properties: Mapping[str, Any] = field(default_factory=dict)  # application properties (JSON values)
    content_type: str | None = None
    correlation_id: str | None = None
    message_id: str | None = None

    def size(self, partition_key: str | None = None) -> int:
        """The bytes this event counts against the publish limit (an approximation of its AMQP size)."""
        props = sum(len(str(k)) + len(str(v)) for k, v in self.properties.items())
        extras = sum(len(x) for x in (self.content_type, self.correlation_id, self.message_id, partition_key) if x)
        return len(self.body) + props + extras + EVENT_OVERHEAD_BYTES


def batch_size(events: Sequence[EventToSend], partition_key: str | None = None) -> int:
    return sum(e.size(partition_key) for e in events)


def check_publish_size(events: Sequence[EventToSend], partition_key: str | None = None) -> None:
    size = batch_size(events, partition_key)
    if size > MAX_PUBLISH_BYTES:
        raise MessageSizeExceeded(f"The received message (size: {size} bytes) exceeds the limit ({MAX_PUBLISH_BYTES} "
                                  "bytes) currently allowed on the link.")


@dataclass(frozen=True)
class ReceivedEvent:
    partition_id: str
    sequence_number: int
    offset: int
    enqueued_time: datetime
    body: bytes
    partition_key: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)
    content_type: str | None = None
    correlation_id: str | None = None
    message_id: str | None = None


@dataclass(frozen=True)
class EventPosition:
    """Where a reader starts: like the SDK's `EventPosition` (earliest, latest, offset, sequence
    number or enqueued time; offset and sequence number inclusive or not)."""

    kind: str  # "earliest" | "latest" | "offset" | "sequence" | "enqueued"
    value: int | datetime | None = None
    inclusive: bool = False

    @classmethod
    def earliest(cls) -> EventPosition:
        return cls("earliest")

    @classmethod
    def latest(cls) -> EventPosition:
        return cls("latest")

    @classmethod
    def after_sequence(cls, sequence_number: int) -> EventPosition:
        return cls("sequence", sequence_number, False)

    @classmethod
    def after_offset(cls, offset: int) -> EventPosition:
        return cls("offset", offset, False)

    @classmethod
    def enqueued_at_or_after(cls, when: datetime) -> EventPosition:
        return cls("enqueued", when, True)


@dataclass(frozen=True)
class HubProperties:
    name: str
    partition_ids: tuple[str, ...]
    created_at: datetime
    retention_seconds: float
    consumer_groups: tuple[str, ...] = (DEFAULT_CONSUMER_GROUP,)


@dataclass(frozen=True)
class PartitionProperties:
    hub: str
    partition_id: str
    beginning_sequence_number: int  # -1 when the partition holds no (retained) event
    last_enqueued_sequence_number: int  # -1 when nothing was ever sent
    last_enqueued_offset: int  # -1 when nothing was ever sent
    last_enqueued_time: datetime | None
    retained_events: int

    @property
    def is_empty(self) -> bool:
        return self.retained_events == 0


class EventHubBroker(Protocol):
    """One Event Hubs namespace. Errors: EventHubNotFound, ConsumerGroupNotFound,
    MessageSizeExceeded, InvalidResourceName (all StorageErrors)."""

    namespace: str  # the fully qualified namespace as clients see it ("localhost" when embedded)

    async def create_hub(self, name: str, *, partition_count: int | None = None,
                         consumer_groups: Sequence[str] = (), retention_seconds: float | None = None,
                         exist_ok: bool = True) -> HubProperties: ...

    async def hub(self, name: str) -> HubProperties:
        """Properties of an existing hub (EventHubNotFound otherwise)."""

    async def list_hubs(self) -> list[HubProperties]: ...

    async def ensure_consumer_group(self, hub: str, name: str) -> None:
        """ConsumerGroupNotFound when the group does not exist and cannot be created here."""

    async def send(self, hub: str, events: Sequence[EventToSend], *, partition_key: str | None = None,
                   partition_id: str | None = None) -> list[ReceivedEvent]:
        """Append one batch to one partition, atomically; returns the events as stored."""

    async def read(self, hub: str, partition_id: str, position: EventPosition, max_events: int, *,
                   consumer_group: str = DEFAULT_CONSUMER_GROUP) -> list[ReceivedEvent]:
        """Up to `max_events` retained events from `position`, in sequence order (never blocks long).
        Reading is the same for every consumer group; a real namespace needs the group to read."""

    async def partition_properties(self, hub: str, partition_id: str) -> PartitionProperties: ...

    async def aclose(self) -> None: ...
