"""The Event Grid store Protocol: durable topics' events, deliveries, cursors and validations.

Accepted events and one delivery row per (event, matching subscription) are written in one
transaction before the publisher gets its 200, so nothing accepted is lost across a restart.
Delivery rows move ``pending`` -> ``delivered`` | ``deadlettering`` -> ``deadlettered`` | ``dropped``.
Several hosts may share a store: `lease_due` hands each due row to one owner at a time and
`update` only applies to rows the caller still holds, so no row is ever delivered by two hosts
at once. The delivery engine, the blob event watcher and the CLI use only this Protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

PENDING = "pending"
DEADLETTERING = "deadlettering"  # given up; waiting to be written to the dead-letter container
DELIVERED = "delivered"
DEADLETTERED = "deadlettered"
DROPPED = "dropped"
FINAL_STATES = (DELIVERED, DEADLETTERED, DROPPED)


@dataclass(frozen=True)
class Target:
    """A subscription an event matched, with its retry limits."""

    subscription: str
    max_attempts: int
    ttl_seconds: float


@dataclass(frozen=True)
class NewEvent:
    event: dict[str, Any]
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class DeliveryRow:
    id: int
    subscription: str
    event_seq: int
    topic: str
    schema: str
    event: dict[str, Any]
    size: int
    published: float
    state: str
    attempts: int
    max_attempts: int
    next_attempt: float
    expires: float
    last_outcome: str | None
    last_status: int | None
    last_attempt: float | None
    reason: str | None
    gave_up: float | None


@dataclass(frozen=True)
class SubscriptionStats:
    subscription: str
    delivered: int = 0
    pending: int = 0
    deadlettering: int = 0
    deadlettered: int = 0
    dropped: int = 0
    next_attempt: float | None = None
    retrying: int = 0  # pending rows that have failed at least once


class EventGridStore(Protocol):
    async def append(self, topic: str, schema: str, events: Sequence[NewEvent], now: float,
                     cursor: tuple[str, str | None, str] | None = None) -> bool:
        """Store events and their delivery rows atomically.

        With `cursor=(name, expected, new)` the write only happens if the stored cursor still
        equals `expected` (then it becomes `new`): how hosts sharing a store publish each blob
        change exactly once. Returns False when the cursor had moved.
        """

    async def get_cursor(self, name: str) -> str | None: ...

    async def init_cursor(self, name: str, value: str) -> str:
        """Set the cursor if absent; return the stored value."""

    async def lease_due(self, owner: str, now: float, lease_seconds: float, limit: int) -> list[DeliveryRow]:
        """Up to `limit` pending / dead-lettering rows due at `now`, leased to `owner`."""

    async def next_due(self) -> float | None:
        """When the next row becomes due (its attempt time or the end of its lease)."""

    async def update(self, owner: str, changes: Iterable[tuple[int, dict[str, Any]]]) -> int:
        """Apply changes to rows `owner` still holds and release their lease; the count applied.

        Keys are the delivery's fields: state, attempts, next_attempt, last_outcome,
        last_status, last_attempt, reason, gave_up, finished, location.
        """

    async def is_validated(self, subscription: str, endpoint_hash: str) -> bool: ...

    async def set_validated(self, subscription: str, endpoint_hash: str, now: float) -> None: ...

    async def stats(self) -> list[SubscriptionStats]: ...

    async def deliveries(self, subscription: str | None = None) -> list[DeliveryRow]: ...

    async def aclose(self) -> None: ...
