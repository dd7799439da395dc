"""The embedded document store: items, etags, partitions, and the LatestVersion change feed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.documents import (
    CosmosAccessConditionFailedError,
    CosmosClient,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
    MatchConditions,
)
from funchost.errors import PreconditionFailed, ResourceConflict, ResourceNotFound
from funchost.storage.sqlite.documents import SqliteDocumentStore, partition_of, pk_key

BEGINNING = datetime.min.replace(tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2024, 5, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> SqliteDocumentStore:
    s = SqliteDocumentStore(tmp_path / "CosmosDB", "CosmosDB", clock)
    yield s
    s.close()


@pytest.fixture
def items(store: SqliteDocumentStore):  # type: ignore[no-untyped-def]
    db = CosmosClient(store).create_database_if_not_exists("db")
    return db.create_container_if_not_exists("items", "/pk", partitions=4)


def feed(store: SqliteDocumentStore, pid: int, **kwargs):  # type: ignore[no-untyped-def]
    return store.run_sync(lambda c: store.read_feed(c, "db", "items", pid, **kwargs))


def pid_of(value: str) -> int:
    return partition_of(pk_key(value), 4)


def test_create_twice_is_409_and_read_missing_is_404(items) -> None:  # type: ignore[no-untyped-def]
    items.create_item({"id": "a", "pk": "x"})
    with pytest.raises(CosmosResourceExistsError) as conflict:
        items.create_item({"id": "a", "pk": "x"})
    assert isinstance(conflict.value, ResourceConflict) and conflict.value.status_code == 409
    with pytest.raises(ResourceNotFound) as missing:
        items.read_item("nope", partition_key="x")
    assert missing.value.status == 404
    # the same id under another partition key value is another item
    items.create_item({"id": "a", "pk": "y"})


def test_every_write_changes_the_etag_and_if_match_gives_412(items, clock) -> None:  # type: ignore[no-untyped-def]
    first = items.create_item({"id": "a", "pk": "x", "n": 1})
    assert first["_ts"] == int(clock.now().timestamp()) and first["_rid"] and first["_etag"]
    second = items.upsert_item({"id": "a", "pk": "x", "n": 2})
    assert second["_etag"] != first["_etag"] and second["_rid"] == first["_rid"]
    with pytest.raises(CosmosAccessConditionFailedError) as stale:
        items.replace_item("a", {"id": "a", "pk": "x", "n": 3}, etag=first["_etag"],
                           match_condition=MatchConditions.IfNotModified)
    assert isinstance(stale.value, PreconditionFailed) and stale.value.status_code == 412
    third = items.replace_item("a", {"id": "a", "pk": "x", "n": 3}, etag=second["_etag"],
                               match_condition=MatchConditions.IfNotModified)
    assert items.read_item("a", "x")["n"] == 3 and third["_etag"] != second["_etag"]
    with pytest.raises(PreconditionFailed):
        items.delete_item("a", "x", etag=second["_etag"], match_condition=MatchConditions.IfNotModified)
    items.delete_item("a", "x", etag=third["_etag"], match_condition=MatchConditions.IfNotModified)
    with pytest.raises(CosmosResourceNotFoundError):
        items.read_item("a", "x")


def test_replace_of_a_missing_item_is_404(items) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CosmosResourceNotFoundError):
        items.replace_item("a", {"id": "a", "pk": "x"})


def test_queries_by_field_and_partition_key(items) -> None:  # type: ignore[no-untyped-def]
    for i in range(6):
        items.upsert_item({"id": str(i), "pk": "even" if i % 2 == 0 else "odd", "status": "new" if i < 3 else "old"})
    found = items.query_items("SELECT * FROM c WHERE c.status = @s", parameters=[{"name": "@s", "value": "new"}],
                              enable_cross_partition_query=True)
    assert sorted(d["id"] for d in found) == ["0", "1", "2"]
    scoped = items.query_items("SELECT * FROM c WHERE c.status = 'new'", partition_key="even")
    assert sorted(d["id"] for d in scoped) == ["0", "2"]
    assert len(items.read_all_items()) == 6


def test_items_hash_to_partitions_stably_and_lsn_grows_per_partition(items, store) -> None:  # type: ignore[no-untyped-def]
    keys = [f"tenant-{i}" for i in range(40)]
    assert len({pid_of(k) for k in keys}) == 4  # all four partitions are used
    assert [pid_of(k) for k in keys] == [partition_of(pk_key(k), 4) for k in keys]  # stable
    for k in keys:
        items.upsert_item({"id": k, "pk": k})
    for pid in range(4):
        page = feed(store, pid, start_time=BEGINNING)
        lsns = [d["_lsn"] for d in page.items]
        assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns)
        assert {pid_of(d["pk"]) for d in page.items} == {pid}


def test_change_feed_collapses_updates_and_keeps_modification_order(items, store) -> None:  # type: ignore[no-untyped-def]
    items.upsert_item({"id": "a", "pk": "p", "v": 1})
    items.upsert_item({"id": "b", "pk": "p", "v": 1})
    items.upsert_item({"id": "a", "pk": "p", "v": 2})
    items.upsert_item({"id": "a", "pk": "p", "v": 3})
    page = feed(store, pid_of("p"), start_time=BEGINNING)
    assert [(d["id"], d["v"]) for d in page.items] == [("b", 1), ("a", 3)]


def test_change_feed_does_not_capture_deletes(items, store) -> None:  # type: ignore[no-untyped-def]
    items.upsert_item({"id": "a", "pk": "p"})
    first = feed(store, pid_of("p"), start_time=BEGINNING)
    items.upsert_item({"id": "b", "pk": "p"})
    items.delete_item("a", "p")
    after = feed(store, pid_of("p"), after_lsn=first.continuation)
    assert [d["id"] for d in after.items] == ["b"]
    again = feed(store, pid_of("p"), after_lsn=after.continuation)
    assert again.items == [] and again.continuation == after.continuation


def test_change_feed_start_positions(items, store, clock) -> None:  # type: ignore[no-untyped-def]
    items.upsert_item({"id": "old", "pk": "p"})
    clock._elapsed += 60  # a minute later (no sleepers involved)
    cut = clock.now()
    items.upsert_item({"id": "new", "pk": "p"})
    pid = pid_of("p")
    now = feed(store, pid)
    assert now.items == [] and now.continuation == now.latest_lsn == 2
    assert [d["id"] for d in feed(store, pid, start_time=cut).items] == ["new"]
    assert [d["id"] for d in feed(store, pid, start_time=cut - timedelta(hours=1)).items] == ["old", "new"]


def test_max_items_pages_the_feed(items, store) -> None:  # type: ignore[no-untyped-def]
    for i in range(5):
        items.upsert_item({"id": str(i), "pk": "p"})
    first = feed(store, pid_of("p"), start_time=BEGINNING, max_items=2)
    assert [d["id"] for d in first.items] == ["0", "1"] and first.has_more
    second = feed(store, pid_of("p"), after_lsn=first.continuation, max_items=2)
    assert [d["id"] for d in second.items] == ["2", "3"] and second.has_more
    last = feed(store, pid_of("p"), after_lsn=second.continuation, max_items=2)
    assert [d["id"] for d in last.items] == ["4"] and not last.has_more


def test_ttl_expires_items_in_containers_with_ttl_on(store, clock) -> None:  # type: ignore[no-untyped-def]
    db = CosmosClient(store).create_database_if_not_exists("db")
    leases = db.create_container("leases", "/id", default_ttl=-1)
    plain = db.create_container("plain", "/id")
    leases.create_item({"id": "lock", "ttl": 30})
    plain.create_item({"id": "lock", "ttl": 30})
    clock._elapsed += 31
    with pytest.raises(CosmosResourceNotFoundError):
        leases.read_item("lock", "lock")
    leases.create_item({"id": "lock", "ttl": 30})  # the id is free again
    assert plain.read_item("lock", "lock")["ttl"] == 30  # TTL off: "ttl" is just a field


def test_two_store_objects_on_one_file_share_state(tmp_path, clock, items, store) -> None:  # type: ignore[no-untyped-def]
    other = SqliteDocumentStore(tmp_path / "CosmosDB", "CosmosDB", clock)
    try:
        twin = CosmosClient(other).get_database_client("db").get_container_client("items")
        twin.create_item({"id": "x", "pk": "x"})
        with pytest.raises(CosmosResourceExistsError):
            items.create_item({"id": "x", "pk": "x"})
    finally:
        other.close()


def test_missing_database_or_container_is_404(store) -> None:  # type: ignore[no-untyped-def]
    client = CosmosClient(store)
    with pytest.raises(CosmosResourceNotFoundError):
        client.get_database_client("nope").get_container_client("c").read_item("a", "a")
    client.create_database("db")
    with pytest.raises(CosmosResourceNotFoundError):
        client.get_database_client("db").get_container_client("c").upsert_item({"id": "a"})
