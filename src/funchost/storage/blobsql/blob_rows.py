"""Schema, identifiers and row mapping of the embedded blob store.

Content lives in the same SQLite file as the properties, in 4 MiB chunks, so a write of content
and properties is one transaction (see docs/blobs.md for why).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from funchost.storage.blobs import BlobProperties
from funchost.storage.blobsql.blob_leases import Lease
from funchost.storage.sqlconn import Conn, Row

CHUNK_SIZE = 4 * 1024 * 1024
SEQUENCER_WIDTH = 32
CHANGES_KEPT = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS containers (
    name TEXT PRIMARY KEY,
    versioning INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS blobs (
    container TEXT NOT NULL,
    name TEXT NOT NULL,
    content_id INTEGER NOT NULL,
    size INTEGER NOT NULL,
    etag TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_md5 BLOB,
    last_modified REAL NOT NULL,
    creation_time REAL NOT NULL,
    metadata TEXT NOT NULL,
    version_id TEXT,
    lease_state TEXT NOT NULL DEFAULT 'available',
    lease_id TEXT,
    lease_duration INTEGER,
    lease_expires REAL,
    lease_break_at REAL,
    PRIMARY KEY (container, name)
);
CREATE TABLE IF NOT EXISTS versions (
    container TEXT NOT NULL,
    name TEXT NOT NULL,
    version_id TEXT NOT NULL,
    content_id INTEGER NOT NULL,
    size INTEGER NOT NULL,
    etag TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_md5 BLOB,
    last_modified REAL NOT NULL,
    creation_time REAL NOT NULL,
    metadata TEXT NOT NULL,
    PRIMARY KEY (container, name, version_id)
);
CREATE INDEX IF NOT EXISTS versions_content ON versions (content_id);
CREATE INDEX IF NOT EXISTS blobs_content ON blobs (content_id);
CREATE TABLE IF NOT EXISTS chunks (
    content_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (content_id, seq)
);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    api TEXT NOT NULL,
    container TEXT NOT NULL,
    name TEXT NOT NULL,
    properties TEXT
)
"""

BLOB_COLUMNS = ("container, name, content_id, size, etag, content_type, content_md5, last_modified, "
                "creation_time, metadata, version_id")

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DOTNET_EPOCH_TICKS = 621_355_968_000_000_000  # 0001-01-01 to 1970-01-01 in 100 ns ticks


def ticks(now: datetime) -> int:
    """100 ns ticks since the Unix epoch, exact (no float rounding)."""
    return (now - _UNIX_EPOCH) // timedelta(microseconds=1) * 10


def next_counter(conn: Conn, name: str, at_least: int = 0) -> int:
    """max(stored + 1, at_least), stored back: unique and increasing across processes."""
    row = conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
    value = max((row[0] + 1) if row else 1, at_least)
    conn.execute("INSERT INTO counters(name, value) VALUES (?, ?) "
                 "ON CONFLICT(name) DO UPDATE SET value = excluded.value", (name, value))
    return value


def new_etag(conn: Conn, now: datetime) -> str:
    """Quoted hex of .NET ticks, the service's format (e.g. "0x8DC4F2A1B3C5D7E")."""
    return f'"0x{next_counter(conn, "etag", ticks(now) + _DOTNET_EPOCH_TICKS):X}"'


def new_version_id(conn: Conn, now: datetime) -> str:
    """The write time with 7 fractional digits, bumped by one tick if already used."""
    value = next_counter(conn, "version", ticks(now))
    seconds, fraction = divmod(value, 10_000_000)
    stamp = _UNIX_EPOCH + timedelta(seconds=seconds)
    return f"{stamp:%Y-%m-%dT%H:%M:%S}.{fraction:07d}Z"


def format_sequencer(value: int) -> str:
    return f"{value:0{SEQUENCER_WIDTH}x}"


def new_sequencer(conn: Conn) -> tuple[int, str]:
    value = next_counter(conn, "sequencer")
    return value, format_sequencer(value)


def blob_url(account: str, container: str, name: str) -> str:
    """Path-style URL, blob name quoted as the Azure SDK quotes it."""
    return f"http://127.0.0.1:10000/{account}/{container}/{quote(name, safe='~/')}"


def _time(epoch: float) -> datetime:
    # The service reports Last-Modified and creation time with one-second resolution.
    return datetime.fromtimestamp(int(epoch), UTC)


def lease_of(row: Row) -> Lease:
    return Lease(row["lease_state"], row["lease_id"], row["lease_duration"], row["lease_expires"],
                 row["lease_break_at"])


def to_properties(row: Row, lease: Lease | None = None) -> BlobProperties:
    lease = lease or Lease()
    return BlobProperties(
        container=row["container"],
        name=row["name"],
        size=row["size"],
        etag=row["etag"],
        content_type=row["content_type"],
        content_md5=row["content_md5"],
        last_modified=_time(row["last_modified"]),
        creation_time=_time(row["creation_time"]),
        metadata=json.loads(row["metadata"]),
        version_id=row["version_id"],
        lease_state=lease.state,
        lease_status=lease.status,
    )


def properties_to_json(props: BlobProperties) -> str:
    return json.dumps({
        "size": props.size, "etag": props.etag, "content_type": props.content_type,
        "content_md5": props.content_md5.hex() if props.content_md5 else None,
        "last_modified": props.last_modified.isoformat(), "creation_time": props.creation_time.isoformat(),
        "metadata": dict(props.metadata), "version_id": props.version_id,
    })


def properties_from_json(container: str, name: str, text: str) -> BlobProperties:
    data = json.loads(text)
    return BlobProperties(
        container=container, name=name, size=data["size"], etag=data["etag"],
        content_type=data["content_type"],
        content_md5=bytes.fromhex(data["content_md5"]) if data["content_md5"] else None,
        last_modified=datetime.fromisoformat(data["last_modified"]),
        creation_time=datetime.fromisoformat(data["creation_time"]),
        metadata=data["metadata"], version_id=data["version_id"],
    )
