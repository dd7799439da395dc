"""The Service Bus tables of one namespace on PostgreSQL: the embedded broker's tables
(`servicebussql/rows.SCHEMA`) with PostgreSQL types and entity keys compared byte-wise
(`COLLATE "C"`, the order the embedded store lists them in).

Each namespace has a schema of its own, `<schema>__sb__<namespace>`, as each embedded namespace
has a file of its own, so the broker's statements run unchanged with that schema on the search
path. Message ids come from an identity column (never reused, as SQLite's AUTOINCREMENT);
sequence numbers from each entity's `next_seq`, given out under the namespace's write lock, so
they follow commit order without gaps. Every receive rewrites a message row and every
completion deletes one, so `messages` gets the queue table's aggressive autovacuum settings.
"""

from __future__ import annotations

STEPS = ["""
CREATE TABLE entities (
    key text COLLATE "C" PRIMARY KEY,
    path text NOT NULL,
    kind text NOT NULL,
    topic text COLLATE "C",
    properties text NOT NULL,
    rules text NOT NULL DEFAULT '[]',
    next_seq bigint NOT NULL DEFAULT 1
);
CREATE TABLE messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entity text COLLATE "C" NOT NULL,
    dlq integer NOT NULL DEFAULT 0,
    seq bigint NOT NULL,
    session_id text,
    state text NOT NULL DEFAULT 'active',
    visible_at float8 NOT NULL,
    enqueued_at float8 NOT NULL,
    expires_at float8,
    delivery_count integer NOT NULL DEFAULT 0,
    lock_token text,
    locked_until float8,
    props text NOT NULL,
    body bytea NOT NULL,
    dead_letter_reason text,
    dead_letter_description text,
    dead_letter_source text
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_limit = 2000,
        autovacuum_vacuum_insert_scale_factor = 0.05);
CREATE INDEX messages_ready ON messages (entity, dlq, seq) WHERE locked_until IS NULL;
CREATE INDEX messages_locked ON messages (entity, locked_until) WHERE locked_until IS NOT NULL;
CREATE INDEX messages_expiry ON messages (entity, expires_at) WHERE expires_at IS NOT NULL AND dlq = 0;
CREATE UNIQUE INDEX messages_token ON messages (lock_token) WHERE lock_token IS NOT NULL;
CREATE TABLE sessions (
    entity text COLLATE "C" NOT NULL,
    session_id text NOT NULL,
    state bytea,
    token text,
    locked_until float8,
    PRIMARY KEY (entity, session_id)
);
CREATE TABLE dedup (
    entity text COLLATE "C" NOT NULL,
    message_id text NOT NULL,
    seen_at float8 NOT NULL,
    PRIMARY KEY (entity, message_id)
);
"""]


def namespace_schema(schema: str, namespace: str) -> str:
    return f"{schema}__sb__{namespace}"
