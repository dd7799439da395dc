"""Embedded Table storage: the SQL table store (`storage/table_store.py`) on one SQLite file per
account, ``<account_dir>/tables.db``; several processes on one data folder take turns with
BEGIN IMMEDIATE."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import Clock
from funchost.storage.sqlite.db import SqliteDatabase
from funchost.storage.table_store import SqlTableService

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS entities (
    tbl TEXT NOT NULL,
    pk TEXT NOT NULL,
    rk TEXT NOT NULL,
    ts INTEGER NOT NULL,
    props TEXT NOT NULL,
    PRIMARY KEY (tbl, pk, rk)
) WITHOUT ROWID
"""


class SqliteTableService(SqlTableService):
    """`TableService` on embedded SQLite; safe for several processes sharing the file."""

    def __init__(self, account_dir: Path, account: str, clock: Clock) -> None:
        super().__init__(SqliteDatabase(Path(account_dir) / "tables.db", SCHEMA, name=f"tables-{account}"),
                         account, clock)
