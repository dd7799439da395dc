"""Request bodies stored before the write that uses them (`BlobApi.upload_content`).

A large Put Blob / Put Block / Append Block body is written into the account's `chunks` table
as it arrives, one chunk per short transaction, so it is never held in memory whole and no
write lock is held while the client sends. The content is registered in `pending_contents`
and belongs to no blob: readers cannot see it. The write that takes it removes the registration
in its own transaction (and uses the chunks as they are); a body nobody took is discarded, and
what a crashed process left behind is swept at the next open once it is a day old.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterable, Iterator

from funchost.errors import StorageError
from funchost.storage.blob_api import UploadedContent
from funchost.storage.blobsql.blob_rows import CHUNK_SIZE, next_counter
from funchost.storage.sqlconn import Conn, StoreDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS pending_contents (
    content_id INTEGER PRIMARY KEY,
    started REAL NOT NULL
)
"""
ABANDONED_AFTER = 24 * 3600  # seconds (wall clock): no upload takes that long


async def upload(db: StoreDatabase, pieces: AsyncIterable[bytes]) -> UploadedContent:
    """Store `pieces` as a pending content, CHUNK_SIZE bytes per transaction; on any failure
    (the client went away, the body broke a limit) what was stored is dropped."""
    content_id = await db.write(register)
    digest, size, seq, buffer = hashlib.md5(), 0, 0, bytearray()

    async def flush(chunk: bytes) -> None:
        nonlocal seq
        await db.write(lambda conn: add_chunk(conn, content_id, seq, chunk))
        seq += 1

    try:
        async for piece in pieces:
            digest.update(piece)
            size += len(piece)
            buffer += piece
            while len(buffer) >= CHUNK_SIZE:
                await flush(bytes(buffer[:CHUNK_SIZE]))
                del buffer[:CHUNK_SIZE]
        if buffer or seq == 0:
            await flush(bytes(buffer))
    except BaseException:
        await db.write(lambda conn: discard(conn, content_id))
        raise
    return UploadedContent(content_id, size, digest.digest())


def register(conn: Conn) -> int:
    """A new content id for a body about to arrive."""
    content_id = next_counter(conn, "content")
    conn.execute("INSERT INTO pending_contents(content_id, started) VALUES (?, ?)", (content_id, time.time()))
    return content_id


def add_chunk(conn: Conn, content_id: int, seq: int, data: bytes) -> None:
    if conn.execute("SELECT 1 FROM pending_contents WHERE content_id = ?", (content_id,)).fetchone() is None:
        raise _gone()
    conn.execute("INSERT INTO chunks(content_id, seq, data) VALUES (?, ?, ?)", (content_id, seq, data))


def take(conn: Conn, content: UploadedContent) -> int:
    """Inside the write that uses it: the content is the write's from now on."""
    if conn.execute("DELETE FROM pending_contents WHERE content_id = ?", (content.id,)).rowcount != 1:
        raise _gone()
    return content.id


def chunks_of(conn: Conn, content_id: int) -> Iterator[bytes]:
    """The content's chunks in order, one in memory at a time."""
    seq = 0
    while (row := conn.execute("SELECT data FROM chunks WHERE content_id = ? AND seq = ?",
                               (content_id, seq)).fetchone()) is not None:
        yield bytes(row[0])
        seq += 1


def discard(conn: Conn, content_id: int) -> None:
    """Drop a content no write took (a no-op once a write took it)."""
    if conn.execute("DELETE FROM pending_contents WHERE content_id = ?", (content_id,)).rowcount:
        conn.execute("DELETE FROM chunks WHERE content_id = ?", (content_id,))


def sweep(conn: Conn) -> None:
    """Drop the contents of uploads abandoned by a process that died (run at open)."""
    stale = [r[0] for r in conn.execute("SELECT content_id FROM pending_contents WHERE started < ?",
                                        (time.time() - ABANDONED_AFTER,))]
    for content_id in stale:
        discard(conn, content_id)


def _gone() -> StorageError:
    return StorageError("the uploaded request body is no longer stored; send the request again",
                        code="InternalError", status=500)
