"""Document store rules every backend must follow: items, etags, queries, partitions, change feed.

Runs on every backend with a document store (`local_storage`), as the host hands it out: the
argument rules of `storage.document_rules` in front of the backend.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from funchost.clock import ManualClock
from funchost.documents.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosBadRequestError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)
from funchost.errors import PreconditionFailed, ResourceConflict, ResourceNotFound
from funchost.storage.documents import DocumentStore

BEGINNING = datetime.min.replace(tzinfo=UTC)
PARTITIONS = 4


@pytest.fixture
async def store(document_store: DocumentStore) -> DocumentStore:
    await document_store.create_database("db")
    await document_store.create_container("db", "items", partition_key_path="/pk", partitions=PARTITIONS)
    return document_store


async def partition_of(store: DocumentStore, item_id: str) -> int:
    """The partition whose feed holds the item (found through the feed, as a reader would)."""
    for pid in range(PARTITIONS):
        page = await store.read_feed("db", "items", pid, start_time=BEGINNING)
        if any(d["id"] == item_id for d in page.items):
            return pid
    raise AssertionError(f"{item_id} is in no partition's feed")


async def test_create_twice_is_409_and_read_missing_is_404(store: DocumentStore) -> None:
    await store.create_item("db", "items", {"id": "a", "pk": "x"})
    with pytest.raises(CosmosResourceExistsError) as conflict:
        await store.create_item("db", "items", {"id": "a", "pk": "x"})
    assert isinstance(conflict.value, ResourceConflict) and conflict.value.status_code == 409
    with pytest.raises(ResourceNotFound) as missing:
        await store.read_item("db", "items", "nope", "x")
    assert missing.value.status == 404
    await store.create_item("db", "items", {"id": "a", "pk": "y"})  # same id, other partition key: another item
    assert (await store.read_item("db", "items", "a", "y"))["pk"] == "y"


async def test_every_write_changes_the_etag_and_if_match_gives_412(store: DocumentStore,
                                                                   manual_clock: ManualClock) -> None:
    first = await store.create_item("db", "items", {"id": "a", "pk": "x", "n": 1})
    assert first["_ts"] == int(manual_clock.now().timestamp()) and first["_rid"] and first["_etag"]
    second = await store.upsert_item("db", "items", {"id": "a", "pk": "x", "n": 2})
    assert second["_etag"] != first["_etag"] and second["_rid"] == first["_rid"]
    with pytest.raises(CosmosAccessConditionFailedError) as stale:
        await store.replace_item("db", "items", "a", {"id": "a", "pk": "x", "n": 3}, if_match=first["_etag"])
    assert isinstance(stale.value, PreconditionFailed) and stale.value.status_code == 412
    third = await store.replace_item("db", "items", "a", {"id": "a", "pk": "x", "n": 3}, if_match=second["_etag"])
    assert (await store.read_item("db", "items", "a", "x"))["n"] == 3 and third["_etag"] != second["_etag"]
    with pytest.raises(PreconditionFailed):
        await store.delete_item("db", "items", "a", "x", if_match=second["_etag"])
    with pytest.raises(PreconditionFailed):
        await store.upsert_item("db", "items", {"id": "a", "pk": "x"}, if_match=second["_etag"])
    await store.delete_item("db", "items", "a", "x", if_match=third["_etag"])
    with pytest.raises(CosmosResourceNotFoundError):
        await store.read_item("db", "items", "a", "x")


async def test_replace_or_delete_of_a_missing_item_is_404(store: DocumentStore) -> None:
    with pytest.raises(CosmosResourceNotFoundError):
        await store.replace_item("db", "items", "a", {"id": "a", "pk": "x"})
    with pytest.raises(CosmosResourceNotFoundError):
        await store.delete_item("db", "items", "a", "x")


async def test_argument_rules(store: DocumentStore) -> None:
    for body in ({"pk": "x"}, {"id": "", "pk": "x"}, {"id": 7, "pk": "x"}):
        with pytest.raises(CosmosBadRequestError) as bad:
            await store.upsert_item("db", "items", body)
        assert bad.value.status_code == 400
    await store.create_item("db", "items", {"id": "a", "pk": "x"})
    with pytest.raises(CosmosBadRequestError):
        await store.replace_item("db", "items", "a", {"id": "b", "pk": "x"})
    with pytest.raises(CosmosBadRequestError):
        await store.create_container("db", "bad", partition_key_path="pk")


async def test_queries_by_field_id_prefix_and_partition_key(store: DocumentStore) -> None:
    for i in range(6):
        await store.upsert_item("db", "items", {"id": f"item-{i}", "pk": "even" if i % 2 == 0 else "odd",
                                                "status": "new" if i < 3 else "old", "nested": {"n": i}})
    found = await store.query_items("db", "items", equals={"status": "new"})
    assert sorted(d["id"] for d in found) == ["item-0", "item-1", "item-2"]
    scoped = await store.query_items("db", "items", equals={"status": "new"}, partition_key="even",
                                     has_partition_key=True)
    assert sorted(d["id"] for d in scoped) == ["item-0", "item-2"]
    assert [d["id"] for d in await store.query_items("db", "items", equals={"nested.n": 4})] == ["item-4"]
    assert len(await store.query_items("db", "items", id_prefix="item-")) == 6
    assert await store.query_items("db", "items", id_prefix="other") == []


async def test_an_item_without_a_partition_key_value_is_one_item(store: DocumentStore) -> None:
    first = await store.create_item("db", "items", {"id": "loose", "n": 1})
    with pytest.raises(CosmosResourceExistsError):
        await store.create_item("db", "items", {"id": "loose"})
    second = await store.upsert_item("db", "items", {"id": "loose", "n": 2}, if_match=first["_etag"])
    found = await store.query_items("db", "items", id_prefix="loose")
    assert [(d["n"], d["_etag"]) for d in found] == [(2, second["_etag"])]
    assert await store.query_items("db", "items", id_prefix="loose", partition_key="loose",
                                   has_partition_key=True) == []


async def test_partitions_cover_the_key_space_and_each_item_is_in_one(store: DocumentStore) -> None:
    ranges = await store.partition_ranges("db", "items")
    assert [r.id for r in ranges] == list(range(PARTITIONS))
    assert ranges[0].min == "" and ranges[-1].max == "FF"
    assert all(a.max == b.min for a, b in zip(ranges, ranges[1:], strict=False))
    keys = [f"tenant-{i}" for i in range(40)]
    for k in keys:
        await store.upsert_item("db", "items", {"id": k, "pk": k})
    seen: list[str] = []
    for pid in range(PARTITIONS):
        page = await store.read_feed("db", "items", pid, start_time=BEGINNING)
        lsns = [d["_lsn"] for d in page.items]
        assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns)
        assert page.latest_lsn == await store.latest_lsn("db", "items", pid) == len(page.items)
        seen += [d["id"] for d in page.items]
    assert sorted(seen) == sorted(keys)


async def test_change_feed_collapses_updates_and_keeps_modification_order(store: DocumentStore) -> None:
    for body in ({"id": "a", "pk": "p", "v": 1}, {"id": "b", "pk": "p", "v": 1}, {"id": "a", "pk": "p", "v": 2},
                 {"id": "a", "pk": "p", "v": 3}):
        await store.upsert_item("db", "items", body)
    page = await store.read_feed("db", "items", await partition_of(store, "a"), start_time=BEGINNING)
    assert [(d["id"], d["v"]) for d in page.items] == [("b", 1), ("a", 3)]


async def test_change_feed_does_not_capture_deletes_but_a_delete_moves_the_lsn(store: DocumentStore) -> None:
    await store.upsert_item("db", "items", {"id": "a", "pk": "p"})
    pid = await partition_of(store, "a")
    first = await store.read_feed("db", "items", pid, start_time=BEGINNING)
    await store.upsert_item("db", "items", {"id": "b", "pk": "p"})
    await store.delete_item("db", "items", "a", "p")
    assert await store.latest_lsn("db", "items", pid) == 3
    after = await store.read_feed("db", "items", pid, after_lsn=first.continuation)
    assert [d["id"] for d in after.items] == ["b"] and after.continuation == 3
    again = await store.read_feed("db", "items", pid, after_lsn=after.continuation)
    assert again.items == [] and again.continuation == after.continuation


async def test_change_feed_start_positions(store: DocumentStore, manual_clock: ManualClock) -> None:
    await store.upsert_item("db", "items", {"id": "old", "pk": "p"})
    await manual_clock.advance(60)
    cut = manual_clock.now()
    await store.upsert_item("db", "items", {"id": "new", "pk": "p"})
    pid = await partition_of(store, "old")
    now = await store.read_feed("db", "items", pid)
    assert now.items == [] and now.continuation == now.latest_lsn == 2
    assert [d["id"] for d in (await store.read_feed("db", "items", pid, start_time=cut)).items] == ["new"]
    earlier = await store.read_feed("db", "items", pid, start_time=cut - timedelta(hours=1))
    assert [d["id"] for d in earlier.items] == ["old", "new"]


async def test_max_items_pages_the_feed(store: DocumentStore) -> None:
    for i in range(5):
        await store.upsert_item("db", "items", {"id": str(i), "pk": "p"})
    pid = await partition_of(store, "0")
    first = await store.read_feed("db", "items", pid, start_time=BEGINNING, max_items=2)
    assert [d["id"] for d in first.items] == ["0", "1"] and first.has_more
    second = await store.read_feed("db", "items", pid, after_lsn=first.continuation, max_items=2)
    assert [d["id"] for d in second.items] == ["2", "3"] and second.has_more
    last = await store.read_feed("db", "items", pid, after_lsn=second.continuation, max_items=2)
    assert [d["id"] for d in last.items] == ["4"] and not last.has_more


async def test_ttl_expires_items_in_containers_with_ttl_on(document_store: DocumentStore,
                                                          manual_clock: ManualClock) -> None:
    store = document_store
    await store.create_database("db")
    await store.create_container("db", "leases", default_ttl=-1)
    await store.create_container("db", "plain")
    await store.create_item("db", "leases", {"id": "lock", "ttl": 30})
    await store.create_item("db", "plain", {"id": "lock", "ttl": 30})
    await manual_clock.advance(31)
    with pytest.raises(CosmosResourceNotFoundError):
        await store.read_item("db", "leases", "lock", "lock")
    await store.create_item("db", "leases", {"id": "lock", "ttl": 30})  # the id is free again
    assert (await store.read_item("db", "plain", "lock", "lock"))["ttl"] == 30  # TTL off: just a field


async def test_databases_and_containers(document_store: DocumentStore) -> None:
    store = document_store
    with pytest.raises(CosmosResourceNotFoundError):
        await store.read_item("nope", "c", "a", "a")
    created = await store.create_database("db")
    assert (await store.create_database("db", exist_ok=True))["_rid"] == created["_rid"]
    with pytest.raises(CosmosResourceExistsError):
        await store.create_database("db")
    with pytest.raises(CosmosResourceNotFoundError):
        await store.upsert_item("db", "c", {"id": "a"})
    info = await store.create_container("db", "c", partition_key_path="/tenant", partitions=2)
    assert (info.database, info.name, info.partition_key_path, info.partitions) == ("db", "c", "/tenant", 2)
    assert info.database_rid == created["_rid"]
    assert (await store.create_container("db", "c", exist_ok=True)).rid == info.rid
    with pytest.raises(CosmosResourceExistsError):
        await store.create_container("db", "c")
    assert [c.name for c in await store.list_containers("db")] == ["c"]
    assert await store.list_databases() == ["db"]
    await store.delete_container("db", "c")
    with pytest.raises(CosmosResourceNotFoundError):
        await store.get_container("db", "c")
    await store.delete_database("db")
    assert await store.list_databases() == []
