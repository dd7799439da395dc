"""`--storage postgres` tables: the embedded store's rules (`storage/table_store.py`, one
implementation) on PostgreSQL, one schema per account (`<schema>__tables__<account>`), through
`PgScopedDatabase`: writes (entity group transactions included) serialized per account across
hosts, reads from one REPEATABLE READ snapshot. Timestamps come from the backend's clock (the
server's unless a ManualClock drives time), so hosts with skewed clocks write ordered ETags.
"""

from __future__ import annotations

from funchost.clock import Clock
from funchost.errors import InvalidInput
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.scoped import PgScopedDatabase
from funchost.storage.postgres.text_guard import NulFreeText
from funchost.storage.table_store import SqlTableService

# The embedded tables with PostgreSQL types: keys compared byte-wise (COLLATE "C", SQLite's
# order and the order a query returns), Timestamps as bigint 100 ns ticks, properties as JSON text.
STEPS = ["""
CREATE TABLE tables (
    key text COLLATE "C" PRIMARY KEY,
    name text NOT NULL,
    created float8 NOT NULL
);
CREATE TABLE entities (
    tbl text COLLATE "C" NOT NULL,
    pk text COLLATE "C" NOT NULL,
    rk text COLLATE "C" NOT NULL,
    ts bigint NOT NULL,
    props text NOT NULL,
    PRIMARY KEY (tbl, pk, rk)
);
"""]


def tables_schema(schema: str, account: str) -> str:
    return f"{schema}__tables__{account}"


class PostgresTableService(SqlTableService):
    """`TableService` of one account on the server."""

    def __init__(self, database: PgDatabase, account: str, clock: Clock) -> None:
        scoped = PgScopedDatabase(database, tables_schema(database.config.schema, account), "tables", STEPS,
                                  what=f"table account '{account}'")
        super().__init__(NulFreeText(scoped, _no_nul), account, clock)


def _no_nul(value: str) -> InvalidInput:
    return InvalidInput(f"{value!r}: a key cannot contain the NUL character")
