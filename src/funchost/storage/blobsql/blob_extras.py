"""Schema and row helpers for the parts of the Blob API beyond `BlobService`.

Added to the blob store's file without touching its existing tables' meaning: container
properties (ETag, metadata, public access, stored access policies, lease) in `container_props`,
staged and committed block lists, and a `props` JSON column on blobs and versions for the other
HTTP properties and the blob type. A container without a `container_props` row (created by a
binding) has the defaults: private, no metadata, an ETag derived from its creation time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from funchost.storage.blob_api import ContainerProperties, HttpHeaders
from funchost.storage.blobs import INFINITE_LEASE, BlobProperties
from funchost.storage.blobsql.blob_leases import Lease
from funchost.storage.blobsql.blob_rows import lease_of, to_properties
from funchost.storage.blobsql.blob_sql import upsert
from funchost.storage.sqlconn import Conn, Row

EXTRA_SCHEMA = """
CREATE TABLE IF NOT EXISTS container_props (
    name TEXT PRIMARY KEY,
    etag TEXT NOT NULL,
    last_modified REAL NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    public_access TEXT,
    acl TEXT NOT NULL DEFAULT '[]',
    lease_state TEXT NOT NULL DEFAULT 'available',
    lease_id TEXT,
    lease_duration INTEGER,
    lease_expires REAL,
    lease_break_at REAL
);
CREATE TABLE IF NOT EXISTS staged_blocks (
    container TEXT NOT NULL,
    name TEXT NOT NULL,
    block_id TEXT NOT NULL,
    size INTEGER NOT NULL,
    content_id INTEGER NOT NULL,
    PRIMARY KEY (container, name, block_id)
);
CREATE TABLE IF NOT EXISTS committed_blocks (
    container TEXT NOT NULL,
    name TEXT NOT NULL,
    idx INTEGER NOT NULL,
    block_id TEXT NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (container, name, idx)
)
"""


def migrate(conn: Conn) -> None:
    """Add the `props` column to blobs and versions of a store created before it existed."""
    for table in ("blobs", "versions"):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if "props" not in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN props TEXT")


def props_json(headers: HttpHeaders, blob_type: str, committed_blocks: int | None = None) -> str:
    data: dict[str, Any] = {"type": blob_type}
    for key, value in (("ce", headers.content_encoding), ("cl", headers.content_language),
                       ("cd", headers.content_disposition), ("cc", headers.cache_control)):
        if value:
            data[key] = value
    if committed_blocks is not None:
        data["blocks"] = committed_blocks
    return json.dumps(data)


def full_properties(row: Row, lease: Lease | None = None) -> BlobProperties:
    props = to_properties(row, lease)
    raw = row["props"] if "props" in row.keys() else None
    data = json.loads(raw) if raw else {}
    duration = None
    if lease is not None and lease.state == "leased":
        duration = "infinite" if lease.duration == INFINITE_LEASE else "fixed"
    return replace(props, blob_type=data.get("type", "BlockBlob"), content_encoding=data.get("ce", ""),
                   content_language=data.get("cl", ""), content_disposition=data.get("cd", ""),
                   cache_control=data.get("cc", ""), lease_duration=duration,
                   committed_block_count=data.get("blocks") if data.get("type") == "AppendBlob" else None)


def headers_of(props: BlobProperties) -> HttpHeaders:
    return HttpHeaders(props.content_type, props.content_encoding, props.content_language,
                       props.content_disposition, props.cache_control, props.content_md5)


def container_row(conn: Conn, name: str) -> Row | None:
    row: Row | None = conn.execute(
        "SELECT c.name, c.created, p.etag, p.last_modified, p.metadata, p.public_access, p.acl, "
        "p.lease_state AS lease_state, p.lease_id, p.lease_duration, p.lease_expires, p.lease_break_at "
        "FROM containers c LEFT JOIN container_props p ON p.name = c.name WHERE c.name = ?", (name,)).fetchone()
    return row


def container_lease(row: Row) -> Lease:
    return lease_of(row) if row["lease_state"] is not None else Lease()


def container_properties(row: Row, now: float) -> ContainerProperties:
    lease = container_lease(row).effective(now)
    created = row["created"]
    etag = row["etag"] or f'"0x{int(created * 10_000_000) + 621_355_968_000_000_000:X}"'
    modified = datetime.fromtimestamp(int(row["last_modified"] or created), UTC)
    duration = None
    if lease.state == "leased":
        duration = "infinite" if lease.duration == INFINITE_LEASE else "fixed"
    return ContainerProperties(row["name"], etag, modified, json.loads(row["metadata"] or "{}"),
                               row["public_access"], lease.state, lease.status, duration)


def save_container(conn: Conn, name: str, values: dict[str, Any]) -> None:
    row = container_row(conn, name)
    assert row is not None
    current = {
        "etag": row["etag"], "last_modified": row["last_modified"] or row["created"],
        "metadata": row["metadata"] or "{}", "public_access": row["public_access"], "acl": row["acl"] or "[]",
        "lease_state": row["lease_state"] or "available", "lease_id": row["lease_id"],
        "lease_duration": row["lease_duration"], "lease_expires": row["lease_expires"],
        "lease_break_at": row["lease_break_at"],
    }
    current.update(values)
    columns = ["name", *current]
    conn.execute(upsert("container_props", columns, ("name",)), (name, *current.values()))


def drop_blob_blocks(conn: Conn, container: str, name: str, *, staged: bool = True) -> list[int]:
    """Forget the blob's committed list (and staged blocks); returns staged contents to collect."""
    conn.execute("DELETE FROM committed_blocks WHERE container = ? AND name = ?", (container, name))
    if not staged:
        return []
    ids = [r[0] for r in conn.execute("SELECT content_id FROM staged_blocks WHERE container = ? AND name = ?",
                                      (container, name))]
    conn.execute("DELETE FROM staged_blocks WHERE container = ? AND name = ?", (container, name))
    conn.executemany("DELETE FROM chunks WHERE content_id = ?", [(i,) for i in ids])
    return ids


def set_lease_columns(conn: Conn, container: str, name: str, lease: Lease) -> None:
    conn.execute("UPDATE blobs SET lease_state = ?, lease_id = ?, lease_duration = ?, lease_expires = ?, "
                 "lease_break_at = ? WHERE container = ? AND name = ?",
                 (lease.state, lease.lease_id, lease.duration, lease.expires, lease.break_at, container, name))


def now_parts(clock_now: datetime) -> tuple[datetime, float]:
    return clock_now, clock_now.timestamp()
