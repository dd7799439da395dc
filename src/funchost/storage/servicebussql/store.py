"""Synchronous building blocks of the SQL broker, run inside one write transaction each.

Everything time-based is evaluated lazily against `now` at the start of the operation that
needs it (the sweep): an expired lock releases its message (or dead-letters it once
MaxDeliveryCount deliveries have been made), an expired message is dead-lettered or dropped,
a scheduled message whose time has come is simply visible. Nothing depends on a timer running,
so several processes on one file see the same state.
"""

from __future__ import annotations

import json
from typing import Any

from funchost.storage.servicebus import (
    MAX_DELIVERY_COUNT_EXCEEDED,
    MAX_FORWARD_HOPS,
    MAX_MESSAGE_BYTES,
    TTL_EXPIRED,
    EntityProperties,
    MessageLockLost,
    MessageSizeExceeded,
    MessagingEntityNotFound,
    OutgoingMessage,
    SessionLockLost,
)
from funchost.storage.servicebus_rules import route
from funchost.storage.servicebussql.rows import (
    decode_entity_properties,
    decode_rules,
    encode_props,
    new_message_id,
    outgoing_from_row,
)
from funchost.storage.sqlconn import Conn, Row

MAX_DELIVERY_DESCRIPTION = "Message could not be consumed after {count} delivery attempts."
TTL_DESCRIPTION = "The message expired and was dead lettered."
DEDUP_PRUNE_EVERY = 500  # sends between prunes of the duplicate-detection history


class Entity:
    """An entity row: key (lower-cased path), display path, kind and properties."""

    __slots__ = ("key", "path", "kind", "topic", "properties", "rules")

    def __init__(self, row: Row) -> None:
        self.key: str = row["key"]
        self.path: str = row["path"]
        self.kind: str = row["kind"]
        self.topic: str | None = row["topic"]
        self.properties: EntityProperties = decode_entity_properties(row["properties"])
        self.rules = decode_rules(row["rules"]) if self.kind == "subscription" else []


def load_entity(conn: Conn, path: str, *, kinds: tuple[str, ...] | None = None) -> Entity:
    row = conn.execute("SELECT * FROM entities WHERE key = ?", (path.lower(),)).fetchone()
    if row is None or (kinds is not None and row["kind"] not in kinds):
        what = " or ".join(kinds) if kinds else "entity"
        raise MessagingEntityNotFound(f"the messaging {what} '{path}' could not be found")
    return Entity(row)


def subscriptions_of(conn: Conn, topic_key: str) -> list[Entity]:
    rows = conn.execute("SELECT * FROM entities WHERE kind = 'subscription' AND topic = ? ORDER BY key",
                        (topic_key,)).fetchall()
    return [Entity(r) for r in rows]


def check_size(message: OutgoingMessage) -> None:
    size = len(message.body) + len(json.dumps(dict(message.application_properties), default=str))
    if size > MAX_MESSAGE_BYTES:
        raise MessageSizeExceeded(f"the message is {size} bytes; the limit is {MAX_MESSAGE_BYTES} bytes "
                                  "(Standard tier, body and properties)")


# --- sending --------------------------------------------------------------------------------------


def send_one(conn: Conn, entity: Entity, message: OutgoingMessage, now: float,
             dedup_counter: list[int], hops: int = 0) -> int:
    """Store `message` on a queue or fan it out on a topic; 0 when dropped (duplicate, no match)."""
    message_id = message.message_id or new_message_id()
    props = entity.properties
    if props.requires_duplicate_detection and _is_duplicate(conn, entity, message_id, now, dedup_counter):
        return 0
    if entity.kind == "topic":
        first = 0
        for subscription in subscriptions_of(conn, entity.key):
            copy = route(subscription.rules, message)
            if copy is not None:
                seq = _deliver(conn, subscription, copy, message_id, now, hops)
                first = first or seq
        return first
    return _deliver(conn, entity, message, message_id, now, hops)


