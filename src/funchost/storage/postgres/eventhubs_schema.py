"""The Event Hubs tables of one namespace on PostgreSQL: the embedded broker's tables
(`eventhubsql/broker.SCHEMA`) with PostgreSQL types and keys compared byte-wise (`COLLATE "C"`).

Each namespace has a schema of its own, `<schema>__eh__<namespace>`, as each embedded namespace
has a file of its own. Sequence numbers and offsets come from each partition's row
(`next_sequence`, `next_offset`), taken under the namespace's write lock: per partition they
follow commit order without gaps, whichever host sends.
"""

from __future__ import annotations

STEPS = ["""
CREATE TABLE hubs (
    key text COLLATE "C" PRIMARY KEY,
    name text NOT NULL,
    partition_count integer NOT NULL,
    retention float8 NOT NULL,
    created float8 NOT NULL,
    fixed_groups integer NOT NULL DEFAULT 0,
    round_robin integer NOT NULL DEFAULT 0
);
CREATE TABLE consumer_groups (
    hub text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    name text NOT NULL,
    PRIMARY KEY (hub, key)
);
CREATE TABLE partitions (
    hub text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    next_sequence bigint NOT NULL DEFAULT 0,
    next_offset bigint NOT NULL DEFAULT 0,
    last_enqueued float8,
    PRIMARY KEY (hub, id)
);
CREATE TABLE events (
    hub text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    "offset" bigint NOT NULL,
    enqueued float8 NOT NULL,
    pkey text,
    body bytea NOT NULL,
    props text,
    content_type text,
    correlation_id text,
    message_id text,
    PRIMARY KEY (hub, partition, seq)
);
CREATE INDEX events_by_offset ON events (hub, partition, "offset");
CREATE INDEX events_by_time ON events (hub, enqueued);
"""]


def namespace_schema(schema: str, namespace: str) -> str:
    return f"{schema}__eh__{namespace}"
