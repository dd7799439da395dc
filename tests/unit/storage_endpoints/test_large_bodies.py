"""Large blob bodies go to the store as they arrive (Put Blob, Put Block, Append Block above
4 MiB): never held whole in memory, checked as a whole (Content-MD5, Content-Length, the limits),
and nothing is left behind when the write does not happen."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from azure.storage.blob.aio import BlobServiceClient
from tests.unit.storage_endpoints.signing import signed_headers

from funchost.settings.connections import DEVSTORE_ACCOUNT
from funchost.storage.blobsql import blob_uploads
from funchost.storage.blobsql.blob_rows import CHUNK_SIZE
from funchost.storage.sqlite.blobs import SqliteBlobAccount
from funchost.storage_endpoints.app import _body_pieces
from funchost.storage_endpoints.errors import ApiError

MIB = 1024 * 1024
BIG = bytes(range(256)) * (9 * MIB // 256) + b"tail"  # 9 MiB + 4: three chunks, the last one short


Query = Callable[[str], list[tuple[Any, ...]]]


@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def served_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stored(served: Any, served_backend: str, tmp_path: Path) -> Query:
    """Look at the blob store as it is stored: the embedded file on disk, or the account's tables
    on the PostgreSQL server."""

    def query(sql: str) -> list[tuple[Any, ...]]:
        if served_backend == "postgres":
            import psycopg

            config = served.storage.backend.config
            with psycopg.connect(config.conninfo) as conn:
                conn.execute(f'SET search_path TO "{config.schema}__{DEVSTORE_ACCOUNT}"')
                return conn.execute(sql).fetchall()
        with sqlite3.connect(tmp_path / "data" / "storage" / DEVSTORE_ACCOUNT / "blobs.db") as conn:
            return conn.execute(sql).fetchall()

    return query


def no_leftovers(stored: Query) -> bool:
    orphans = "SELECT count(*) FROM chunks WHERE content_id NOT IN (SELECT content_id FROM blobs) " \
              "AND content_id NOT IN (SELECT content_id FROM staged_blocks)"
    return stored("SELECT count(*) FROM pending_contents")[0][0] == 0 and stored(orphans)[0][0] == 0


@pytest.fixture
async def container(served):  # type: ignore[no-untyped-def]
    async with BlobServiceClient.from_connection_string(served.connection_string, max_single_put_size=64 * MIB,
                                                        max_block_size=64 * MIB) as client:
        yield await client.create_container("big")


async def test_a_large_put_blob_put_block_and_append_block_are_stored_whole(served, container, stored) -> None:
    api = served.blobs()  # the object the endpoints write through
    uploads: list[int] = []
    upload = api.upload_content

    async def counted(pieces: AsyncIterator[bytes]) -> Any:
        content = await upload(pieces)
        uploads.append(content.size)
        return content

    api.upload_content = counted
    blob = container.get_blob_client("one-shot.bin")
    await blob.upload_blob(BIG)  # one Put Blob of 9 MiB
    assert await (await blob.download_blob()).readall() == BIG
    props = await blob.get_blob_properties()
    assert props.content_settings.content_md5 == hashlib.md5(BIG).digest()
    blocks = container.get_blob_client("blocks.bin")
    await blocks.stage_block(base64.b64encode(b"1").decode(), BIG)
    await blocks.stage_block(base64.b64encode(b"2").decode(), b"small")
    await blocks.commit_block_list([base64.b64encode(b"2").decode(), base64.b64encode(b"1").decode()])
    assert await (await blocks.download_blob()).readall() == b"small" + BIG
    log = container.get_blob_client("log.bin")
    await log.create_append_blob()
    await log.append_block(b"head:")
    await log.append_block(BIG[: 5 * MIB])
    await log.append_block(b":end")
    assert await (await log.download_blob()).readall() == b"head:" + BIG[: 5 * MIB] + b":end"
    assert uploads == [len(BIG), len(BIG), 5 * MIB]  # the large bodies streamed, the small ones not
    assert no_leftovers(stored)


async def test_a_large_body_that_fails_a_check_leaves_nothing(served, container, stored) -> None:
    url = f"{served.url('blob')}/big/bad.bin"
    wrong = base64.b64encode(hashlib.md5(b"something else").digest()).decode()
    headers = signed_headers("PUT", url, BIG, "blob", {"x-ms-blob-type": "BlockBlob", "Content-MD5": wrong})
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.put(url, content=BIG, headers=headers)
        assert (response.status_code, response.headers["x-ms-error-code"]) == (400, "Md5Mismatch")
        # A condition that fails once the body is stored: If-None-Match on an existing blob.
        await container.get_blob_client("taken.bin").upload_blob(b"first")
        taken = f"{served.url('blob')}/big/taken.bin"
        headers = signed_headers("PUT", taken, BIG, "blob", {"x-ms-blob-type": "BlockBlob", "If-None-Match": "*"})
        response = await client.put(taken, content=BIG, headers=headers)
        assert (response.status_code, response.headers["x-ms-error-code"]) == (409, "BlobAlreadyExists")
    assert not await container.get_blob_client("bad.bin").exists()
    assert await (await container.get_blob_client("taken.bin").download_blob()).readall() == b"first"
    assert no_leftovers(stored)


async def test_a_body_shorter_than_its_content_length_stores_nothing(served, container, stored) -> None:
    url = f"{served.url('blob')}/big/short.bin"
    declared = 6 * MIB
    headers = signed_headers("PUT", url, b"x" * declared, "blob", {"x-ms-blob-type": "BlockBlob"})
    host, port = url.split("/")[2].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = f"PUT /{DEVSTORE_ACCOUNT}/big/short.bin HTTP/1.1\r\nHost: {host}:{port}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    writer.write(head.encode() + b"x" * (5 * MIB))  # a megabyte short, then the client goes away
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    for _ in range(200):  # bounded wait for the server to notice the disconnect and clean up
        if stored("SELECT count(*) FROM pending_contents")[0][0] == 0:
            break
        await asyncio.sleep(0.05)
    assert not await container.get_blob_client("short.bin").exists()
    assert no_leftovers(stored)


async def receive_of(chunks: list[bytes]) -> Any:
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    received = []

    async def receive() -> dict[str, Any]:
        received.append(messages[len(received)])
        return received[-1]

    return receive, received


async def test_body_pieces_enforce_the_limit_and_the_declared_length() -> None:
    receive, received = await receive_of([b"12345", b"67890", b"abc", b"def"])
    with pytest.raises(ApiError) as info:
        _ = [piece async for piece in _body_pieces(receive, 8, None)]
    assert (info.value.status, info.value.code) == (413, "RequestBodyTooLarge")
    assert len(received) == 4  # the rest was drained, not kept
    receive, _ = await receive_of([b"12345", b"678"])
    with pytest.raises(ApiError) as info:
        _ = [piece async for piece in _body_pieces(receive, 100, 10)]
    assert info.value.message.startswith("The request body is shorter")
    receive, _ = await receive_of([b"12345", b"678"])
    assert [piece async for piece in _body_pieces(receive, 100, 8)] == [b"12345", b"678"]


async def test_an_upload_reaches_the_store_chunk_by_chunk(tmp_path: Path, clock) -> None:
    store = SqliteBlobAccount(tmp_path / "acct", "acct", clock)
    seen_while_sending: list[int] = []

    async def pieces() -> AsyncIterator[bytes]:
        for n in range(3):
            yield bytes([n]) * CHUNK_SIZE
            await asyncio.sleep(0)
            seen_while_sending.append(await store._db.read(
                lambda c: c.execute("SELECT count(*) FROM chunks").fetchone()[0]))

    try:
        content = await store.upload_content(pieces())
        assert seen_while_sending == [1, 2, 3]  # each chunk stored before the next one arrives
        assert (content.size, content.md5) == (3 * CHUNK_SIZE, hashlib.md5(
            b"".join(bytes([n]) * CHUNK_SIZE for n in range(3))).digest())
        await store.discard_content(content)
        assert await store._db.read(lambda c: c.execute("SELECT count(*) FROM chunks").fetchone()[0]) == 0
    finally:
        await store.aclose()


async def test_uploads_abandoned_by_a_dead_process_are_swept_at_the_next_open(tmp_path: Path, clock) -> None:
    store = SqliteBlobAccount(tmp_path / "acct", "acct", clock)

    async def one_piece() -> AsyncIterator[bytes]:
        yield b"left behind"

    fresh = await store.upload_content(one_piece())
    old = await store.upload_content(one_piece())
    await store._db.write(lambda c: c.execute("UPDATE pending_contents SET started = ? WHERE content_id = ?",
                                              (time.time() - blob_uploads.ABANDONED_AFTER - 1, old.id)))
    await store.aclose()
    reopened = SqliteBlobAccount(tmp_path / "acct", "acct", clock)
    try:
        pending = await reopened._db.read(lambda c: [r[0] for r in c.execute("SELECT content_id FROM pending_contents")])
        assert pending == [fresh.id]  # a recent upload may be another process's, in flight
        chunks = await reopened._db.read(lambda c: [r[0] for r in c.execute("SELECT DISTINCT content_id FROM chunks")])
        assert chunks == [fresh.id]
    finally:
        await reopened.aclose()
