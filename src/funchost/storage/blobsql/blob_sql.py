"""The SQL of the embedded blob store: statements run inside the service's transactions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from funchost.errors import BlobNotFound, ContainerNotFound, PreconditionFailed
from funchost.storage.blobsql.blob_leases import Lease
from funchost.storage.blobsql.blob_rows import CHUNK_SIZE, lease_of
from funchost.storage.sqlconn import Conn, Row

T = TypeVar("T")


def snapshot(fn: Callable[[Conn], T]) -> Callable[[Conn], T]:
    """Run a multi-statement read in one deferred transaction (one consistent WAL snapshot)."""

    def run(conn: Conn) -> T:
        conn.execute("BEGIN")
        try:
            return fn(conn)
        finally:
            conn.execute("COMMIT")

    return run


def container_versioning(conn: Conn, name: str) -> bool:
    """Versioning flag of an existing container; ContainerNotFound otherwise."""
    row = conn.execute("SELECT versioning FROM containers WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise ContainerNotFound(f"container '{name}' does not exist")
    return bool(row[0])


def blob_row(conn: Conn, container: str, name: str) -> Row | None:
    row: Row | None = conn.execute(
        "SELECT * FROM blobs WHERE container = ? AND name = ?", (container, name)).fetchone()
    return row


def existing(conn: Conn, container: str, name: str) -> Row:
    row = blob_row(conn, container, name)
    if row is None:
        raise BlobNotFound(f"blob '{container}/{name}' does not exist")
    return row


def resolve(conn: Conn, container: str, name: str, version_id: str | None,
             now: float) -> tuple[Row, Lease]:
    container_versioning(conn, container)
    row = blob_row(conn, container, name)
    if row is not None and (version_id is None or row["version_id"] == version_id):
        return row, lease_of(row).effective(now)
    if version_id is not None:
        version = conn.execute("SELECT * FROM versions WHERE container = ? AND name = ? AND version_id = ?",
                               (container, name, version_id)).fetchone()
        if version is not None:
            return version, Lease()
    raise BlobNotFound(f"blob '{container}/{name}' does not exist")


def check_etag(row: Row | None, if_match: str | None) -> None:
    if if_match is None:
        return
    if row is None or (if_match.strip() != "*" and _unquote(if_match) != _unquote(row["etag"])):
        raise PreconditionFailed("the condition specified using HTTP conditional header(s) is not met")


def _unquote(etag: str) -> str:
    return etag.strip().strip('"')


def store(conn: Conn, container: str, name: str, values: dict[str, object], lease: Lease) -> None:
    row = dict(values, container=container, name=name, lease_state=lease.state, lease_id=lease.lease_id,
               lease_duration=lease.duration, lease_expires=lease.expires, lease_break_at=lease.break_at)
    conn.execute(upsert("blobs", list(row), ("container", "name")), tuple(row.values()))
    if values.get("version_id"):
        version = {k: v for k, v in row.items() if not k.startswith("lease_")}
        conn.execute(f"INSERT INTO versions({', '.join(version)}) VALUES ({', '.join('?' * len(version))})",
                     tuple(version.values()))


def upsert(table: str, columns: list[str], key: tuple[str, ...]) -> str:
    """INSERT of a whole row that replaces the row with the same key (SQLite and PostgreSQL)."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return (f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}")


def collect(conn: Conn, content_id: int) -> None:
    """Drop a content's chunks once neither the current blob nor a version refers to it."""
    conn.execute(
        "DELETE FROM chunks WHERE content_id = ? AND NOT EXISTS (SELECT 1 FROM blobs WHERE content_id = ?) "
        "AND NOT EXISTS (SELECT 1 FROM versions WHERE content_id = ?)", (content_id, content_id, content_id))


def read_range(conn: Conn, content_id: int, start: int, end: int) -> bytes:
    if end <= start:
        return b""
    first, last = start // CHUNK_SIZE, (end - 1) // CHUNK_SIZE
    parts = [r[0] for r in conn.execute(
        "SELECT data FROM chunks WHERE content_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
        (content_id, first, last))]
    data = b"".join(parts)
    base = first * CHUNK_SIZE
    return data[start - base:end - base]

