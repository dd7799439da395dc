"""The Service Bus broker Protocol: queues, topics, subscriptions with the service's rules.

The port every Service Bus backend implements (the embedded SQLite broker today). Behaviour
that belongs to the *service* lives behind it: peek-lock with lock duration and renewal,
DeliveryCount, MaxDeliveryCount then the dead-letter sub-queue, TTL, scheduled messages,
duplicate detection, sessions (one receiver per session) and topic fan-out through rules.
What the Functions *extension* adds (auto-complete, abandon on failure, concurrency) is the
trigger's business (``funchost.triggers.servicebus``).

Errors carry the names of the SDK's `ServiceBusFailureReason` as their `code`.
Sources: docs/servicebus.md (shared spec servicebus-eventhubs §1.10, §3.1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from funchost.errors import StorageError

# Standard tier: 256 KB per message, body plus properties (Service Bus quotas).
MAX_MESSAGE_BYTES = 256 * 1024
DEFAULT_LOCK_DURATION = 60.0
MAX_LOCK_DURATION = 300.0
DEFAULT_MAX_DELIVERY_COUNT = 10
# The service's default window for duplicate detection (sources disagree: 1 or 10 minutes).
DEFAULT_DUPLICATE_WINDOW = 600.0
MIN_DUPLICATE_WINDOW = 20.0
MAX_DUPLICATE_WINDOW = 7 * 24 * 3600.0
DEAD_LETTER_SUFFIX = "/$deadletterqueue"
MAX_DELIVERY_COUNT_EXCEEDED = "MaxDeliveryCountExceeded"
TTL_EXPIRED = "TTLExpiredException"
MAX_FORWARD_HOPS = 4


# --- errors (ServiceBusFailureReason) ------------------------------------------------------------


class ServiceBusError(StorageError):
    code, status = "GeneralError", 500


class MessagingEntityNotFound(ServiceBusError):
    code, status = "MessagingEntityNotFound", 404


class MessagingEntityAlreadyExists(ServiceBusError):
    code, status = "MessagingEntityAlreadyExists", 409


class MessageLockLost(ServiceBusError):
    code, status = "MessageLockLost", 410


class SessionLockLost(ServiceBusError):
    code, status = "SessionLockLost", 410


class SessionCannotBeLocked(ServiceBusError):
    code, status = "SessionCannotBeLocked", 409


class MessageNotFound(ServiceBusError):
    code, status = "MessageNotFound", 404


class MessageSizeExceeded(ServiceBusError):
    code, status = "MessageSizeExceeded", 413


class InvalidServiceBusInput(ServiceBusError):
    """A bad name, property or argument (the service answers 400 Bad Request)."""

    code, status = "BadRequest", 400


# --- entity names --------------------------------------------------------------------------------

_ENTITY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._/-]*[A-Za-z0-9])?$")
_SUBSCRIPTION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def validate_entity_name(name: str, what: str = "queue") -> str:
    """Queue and topic names: 1-260 letters, digits, '.', '-', '_', '/'; letter or digit at both
    ends (Service Bus naming rules). Names are case-insensitive."""
    if not isinstance(name, str) or not name:
        raise InvalidServiceBusInput(f"the {what} name must not be empty")
    if len(name) > 260:
        raise InvalidServiceBusInput(f"the {what} name '{name[:40]}...' is longer than 260 characters")
    if not _ENTITY.match(name) or "//" in name:
        raise InvalidServiceBusInput(
            f"invalid {what} name '{name}': use letters, digits, '.', '-', '_' and '/', "
            "starting and ending with a letter or digit")
    return name


def validate_subscription_name(name: str) -> str:
    """1-50 letters, digits, '.', '-', '_'; letter or digit at both ends."""
    if not isinstance(name, str) or not name:
        raise InvalidServiceBusInput("the subscription name must not be empty")
    if len(name) > 50 or not _SUBSCRIPTION.match(name):
        raise InvalidServiceBusInput(
            f"invalid subscription name '{name}': 1-50 letters, digits, '.', '-' and '_', "
            "starting and ending with a letter or digit")
    return name


def subscription_path(topic: str, subscription: str) -> str:
    """`<topic>/Subscriptions/<subscription>` (EntityNameFormatter.FormatSubscriptionPath)."""
    return f"{topic}/Subscriptions/{subscription}"


def split_dead_letter(path: str) -> tuple[str, bool]:
    """`orders/$DeadLetterQueue` -> ("orders", True); the suffix is case-insensitive."""
    if path.lower().endswith(DEAD_LETTER_SUFFIX):
        return path[: -len(DEAD_LETTER_SUFFIX)], True
    return path, False


# --- entities ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntityProperties:
    """Queue, topic or subscription properties (Config.json names, service defaults)."""

    lock_duration: float = DEFAULT_LOCK_DURATION
    max_delivery_count: int = DEFAULT_MAX_DELIVERY_COUNT
    default_message_ttl: float | None = None  # None = TimeSpan.MaxValue (never expires)
    dead_lettering_on_message_expiration: bool = False
    requires_session: bool = False
    requires_duplicate_detection: bool = False
    duplicate_detection_window: float = DEFAULT_DUPLICATE_WINDOW
    forward_to: str | None = None
    forward_dead_lettered_messages_to: str | None = None

    def __post_init__(self) -> None:
        if not 5 <= self.lock_duration <= MAX_LOCK_DURATION:
            raise InvalidServiceBusInput(f"LockDuration must be between 5 seconds and 5 minutes, "
                                         f"got {self.lock_duration:g} seconds")
        if self.max_delivery_count < 1:
            raise InvalidServiceBusInput(f"MaxDeliveryCount must be at least 1, got {self.max_delivery_count}")
        if self.default_message_ttl is not None and self.default_message_ttl <= 0:
            raise InvalidServiceBusInput("DefaultMessageTimeToLive must be positive")
        if not MIN_DUPLICATE_WINDOW <= self.duplicate_detection_window <= MAX_DUPLICATE_WINDOW:
            raise InvalidServiceBusInput("DuplicateDetectionHistoryTimeWindow must be between 20 seconds and 7 days")


@dataclass(frozen=True)
class CorrelationFilter:
    """Equality on system properties and application properties; unset fields match anything."""

    correlation_id: str | None = None
    message_id: str | None = None
    to: str | None = None
    reply_to: str | None = None
    subject: str | None = None
    session_id: str | None = None
    reply_to_session_id: str | None = None
    content_type: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SqlFilter:
    expression: str


@dataclass(frozen=True)
class TrueFilter:
    """The filter of the `$Default` rule every new subscription gets: accepts everything."""


@dataclass(frozen=True)
class Rule:
    name: str
    filter: CorrelationFilter | SqlFilter | TrueFilter
    action: str | None = None  # a SQL rule action: "SET sys.To = 'x'; REMOVE prop"


DEFAULT_RULE = Rule("$Default", TrueFilter())


@dataclass(frozen=True)
class EntityInfo:
    path: str  # as created: "orders", "events", "events/Subscriptions/audit"
    kind: str  # "queue" | "topic" | "subscription"
    properties: EntityProperties
    active: int = 0
    scheduled: int = 0
    deferred: int = 0
    dead_letter: int = 0
    locked: int = 0


# --- messages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutgoingMessage:
    """A message to send (azure.servicebus.ServiceBusMessage's settable properties)."""

    body: bytes
    message_id: str | None = None  # None: the broker assigns a GUID-like id
    content_type: str | None = None
    correlation_id: str | None = None
    subject: str | None = None
    to: str | None = None
    reply_to: str | None = None
    reply_to_session_id: str | None = None
    session_id: str | None = None
    partition_key: str | None = None
    transaction_partition_key: str | None = None
    application_properties: Mapping[str, Any] = field(default_factory=dict)
    time_to_live: float | None = None  # seconds; None = the entity's DefaultMessageTimeToLive
    scheduled_enqueue_time: datetime | None = None


@dataclass(frozen=True)
class ReceivedMessage:
    """A message as a receiver (or a peek) sees it."""

    body: bytes
    message_id: str
    sequence_number: int
    enqueued_time: datetime
    expires_at: datetime | None  # None = never
    delivery_count: int
    lock_token: str | None  # None for peeked messages
    locked_until: datetime | None
    state: str  # "active" | "scheduled" | "deferred"
    content_type: str | None = None
    correlation_id: str | None = None
    subject: str | None = None
    to: str | None = None
    reply_to: str | None = None
    reply_to_session_id: str | None = None
    session_id: str | None = None
    partition_key: str | None = None
    transaction_partition_key: str | None = None
    application_properties: Mapping[str, Any] = field(default_factory=dict)
    time_to_live: float | None = None
    scheduled_enqueue_time: datetime | None = None
    dead_letter_reason: str | None = None
    dead_letter_error_description: str | None = None
    dead_letter_source: str | None = None


@dataclass(frozen=True)
class SessionLock:
    """A held session: only its holder receives the session's messages."""

    entity: str
    session_id: str
    token: str
    locked_until: datetime


class ServiceBusBroker(Protocol):
    namespace: str

    # -- entities --
    async def create_queue(self, name: str, properties: EntityProperties | None = None) -> None:
        """MessagingEntityAlreadyExists if it exists."""

    async def create_topic(self, name: str, properties: EntityProperties | None = None) -> None: ...

    async def create_subscription(self, topic: str, name: str, properties: EntityProperties | None = None,
                                  rules: Sequence[Rule] | None = None) -> None:
        """With no rules the subscription gets `$Default` (accept everything)."""

    async def apply_entities(self, queues: Mapping[str, EntityProperties],
                             topics: Mapping[str, tuple[EntityProperties, Mapping[str, tuple[EntityProperties,
                                                                                               Sequence[Rule]]]]]
                             ) -> None:
        """Create or update entities from a declaration (Config.json), keeping their messages."""

    async def get_entity(self, path: str) -> EntityInfo:
        """Queue, topic or `<topic>/Subscriptions/<sub>` with message counts; MessagingEntityNotFound."""

    async def list_entities(self) -> list[EntityInfo]: ...

    # -- sending --
    async def send(self, entity: str, messages: Sequence[OutgoingMessage]) -> list[int]:
        """Enqueue (or schedule) on a queue or topic, atomically; sequence numbers of the
        stored copies (a topic's first matching copy per message; 0 when a duplicate or an
        unmatched topic message was dropped)."""

    async def cancel_scheduled(self, entity: str, sequence_numbers: Sequence[int]) -> None: ...

    # -- receiving (peek-lock) --
    async def receive(self, path: str, max_messages: int = 1, *, session: SessionLock | None = None
                      ) -> list[ReceivedMessage]:
        """Lock up to `max_messages` available messages in sequence order; DeliveryCount + 1.
        A session entity needs `session`; a DLQ path receives dead-lettered messages."""

    async def receive_and_delete(self, path: str, max_messages: int = 1) -> list[ReceivedMessage]: ...

    async def peek(self, path: str, max_messages: int = 32, from_sequence: int = 0) -> list[ReceivedMessage]:
        """Active, scheduled and deferred messages without locking them."""

    async def receive_deferred(self, path: str, sequence_numbers: Sequence[int],
                               *, session: SessionLock | None = None) -> list[ReceivedMessage]: ...

    # -- settlement (MessageLockLost when the lock token is unknown or expired) --
    async def complete(self, path: str, lock_token: str) -> None: ...

    async def abandon(self, path: str, lock_token: str,
                      properties_to_modify: Mapping[str, Any] | None = None) -> None: ...

    async def dead_letter(self, path: str, lock_token: str, reason: str | None = None,
                          description: str | None = None,
                          properties_to_modify: Mapping[str, Any] | None = None) -> None: ...

    async def defer(self, path: str, lock_token: str,
                    properties_to_modify: Mapping[str, Any] | None = None) -> None: ...

    async def renew_lock(self, path: str, lock_token: str) -> datetime: ...

    # -- sessions --
    async def accept_session(self, path: str, session_id: str | None = None) -> SessionLock | None:
        """Lock the given session, or the next session with available messages (None if none).
        SessionCannotBeLocked when the named session is held by another receiver."""

    async def renew_session_lock(self, session: SessionLock) -> SessionLock: ...

    async def release_session(self, session: SessionLock) -> None: ...

    async def get_session_state(self, session: SessionLock) -> bytes | None: ...

    async def set_session_state(self, session: SessionLock, state: bytes | None) -> None: ...

    async def purge(self, path: str) -> int:
        """Delete every message of a queue, subscription or DLQ (a tool, not a service call)."""

    async def aclose(self) -> None: ...
