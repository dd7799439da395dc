"""Embedded store rules beyond the contract: version ids, change events, names, chunked content."""

from __future__ import annotations

import re

import pytest

from funchost.errors import BlobNotFound, InvalidInput, InvalidResourceName, PreconditionFailed
from funchost.storage.blobs import BlobChange
from funchost.storage.blobsql import blob_rows
from funchost.storage.sqlite.blobs import SqliteBlobService

VERSION = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$")


# -- versions -------------------------------------------------------------------------------------


async def test_every_write_in_a_versioned_container_makes_a_readable_version(blobs, clock):
    await blobs.create_container("hist", versioning=True)
    v1 = await blobs.upload_blob("hist", "doc", b"one")
    await clock.advance(1.5)
    v2 = await blobs.upload_blob("hist", "doc", b"two")
    assert VERSION.match(v1.version_id or "") and v1.version_id == "2026-12-02T15:00:00.0000000Z"
    assert v2.version_id == "2026-12-02T15:00:01.5000000Z"
    assert (await blobs.get_blob_properties("hist", "doc")).version_id == v2.version_id
    assert (await blobs.download_blob("hist", "doc", version_id=v1.version_id))[0] == b"one"
    assert (await blobs.download_blob("hist", "doc", version_id=v2.version_id))[0] == b"two"
    assert (await blobs.download_blob("hist", "doc"))[0] == b"two"


async def test_version_ids_stay_unique_within_one_clock_tick(blobs):
    await blobs.create_container("hist", versioning=True)
    ids = [(await blobs.upload_blob("hist", "doc", bytes([i]))).version_id for i in range(3)]
    assert ids == sorted(set(ids), key=ids.index) and len(set(ids)) == 3
    for i, vid in enumerate(ids):
        assert (await blobs.download_blob("hist", "doc", version_id=vid))[0] == bytes([i])


async def test_delete_keeps_previous_versions(blobs):
    await blobs.create_container("hist", versioning=True)
    v1 = await blobs.upload_blob("hist", "doc", b"one")
    await blobs.delete_blob("hist", "doc")
    with pytest.raises(BlobNotFound):
        await blobs.download_blob("hist", "doc")
    assert (await blobs.download_blob("hist", "doc", version_id=v1.version_id))[0] == b"one"
    assert (await blobs.list_blobs("hist")).items == []


async def test_set_metadata_makes_a_version_too(blobs):
    await blobs.create_container("hist", versioning=True)
    v1 = await blobs.upload_blob("hist", "doc", b"one", metadata={"a": "1"})
    v2 = await blobs.set_blob_metadata("hist", "doc", {"a": "2"})
    assert v2.version_id != v1.version_id
    assert (await blobs.get_blob_properties("hist", "doc", version_id=v1.version_id)).metadata == {"a": "1"}


async def test_unversioned_containers_have_no_version_ids(blobs):
    props = await blobs.upload_blob("box", "doc", b"one")
    assert props.version_id is None
    with pytest.raises(BlobNotFound):
        await blobs.download_blob("box", "doc", version_id="2026-12-02T15:00:00.0000000Z")


async def test_unknown_version_is_not_found(blobs):
    await blobs.create_container("hist", versioning=True)
    await blobs.upload_blob("hist", "doc", b"one")
    with pytest.raises(BlobNotFound):
        await blobs.download_blob("hist", "doc", version_id="2001-01-01T00:00:00.0000000Z")


# -- etags and times ------------------------------------------------------------------------------


async def test_etag_format_and_times_from_the_clock(blobs, clock):
    first = await blobs.upload_blob("box", "a", b"1")
    assert re.match(r'^"0x[0-9A-F]{15,16}"$', first.etag)
    await clock.advance(90)
    second = await blobs.upload_blob("box", "a", b"2")
    assert second.etag != first.etag
    assert (second.last_modified - first.last_modified).total_seconds() == 90
    assert second.creation_time == first.creation_time
    assert first.last_modified == clock.now().replace(second=0, minute=0)  # START, from the clock


async def test_if_match_star_needs_an_existing_blob(blobs):
    with pytest.raises(PreconditionFailed):
        await blobs.upload_blob("box", "new", b"x", if_match="*")
    await blobs.upload_blob("box", "new", b"x")
    await blobs.upload_blob("box", "new", b"y", if_match="*")


# -- change events --------------------------------------------------------------------------------


