"""The Event Hubs checkpoint store over every blob backend: layout, conditional claims."""

from __future__ import annotations

import pytest

from funchost.triggers.eventhub.checkpoints import CONTAINER, BlobCheckpointStore, Ownership


@pytest.fixture
async def store(storage_backend):  # type: ignore[no-untyped-def]
    s = BlobCheckpointStore(storage_backend.blobs())
    await s.create_if_not_exists()
    return s


def own(pid: str, owner: str, etag: str | None = None) -> Ownership:
    return Ownership("LocalHost", "Hub", "$Default", pid, owner, None, etag)


async def test_blob_names_and_metadata_follow_the_extension(store: BlobCheckpointStore) -> None:
    [claimed] = await store.claim([own("0", "me")])
    await store.update_checkpoint("LocalHost", "Hub", "$Default", "0", 1234, 7)
    page = await store.blobs.list_blobs(CONTAINER)
    names = {b.name: dict(b.metadata) for b in page.items}
    assert names["localhost/hub/$default/ownership/0"] == {"ownerid": "me"}
    assert names["localhost/hub/$default/checkpoint/0"] == {"offset": "1234", "sequencenumber": "7"}
    checkpoint = await store.get_checkpoint("LocalHost", "Hub", "$Default", "0")
    assert checkpoint is not None and (checkpoint.offset, checkpoint.sequence_number) == (1234, 7)
    assert await store.get_checkpoint("LocalHost", "Hub", "$Default", "1") is None


async def test_claims_are_conditional(store: BlobCheckpointStore) -> None:
    [mine] = await store.claim([own("0", "me")])
    assert await store.claim([own("0", "you")]) == []  # exists: a create without its ETag loses
    [stolen] = await store.claim([own("0", "you", mine.etag)])  # with the ETag last seen: wins
    assert await store.claim([own("0", "me", mine.etag)]) == []  # my renewal now fails: ownership lost
    [listed] = await store.list_ownership("LocalHost", "Hub", "$Default")
    assert (listed.owner_id, listed.etag) == ("you", stolen.etag)


async def test_relinquish_and_legacy_checkpoint(store: BlobCheckpointStore) -> None:
    [mine] = await store.claim([own("0", "me")])
    [released] = await store.claim([own("0", "", mine.etag)])
    assert released.owner_id == ""
    await store.blobs.upload_blob(CONTAINER, "LocalHost/Hub/$Default/3",
                                  b'{"PartitionId":"3","Owner":"x","Offset":"8591964920","SequenceNumber":960180}')
    legacy = await store.get_checkpoint("LocalHost", "Hub", "$Default", "3")
    assert legacy is not None and (legacy.offset, legacy.sequence_number) == (8591964920, 960180)
