"""`ServiceBusBroker` written once over a store database (`sqlconn.StoreDatabase`).

Every operation is one write transaction (grouped with others issued at the same moment,
`write_group`), serialized per namespace by the backend: BEGIN IMMEDIATE on the embedded file,
the namespace's lock on PostgreSQL. So hosts sharing the namespace never receive the same
message, lock the same session twice or lose a settlement. Time comes from the Clock the
backend gives (on PostgreSQL the server's), so lock expiries and schedules agree across hosts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from funchost.clock import Clock
from funchost.storage.servicebus import (
    DEFAULT_RULE,
    MAX_DELIVERY_COUNT_EXCEEDED,
    EntityInfo,
    EntityProperties,
    InvalidServiceBusInput,
    MessageNotFound,
    MessagingEntityAlreadyExists,
    OutgoingMessage,
    ReceivedMessage,
    Rule,
    SessionLock,
    split_dead_letter,
    subscription_path,
    validate_entity_name,
    validate_subscription_name,
)
from funchost.storage.servicebus_rules import validate_rule
from funchost.storage.servicebussql.rows import (
    TOKEN_SQL,
    encode_entity_properties,
    encode_rules,
    received_from_row,
    token_prefix,
)
from funchost.storage.servicebussql.sessions import SessionOperations
from funchost.storage.servicebussql.store import (
    MAX_DELIVERY_DESCRIPTION,
    Entity,
    anything_due,
    check_size,
    dead_letter,
    load_entity,
    locked_row,
    modify_properties,
    send_one,
    sweep,
)
from funchost.storage.sqlconn import Conn, Row, StoreDatabase
from funchost.storage.write_group import WriteGroup

# Available to a receiver: parameters (now, now).
_READY = ("state IN ('active', 'scheduled') AND visible_at <= ? AND locked_until IS NULL"
          " AND (dlq = 1 OR expires_at IS NULL OR expires_at > ?)")


class SqlServiceBusBroker(SessionOperations):
    """The namespace `namespace` on `db` (its tables: `rows.SCHEMA` or the PostgreSQL steps)."""

    def __init__(self, namespace: str, clock: Clock, db: StoreDatabase) -> None:
        self.namespace = namespace
        self._clock = clock
        self._db = db
        self._writes: WriteGroup[Conn] = WriteGroup(db)
        self._dedup_counter = [0]
        self._idle: set[str] = set()  # paths whose last receive found nothing

    def _now(self) -> float:
        return self._clock.now().timestamp()

    # -- entities --------------------------------------------------------------------------------

    async def create_queue(self, name: str, properties: EntityProperties | None = None) -> None:
        validate_entity_name(name, "queue")
        await self._writes.run(lambda c: self._create(c, name, "queue", None, properties, None, exists_ok=False))

    async def create_topic(self, name: str, properties: EntityProperties | None = None) -> None:
        validate_entity_name(name, "topic")
        await self._writes.run(lambda c: self._create(c, name, "topic", None, properties, None, exists_ok=False))

    async def create_subscription(self, topic: str, name: str, properties: EntityProperties | None = None,
                                  rules: Sequence[Rule] | None = None) -> None:
        validate_subscription_name(name)
        for rule in rules or ():
            validate_rule(rule)

        def op(conn: Conn) -> None:
            load_entity(conn, topic, kinds=("topic",))
            self._create(conn, subscription_path(topic, name), "subscription", topic.lower(), properties,
                         rules, exists_ok=False)

        await self._writes.run(op)

    async def apply_entities(self, queues: Mapping[str, EntityProperties],
                             topics: Mapping[str, tuple[EntityProperties, Mapping[str, tuple[EntityProperties,
                                                                                               Sequence[Rule]]]]]
                             ) -> None:
        for name in queues:
            validate_entity_name(name, "queue")
        for name, (_, subscriptions) in topics.items():
            validate_entity_name(name, "topic")
            for sub, (_, rules) in subscriptions.items():
                validate_subscription_name(sub)
                for rule in rules:
                    validate_rule(rule)

        def op(conn: Conn) -> None:
            for name, props in queues.items():
                self._create(conn, name, "queue", None, props, None, exists_ok=True)
            for name, (props, subscriptions) in topics.items():
                self._create(conn, name, "topic", None, props, None, exists_ok=True)
                for sub, (sub_props, rules) in subscriptions.items():
                    self._create(conn, subscription_path(name, sub), "subscription", name.lower(), sub_props,
                                 rules, exists_ok=True)

        await self._writes.run(op)

    @staticmethod
    def _create(conn: Conn, path: str, kind: str, topic: str | None,
                properties: EntityProperties | None, rules: Sequence[Rule] | None, *, exists_ok: bool) -> None:
        encoded = encode_entity_properties(properties or EntityProperties())
        encoded_rules = encode_rules(list(rules) if rules else [DEFAULT_RULE])
        row = conn.execute("SELECT kind FROM entities WHERE key = ?", (path.lower(),)).fetchone()
        if row is not None:
            if not exists_ok or row["kind"] != kind:
                raise MessagingEntityAlreadyExists(f"the messaging entity '{path}' already exists")
            conn.execute("UPDATE entities SET properties = ?, rules = ? WHERE key = ?",
                         (encoded, encoded_rules, path.lower()))
            return
        conn.execute("INSERT INTO entities(key, path, kind, topic, properties, rules) VALUES (?,?,?,?,?,?)",
                     (path.lower(), path, kind, topic, encoded, encoded_rules))

    # Reads that report on messages apply due transitions first (expiry, lock lapses), so what a
    # tool sees is what the next receiver would see.

    async def get_entity(self, path: str) -> EntityInfo:
        now = self._now()

        def op(conn: Conn) -> EntityInfo:
            entity = load_entity(conn, path)
            if entity.kind != "topic":
                sweep(conn, entity, now)
            return self._info(conn, entity, now)

        return await self._writes.run(op)

    async def list_entities(self) -> list[EntityInfo]:
        now = self._now()

        def op(conn: Conn) -> list[EntityInfo]:
            entities = [Entity(r) for r in conn.execute("SELECT * FROM entities ORDER BY key").fetchall()]
            for entity in entities:
                if entity.kind != "topic":
                    sweep(conn, entity, now)
            return [self._info(conn, entity, now) for entity in entities]

        return await self._writes.run(op)

    @staticmethod
    def _info(conn: Conn, entity: Entity, now: float) -> EntityInfo:
        counts = {"active": 0, "scheduled": 0, "deferred": 0, "dead_letter": 0, "locked": 0}
        for row in conn.execute(
                "SELECT dlq, state, visible_at > ? AS future, locked_until > ? AS locked, count(*) AS n"
                " FROM messages WHERE entity = ? GROUP BY 1, 2, 3, 4", (now, now, entity.key)):
            if row["dlq"]:
                counts["dead_letter"] += row["n"]
            elif row["state"] == "deferred":
                counts["deferred"] += row["n"]
            elif row["state"] == "scheduled" and row["future"]:
                counts["scheduled"] += row["n"]
            else:
                counts["active"] += row["n"]
                if row["locked"]:
                    counts["locked"] += row["n"]
        return EntityInfo(entity.path, entity.kind, entity.properties, **counts)

    # -- sending ---------------------------------------------------------------------------------

    async def send(self, entity: str, messages: Sequence[OutgoingMessage]) -> list[int]:
        for message in messages:
            check_size(message)
        now = self._now()

        def op(conn: Conn) -> list[int]:
            target = load_entity(conn, entity, kinds=("queue", "topic"))
            if target.properties.requires_session and any(m.session_id is None for m in messages):
                raise InvalidServiceBusInput(f"the entity '{target.path}' requires sessions: every message "
                                             "needs a SessionId")
            return [send_one(conn, target, m, now, self._dedup_counter) for m in messages]

        return await self._writes.run(op)

    async def cancel_scheduled(self, entity: str, sequence_numbers: Sequence[int]) -> None:
        def op(conn: Conn) -> None:
            target = load_entity(conn, entity, kinds=("queue",))
            conn.executemany("DELETE FROM messages WHERE entity = ? AND dlq = 0 AND seq = ? AND state = 'scheduled'",
                             [(target.key, seq) for seq in sequence_numbers])

        await self._writes.run(op)

    # -- receiving -------------------------------------------------------------------------------

    async def receive(self, path: str, max_messages: int = 1, *, session: SessionLock | None = None
                      ) -> list[ReceivedMessage]:
        if max_messages < 1:
            raise InvalidServiceBusInput(f"max_messages must be at least 1, got {max_messages}")
        name, dlq = split_dead_letter(path)
        now = self._now()
        prefix = token_prefix()

        def op(conn: Conn) -> list[ReceivedMessage]:
            entity = _swept_source(conn, name, now)
            until = now + entity.properties.lock_duration
            where = f"entity = ? AND dlq = ? AND {_READY}"
            params: list[Any] = [entity.key, int(dlq), now, now]
            if entity.properties.requires_session and not dlq:
                held = self._held_session(conn, entity, session, now)
                where += " AND session_id = ?"
                params.append(held.session_id)
                until = held.locked_until.timestamp()
            rows = conn.execute(
                f"UPDATE messages SET lock_token = {TOKEN_SQL}, locked_until = ?,"
                " delivery_count = delivery_count + 1, state = 'active'"
                f" WHERE id IN (SELECT id FROM messages WHERE {where} ORDER BY seq LIMIT ?) RETURNING *",
                [prefix, until, *params, max_messages]).fetchall()
            rows.sort(key=lambda r: r["seq"])
            return [received_from_row(r) for r in rows]

        if session is None and path in self._idle and not await self._db.read(
                lambda conn: self._due(conn, name, dlq, now)):
            return []
        received = await self._writes.run(op)
        if received:
            self._idle.discard(path)
        else:
            self._idle.add(path)
        return received

    @staticmethod
    def _due(conn: Conn, name: str, dlq: bool, now: float) -> bool:
        """An idle receiver's poll: a snapshot read, no write lock (which, on PostgreSQL, every
        host's sends and receives of the namespace take in turn). A session entity always takes
        the write path, which refuses a receive without an accepted session."""
        entity = load_entity(conn, name, kinds=("queue", "subscription"))
        return (entity.properties.requires_session and not dlq) or anything_due(conn, entity, dlq, now)

    async def receive_and_delete(self, path: str, max_messages: int = 1) -> list[ReceivedMessage]:
        name, dlq = split_dead_letter(path)
        now = self._now()

        def op(conn: Conn) -> list[ReceivedMessage]:
            entity = _swept_source(conn, name, now)
            rows = conn.execute(
                f"DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE entity = ? AND dlq = ?"
                f" AND {_READY} ORDER BY seq LIMIT ?) RETURNING *",
                (entity.key, int(dlq), now, now, max_messages)).fetchall()
            rows.sort(key=lambda r: r["seq"])
            return [received_from_row(r, locked=False) for r in rows]

        return await self._writes.run(op)

    async def peek(self, path: str, max_messages: int = 32, from_sequence: int = 0) -> list[ReceivedMessage]:
        name, dlq = split_dead_letter(path)
        now = self._now()

        def op(conn: Conn) -> list[ReceivedMessage]:
            entity = _swept_source(conn, name, now)
            rows = conn.execute(
                "SELECT * FROM messages WHERE entity = ? AND dlq = ? AND seq >= ?"
                " AND (dlq = 1 OR expires_at IS NULL OR expires_at > ? OR state = 'deferred')"
                " ORDER BY seq LIMIT ?", (entity.key, int(dlq), from_sequence, now, max_messages)).fetchall()
            return [received_from_row(r, locked=False) for r in rows]

        return await self._writes.run(op)

    async def receive_deferred(self, path: str, sequence_numbers: Sequence[int],
                               *, session: SessionLock | None = None) -> list[ReceivedMessage]:
        name, dlq = split_dead_letter(path)
        now = self._now()
        prefix = token_prefix()

        def op(conn: Conn) -> list[ReceivedMessage]:
            entity = _swept_source(conn, name, now)
            until = now + entity.properties.lock_duration
            if entity.properties.requires_session and not dlq:
                until = self._held_session(conn, entity, session, now).locked_until.timestamp()
            found = []
            for seq in sequence_numbers:
                row = conn.execute(
                    f"UPDATE messages SET lock_token = {TOKEN_SQL}, locked_until = ?,"
                    " delivery_count = delivery_count + 1 WHERE entity = ? AND dlq = ? AND seq = ?"
                    " AND state = 'deferred' AND locked_until IS NULL RETURNING *",
                    (prefix, until, entity.key, int(dlq), seq)).fetchone()
                if row is None:
                    raise MessageNotFound(f"no deferred message with sequence number {seq} in '{path}'")
                found.append(received_from_row(row))
            return found

        return await self._writes.run(op)

    # -- settlement ------------------------------------------------------------------------------

    def _settle(self, path: str, lock_token: str, action: Any) -> Any:
        name, dlq = split_dead_letter(path)
        now = self._now()

        def op(conn: Conn) -> Any:
            entity = load_entity(conn, name, kinds=("queue", "subscription"))
            row = locked_row(conn, entity, dlq, lock_token, now)
            return action(conn, entity, row, now)

        return self._writes.run(op)

    async def complete(self, path: str, lock_token: str) -> None:
        await self._settle(path, lock_token, lambda c, e, row, now: c.execute(
            "DELETE FROM messages WHERE id = ?", (row["id"],)))

    async def abandon(self, path: str, lock_token: str,
                      properties_to_modify: Mapping[str, Any] | None = None) -> None:
        def action(conn: Conn, entity: Entity, row: Row, now: float) -> None:
            modify_properties(conn, row, dict(properties_to_modify or {}))
            limit = entity.properties.max_delivery_count
            if not row["dlq"] and row["delivery_count"] >= limit:
                dead_letter(conn, entity, row["id"], now, MAX_DELIVERY_COUNT_EXCEEDED,
                            MAX_DELIVERY_DESCRIPTION.format(count=limit))
            else:
                conn.execute("UPDATE messages SET lock_token = NULL, locked_until = NULL WHERE id = ?", (row["id"],))

        await self._settle(path, lock_token, action)

    async def dead_letter(self, path: str, lock_token: str, reason: str | None = None,
                          description: str | None = None,
                          properties_to_modify: Mapping[str, Any] | None = None) -> None:
        def action(conn: Conn, entity: Entity, row: Row, now: float) -> None:
            if row["dlq"]:
                raise InvalidServiceBusInput("a message in a dead-letter queue cannot be dead-lettered again")
            modify_properties(conn, row, dict(properties_to_modify or {}))
            dead_letter(conn, entity, row["id"], now, reason, description)

        await self._settle(path, lock_token, action)

    async def defer(self, path: str, lock_token: str,
                    properties_to_modify: Mapping[str, Any] | None = None) -> None:
        def action(conn: Conn, entity: Entity, row: Row, now: float) -> None:
            modify_properties(conn, row, dict(properties_to_modify or {}))
            conn.execute("UPDATE messages SET state = 'deferred', lock_token = NULL, locked_until = NULL"
                         " WHERE id = ?", (row["id"],))

        await self._settle(path, lock_token, action)

    async def renew_lock(self, path: str, lock_token: str) -> datetime:
        def action(conn: Conn, entity: Entity, row: Row, now: float) -> datetime:
            if row["session_id"] is not None and entity.properties.requires_session:
                raise InvalidServiceBusInput("locks of session messages are renewed with the session lock")
            until = now + entity.properties.lock_duration
            conn.execute("UPDATE messages SET locked_until = ? WHERE id = ?", (until, row["id"]))
            return datetime.fromtimestamp(until, self._clock.now().tzinfo)

        result: datetime = await self._settle(path, lock_token, action)
        return result

    async def purge(self, path: str) -> int:
        name, dlq = split_dead_letter(path)

        def op(conn: Conn) -> int:
            entity = load_entity(conn, name, kinds=("queue", "subscription"))
            return conn.execute("DELETE FROM messages WHERE entity = ? AND dlq = ?", (entity.key, int(dlq))).rowcount

        return await self._writes.run(op)

    async def aclose(self) -> None:
        await self._db.aclose()


def _swept_source(conn: Conn, name: str, now: float) -> Entity:
    """The queue or subscription a receiver reads, with the transitions `now` makes due applied."""
    entity = load_entity(conn, name, kinds=("queue", "subscription"))
    sweep(conn, entity, now)
    return entity
