"""Blob service rules every backend must follow (Azure Blob storage REST semantics, block blobs).

Only behaviour Azure itself shows is asserted here; time-driven rules (lease expiry, break
periods) are in tests/unit/blobs with a manual clock.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from tests.support.azurite_fixtures import known_deviation

from funchost.errors import (
    BlobNotFound,
    ContainerAlreadyExists,
    ContainerNotFound,
    InvalidInput,
    LeaseConflict,
    PreconditionFailed,
    ResourceConflict,
    StorageError,
)
from funchost.storage.blobs import INFINITE_LEASE

SLACK = timedelta(seconds=5)


def cname(prefix: str = "c") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def container(blob_service):
    name = cname()
    await blob_service.create_container(name)
    yield name
    try:
        await blob_service.delete_container(name)
    except ContainerNotFound:
        pass


# -- containers -----------------------------------------------------------------------------------


async def test_create_container_twice(blob_service):
    name = cname()
    assert await blob_service.create_container(name) is True
    assert await blob_service.container_exists(name)
    assert await blob_service.create_container(name, exist_ok=True) is False
    with pytest.raises(ContainerAlreadyExists) as info:
        await blob_service.create_container(name)
    assert info.value.status == 409
    await blob_service.delete_container(name)
    assert not await blob_service.container_exists(name)


@pytest.mark.parametrize("bad", ["ab", "a" * 64, "Upper", "has_underscore", "-start", "end-", "dou--ble"])
async def test_invalid_container_names(blob_service, bad):
    with pytest.raises(InvalidInput) as info:
        await blob_service.create_container(bad)
    assert info.value.status == 400


@pytest.mark.parametrize("good", ["abc", "a" * 63, "a-b-c", "0box9"])
async def test_valid_container_names(blob_service, good):
    await blob_service.create_container(good, exist_ok=True)
    assert good in await blob_service.list_containers()
    await blob_service.delete_container(good)


async def test_delete_missing_container(blob_service):
    with pytest.raises(ContainerNotFound) as info:
        await blob_service.delete_container(cname())
    assert info.value.status == 404


async def test_list_containers_by_prefix(blob_service):
    prefix = cname("p")
    names = [f"{prefix}-a", f"{prefix}-b"]
    for name in names:
        await blob_service.create_container(name)
    other = cname("q")
    await blob_service.create_container(other)
    assert await blob_service.list_containers(prefix) == names
    for name in [*names, other]:
        await blob_service.delete_container(name)


async def test_delete_container_deletes_its_blobs(blob_service):
    name = cname()
    await blob_service.create_container(name)
    await blob_service.upload_blob(name, "x", b"1")
    await blob_service.delete_container(name)
    with pytest.raises(ContainerNotFound):
        await blob_service.download_blob(name, "x")


# -- upload and properties ------------------------------------------------------------------------


async def test_upload_download_roundtrip_and_properties(blob_service, container):
    before = datetime.now(UTC)
    props = await blob_service.upload_blob(container, "dir/file.txt", b"hello", metadata={"team": "ocr"})
    data, got = await blob_service.download_blob(container, "dir/file.txt")
    assert data == b"hello"
    assert got.size == 5
    assert got.etag == props.etag and got.etag.startswith('"') and got.etag.endswith('"')
    assert got.content_type == "application/octet-stream"
    assert got.content_md5 == hashlib.md5(b"hello").digest()
    assert got.metadata == {"team": "ocr"}
    assert got.blob_type == "BlockBlob"
    assert before - SLACK <= got.last_modified <= datetime.now(UTC) + SLACK
    assert got.lease_state == "available" and got.lease_status == "unlocked"


async def test_content_type_is_kept(blob_service, container):
    await blob_service.upload_blob(container, "a.json", b"{}", content_type="application/json")
    assert (await blob_service.get_blob_properties(container, "a.json")).content_type == "application/json"


async def test_overwrite_changes_etag_and_keeps_creation_time(blob_service, container):
    first = await blob_service.upload_blob(container, "b", b"one")
    second = await blob_service.upload_blob(container, "b", b"two!", metadata={"k": "v"})
    assert second.etag != first.etag
    props = await blob_service.get_blob_properties(container, "b")
    assert props.size == 4 and props.metadata == {"k": "v"}
    if known_deviation(blob_service, "an overwrite gets a new creation time (Azurite replaces the blob record)"):
        assert props.creation_time >= first.creation_time
    else:
        assert props.creation_time == first.creation_time
    assert (await blob_service.download_blob(container, "b"))[0] == b"two!"


async def test_overwrite_false_conflicts_when_blob_exists(blob_service, container):
    await blob_service.upload_blob(container, "b", b"one", overwrite=False)
    with pytest.raises(ResourceConflict) as info:
        await blob_service.upload_blob(container, "b", b"two", overwrite=False)
    assert info.value.status == 409 and info.value.code == "BlobAlreadyExists"
    assert (await blob_service.download_blob(container, "b"))[0] == b"one"


async def test_if_match(blob_service, container):
    props = await blob_service.upload_blob(container, "b", b"one")
    with pytest.raises(PreconditionFailed) as info:
        await blob_service.upload_blob(container, "b", b"two", if_match='"0x1"')
    assert info.value.status == 412
    updated = await blob_service.upload_blob(container, "b", b"two", if_match=props.etag)
    with pytest.raises(PreconditionFailed):
        await blob_service.download_blob(container, "b", if_match=props.etag)
    with pytest.raises(PreconditionFailed):
        await blob_service.delete_blob(container, "b", if_match=props.etag)
    await blob_service.delete_blob(container, "b", if_match=updated.etag)
    assert not [b.name for b in (await blob_service.list_blobs(container)).items]


async def test_set_metadata_changes_etag_not_content(blob_service, container):
    first = await blob_service.upload_blob(container, "m", b"data", metadata={"a": "1"})
    updated = await blob_service.set_blob_metadata(container, "m", {"b": "2"})
    assert updated.etag != first.etag
    data, props = await blob_service.download_blob(container, "m")
    assert data == b"data" and props.metadata == {"b": "2"}


async def test_empty_blob(blob_service, container):
    await blob_service.upload_blob(container, "empty", b"")
    data, props = await blob_service.download_blob(container, "empty")
    assert data == b"" and props.size == 0


async def test_missing_container_and_blob(blob_service, container):
    with pytest.raises(ContainerNotFound):
        await blob_service.upload_blob(cname(), "x", b"1")
    with pytest.raises(BlobNotFound) as info:
        await blob_service.download_blob(container, "nope")
    assert info.value.status == 404
    with pytest.raises(BlobNotFound):
        await blob_service.get_blob_properties(container, "nope")
    with pytest.raises(BlobNotFound):
        await blob_service.delete_blob(container, "nope")


async def test_names_are_case_sensitive_and_may_hold_any_text(blob_service, container):
    names = ["Report.PDF", "report.pdf", "日本語/ファイル 1.txt", "a+b=c&d#e%20?.bin"]
    for i, name in enumerate(names):
        await blob_service.upload_blob(container, name, str(i).encode())
    for i, name in enumerate(names):
        assert (await blob_service.download_blob(container, name))[0] == str(i).encode()
    listed = [b.name for b in (await blob_service.list_blobs(container)).items]
    assert sorted(listed) == sorted(names)


# -- ranges ---------------------------------------------------------------------------------------


async def test_ranges(blob_service, container):
    await blob_service.upload_blob(container, "r", b"0123456789")
    assert (await blob_service.download_blob(container, "r", offset=2, length=3))[0] == b"234"
    assert (await blob_service.download_blob(container, "r", offset=7))[0] == b"789"
    assert (await blob_service.download_blob(container, "r", offset=8, length=100))[0] == b"89"
    _, props = await blob_service.download_blob(container, "r", offset=2, length=3)
    assert props.size == 10


async def test_range_past_the_end(blob_service, container):
    await blob_service.upload_blob(container, "r", b"0123456789")
    offsets = [50]
    if not known_deviation(blob_service, "a range starting exactly at the blob's end returns no bytes, not 416"):
        offsets.append(10)
    for offset in offsets:
        with pytest.raises(StorageError) as info:
            await blob_service.download_blob(container, "r", offset=offset, length=5)
        assert info.value.status == 416 and info.value.code == "InvalidRange"


# -- delete and list ------------------------------------------------------------------------------


async def test_delete(blob_service, container):
    await blob_service.upload_blob(container, "d", b"x")
    await blob_service.delete_blob(container, "d")
    with pytest.raises(BlobNotFound):
        await blob_service.download_blob(container, "d")


async def test_list_by_prefix_in_name_order_with_pagination(blob_service, container):
    names = ["b/2", "a/1", "b/1", "b/10", "c", "B/upper"]
    for name in names:
        await blob_service.upload_blob(container, name, name.encode())
    page = await blob_service.list_blobs(container)
    assert [b.name for b in page.items] == sorted(names)  # ordinal: upper case first
    assert page.next_marker is None
    seen: list[str] = []
    marker = None
    pages = 0
    while True:
        page = await blob_service.list_blobs(container, prefix="b/", marker=marker, max_results=2)
        assert len(page.items) <= 2
        seen += [b.name for b in page.items]
        pages += 1
        marker = page.next_marker
        if not marker:
            break
    assert seen == ["b/1", "b/10", "b/2"]
    assert pages == 2
    item = next(b for b in (await blob_service.list_blobs(container, prefix="c")).items)
    assert item.size == 1 and item.etag.startswith('"')


# -- leases ---------------------------------------------------------------------------------------


async def test_lease_blocks_writes_without_its_id(blob_service, container):
    await blob_service.upload_blob(container, "l", b"v1")
    lease = await blob_service.acquire_lease(container, "l", duration=15)
    props = await blob_service.get_blob_properties(container, "l")
    assert props.lease_state == "leased" and props.lease_status == "locked"
    with pytest.raises(PreconditionFailed) as info:
        await blob_service.upload_blob(container, "l", b"v2")
    assert info.value.status == 412 and info.value.code == "LeaseIdMissing"
    with pytest.raises(PreconditionFailed) as info:
        await blob_service.upload_blob(container, "l", b"v2", lease_id=str(uuid.uuid4()))
    assert info.value.code == "LeaseIdMismatchWithBlobOperation"
    with pytest.raises(PreconditionFailed) as info:
        await blob_service.delete_blob(container, "l")
    assert info.value.code == "LeaseIdMissing"
    await blob_service.upload_blob(container, "l", b"v2", lease_id=lease)
    assert (await blob_service.download_blob(container, "l"))[0] == b"v2"  # reads need no lease
    assert (await blob_service.get_blob_properties(container, "l")).lease_state == "leased"
    await blob_service.release_lease(container, "l", lease)
    await blob_service.delete_blob(container, "l")


async def test_lease_id_on_unleased_blob_is_rejected(blob_service, container):
    await blob_service.upload_blob(container, "l", b"v1")
    with pytest.raises(PreconditionFailed) as info:
        await blob_service.upload_blob(container, "l", b"v2", lease_id=str(uuid.uuid4()))
    assert info.value.code == "LeaseNotPresentWithBlobOperation"


async def test_acquire_conflicts_and_same_id_reacquires(blob_service, container):
    await blob_service.upload_blob(container, "l", b"")
    mine = str(uuid.uuid4())
    assert await blob_service.acquire_lease(container, "l", duration=INFINITE_LEASE, lease_id=mine) == mine
    with pytest.raises(LeaseConflict) as info:
        await blob_service.acquire_lease(container, "l", duration=15)
    assert info.value.status == 409 and info.value.code == "LeaseAlreadyPresent"
    assert await blob_service.acquire_lease(container, "l", duration=30, lease_id=mine) == mine
    await blob_service.release_lease(container, "l", mine)


async def test_renew_and_release_need_the_lease_id(blob_service, container):
    await blob_service.upload_blob(container, "l", b"")
    lease = await blob_service.acquire_lease(container, "l", duration=60)
    other = str(uuid.uuid4())
    for op in (blob_service.renew_lease, blob_service.release_lease):
        with pytest.raises(LeaseConflict) as info:
            await op(container, "l", other)
        assert info.value.status == 409 and info.value.code == "LeaseIdMismatchWithLeaseOperation"
    await blob_service.renew_lease(container, "l", lease)
    await blob_service.release_lease(container, "l", lease)
    assert (await blob_service.get_blob_properties(container, "l")).lease_state == "available"
    assert await blob_service.acquire_lease(container, "l", duration=15, lease_id=other) == other
    await blob_service.release_lease(container, "l", other)


@pytest.mark.parametrize("duration", [0, 14, 61, -2])
async def test_invalid_lease_duration(blob_service, container, duration):
    await blob_service.upload_blob(container, "l", b"")
    with pytest.raises(InvalidInput) as info:
        await blob_service.acquire_lease(container, "l", duration=duration)
    assert info.value.status == 400


async def test_lease_on_missing_blob(blob_service, container):
    with pytest.raises(BlobNotFound):
        await blob_service.acquire_lease(container, "missing", duration=15)


async def test_break_immediately_then_acquire(blob_service, container):
    await blob_service.upload_blob(container, "l", b"")
    lease = await blob_service.acquire_lease(container, "l", duration=INFINITE_LEASE)
    assert await blob_service.break_lease(container, "l", break_period=0) == 0
    props = await blob_service.get_blob_properties(container, "l")
    assert props.lease_state == "broken" and props.lease_status == "unlocked"
    with pytest.raises(LeaseConflict) as info:
        await blob_service.renew_lease(container, "l", lease)
    assert info.value.code == "LeaseIsBrokenAndCannotBeRenewed"
    await blob_service.upload_blob(container, "l", b"free")  # a broken lease no longer guards writes
    other = await blob_service.acquire_lease(container, "l", duration=15)
    assert other != lease
    await blob_service.release_lease(container, "l", other)


async def test_break_with_period_keeps_the_blob_locked(blob_service, container):
    await blob_service.upload_blob(container, "l", b"")
    lease = await blob_service.acquire_lease(container, "l", duration=60)
    remaining = await blob_service.break_lease(container, "l", break_period=30)
    assert 0 < remaining <= 30
    props = await blob_service.get_blob_properties(container, "l")
    assert props.lease_state == "breaking" and props.lease_status == "locked"
    with pytest.raises(LeaseConflict):
        await blob_service.acquire_lease(container, "l", duration=15)
    with pytest.raises(PreconditionFailed) as info:
        await blob_service.upload_blob(container, "l", b"x")
    assert info.value.code == "LeaseIdMissing"
    await blob_service.release_lease(container, "l", lease)  # release ends a breaking lease at once
    assert (await blob_service.get_blob_properties(container, "l")).lease_state == "available"


async def test_break_without_lease_conflicts(blob_service, container):
    await blob_service.upload_blob(container, "l", b"")
    with pytest.raises(LeaseConflict) as info:
        await blob_service.break_lease(container, "l")
    assert info.value.code == "LeaseNotPresentWithLeaseOperation"


async def test_md5_is_the_base64_digest_azure_reports(blob_service, container):
    props = await blob_service.upload_blob(container, "m", b"abc")
    assert base64.b64encode(props.content_md5 or b"").decode() == "kAFQmDzST7DWlj99KOF/cg=="
