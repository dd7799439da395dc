"""The Blob REST API through the official SDK and raw HTTP: what the contract suite does not cover."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from datetime import timedelta

import httpx
import pytest
from azure.core import MatchConditions
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.storage.blob import BlobBlock, BlobType, ContentSettings
from azure.storage.blob.aio import BlobServiceClient

from funchost.settings.connections import DEVSTORE_ACCOUNT


@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.postgres)])
def served_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def container(served):  # type: ignore[no-untyped-def]
    async with BlobServiceClient.from_connection_string(served.connection_string) as client:
        yield await client.create_container("tasks", metadata={"Team": "a"})


def block_id(n: int) -> str:
    return base64.b64encode(f"block-{n:04d}".encode()).decode()


async def test_block_lists(container):
    blob = container.get_blob_client("blocks.bin")
    for n in range(3):
        await blob.stage_block(block_id(n), bytes([65 + n]) * 5)
    committed, uncommitted = await blob.get_block_list("all")
    assert committed == [] and [b.id for b in uncommitted] == [block_id(n) for n in range(3)]
    await blob.commit_block_list([BlobBlock(block_id(2)), BlobBlock(block_id(0))],
                                 content_settings=ContentSettings(content_type="text/plain"), metadata={"k": "v"})
    assert await (await blob.download_blob()).readall() == b"CCCCCAAAAA"
    committed, uncommitted = await blob.get_block_list("all")
    assert [(b.id, b.size) for b in committed] == [(block_id(2), 5), (block_id(0), 5)] and uncommitted == []
    # Committed blocks can be reused, new ones added, in any order.
    await blob.stage_block(block_id(9), b"Z")
    await blob.commit_block_list([BlobBlock(block_id(0)), BlobBlock(block_id(9)), BlobBlock(block_id(2))])
    assert await (await blob.download_blob()).readall() == b"AAAAAZCCCCC"
    with pytest.raises(HttpResponseError) as info:
        await blob.commit_block_list([BlobBlock(block_id(7))])
    assert (info.value.status_code, info.value.error_code) == (400, "InvalidBlockList")
    props = await blob.get_blob_properties()
    assert props.content_settings.content_type == "application/octet-stream"  # Put Block List without headers


async def test_large_upload_in_blocks_and_ranged_download(served):
    async with BlobServiceClient.from_connection_string(served.connection_string, max_single_put_size=1024 * 1024,
                                                        max_block_size=1024 * 1024,
                                                        max_single_get_size=1024 * 1024,
                                                        max_chunk_get_size=512 * 1024) as client:
        container = await client.create_container("large")
        data = bytes(range(256)) * (5 * 4096 + 17)  # 5 MiB + 4 KiB: six blocks
        await container.upload_blob("big.bin", data)
        assert await (await container.download_blob("big.bin")).readall() == data
        assert await (await container.download_blob("big.bin", offset=4_000_000, length=1000)).readall() == \
            data[4_000_000:4_001_000]
        _, uncommitted = await container.get_blob_client("big.bin").get_block_list("all")
        assert uncommitted == []


async def test_http_properties_and_conditions(container):
    blob = container.get_blob_client("doc.txt")
    settings = ContentSettings(content_type="text/plain", content_encoding="identity", content_language="en",
                               content_disposition="inline", cache_control="no-cache")
    first = await blob.upload_blob(b"hello", content_settings=settings)
    props = await blob.get_blob_properties()
    assert (props.content_settings.content_type, props.content_settings.content_encoding,
            props.content_settings.content_language, props.content_settings.content_disposition,
            props.content_settings.cache_control) == ("text/plain", "identity", "en", "inline", "no-cache")
    assert props.content_settings.content_md5 == hashlib.md5(b"hello").digest()
    with pytest.raises(ResourceExistsError):
        await blob.upload_blob(b"again")  # overwrite=False sends If-None-Match: *
    with pytest.raises(ResourceModifiedError):
        await blob.set_blob_metadata({"a": "1"}, etag='"0x1"', match_condition=MatchConditions.IfNotModified)
    await blob.set_blob_metadata({"a": "1"}, etag=first["etag"], match_condition=MatchConditions.IfNotModified)
    with pytest.raises(HttpResponseError) as info:  # unchanged since: 304 on reads
        await blob.download_blob(if_modified_since=props.last_modified + timedelta(seconds=5))
    assert info.value.status_code == 304
    with pytest.raises(ResourceModifiedError):
        await blob.download_blob(if_unmodified_since=props.last_modified - timedelta(seconds=5))
    await blob.set_http_headers(ContentSettings(content_type="application/json"))
    props = await blob.get_blob_properties()
    assert props.content_settings.content_type == "application/json" and props.content_settings.cache_control is None
    assert props.metadata == {"a": "1"}


async def test_ranges_and_416(served, container):
    await container.upload_blob("five.txt", b"01234")
    await container.upload_blob("empty.txt", b"")
    assert await (await container.download_blob("empty.txt")).readall() == b""
    async with httpx.AsyncClient() as client:
        from azure.storage.blob import BlobSasPermissions, generate_container_sas

        from funchost.settings.connections import DEVSTORE_KEY

        sas = generate_container_sas(DEVSTORE_ACCOUNT, "tasks", account_key=DEVSTORE_KEY,
                                     permission=BlobSasPermissions(read=True), expiry=served.clock.now() + timedelta(hours=1))
        url = f"{served.url('blob')}/tasks/five.txt?{sas}"
        partial = await client.get(url, headers={"x-ms-range": "bytes=1-2"})
        tail = await client.get(url, headers={"Range": "bytes=3-"})
        beyond = await client.get(url, headers={"x-ms-range": "bytes=5-9"})
        clamped = await client.get(url, headers={"x-ms-range": "bytes=2-100"})
    assert (partial.status_code, partial.content, partial.headers["content-range"]) == (206, b"12", "bytes 1-2/5")
    assert (tail.status_code, tail.content) == (206, b"34")
    assert (beyond.status_code, beyond.headers["content-range"], beyond.headers["x-ms-error-code"]) == \
        (416, "bytes */5", "InvalidRange")
    assert (clamped.content, clamped.headers["content-range"]) == (b"234", "bytes 2-4/5")


async def test_append_blobs(container):
    blob = container.get_blob_client("log.txt")
    await blob.create_append_blob()
    assert (await blob.append_block(b"one\n"))["blob_append_offset"] == "0"
    result = await blob.append_block(b"two\n", appendpos_condition=4)
    assert (result["blob_append_offset"], result["blob_committed_block_count"]) == ("4", 2)
    with pytest.raises(HttpResponseError) as info:
        await blob.append_block(b"x", appendpos_condition=1)
    assert info.value.error_code == "AppendPositionConditionNotMet"
    props = await blob.get_blob_properties()
    assert (props.blob_type, props.size, props.append_blob_committed_block_count) == (BlobType.APPENDBLOB, 8, 2)
    assert await (await blob.download_blob()).readall() == b"one\ntwo\n"
    with pytest.raises(HttpResponseError) as info:
        await container.get_blob_client("block.txt").upload_blob(b"x") and \
            await container.get_blob_client("block.txt").append_block(b"y")
    assert info.value.error_code == "InvalidBlobType"


async def test_copy_within_the_account_shares_nothing_visible(container):
    source = container.get_blob_client("source.txt")
    await source.upload_blob(b"original", metadata={"m": "1"}, content_settings=ContentSettings(content_type="text/x"))
    copy = container.get_blob_client("copy.txt")
    result = await copy.start_copy_from_url(source.url)
    assert result["copy_status"] == "success"
    await source.upload_blob(b"changed", overwrite=True)
    props = await copy.get_blob_properties()
    assert await (await copy.download_blob()).readall() == b"original"
    assert props.metadata == {"m": "1"} and props.content_settings.content_type == "text/x"
    with pytest.raises(ResourceNotFoundError):
        await container.get_blob_client("x.txt").start_copy_from_url(container.get_blob_client("missing").url)


async def test_leases_on_blobs_and_containers(container):
    blob = container.get_blob_client("leased.txt")
    await blob.upload_blob(b"x")
    lease = await blob.acquire_lease(lease_duration=15)
    with pytest.raises(HttpResponseError) as info:
        await blob.upload_blob(b"y", overwrite=True)
    assert (info.value.status_code, info.value.error_code) == (412, "LeaseIdMissing")
    await blob.upload_blob(b"y", overwrite=True, lease=lease)
    await lease.change("3f2504e0-4f89-11d3-9a0c-0305e82c3301")
    assert lease.id == "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    await lease.release()
    container_lease = await container.acquire_lease(lease_duration=-1)
    props = await container.get_container_properties()
    assert (props.lease.state, props.lease.duration) == ("leased", "infinite")
    with pytest.raises(HttpResponseError) as info:
        await container.delete_container()
    assert (info.value.status_code, info.value.error_code) == (412, "LeaseIdMissing")
    assert (await container_lease.break_lease()) == 0
    await container.delete_container()


async def test_hierarchical_listing_and_markers(container):
    for name in ("a/1.txt", "a/2.txt", "a/b/3.txt", "c.txt", "d/4.txt"):
        await container.upload_blob(name, b"x", metadata={"Kind": name[0]})
    top = [item.name async for item in container.walk_blobs()]
    assert sorted(top) == ["a/", "c.txt", "d/"]
    assert sorted([item.name async for item in container.walk_blobs(name_starts_with="a/")]) == \
        ["a/1.txt", "a/2.txt", "a/b/"]
    pages = container.list_blobs(include=["metadata"], results_per_page=2).by_page()
    seen = []
    async for page in pages:
        seen.append([(b.name, b.metadata) async for b in page])
    assert [len(p) for p in seen] == [2, 2, 1]
    assert seen[0][0] == ("a/1.txt", {"Kind": "a"})  # listings keep the metadata names' case


async def test_writes_through_rest_are_journalled_and_published(served, container):
    journal = served.storage.blob_changes()  # the journal Event Grid's system topic reads
    changes = []
    unsubscribe = journal.subscribe(changes.append)
    try:
        await container.upload_blob("new dir/new.txt", b"x")
        await container.get_blob_client("new dir/new.txt").delete_blob()
    finally:
        unsubscribe()
    assert [(c.kind, c.api, c.name) for c in changes] == [("BlobCreated", "PutBlob", "new dir/new.txt"),
                                                            ("BlobDeleted", "DeleteBlob", "new dir/new.txt")]
    journalled = await journal.changes_since(None)
    assert [c.kind for c in journalled] == ["BlobCreated", "BlobDeleted"]
    # The URLs name the endpoint actually served (a free port here, not 10000) and fetch the blob.
    url = f"{served.url('blob')}/{container.container_name}/new%20dir/new.txt"
    assert {c.url for c in journalled} == {c.url for c in changes} == {url}


async def test_bad_input_answers_azure_codes(served, container):
    blob = container.get_blob_client("bad.txt")
    with pytest.raises(HttpResponseError) as info:
        await blob.upload_blob(b"data", validate_content=False,
                               headers={"Content-MD5": base64.b64encode(b"0" * 16).decode()})
    assert (info.value.status_code, info.value.error_code) == (400, "Md5Mismatch")
    with pytest.raises(HttpResponseError) as info:
        await blob.create_snapshot()
    assert (info.value.status_code, info.value.error_code) == (501, "NotImplemented")
    with pytest.raises(HttpResponseError) as info:
        await blob.set_standard_blob_tier("Cool")
    assert info.value.status_code == 501
    with pytest.raises(HttpResponseError) as info:
        await container.get_blob_client("x").upload_blob(b"x", metadata={"bad-name": "1"})
    assert info.value.error_code == "InvalidMetadata"
    async with httpx.AsyncClient() as client:
        from tests.unit.storage_endpoints.signing import signed_headers

        url = f"{served.url('blob')}/tasks/x?comp=blocklist"
        malformed = await client.put(url, content=b"<BlockList><Latest>", headers=signed_headers(
            "PUT", url, b"<BlockList><Latest>", "blob"))
        block_url = f"{served.url('blob')}/tasks/z?comp=block&blockid=not%20base64%21"
        bad_block = await client.put(block_url, content=b"x", headers=signed_headers("PUT", block_url, b"x", "blob"))
    assert (malformed.status_code, malformed.headers["x-ms-error-code"]) == (400, "InvalidXmlDocument")
    assert (bad_block.status_code, bad_block.headers["x-ms-error-code"]) == (400, "InvalidQueryParameterValue")
    # A body cut short (Content-Length 10, 3 bytes, then the client goes away) writes nothing.
    url = f"{served.url('blob')}/tasks/cut.bin"
    headers = signed_headers("PUT", url, b"x" * 10, "blob", {"x-ms-blob-type": "BlockBlob"})
    port = int(url.split(":")[2].split("/")[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"PUT /{DEVSTORE_ACCOUNT}/tasks/cut.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n" + \
        "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    writer.write(head.encode() + b"abc")
    await writer.drain()
    writer.close()
    await asyncio.sleep(0.2)  # the server notices the disconnect
    assert [b.name async for b in container.list_blobs()] == []
