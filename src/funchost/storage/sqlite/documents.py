"""Embedded Cosmos DB-like document store: the SQL document store (`storage/document_store.py`)
on one SQLite file per account, ``<data>/storage/<connection>/documents.sqlite3``, safe across
processes through `SqliteDatabase` (every call one BEGIN IMMEDIATE transaction)."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import Clock
from funchost.storage.document_sql import UNDEFINED_KEY, UNDEFINED_PK
from funchost.storage.document_store import SqlDocumentStore
from funchost.storage.sqlconn import Conn
from funchost.storage.sqlite.db import SqliteDatabase

FILE_NAME = "documents.sqlite3"
SCHEMA = """
CREATE TABLE IF NOT EXISTS databases (
    name TEXT PRIMARY KEY, rid TEXT NOT NULL, ts INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS containers (
    db TEXT NOT NULL, name TEXT NOT NULL, rid TEXT NOT NULL, pk_path TEXT NOT NULL,
    partitions INTEGER NOT NULL, default_ttl INTEGER, ts INTEGER NOT NULL,
    PRIMARY KEY (db, name));
CREATE TABLE IF NOT EXISTS partitions (
    db TEXT NOT NULL, container TEXT NOT NULL, pid INTEGER NOT NULL, lsn INTEGER NOT NULL,
    PRIMARY KEY (db, container, pid));
CREATE TABLE IF NOT EXISTS items (
    db TEXT NOT NULL, container TEXT NOT NULL, pk TEXT NOT NULL, id TEXT NOT NULL,
    pid INTEGER NOT NULL, lsn INTEGER NOT NULL, modified REAL NOT NULL, expires REAL,
    body TEXT NOT NULL, PRIMARY KEY (db, container, pk, id));
CREATE INDEX IF NOT EXISTS items_feed ON items (db, container, pid, lsn);
CREATE INDEX IF NOT EXISTS items_id ON items (db, container, id)
"""
VERSION = 1  # PRAGMA user_version of a file this funchost wrote


class SqliteDocumentStore(SqlDocumentStore):
    """`DocumentStore` on embedded SQLite: the documents of one account (one connection name)."""

    def __init__(self, dir: Path, name: str, clock: Clock) -> None:
        self.dir = Path(dir)
        super().__init__(SqliteDatabase(self.dir / FILE_NAME, SCHEMA, name="documents", upgrade=_upgrade),
                         name, clock)


def _upgrade(conn: Conn) -> None:
    """A file written before version 1 kept an item without a partition key value under a key
    with a NUL character (which PostgreSQL text cannot hold): the stored form both stores use."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= VERSION:
        return
    conn.execute("UPDATE items SET pk = ? WHERE pk = ?", (UNDEFINED_KEY, str(UNDEFINED_PK)))
    conn.execute(f"PRAGMA user_version = {VERSION}")
