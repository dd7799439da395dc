"""The sync client (`funchost.documents`) over the embedded store, and what is SQLite's own:
stable hashing onto partitions, several store objects on one file. The store's rules are the
contract suite's (tests/contract/test_document_store.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.documents import (
    CosmosAccessConditionFailedError,
    CosmosClient,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
    MatchConditions,
)
from funchost.documents.bridge import run_sync
from funchost.settings.app_settings import AppSettings
from funchost.storage.document_sql import partition_of, pk_key
from funchost.storage.documents import DocumentStore
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.testing import HostHarness, write_app

BEGINNING = datetime.min.replace(tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2024, 5, 1, 12, 0, tzinfo=UTC))


def embedded(tmp_path: Path, clock: ManualClock) -> HostStorage:
    return open_storage("embedded", tmp_path / "data", AppSettings({}, environ={}), clock)


@pytest.fixture
def storage(tmp_path: Path, clock: ManualClock) -> Any:
    opened = embedded(tmp_path, clock)
    yield opened
    run_sync(opened.aclose())


@pytest.fixture
def store(storage: HostStorage) -> DocumentStore:
    return storage.documents("CosmosDB")


@pytest.fixture
def items(store: DocumentStore):  # type: ignore[no-untyped-def]
    db = CosmosClient(store).create_database_if_not_exists("db")
    return db.create_container_if_not_exists("items", "/pk", partitions=4)


def test_sync_client_names_and_conditions(items) -> None:  # type: ignore[no-untyped-def]
    first = items.create_item({"id": "a", "pk": "x", "n": 1})
    with pytest.raises(CosmosResourceExistsError):
        items.create_item({"id": "a", "pk": "x"})
    second = items.upsert_item({"id": "a", "pk": "x", "n": 2})
    with pytest.raises(CosmosAccessConditionFailedError):
        items.replace_item("a", {"id": "a", "pk": "x", "n": 3}, etag=first["_etag"],
                           match_condition=MatchConditions.IfNotModified)
    items.replace_item({"id": "a"}, {"id": "a", "pk": "x", "n": 3}, etag=second["_etag"],
                       match_condition=MatchConditions.IfNotModified)
    assert items.read_item("a", partition_key="x")["n"] == 3
    found = items.query_items("SELECT * FROM c WHERE c.n = @n", parameters=[{"name": "@n", "value": 3}],
                              enable_cross_partition_query=True)
    assert [d["id"] for d in found] == ["a"]
    assert items.query_items("SELECT * FROM c WHERE c.n = 3", partition_key="y") == []
    assert items.read()["partitionKey"]["paths"] == ["/pk"]
    items.delete_item("a", "x")
    with pytest.raises(CosmosResourceNotFoundError):
        items.read_item("a", "x")
    assert [c["id"] for c in CosmosClient(items._aio.store).get_database_client("db").list_containers()] == ["items"]


def test_items_hash_to_partitions_stably(items, store) -> None:  # type: ignore[no-untyped-def]
    keys = [f"tenant-{i}" for i in range(40)]
    assert len({partition_of(pk_key(k), 4) for k in keys}) == 4  # all four partitions are used
    for k in keys:
        items.upsert_item({"id": k, "pk": k})
    for pid in range(4):
        page = run_sync(store.read_feed("db", "items", pid, start_time=BEGINNING))
        assert {partition_of(pk_key(d["pk"]), 4) for d in page.items} == {pid}


def test_a_file_of_an_older_version_keeps_its_items_without_a_partition_key(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from funchost.storage.sqlite.documents import FILE_NAME, SCHEMA

    path = tmp_path / "data" / "storage" / "CosmosDB" / FILE_NAME
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as old:  # as the store wrote it before: the key with a NUL character
        old.executescript(SCHEMA)
        old.execute("INSERT INTO databases VALUES ('db', 'AAAAAA==', 0)")
        old.execute("INSERT INTO containers VALUES ('db', 'items', 'AAAAAAAAAAA=', '/pk', 4, NULL, 0)")
        old.executemany("INSERT INTO partitions VALUES ('db', 'items', ?, 0)", [(pid,) for pid in range(4)])
        pid = partition_of("\x00undefined", 4)
        old.execute("INSERT INTO items VALUES ('db', 'items', ?, 'loose', ?, 1, 0, NULL, ?)",
                    ("\x00undefined", pid, '{"id": "loose", "n": 1, "_rid": "r", "_etag": "\\"e\\""}'))
    opened = embedded(tmp_path, clock)
    try:
        twin = CosmosClient(opened.documents("CosmosDB")).get_database_client("db").get_container_client("items")
        with pytest.raises(CosmosResourceExistsError):
            twin.create_item({"id": "loose"})
        twin.upsert_item({"id": "loose", "n": 2})
        assert [d["n"] for d in twin.read_all_items()] == [2]
        feed = run_sync(opened.documents("CosmosDB").read_feed("db", "items", pid, start_time=BEGINNING))
        assert [d["id"] for d in feed.items] == ["loose"]  # in the partition it always had
    finally:
        run_sync(opened.aclose())


def test_two_store_objects_on_one_file_share_state(tmp_path, clock, items) -> None:  # type: ignore[no-untyped-def]
    other = embedded(tmp_path, clock)
    try:
        twin = CosmosClient(other.documents("CosmosDB")).get_database_client("db").get_container_client("items")
        twin.create_item({"id": "x", "pk": "x"})
        with pytest.raises(CosmosResourceExistsError):
            items.create_item({"id": "x", "pk": "x"})
    finally:
        run_sync(other.aclose())


async def test_the_sync_client_works_inside_a_running_loop(items) -> None:  # type: ignore[no-untyped-def]
    """Blocking code inside `async def` (this test) runs the call on a separate thread's loop."""
    items.upsert_item({"id": "in-loop", "pk": "p"})
    assert items.read_item("in-loop", "p")["id"] == "in-loop"


HOST_APP = """
import azure.functions as func
from funchost.documents import connect
app = func.FunctionApp()

@app.timer_trigger(arg_name="t", schedule="0 0 0 1 1 *")
def writer(t: func.TimerRequest) -> None:
    db = connect("CosmosDB").create_database_if_not_exists("db")
    db.create_container_if_not_exists("written").upsert_item({"id": "from-a-def-function"})
"""


async def test_a_def_function_writes_through_the_hosts_store(tmp_path: Path) -> None:
    """A `def` function runs on a pool thread; its sync client calls run on the host's loop."""
    write_app(tmp_path / "app", HOST_APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        assert (await host.invoke("writer")).succeeded
        store = host.runtime.storage.documents("CosmosDB")
        assert (await store.read_item("db", "written", "from-a-def-function", "from-a-def-function"))["id"]
