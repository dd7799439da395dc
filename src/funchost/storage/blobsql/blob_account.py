"""The whole Blob API (`BlobApi`) of the SQL blob store: `SqlBlobService` plus container
properties, block lists, append blobs, copy, leases on containers and hierarchical listing.

Every mutation stays one write transaction that checks the container, conditions and lease and
then writes; committed creates (Put Blob, Put Block List, Copy Blob) and deletes are journalled
for Event Grid as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterable, Mapping, Sequence
from typing import Any

from funchost.errors import BlobNotFound, PreconditionFailed, ResourceConflict
from funchost.storage.blob_api import (
    Block,
    BlockList,
    Body,
    HttpHeaders,
    ListedPage,
    UploadedContent,
    Write,
    body_size,
)
from funchost.storage.blob_rules import MAX_BLOCKS
from funchost.storage.blobs import BlobChange, BlobProperties
from funchost.storage.blobsql import blob_blocks as blocks
from funchost.storage.blobsql import blob_leases as leases
from funchost.storage.blobsql import blob_listing
from funchost.storage.blobsql import blob_uploads as uploads
from funchost.storage.blobsql.blob_containers import ContainerOperations, lease_action
from funchost.storage.blobsql.blob_extras import (
    drop_blob_blocks,
    full_properties,
    headers_of,
    props_json,
    set_lease_columns,
)
from funchost.storage.blobsql.blob_leases import Lease
from funchost.storage.blobsql.blob_rows import lease_of, new_etag, new_version_id
from funchost.storage.blobsql.blob_sql import (
    blob_row,
    check_etag,
    collect,
    container_versioning,
    existing,
    store,
)
from funchost.storage.blobsql.blobs import DEFAULT_CONTENT_TYPE, SqlBlobService
from funchost.storage.sqlconn import Conn, Row


def _unquote(etag: str) -> str:
    return etag.strip().strip('"')


def check_write(old: Row | None, write: Write, *, create: bool) -> None:
    if write.if_none_match is not None and old is not None:
        if write.if_none_match.strip() == "*":
            if create:
                raise ResourceConflict("the specified blob already exists", code="BlobAlreadyExists")
            raise PreconditionFailed("the condition specified using HTTP conditional header(s) is not met")
        if _unquote(write.if_none_match) == _unquote(old["etag"]):
            raise PreconditionFailed("the condition specified using HTTP conditional header(s) is not met")
    check_etag(old, write.if_match)


def _creating(conn: Conn, container: str, name: str, write: Write, now: float
              ) -> tuple[bool, Row | None, Lease]:
    """A write that creates or replaces a blob: (container versioning, the current row, the lease
    the new blob keeps), once the container, the conditions and the lease allow it."""
    versioning = container_versioning(conn, container)
    old = blob_row(conn, container, name)
    check_write(old, write, create=True)
    return versioning, old, leases.check_write(lease_of(old) if old else Lease(), write.lease_id, now)


def _store_body(conn: Conn, data: Body) -> tuple[int, int]:
    """The body as a content of the store -> (content id, size): an uploaded one is taken as is."""
    if isinstance(data, UploadedContent):
        return uploads.take(conn, data), data.size
    return blocks.write_content(conn, [data])


class SqlBlobAccount(ContainerOperations, SqlBlobService):
    """An account's whole blob service: `BlobService`, its change journal and `BlobApi`, on the
    database its backend gives (`_open`)."""

    async def delete_container(self, name: str) -> None:
        await super().delete_container(name)

        def forget(conn: Conn) -> None:
            ids = [r[0] for r in conn.execute("SELECT content_id FROM staged_blocks WHERE container = ?", (name,))]
            conn.executemany("DELETE FROM chunks WHERE content_id = ?", [(i,) for i in ids])
            for table in ("staged_blocks", "committed_blocks"):
                conn.execute(f"DELETE FROM {table} WHERE container = ?", (name,))
            conn.execute("DELETE FROM container_props WHERE name = ?", (name,))

        await self._db.write(forget)

    # -- blob writes -----------------------------------------------------------------------------

    async def upload_blob(self, container: str, name: str, data: bytes, *, content_type: str | None = None,
                          metadata: Mapping[str, str] | None = None, overwrite: bool = True,
                          if_match: str | None = None, lease_id: str | None = None) -> BlobProperties:
        write = Write(if_match=if_match, if_none_match=None if overwrite else "*", lease_id=lease_id)
        return await self.put_blob(container, name, data, blob_type="BlockBlob",
                                   headers=HttpHeaders(content_type=content_type), metadata=metadata or {}, write=write)

    async def upload_content(self, pieces: AsyncIterable[bytes]) -> UploadedContent:
        return await uploads.upload(self._db, pieces)

    async def discard_content(self, content: UploadedContent) -> None:
        await self._db.write(lambda conn: uploads.discard(conn, content.id))

    async def put_blob(self, container: str, name: str, data: Body, *, blob_type: str, headers: HttpHeaders,
                       metadata: Mapping[str, str], write: Write) -> BlobProperties:
        meta = dict(metadata)
        if isinstance(data, UploadedContent):
            computed = data.md5
        else:
            data = bytes(data)
            computed = hashlib.md5(data).digest()
        md5 = headers.content_md5 or (computed if blob_type == "BlockBlob" else None)
        now_dt, now = self._now()

        def run(conn: Conn) -> tuple[BlobProperties, BlobChange]:
            versioning, old, lease = _creating(conn, container, name, write, now)
            content_id, size = _store_body(conn, data)
            values = self._values(conn, content_id, size, headers, md5, meta, now_dt, old, versioning)
            values["props"] = props_json(headers, blob_type, 0 if blob_type == "AppendBlob" else None)
            return self._commit(conn, container, name, values, lease, old, "PutBlob", now)

        props, change = await self._db.write(run)
        self._publish(change)
        return props

    def _values(self, conn: Conn, content_id: int, size: int, headers: HttpHeaders,
                md5: bytes | None, meta: Mapping[str, str], now_dt: Any, old: Row | None,
                versioning: bool) -> dict[str, Any]:
        return {"content_id": content_id, "size": size, "etag": new_etag(conn, now_dt),
                "content_type": headers.content_type or DEFAULT_CONTENT_TYPE, "content_md5": md5,
                "last_modified": now_dt.timestamp(), "creation_time": old["creation_time"] if old else now_dt.timestamp(),
                "metadata": json.dumps(dict(meta)), "version_id": new_version_id(conn, now_dt) if versioning else None}

    def _commit(self, conn: Conn, container: str, name: str, values: dict[str, Any], lease: Lease,
                old: Row | None, api: str, now: float, committed: Sequence[Block] = ()
                ) -> tuple[BlobProperties, BlobChange]:
        store(conn, container, name, values, lease)
        if old is not None and old["content_id"] != values["content_id"]:
            collect(conn, old["content_id"])
        drop_blob_blocks(conn, container, name)
        if committed:
            blocks.record_committed(conn, container, name, committed)
        props = full_properties(blob_row(conn, container, name), lease.effective(now))  # type: ignore[arg-type]
        return props, self._journal(conn, "BlobCreated", api, props)

    async def stage_block(self, container: str, name: str, block_id: str, data: Body, *,
                          lease_id: str | None = None) -> None:
        _, now = self._now()

        def run(conn: Conn) -> None:
            container_versioning(conn, container)
            old = blob_row(conn, container, name)
            if old is not None:
                leases.check_write(lease_of(old), lease_id, now)
            if conn.execute("SELECT count(*) FROM staged_blocks WHERE container = ? AND name = ?",
                            (container, name)).fetchone()[0] >= 100_000:
                raise ResourceConflict("a blob has at most 100,000 uncommitted blocks", code="BlockCountExceedsLimit")
            blocks.stage(conn, container, name, block_id, *_store_body(conn, data))

        await self._db.write(run)

    async def commit_blocks(self, container: str, name: str, wanted: Sequence[tuple[str, str]], *,
                            headers: HttpHeaders, metadata: Mapping[str, str], write: Write) -> BlobProperties:
        meta = dict(metadata)
        now_dt, now = self._now()

        def run(conn: Conn) -> tuple[BlobProperties, BlobChange]:
            versioning, old, lease = _creating(conn, container, name, write, now)
            content_id, size, committed = blocks.assemble(conn, container, name, wanted,
                                                          old["content_id"] if old else None)
            values = self._values(conn, content_id, size, headers, headers.content_md5, meta, now_dt, old, versioning)
            values["props"] = props_json(headers, "BlockBlob")
            return self._commit(conn, container, name, values, lease, old, "PutBlockList", now, committed)

        props, change = await self._db.write(run)
        self._publish(change)
        return props

    async def get_block_list(self, container: str, name: str, *, lease_id: str | None = None) -> BlockList:
        _, now = self._now()

        def run(conn: Conn) -> BlockList:
            container_versioning(conn, container)
            row = blob_row(conn, container, name)
            staged = blocks.staged_list(conn, container, name)
            if row is None and not staged:
                raise BlobNotFound(f"blob '{container}/{name}' does not exist")
            props = full_properties(row, lease_of(row).effective(now)) if row is not None else None
            return BlockList(blocks.committed_list(conn, container, name), staged, props)

        return await self._db.read(run)

    async def append_block(self, container: str, name: str, data: Body, *, write: Write,
                           append_position: int | None = None, max_size: int | None = None
                           ) -> tuple[BlobProperties, int]:
        now_dt, now = self._now()
        added = body_size(data)

        def run(conn: Conn) -> tuple[BlobProperties, int]:
            container_versioning(conn, container)
            old = existing(conn, container, name)
            current = full_properties(old)
            if current.blob_type != "AppendBlob":
                raise ResourceConflict("the blob type is invalid for this operation", code="InvalidBlobType")
            check_write(old, write, create=False)
            lease = leases.check_write(lease_of(old), write.lease_id, now)
            size = old["size"]
            if append_position is not None and append_position != size:
                raise PreconditionFailed("the append position condition is not met",
                                         code="AppendPositionConditionNotMet")
            if max_size is not None and size + added > max_size:
                raise PreconditionFailed("the max blob size condition is not met", code="MaxBlobSizeConditionNotMet")
            count = (current.committed_block_count or 0) + 1
            if count > MAX_BLOCKS:
                raise ResourceConflict("an append blob has at most 50,000 blocks", code="BlockCountExceedsLimit")
            content_id = old["content_id"]
            if blocks.shared(conn, content_id):  # a copy shares content: give this blob its own first
                content_id, _ = blocks.write_content(conn, blocks.read_all(conn, [("", content_id, 0, size)]))
            if isinstance(data, UploadedContent):  # chunk by chunk, then the upload's own chunks go
                taken = uploads.take(conn, data)
                end = size
                for piece in uploads.chunks_of(conn, taken):
                    blocks.append(conn, content_id, end, piece)
                    end += len(piece)
                conn.execute("DELETE FROM chunks WHERE content_id = ?", (taken,))
            else:
                blocks.append(conn, content_id, size, bytes(data))
            values = {k: old[k] for k in ("content_md5", "creation_time", "metadata", "version_id", "content_type")}
            values.update(content_id=content_id, size=size + added, etag=new_etag(conn, now_dt), last_modified=now,
                          props=props_json(headers_of(current), "AppendBlob", count))
            store(conn, container, name, values, lease)
            return full_properties(blob_row(conn, container, name), lease.effective(now)), size  # type: ignore[arg-type]

        return await self._db.write(run)

    async def set_http_headers(self, container: str, name: str, headers: HttpHeaders, *,
                               write: Write) -> BlobProperties:
        def change(current: BlobProperties, values: dict[str, Any]) -> None:
            values.update(content_type=headers.content_type or DEFAULT_CONTENT_TYPE, content_md5=headers.content_md5,
                          props=props_json(headers, current.blob_type, current.committed_block_count))

        return await self._update_blob(container, name, write, change)

    async def set_metadata(self, container: str, name: str, metadata: Mapping[str, str], *,
                           write: Write) -> BlobProperties:
        meta = json.dumps(dict(metadata))
        return await self._update_blob(container, name, write, lambda current, values: values.update(metadata=meta))

    async def set_blob_metadata(self, container: str, name: str, metadata: Mapping[str, str]) -> BlobProperties:
        return await self.set_metadata(container, name, metadata, write=Write())

    async def _update_blob(self, container: str, name: str, write: Write, change: Any) -> BlobProperties:
        now_dt, now = self._now()

        def run(conn: Conn) -> BlobProperties:
            versioning = container_versioning(conn, container)
            old = existing(conn, container, name)
            check_write(old, write, create=False)
            lease = leases.check_write(lease_of(old), write.lease_id, now)
            values = {k: old[k] for k in ("content_id", "size", "content_type", "content_md5", "creation_time",
                                          "metadata", "props")}
            change(full_properties(old), values)
            values.update(etag=new_etag(conn, now_dt), last_modified=now,
                          version_id=new_version_id(conn, now_dt) if versioning else None)
            store(conn, container, name, values, lease)
            return full_properties(blob_row(conn, container, name), lease.effective(now))  # type: ignore[arg-type]

        return await self._db.write(run)

    async def copy_blob(self, source_container: str, source_name: str, container: str, name: str, *,
                        metadata: Mapping[str, str] | None, write: Write) -> BlobProperties:
        meta = dict(metadata) if metadata else None
        now_dt, now = self._now()

        def run(conn: Conn) -> tuple[BlobProperties, BlobChange]:
            container_versioning(conn, source_container)
            source = existing(conn, source_container, source_name)
            versioning, old, lease = _creating(conn, container, name, write, now)
            values = {k: source[k] for k in ("content_id", "size", "content_type", "content_md5", "props")}
            values.update(etag=new_etag(conn, now_dt), last_modified=now,
                          creation_time=old["creation_time"] if old else now,
                          metadata=json.dumps(meta) if meta is not None else source["metadata"],
                          version_id=new_version_id(conn, now_dt) if versioning else None)
            committed = blocks.committed_list(conn, source_container, source_name)
            return self._commit(conn, container, name, values, lease, old, "CopyBlob", now, committed)

        props, change = await self._db.write(run)
        self._publish(change)
        return props

    async def delete_blob(self, container: str, name: str, *, if_match: str | None = None,
                          lease_id: str | None = None) -> None:
        await self.delete_blob_with(container, name, write=Write(if_match=if_match, lease_id=lease_id))

    async def delete_blob_with(self, container: str, name: str, *, write: Write) -> None:
        _, now = self._now()

        def run(conn: Conn) -> Any:
            container_versioning(conn, container)
            old = existing(conn, container, name)
            check_write(old, write, create=False)
            leases.check_write(lease_of(old), write.lease_id, now)
            conn.execute("DELETE FROM blobs WHERE container = ? AND name = ?", (container, name))
            collect(conn, old["content_id"])
            drop_blob_blocks(conn, container, name)
            return self._journal(conn, "BlobDeleted", "DeleteBlob", None, container, name)

        self._publish(await self._db.write(run))

    async def blob_lease(self, container: str, name: str, action: str, *, lease_id: str | None = None,
                         proposed_id: str | None = None, duration: int | None = None,
                         break_period: int | None = None) -> tuple[BlobProperties, str | None, int]:
        _, now = self._now()

        def run(conn: Conn) -> tuple[BlobProperties, str | None, int]:
            container_versioning(conn, container)
            row = existing(conn, container, name)
            new, remaining = lease_action(lease_of(row), action, lease_id, proposed_id, duration, break_period, now)
            set_lease_columns(conn, container, name, new)
            props = full_properties(blob_row(conn, container, name), new.effective(now))  # type: ignore[arg-type]
            return props, new.lease_id, remaining

        return await self._db.write(run)

    # -- reads -----------------------------------------------------------------------------------

    async def get_blob_properties(self, container: str, name: str, *,
                                  version_id: str | None = None) -> BlobProperties:
        return await self._snapshot(blob_listing.reader(container, name, version_id, self.clock))

    async def download_blob(self, container: str, name: str, *, offset: int = 0, length: int | None = None,
                            version_id: str | None = None, if_match: str | None = None
                            ) -> tuple[bytes, BlobProperties]:
        return await self._snapshot(blob_listing.downloader(container, name, offset, length, version_id, if_match,
                                                           self.clock))

    async def list_blobs_page(self, container: str, *, prefix: str, delimiter: str, marker: str,
                              max_results: int) -> ListedPage:
        _, now = self._now()
        return await self._snapshot(blob_listing.lister(container, prefix, delimiter, marker, max_results, now))