def _deliver(conn: Conn, entity: Entity, message: OutgoingMessage, message_id: str,
             now: float, hops: int) -> int:
    forward = entity.properties.forward_to
    if forward and hops < MAX_FORWARD_HOPS:
        target = load_entity(conn, forward, kinds=("queue", "topic"))
        return send_one(conn, target, message, now, [0], hops + 1)
    return _insert(conn, entity, message, message_id, now)


def _insert(conn: Conn, entity: Entity, message: OutgoingMessage, message_id: str,
            now: float, *, dlq: int = 0, dead_letter: tuple[str | None, str | None, str | None] | None = None
            ) -> int:
    default_ttl = entity.properties.default_message_ttl
    ttl = message.time_to_live
    if default_ttl is not None and (ttl is None or ttl > default_ttl):
        ttl = default_ttl  # the entity's default caps a longer message TTL
    scheduled = message.scheduled_enqueue_time.timestamp() if message.scheduled_enqueue_time else None
    enqueued = max(now, scheduled) if scheduled is not None else now
    state = "scheduled" if scheduled is not None and scheduled > now else "active"
    expires = None if ttl is None or dlq else enqueued + ttl
    seq = conn.execute("UPDATE entities SET next_seq = next_seq + 1 WHERE key = ? RETURNING next_seq - 1",
                       (entity.key,)).fetchone()[0]
    reason, description, source = dead_letter or (None, None, None)
    conn.execute(
        "INSERT INTO messages(entity, dlq, seq, session_id, state, visible_at, enqueued_at, expires_at, props,"
        " body, dead_letter_reason, dead_letter_description, dead_letter_source)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (entity.key, dlq, seq, message.session_id, state, enqueued, enqueued, expires,
         encode_props(message, message_id, message.time_to_live), message.body, reason, description, source))
    return int(seq)


def _is_duplicate(conn: Conn, entity: Entity, message_id: str, now: float,
                  counter: list[int]) -> bool:
    window = entity.properties.duplicate_detection_window
    counter[0] += 1
    if counter[0] % DEDUP_PRUNE_EVERY == 0:
        conn.execute("DELETE FROM dedup WHERE entity = ? AND seen_at <= ?", (entity.key, now - window))
    row = conn.execute("SELECT seen_at FROM dedup WHERE entity = ? AND message_id = ?",
                       (entity.key, message_id)).fetchone()
    if row is not None and row["seen_at"] > now - window:
        return True
    conn.execute("INSERT INTO dedup(entity, message_id, seen_at) VALUES (?,?,?)"
                 " ON CONFLICT(entity, message_id) DO UPDATE SET seen_at = excluded.seen_at",
                 (entity.key, message_id, now))
    return False


# --- time-based transitions -----------------------------------------------------------------------


def sweep(conn: Conn, entity: Entity, now: float) -> None:
    """Apply every transition that `now` makes due on this entity (see the module docstring)."""
    expired_locks = conn.execute(
        "SELECT id, dlq, delivery_count FROM messages WHERE entity = ? AND locked_until IS NOT NULL"
        " AND locked_until <= ?", (entity.key, now)).fetchall()
    limit = entity.properties.max_delivery_count
    for row in expired_locks:
        if not row["dlq"] and row["delivery_count"] >= limit:
            dead_letter(conn, entity, row["id"], now, MAX_DELIVERY_COUNT_EXCEEDED,
                        MAX_DELIVERY_DESCRIPTION.format(count=limit))
        else:
            conn.execute("UPDATE messages SET lock_token = NULL, locked_until = NULL WHERE id = ?", (row["id"],))
    expired = conn.execute(
        "SELECT id FROM messages WHERE entity = ? AND dlq = 0 AND expires_at IS NOT NULL AND expires_at <= ?"
        " AND locked_until IS NULL AND state != 'deferred'", (entity.key, now)).fetchall()
    for row in expired:
        if entity.properties.dead_lettering_on_message_expiration:
            dead_letter(conn, entity, row["id"], now, TTL_EXPIRED, TTL_DESCRIPTION)
        else:
            conn.execute("DELETE FROM messages WHERE id = ?", (row["id"],))


