"""The embedded Event Hubs broker: the SQL broker (`storage/eventhubsql/`) on one SQLite file per
namespace, ``<dir>/eventhubs.db`` (WAL, synchronous NORMAL: a send that returned survives a
process kill); several processes on one data folder take turns with BEGIN IMMEDIATE."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import Clock
from funchost.storage.eventhubsql.broker import SCHEMA, SqlEventHubBroker
from funchost.storage.sqlite.db import SqliteDatabase


class SqliteEventHubBroker(SqlEventHubBroker):
    def __init__(self, directory: Path, namespace: str, clock: Clock) -> None:
        db = SqliteDatabase(Path(directory) / "eventhubs.db", SCHEMA, name=f"eventhubs-{namespace}")
        super().__init__(namespace, clock, db)
