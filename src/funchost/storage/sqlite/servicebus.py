"""The embedded Service Bus namespace: the SQL broker (`storage/servicebussql/`) on one SQLite
file per namespace, ``<folder>/<namespace>.db``; several processes on one data folder take turns
with BEGIN IMMEDIATE."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import Clock
from funchost.storage.servicebussql.broker import SqlServiceBusBroker
from funchost.storage.servicebussql.rows import SCHEMA
from funchost.storage.sqlite.db import SqliteDatabase


class SqliteServiceBusBroker(SqlServiceBusBroker):
    def __init__(self, folder: Path, namespace: str, clock: Clock) -> None:
        db = SqliteDatabase(Path(folder) / f"{namespace}.db", SCHEMA, name=f"servicebus-{namespace}")
        super().__init__(namespace, clock, db)
