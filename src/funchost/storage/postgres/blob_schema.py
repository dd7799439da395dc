"""The blob tables of one account on PostgreSQL: the embedded store's tables (`sqlite/blob_rows`,
`blob_extras`, `blob_uploads`) with PostgreSQL types, names compared byte-wise (`COLLATE "C"`,
the order Azure lists in) and content in `bytea` chunks of CHUNK_SIZE bytes.

Each account has a schema of its own, `<schema>__<account>`, as each embedded account has a file
of its own, so the store's statements run unchanged with that schema on the search path.
"""

from __future__ import annotations

# `rowid` on staged_blocks: the staging order Get Block List reports (SQLite's implicit rowid).
STEPS = ["""
CREATE TABLE containers (
    name text COLLATE "C" PRIMARY KEY,
    versioning integer NOT NULL DEFAULT 0,
    created float8 NOT NULL
);
CREATE TABLE blobs (
    container text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    content_id bigint NOT NULL,
    size bigint NOT NULL,
    etag text NOT NULL,
    content_type text NOT NULL,
    content_md5 bytea,
    last_modified float8 NOT NULL,
    creation_time float8 NOT NULL,
    metadata text NOT NULL,
    version_id text,
    lease_state text NOT NULL DEFAULT 'available',
    lease_id text,
    lease_duration integer,
    lease_expires float8,
    lease_break_at float8,
    props text,
    PRIMARY KEY (container, name)
);
CREATE TABLE versions (
    container text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    version_id text NOT NULL,
    content_id bigint NOT NULL,
    size bigint NOT NULL,
    etag text NOT NULL,
    content_type text NOT NULL,
    content_md5 bytea,
    last_modified float8 NOT NULL,
    creation_time float8 NOT NULL,
    metadata text NOT NULL,
    props text,
    PRIMARY KEY (container, name, version_id)
);
CREATE INDEX versions_content ON versions (content_id);
CREATE INDEX blobs_content ON blobs (content_id);
CREATE TABLE chunks (
    content_id bigint NOT NULL,
    seq integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (content_id, seq)
);
CREATE TABLE counters (
    name text PRIMARY KEY,
    value bigint NOT NULL
);
CREATE TABLE changes (
    seq bigint PRIMARY KEY,
    kind text NOT NULL,
    api text NOT NULL,
    container text NOT NULL,
    name text NOT NULL,
    properties text
);
CREATE TABLE container_props (
    name text COLLATE "C" PRIMARY KEY,
    etag text NOT NULL,
    last_modified float8 NOT NULL,
    metadata text NOT NULL DEFAULT '{}',
    public_access text,
    acl text NOT NULL DEFAULT '[]',
    lease_state text NOT NULL DEFAULT 'available',
    lease_id text,
    lease_duration integer,
    lease_expires float8,
    lease_break_at float8
);
CREATE TABLE staged_blocks (
    rowid bigint GENERATED ALWAYS AS IDENTITY,
    container text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    block_id text NOT NULL,
    size bigint NOT NULL,
    content_id bigint NOT NULL,
    PRIMARY KEY (container, name, block_id)
);
CREATE TABLE committed_blocks (
    container text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    idx integer NOT NULL,
    block_id text NOT NULL,
    size bigint NOT NULL,
    PRIMARY KEY (container, name, idx)
);
CREATE TABLE pending_contents (
    content_id bigint PRIMARY KEY,
    started float8 NOT NULL
);
"""]


def account_schema(schema: str, account: str) -> str:
    return f"{schema}__{account}"
