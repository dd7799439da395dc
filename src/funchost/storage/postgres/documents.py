"""`--storage postgres` documents: the embedded store's rules (`storage/document_store.py` and
`document_sql`, one implementation) on PostgreSQL, one schema per account (connection name),
`<schema>__documents__<connection>`, through `PgScopedDatabase`.

* Writes take the account's lock (`PgScopedDatabase`): one at a time across every host, so each
  partition's LSN is given out in commit order without gaps and an If-Match check (the change
  feed leases' ETags) and the write it guards are one step for every host.
* Reads (point reads, queries, the change feed, the latest LSN) run in one REPEATABLE READ,
  READ ONLY snapshot: never blocked by writers; a feed read never sees LSN n+1 without n.
* `_ts`, `modified` and TTL expiries come from the backend's clock: the server's (ServerClock)
  unless a ManualClock drives time, so hosts with skewed clocks agree on what expired.
"""

from __future__ import annotations

from funchost.clock import Clock
from funchost.documents.exceptions import CosmosBadRequestError
from funchost.storage.document_store import SqlDocumentStore
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.scoped import PgScopedDatabase
from funchost.storage.postgres.text_guard import NulFreeText

# The embedded tables with PostgreSQL types; ids and partition keys compared byte-wise as in SQLite.
STEPS = ["""
CREATE TABLE databases (
    name text COLLATE "C" PRIMARY KEY,
    rid text NOT NULL,
    ts bigint NOT NULL
);
CREATE TABLE containers (
    db text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    rid text NOT NULL,
    pk_path text NOT NULL,
    partitions integer NOT NULL,
    default_ttl bigint,
    ts bigint NOT NULL,
    PRIMARY KEY (db, name)
);
CREATE TABLE partitions (
    db text COLLATE "C" NOT NULL,
    container text COLLATE "C" NOT NULL,
    pid integer NOT NULL,
    lsn bigint NOT NULL,
    PRIMARY KEY (db, container, pid)
);
CREATE TABLE items (
    db text COLLATE "C" NOT NULL,
    container text COLLATE "C" NOT NULL,
    pk text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    pid integer NOT NULL,
    lsn bigint NOT NULL,
    modified float8 NOT NULL,
    expires float8,
    body text NOT NULL,
    PRIMARY KEY (db, container, pk, id)
);
CREATE INDEX items_feed ON items (db, container, pid, lsn);
CREATE INDEX items_id ON items (db, container, id);
"""]


def documents_schema(schema: str, connection: str) -> str:
    return f"{schema}__documents__{connection}"


class PostgresDocumentStore(SqlDocumentStore):
    """`DocumentStore` of one account (connection name) on the server."""

    snapshot_reads = True

    def __init__(self, database: PgDatabase, name: str, clock: Clock) -> None:
        scoped = PgScopedDatabase(database, documents_schema(database.config.schema, name), "documents", STEPS,
                                  what=f"document account '{name}'")
        super().__init__(NulFreeText(scoped, _no_nul), name, clock)


def _no_nul(value: str) -> CosmosBadRequestError:
    return CosmosBadRequestError(f"{value!r}: ids, names and keys cannot contain the NUL character with "
                                 "--storage postgres")
