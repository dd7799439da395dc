"""Row conversions of the SQL Service Bus broker, and its tables on SQLite (one file per namespace).

A message row is one copy in one queue or subscription (a topic stores nothing itself):
`dlq` marks the dead-letter sub-queue, `state` is active / scheduled / deferred, a lock is
`lock_token` + `locked_until`. System and application properties live in one JSON column;
sequence numbers come from the entity's own counter, so each copy of a topic message has the
sequence number of its subscription.
"""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime
from typing import Any

from funchost.storage.servicebus import (
    CorrelationFilter,
    EntityProperties,
    OutgoingMessage,
    ReceivedMessage,
    Rule,
    SqlFilter,
    TrueFilter,
)
from funchost.storage.sqlconn import Row

SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    key TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    topic TEXT,
    properties TEXT NOT NULL,
    rules TEXT NOT NULL DEFAULT '[]',
    next_seq INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity TEXT NOT NULL,
    dlq INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL,
    session_id TEXT,
    state TEXT NOT NULL DEFAULT 'active',
    visible_at REAL NOT NULL,
    enqueued_at REAL NOT NULL,
    expires_at REAL,
    delivery_count INTEGER NOT NULL DEFAULT 0,
    lock_token TEXT,
    locked_until REAL,
    props TEXT NOT NULL,
    body BLOB NOT NULL,
    dead_letter_reason TEXT,
    dead_letter_description TEXT,
    dead_letter_source TEXT
);
CREATE INDEX IF NOT EXISTS messages_ready ON messages(entity, dlq, seq) WHERE locked_until IS NULL;
CREATE INDEX IF NOT EXISTS messages_locked ON messages(entity, locked_until) WHERE locked_until IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_expiry ON messages(entity, expires_at) WHERE expires_at IS NOT NULL AND dlq = 0;
CREATE UNIQUE INDEX IF NOT EXISTS messages_token ON messages(lock_token) WHERE lock_token IS NOT NULL;
CREATE TABLE IF NOT EXISTS sessions (
    entity TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state BLOB,
    token TEXT,
    locked_until REAL,
    PRIMARY KEY (entity, session_id)
);
CREATE TABLE IF NOT EXISTS dedup (
    entity TEXT NOT NULL,
    message_id TEXT NOT NULL,
    seen_at REAL NOT NULL,
    PRIMARY KEY (entity, message_id)
)
"""

_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))

_PROPERTY_FIELDS = ("message_id", "content_type", "correlation_id", "subject", "to", "reply_to",
                    "reply_to_session_id", "partition_key", "transaction_partition_key")


# A lock token's last group: the row id as 12 decimal digits (valid hex digits too), in SQL
# both engines run (neither `printf` nor `lpad` is in both).
TOKEN_SQL = "? || substr('000000000000' || CAST(id AS TEXT), length(CAST(id AS TEXT)) + 1, 12)"


def token_prefix() -> str:
    """24 random hex digits shaped as the first four groups of a version-4 GUID; a row id as
    the last group (TOKEN_SQL) makes each lock token unique without a random draw per message."""
    h = f"{_random.getrandbits(96):024x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-"


def new_message_id() -> str:
    """A GUID in "N" format, as the extension's output converter assigns."""
    return f"{_random.getrandbits(128):032x}"


def ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def encode_props(message: OutgoingMessage, message_id: str, ttl: float | None) -> str:
    data: dict[str, Any] = {name: getattr(message, name) for name in _PROPERTY_FIELDS}
    data["message_id"] = message_id
    data["application_properties"] = _jsonable(message.application_properties)
    data["time_to_live"] = ttl
    if message.scheduled_enqueue_time is not None:
        data["scheduled_enqueue_time"] = message.scheduled_enqueue_time.timestamp()
    return json.dumps(data, separators=(",", ":"))


def _jsonable(properties: Any) -> dict[str, Any]:
    """Application property values as JSON keeps them (str, numbers, bool, null); others as text."""
    result: dict[str, Any] = {}
    for key, value in dict(properties or {}).items():
        if value is None or isinstance(value, str | int | float | bool):
            result[str(key)] = value
        elif isinstance(value, datetime):
            result[str(key)] = value.isoformat()
        elif isinstance(value, bytes):
            result[str(key)] = value.decode("utf-8", errors="replace")
        else:
            result[str(key)] = str(value)
    return result


def outgoing_from_row(row: Row) -> OutgoingMessage:
    """The message as it was sent (for forwarding and redrive)."""
    data = json.loads(row["props"])
    return OutgoingMessage(
        body=bytes(row["body"]), session_id=row["session_id"],
        application_properties=data.get("application_properties") or {},
        time_to_live=data.get("time_to_live"),
        **{name: data.get(name) for name in _PROPERTY_FIELDS},
    )


def received_from_row(row: Row, *, locked: bool = True) -> ReceivedMessage:
    data = json.loads(row["props"])
    scheduled = data.get("scheduled_enqueue_time")
    return ReceivedMessage(
        body=bytes(row["body"]),
        sequence_number=row["seq"],
        enqueued_time=ts(row["enqueued_at"]),  # type: ignore[arg-type]
        expires_at=ts(row["expires_at"]),
        delivery_count=row["delivery_count"],
        lock_token=row["lock_token"] if locked else None,
        locked_until=ts(row["locked_until"]) if locked else None,
        state=row["state"],
        session_id=row["session_id"],
        application_properties=data.get("application_properties") or {},
        time_to_live=data.get("time_to_live"),
        scheduled_enqueue_time=ts(scheduled),
        dead_letter_reason=row["dead_letter_reason"],
        dead_letter_error_description=row["dead_letter_description"],
        dead_letter_source=row["dead_letter_source"],
        **{name: data.get(name) for name in _PROPERTY_FIELDS},
    )


def encode_entity_properties(properties: EntityProperties) -> str:
    return json.dumps(properties.__dict__)


def decode_entity_properties(text: str) -> EntityProperties:
    return EntityProperties(**json.loads(text))


def encode_rules(rules: list[Rule] | tuple[Rule, ...]) -> str:
    out = []
    for rule in rules:
        flt = rule.filter
        if isinstance(flt, CorrelationFilter):
            spec: dict[str, Any] = {"type": "correlation", **{k: v for k, v in flt.__dict__.items()
                                                               if k != "properties"},
                                    "properties": dict(flt.properties)}
        elif isinstance(flt, SqlFilter):
            spec = {"type": "sql", "expression": flt.expression}
        else:
            spec = {"type": "true"}
        out.append({"name": rule.name, "filter": spec, "action": rule.action})
    return json.dumps(out)


def decode_rules(text: str) -> list[Rule]:
    rules = []
    for item in json.loads(text):
        spec = dict(item["filter"])
        kind = spec.pop("type")
        flt: CorrelationFilter | SqlFilter | TrueFilter
        if kind == "correlation":
            flt = CorrelationFilter(**spec)
        elif kind == "sql":
            flt = SqlFilter(spec["expression"])
        else:
            flt = TrueFilter()
        rules.append(Rule(item["name"], flt, item.get("action")))
    return rules
