"""Embedded block blob storage: one SQLite file per account (``<account_dir>/blobs.db``).

Every mutation is one BEGIN IMMEDIATE transaction that checks conditions and the lease
against the current time and writes content and properties together, so several processes on
one data folder see one consistent store. Committed creates and deletes are recorded in a
`changes` journal (for readers in other processes) and handed to in-process subscribers.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from funchost.clock import Clock
from funchost.errors import ContainerAlreadyExists, ResourceConflict, StorageError
from funchost.storage.blob_rules import MAX_LIST_RESULTS
from funchost.storage.blobs import BlobChange, BlobChangeListener, BlobListPage, BlobProperties
from funchost.storage.blobsql import blob_leases as leases
from funchost.storage.blobsql.blob_leases import Lease
from funchost.storage.blobsql.blob_rows import (
    BLOB_COLUMNS,
    CHANGES_KEPT,
    CHUNK_SIZE,
    blob_url,
    format_sequencer,
    lease_of,
    new_etag,
    new_sequencer,
    new_version_id,
    next_counter,
    properties_from_json,
    properties_to_json,
    to_properties,
)
from funchost.storage.blobsql.blob_sql import (
    blob_row,
    check_etag,
    collect,
    container_versioning,
    existing,
    read_range,
    resolve,
    snapshot,
    store,
)
from funchost.storage.sqlconn import Conn, Row, StoreDatabase

log = logging.getLogger("funchost.storage.blobs")
T = TypeVar("T")

DEFAULT_CONTENT_TYPE = "application/octet-stream"


class SqlBlobService:
    def __init__(self, account_dir: Path, account: str, clock: Clock) -> None:
        self.account_name = account
        self.clock = clock
        self._db: StoreDatabase = self._open(Path(account_dir) / "blobs.db", f"blobs-{account}")
        self._listeners: list[BlobChangeListener] = []

    def _open(self, path: Path, name: str) -> StoreDatabase:
        """The account's database, given by the backend (`sqlite/blobs.py`, `postgres/blobs.py`)."""
        raise NotImplementedError("a storage backend provides the blob store's database")

    async def _snapshot(self, fn: Callable[[Conn], T]) -> T:
        """A multi-statement read from one consistent view of the store."""
        return await self._db.read(snapshot(fn))

    # -- containers -----------------------------------------------------------------------------

    async def create_container(self, name: str, *, exist_ok: bool = False, versioning: bool = False) -> bool:
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> bool:
            cur = conn.execute("INSERT INTO containers(name, versioning, created) VALUES (?, ?, ?) "
                               "ON CONFLICT DO NOTHING",
                               (name, int(versioning), now))
            return cur.rowcount == 1

        created = await self._db.write(run)
        if not created and not exist_ok:
            raise ContainerAlreadyExists(f"container '{name}' already exists")
        return created

    async def delete_container(self, name: str) -> None:
        def run(conn: Conn) -> None:
            container_versioning(conn, name)
            ids = [r[0] for r in conn.execute(
                "SELECT content_id FROM blobs WHERE container = ? UNION SELECT content_id FROM versions "
                "WHERE container = ?", (name, name))]
            conn.execute("DELETE FROM blobs WHERE container = ?", (name,))
            conn.execute("DELETE FROM versions WHERE container = ?", (name,))
            conn.executemany("DELETE FROM chunks WHERE content_id = ?", [(i,) for i in ids])
            conn.execute("DELETE FROM containers WHERE name = ?", (name,))

        await self._db.write(run)

    async def container_exists(self, name: str) -> bool:
        row = await self._db.read(lambda c: c.execute("SELECT 1 FROM containers WHERE name = ?", (name,)).fetchone())
        return row is not None

    async def list_containers(self, prefix: str | None = None) -> list[str]:
        rows = await self._db.read(lambda c: c.execute("SELECT name FROM containers ORDER BY name").fetchall())
        return [r[0] for r in rows if not prefix or r[0].startswith(prefix)]

    # -- writes ---------------------------------------------------------------------------------

    async def upload_blob(
        self,
        container: str,
        name: str,
        data: bytes,
        *,
        content_type: str | None = None,
        metadata: Mapping[str, str] | None = None,
        overwrite: bool = True,
        if_match: str | None = None,
        lease_id: str | None = None,
    ) -> BlobProperties:
        meta = dict(metadata or {})
        data = bytes(data)
        md5 = hashlib.md5(data).digest()
        now_dt = self.clock.now()
        now = now_dt.timestamp()

        def run(conn: Conn) -> tuple[BlobProperties, BlobChange]:
            versioning = container_versioning(conn, container)
            old = blob_row(conn, container, name)
            if old is not None and not overwrite:
                raise ResourceConflict("the specified blob already exists", code="BlobAlreadyExists")
            check_etag(old, if_match)
            lease = leases.check_write(lease_of(old) if old else Lease(), lease_id, now)
            content_id = next_counter(conn, "content")
            conn.executemany("INSERT INTO chunks(content_id, seq, data) VALUES (?, ?, ?)",
                             [(content_id, i, data[off:off + CHUNK_SIZE])
                              for i, off in enumerate(range(0, max(len(data), 1), CHUNK_SIZE))])
            values = {
                "content_id": content_id, "size": len(data), "etag": new_etag(conn, now_dt),
                "content_type": content_type or DEFAULT_CONTENT_TYPE, "content_md5": md5,
                "last_modified": now, "creation_time": old["creation_time"] if old else now,
                "metadata": json.dumps(meta), "version_id": new_version_id(conn, now_dt) if versioning else None,
            }
            store(conn, container, name, values, lease)
            if old is not None:
                collect(conn, old["content_id"])
            props = to_properties(blob_row(conn, container, name), lease.effective(now))  # type: ignore[arg-type]
            return props, self._journal(conn, "BlobCreated", "PutBlob", props)

        props, change = await self._db.write(run)
        self._publish(change)
        return props

    async def set_blob_metadata(self, container: str, name: str, metadata: Mapping[str, str]) -> BlobProperties:
        meta = dict(metadata)
        now_dt = self.clock.now()
        now = now_dt.timestamp()

        def run(conn: Conn) -> BlobProperties:
            versioning = container_versioning(conn, container)
            old = existing(conn, container, name)
            lease = leases.check_write(lease_of(old), None, now)
            values = {k: old[k] for k in ("content_id", "size", "content_type", "content_md5", "creation_time")}
            values.update(etag=new_etag(conn, now_dt), last_modified=now, metadata=json.dumps(meta),
                          version_id=new_version_id(conn, now_dt) if versioning else None)
            store(conn, container, name, values, lease)
            return to_properties(blob_row(conn, container, name), lease.effective(now))  # type: ignore[arg-type]

        return await self._db.write(run)

    async def delete_blob(
        self, container: str, name: str, *, if_match: str | None = None, lease_id: str | None = None
    ) -> None:
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> BlobChange:
            container_versioning(conn, container)
            old = existing(conn, container, name)
            check_etag(old, if_match)
            leases.check_write(lease_of(old), lease_id, now)
            conn.execute("DELETE FROM blobs WHERE container = ? AND name = ?", (container, name))
            collect(conn, old["content_id"])
            return self._journal(conn, "BlobDeleted", "DeleteBlob", None, container, name)

        self._publish(await self._db.write(run))

    # -- reads ----------------------------------------------------------------------------------

    async def download_blob(
        self,
        container: str,
        name: str,
        *,
        offset: int = 0,
        length: int | None = None,
        version_id: str | None = None,
        if_match: str | None = None,
    ) -> tuple[bytes, BlobProperties]:
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> tuple[bytes, BlobProperties]:
            row, lease = resolve(conn, container, name, version_id, now)
            check_etag(row, if_match)
            size = row["size"]
            ranged = offset > 0 or length is not None
            if ranged and offset >= size:
                raise StorageError(f"the range starts at {offset}, past the blob's {size} bytes",
                                   code="InvalidRange", status=416)
            end = size if length is None else min(size, offset + length)
            return read_range(conn, row["content_id"], offset, end), to_properties(row, lease)

        return await self._snapshot(run)

    async def get_blob_properties(
        self, container: str, name: str, *, version_id: str | None = None
    ) -> BlobProperties:
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> BlobProperties:
            row, lease = resolve(conn, container, name, version_id, now)
            return to_properties(row, lease)

        return await self._snapshot(run)

    async def list_blobs(
        self,
        container: str,
        *,
        prefix: str | None = None,
        marker: str | None = None,
        max_results: int = MAX_LIST_RESULTS,
    ) -> BlobListPage:
        limit = min(max_results, MAX_LIST_RESULTS)
        prefix = prefix or ""
        start = max(prefix, marker or "")
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> BlobListPage:
            container_versioning(conn, container)
            rows = conn.execute(
                f"SELECT {BLOB_COLUMNS}, lease_state, lease_id, lease_duration, lease_expires, lease_break_at "
                "FROM blobs WHERE container = ? AND name >= ? AND substr(name, 1, ?) = ? "
                "ORDER BY name LIMIT ?", (container, start, len(prefix), prefix, limit + 1)).fetchall()
            items = [to_properties(r, lease_of(r).effective(now)) for r in rows[:limit]]
            return BlobListPage(items, rows[limit]["name"] if len(rows) > limit else None)

        return await self._snapshot(run)

    # -- leases ---------------------------------------------------------------------------------

    async def acquire_lease(self, container: str, name: str, *, duration: int, lease_id: str | None = None) -> str:
        lease = await self._lease_op(container, name, lambda cur, now: leases.acquire(cur, duration, lease_id, now))
        return lease.lease_id or ""

    async def renew_lease(self, container: str, name: str, lease_id: str) -> None:
        await self._lease_op(container, name, lambda cur, now: leases.renew(cur, lease_id, now))

    async def release_lease(self, container: str, name: str, lease_id: str) -> None:
        await self._lease_op(container, name, lambda cur, now: leases.release(cur, lease_id, now))

    async def break_lease(self, container: str, name: str, *, break_period: int | None = None) -> int:
        remaining = 0

        def op(cur: Lease, now: float) -> Lease:
            nonlocal remaining
            new, remaining = leases.break_(cur, break_period, now)
            return new

        await self._lease_op(container, name, op)
        return remaining

    async def _lease_op(self, container: str, name: str, op: Callable[[Lease, float], Lease]) -> Lease:
        now = self.clock.now().timestamp()

        def run(conn: Conn) -> Lease:
            container_versioning(conn, container)
            new = op(lease_of(existing(conn, container, name)), now)
            conn.execute("UPDATE blobs SET lease_state = ?, lease_id = ?, lease_duration = ?, lease_expires = ?, "
                         "lease_break_at = ? WHERE container = ? AND name = ?",
                         (new.state, new.lease_id, new.duration, new.expires, new.break_at, container, name))
            return new

        return await self._db.write(run)

    # -- change notifications -------------------------------------------------------------------

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def changes_since(self, sequencer: str | None, limit: int = 100) -> list[BlobChange]:
        """Journalled changes after `sequencer` (any process's writes), oldest first."""
        after = int(sequencer, 16) if sequencer else 0
        rows = await self._db.read(lambda c: c.execute(
            "SELECT * FROM changes WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall())
        return [self._change_from_row(r) for r in rows]

    async def current_cursor(self) -> str | None:
        row = await self._db.read(lambda c: c.execute("SELECT max(seq) FROM changes").fetchone())
        return format_sequencer(row[0]) if row and row[0] is not None else None

    def _journal(self, conn: Conn, kind: str, api: str, props: BlobProperties | None,
                 container: str | None = None, name: str | None = None) -> BlobChange:
        container = props.container if props else container or ""
        name = props.name if props else name or ""
        seq, sequencer = new_sequencer(conn)
        conn.execute("INSERT INTO changes(seq, kind, api, container, name, properties) VALUES (?, ?, ?, ?, ?, ?)",
                     (seq, kind, api, container, name, properties_to_json(props) if props else None))
        conn.execute("DELETE FROM changes WHERE seq <= ?", (seq - CHANGES_KEPT,))
        return BlobChange(kind, api, self.account_name, container, name, props, sequencer,
                          blob_url(self.account_name, container, name))

    def _change_from_row(self, row: Row) -> BlobChange:
        props = properties_from_json(row["container"], row["name"], row["properties"]) if row["properties"] else None
        return BlobChange(row["kind"], row["api"], self.account_name, row["container"], row["name"], props,
                          format_sequencer(row["seq"]), blob_url(self.account_name, row["container"], row["name"]))

    def _publish(self, change: BlobChange) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # a subscriber's bug must not fail the write that already committed
                log.exception("blob change listener failed (%s %s/%s)", change.kind, change.container, change.name)

    async def aclose(self) -> None:
        await self._db.aclose()