def anything_due(conn: Conn, entity: Entity, dlq: bool, now: float) -> bool:
    """Whether a receive of this (sub-)queue now would lock a message or change any state: a
    message ready, or a transition the sweep would apply. Read-only, so an idle receiver can ask
    without taking the namespace's write lock; each EXISTS follows one of the partial indexes."""
    row = conn.execute(
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM messages WHERE entity = ? AND dlq = ? AND locked_until IS NULL"
        "  AND state IN ('active', 'scheduled') AND visible_at <= ? AND (dlq = 1 OR expires_at IS NULL"
        "  OR expires_at > ?))"
        " OR EXISTS (SELECT 1 FROM messages WHERE entity = ? AND locked_until IS NOT NULL AND locked_until <= ?)"
        " OR EXISTS (SELECT 1 FROM messages WHERE entity = ? AND dlq = 0 AND expires_at IS NOT NULL"
        "  AND expires_at <= ? AND locked_until IS NULL AND state != 'deferred')"
        " THEN 1 ELSE 0 END AS due",
        (entity.key, int(dlq), now, now, entity.key, now, entity.key, now)).fetchone()
    return bool(row["due"])


def dead_letter(conn: Conn, entity: Entity, row_id: int, now: float, reason: str | None,
                description: str | None) -> None:
    """Move a message to the entity's `$deadletterqueue` (or forward it where configured).

    The reason and description are also added to the application properties, as the service does.
    """
    row = conn.execute("SELECT * FROM messages WHERE id = ?", (row_id,)).fetchone()
    data = json.loads(row["props"])
    application = dict(data.get("application_properties") or {})
    if reason is not None:
        application["DeadLetterReason"] = reason
    if description is not None:
        application["DeadLetterErrorDescription"] = description
    data["application_properties"] = application
    target = entity.properties.forward_dead_lettered_messages_to
    if target:
        forward_to = load_entity(conn, target, kinds=("queue", "topic"))
        conn.execute("DELETE FROM messages WHERE id = ?", (row_id,))
        message = outgoing_from_row(row)
        message = OutgoingMessage(**{**message.__dict__, "application_properties": application})
        send_one(conn, forward_to, message, now, [0], 1)
        return
    conn.execute(
        "UPDATE messages SET dlq = 1, state = 'active', lock_token = NULL, locked_until = NULL, visible_at = ?,"
        " expires_at = NULL, props = ?, dead_letter_reason = ?, dead_letter_description = ? WHERE id = ?",
        (now, json.dumps(data, separators=(",", ":")), reason, description, row_id))


# --- locks ----------------------------------------------------------------------------------------


def locked_row(conn: Conn, entity: Entity, dlq: bool, lock_token: str, now: float) -> Row:
    """The message this lock token holds, or MessageLockLost (unknown, other entity, expired)."""
    row = conn.execute("SELECT * FROM messages WHERE lock_token = ?", (lock_token,)).fetchone()
    if row is None or row["entity"] != entity.key or bool(row["dlq"]) != dlq:
        raise MessageLockLost("the lock supplied is invalid: either it expired or the message was already "
                              "settled or removed")
    if row["locked_until"] <= now:
        if row["session_id"] is not None:
            raise SessionLockLost(f"the session lock of '{row['session_id']}' has expired")
        raise MessageLockLost("the lock supplied is invalid: it expired")
    return row  # type: ignore[no-any-return]


def modify_properties(conn: Conn, row: Row, changes: dict[str, Any] | None) -> None:
    if not changes:
        return
    data = json.loads(row["props"])
    application = dict(data.get("application_properties") or {})
    application.update(changes)
    data["application_properties"] = application
    conn.execute("UPDATE messages SET props = ? WHERE id = ?", (json.dumps(data, separators=(",", ":")), row["id"]))