async def test_changes_are_published_after_commit_with_increasing_sequencers(blobs):
    seen: list[BlobChange] = []
    unsubscribe = blobs.subscribe(seen.append)
    await blobs.upload_blob("box", "dir/a b+c.txt", b"hello", content_type="text/plain")
    await blobs.upload_blob("box", "dir/a b+c.txt", b"again")
    await blobs.delete_blob("box", "dir/a b+c.txt")
    unsubscribe()
    await blobs.upload_blob("box", "after", b"")
    assert [(c.kind, c.api) for c in seen] == [
        ("BlobCreated", "PutBlob"), ("BlobCreated", "PutBlob"), ("BlobDeleted", "DeleteBlob")]
    sequencers = [c.sequencer for c in seen]
    assert sequencers == sorted(sequencers) and len(set(sequencers)) == 3
    assert all(len(s) == 32 and int(s, 16) > 0 for s in sequencers)
    created = seen[0]
    assert created.url == "http://127.0.0.1:10000/devstoreaccount1/box/dir/a%20b%2Bc.txt"
    assert created.account == "devstoreaccount1" and created.container == "box"
    assert created.properties is not None and created.properties.size == 5
    assert created.properties.content_type == "text/plain"
    assert seen[2].properties is None


async def test_failed_or_metadata_only_writes_publish_nothing(blobs):
    seen: list[BlobChange] = []
    blobs.subscribe(seen.append)
    with pytest.raises(InvalidResourceName):
        await blobs.upload_blob("box", "", b"x")
    with pytest.raises(BlobNotFound):
        await blobs.delete_blob("box", "missing")
    await blobs.upload_blob("box", "a", b"x")
    await blobs.set_blob_metadata("box", "a", {"k": "v"})
    assert len(seen) == 1


async def test_a_failing_listener_does_not_fail_the_write(blobs):
    seen: list[str] = []

    def broken(change: BlobChange) -> None:
        raise RuntimeError("boom")

    blobs.subscribe(broken)
    blobs.subscribe(lambda c: seen.append(c.name))
    await blobs.upload_blob("box", "a", b"x")
    assert seen == ["a"]


async def test_other_processes_read_the_change_journal(tmp_path, clock, blobs):
    other = SqliteBlobService(tmp_path / "acct", "devstoreaccount1", clock)
    try:
        await other.upload_blob("box", "from-other", b"1")
        await blobs.upload_blob("box", "from-me", b"2")
        changes = await blobs.changes_since(None)
        assert [c.name for c in changes] == ["from-other", "from-me"]
        assert changes[0].properties is not None and changes[0].properties.size == 1
        assert [c.name for c in await blobs.changes_since(changes[0].sequencer)] == ["from-me"]
    finally:
        await other.aclose()


# -- names and metadata ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "x" * 1025, "/".join(["s"] * 255), "tab\there"])
async def test_invalid_blob_names(blobs, name):
    with pytest.raises(InvalidResourceName):
        await blobs.upload_blob("box", name, b"x")


@pytest.mark.parametrize("name", ["x" * 1024, "/".join(["s"] * 254), "ends.with.dot.", "trailing/"])
async def test_valid_blob_names(blobs, name):
    await blobs.upload_blob("box", name, b"x")
    assert (await blobs.download_blob("box", name))[0] == b"x"


@pytest.mark.parametrize("metadata", [{"1abc": "x"}, {"has-dash": "x"}, {"a": "1", "A": "2"}, {"k": "v" * 9000}])
async def test_invalid_metadata(blobs, metadata):
    with pytest.raises(InvalidInput):
        await blobs.upload_blob("box", "a", b"x", metadata=metadata)


# -- content storage ------------------------------------------------------------------------------


async def test_large_content_spans_chunks_and_ranges_read_across_them(blobs, monkeypatch):
    monkeypatch.setattr(blob_rows, "CHUNK_SIZE", 1024)
    monkeypatch.setattr("funchost.storage.blobsql.blobs.CHUNK_SIZE", 1024)
    monkeypatch.setattr("funchost.storage.blobsql.blob_sql.CHUNK_SIZE", 1024)
    data = bytes(range(256)) * 20  # 5120 bytes, 5 chunks
    await blobs.upload_blob("box", "big", data)
    assert (await blobs.download_blob("box", "big"))[0] == data
    assert (await blobs.download_blob("box", "big", offset=1000, length=2100))[0] == data[1000:3100]


async def test_overwrite_and_delete_free_old_content(blobs):
    await blobs.upload_blob("box", "a", b"1" * 100)
    await blobs.upload_blob("box", "a", b"2" * 100)
    await blobs.upload_blob("box", "b", b"3")
    await blobs.delete_blob("box", "b")
    count = await blobs._db.read(lambda c: c.execute("SELECT count(*) FROM chunks").fetchone()[0])
    assert count == 1
