"""Staged blocks, block lists and content assembly for the embedded blob store.

A staged block's bytes are stored as their own content (chunks) until Put Block List; the
commit writes the chosen blocks, in order, into a new content of fixed-size chunks (streaming,
one chunk in memory at a time) and records the committed list (ids and sizes) so a later list
can refer to `Committed` blocks and Get Block List can report them. Unused staged blocks are
discarded by the commit, as the service does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from funchost.errors import InvalidInput
from funchost.storage.blob_api import Block
from funchost.storage.blobsql.blob_rows import CHUNK_SIZE, next_counter
from funchost.storage.blobsql.blob_sql import read_range
from funchost.storage.sqlconn import Conn

KINDS = ("committed", "uncommitted", "latest")


def write_content(conn: Conn, pieces: Iterable[bytes]) -> tuple[int, int]:
    """Store a byte stream as a new content in CHUNK_SIZE chunks -> (content id, size)."""
    content_id = next_counter(conn, "content")
    buffer = bytearray()
    seq = size = 0
    for piece in pieces:
        buffer += piece
        size += len(piece)
        while len(buffer) >= CHUNK_SIZE:
            conn.execute("INSERT INTO chunks(content_id, seq, data) VALUES (?, ?, ?)",
                         (content_id, seq, bytes(buffer[:CHUNK_SIZE])))
            del buffer[:CHUNK_SIZE]
            seq += 1
    if buffer or seq == 0:
        conn.execute("INSERT INTO chunks(content_id, seq, data) VALUES (?, ?, ?)", (content_id, seq, bytes(buffer)))
    return content_id, size


def stage(conn: Conn, container: str, name: str, block_id: str, content_id: int, size: int) -> None:
    """Stage a content already written (`write_content`, or an upload taken) as the block."""
    old = conn.execute("SELECT content_id FROM staged_blocks WHERE container = ? AND name = ? AND block_id = ?",
                       (container, name, block_id)).fetchone()
    if old is not None:  # staged again: the block moves to the end of the uncommitted list
        conn.execute("DELETE FROM staged_blocks WHERE container = ? AND name = ? AND block_id = ?",
                     (container, name, block_id))
    conn.execute("INSERT INTO staged_blocks(container, name, block_id, size, content_id) "
                 "VALUES (?, ?, ?, ?, ?)", (container, name, block_id, size, content_id))
    if old is not None:
        conn.execute("DELETE FROM chunks WHERE content_id = ?", (old[0],))


def committed_list(conn: Conn, container: str, name: str) -> list[Block]:
    return [Block(r[0], r[1]) for r in conn.execute(
        "SELECT block_id, size FROM committed_blocks WHERE container = ? AND name = ? ORDER BY idx",
        (container, name))]


def staged_list(conn: Conn, container: str, name: str) -> list[Block]:
    return [Block(r[0], r[1]) for r in conn.execute(
        "SELECT block_id, size FROM staged_blocks WHERE container = ? AND name = ? ORDER BY rowid",
        (container, name))]


def assemble(conn: Conn, container: str, name: str, wanted: Sequence[tuple[str, str]],
             current_content: int | None) -> tuple[int, int, list[Block]]:
    """Resolve a block list and write the new content -> (content id, size, committed blocks)."""
    staged = {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT block_id, size, content_id FROM staged_blocks WHERE container = ? AND name = ?", (container, name))}
    committed: dict[str, tuple[int, int]] = {}
    offset = 0
    for block in committed_list(conn, container, name):
        committed.setdefault(block.id, (offset, block.size))
        offset += block.size
    sources: list[tuple[str, int, int, int]] = []  # (id, content id, start, size)
    for kind, block_id in wanted:
        use_staged = kind in ("uncommitted", "latest") and block_id in staged
        if use_staged:
            size, content_id = staged[block_id]
            sources.append((block_id, content_id, 0, size))
        elif kind in ("committed", "latest") and block_id in committed and current_content is not None:
            start, size = committed[block_id]
            sources.append((block_id, current_content, start, size))
        else:
            raise InvalidInput(f"block '{block_id}' is not {kind}", code="InvalidBlockList")
    content_id, size = write_content(conn, read_all(conn, sources))
    return content_id, size, [Block(i, s) for i, _, _, s in sources]


def read_all(conn: Conn, sources: Sequence[tuple[str, int, int, int]]) -> Iterator[bytes]:
    for _, content_id, start, size in sources:
        for offset in range(start, start + size, CHUNK_SIZE):
            yield read_range(conn, content_id, offset, min(start + size, offset + CHUNK_SIZE))


def record_committed(conn: Conn, container: str, name: str, blocks: Sequence[Block]) -> None:
    conn.execute("DELETE FROM committed_blocks WHERE container = ? AND name = ?", (container, name))
    conn.executemany("INSERT INTO committed_blocks(container, name, idx, block_id, size) VALUES (?, ?, ?, ?, ?)",
                     [(container, name, i, b.id, b.size) for i, b in enumerate(blocks)])


def append(conn: Conn, content_id: int, size: int, data: bytes) -> None:
    """Extend a content in place: fill the last chunk, then add chunks."""
    last_seq = (size - 1) // CHUNK_SIZE if size else 0
    row = conn.execute("SELECT data FROM chunks WHERE content_id = ? AND seq = ?", (content_id, last_seq)).fetchone()
    tail = bytes(row[0]) if row else b""
    buffer = tail + data
    seq = last_seq
    for offset in range(0, max(len(buffer), 1), CHUNK_SIZE):
        conn.execute("INSERT INTO chunks(content_id, seq, data) VALUES (?, ?, ?) "
                     "ON CONFLICT (content_id, seq) DO UPDATE SET data = excluded.data",
                     (content_id, seq, buffer[offset:offset + CHUNK_SIZE]))
        seq += 1


def shared(conn: Conn, content_id: int) -> bool:
    """True if more than one blob or version refers to this content (copies share content)."""
    users = conn.execute("SELECT (SELECT count(*) FROM blobs WHERE content_id = ?) + "
                         "(SELECT count(*) FROM versions WHERE content_id = ?)", (content_id, content_id)).fetchone()
    return int(users[0]) > 1
