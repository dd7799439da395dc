"""Embedded blob storage: the SQL blob store (`storage/blobsql/`) on one SQLite file per account,
``<account_dir>/blobs.db``; several processes on one data folder take turns with BEGIN IMMEDIATE."""

from __future__ import annotations

from pathlib import Path

from funchost.storage.blobsql import blob_uploads as uploads
from funchost.storage.blobsql.blob_account import SqlBlobAccount
from funchost.storage.blobsql.blob_extras import EXTRA_SCHEMA, migrate
from funchost.storage.blobsql.blob_rows import SCHEMA
from funchost.storage.blobsql.blobs import SqlBlobService
from funchost.storage.sqlconn import Conn, StoreDatabase
from funchost.storage.sqlite.db import SqliteDatabase


class SqliteBlobService(SqlBlobService):
    """`BlobService` and its change journal on the account's file (the tables they need)."""

    def _open(self, path: Path, name: str) -> StoreDatabase:
        return SqliteDatabase(path, SCHEMA, name=name)


class SqliteBlobAccount(SqlBlobAccount):
    """The embedded backend's blob service: `BlobService`, its change journal and `BlobApi`."""

    def _open(self, path: Path, name: str) -> StoreDatabase:
        return SqliteDatabase(path, ";".join((SCHEMA, EXTRA_SCHEMA, uploads.SCHEMA)), name=name, upgrade=_upgrade)


def _upgrade(conn: Conn) -> None:
    """A file written by an older funchost: its missing columns, and request bodies never taken."""
    migrate(conn)
    uploads.sweep(conn)
