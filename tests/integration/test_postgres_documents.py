"""Tables and documents on PostgreSQL across hosts: two backends with separate data folders on one
schema (two machines that share nothing but the server) see one table store and one document
store; concurrent writers on both give each partition's change feed gapless, commit-ordered LSNs
that a reader following the feed never skips, and an If-Match write (a change feed lease's) has
one winner."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.postgres_hosts import host

from funchost.documents.exceptions import CosmosAccessConditionFailedError, CosmosBadRequestError
from funchost.errors import StorageError
from funchost.storage.documents import DocumentStore
from funchost.storage.postgres.db import ServerClock
from funchost.storage.tables import BatchOperation

pytestmark = pytest.mark.postgres



async def test_a_table_written_on_one_host_is_read_on_the_other(tmp_path: Path, postgres_dsn: str,
                                                               postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        assert "tables" not in a.local_services and "documents" not in a.local_services
        await a.tables().create_table("Orders")
        written = await a.tables().submit_batch("Orders", [
            BatchOperation("insert", "p", f"r{i}", {"n": ("Edm.Int32", i)}) for i in range(3)])
        found, _ = await b.tables().query_entities("orders", filter="n ge 1")
        assert [(e.row_key, e.properties["n"]) for e in found] == [("r1", ("Edm.Int32", 1)), ("r2", ("Edm.Int32", 2))]
        await b.tables().update_entity("Orders", "p", "r0", {"n": ("Edm.Int32", 10)}, merge=True,
                                       if_match=written[0].etag)  # type: ignore[union-attr]
        with pytest.raises(StorageError) as stale:  # the ETag a moved on from
            await a.tables().update_entity("Orders", "p", "r0", {"n": ("Edm.Int32", 11)}, merge=True,
                                           if_match=written[0].etag)  # type: ignore[union-attr]
        assert stale.value.status == 412
        assert (await a.tables().get_entity("Orders", "p", "r0")).properties["n"] == ("Edm.Int32", 10)
        assert not list(tmp_path.rglob("tables.db")) and not list(tmp_path.rglob("documents.sqlite3"))
    finally:
        await a.aclose()
        await b.aclose()


async def follow(store: DocumentStore, until: int, stop: asyncio.Event) -> list[tuple[int, str]]:
    """A change feed reader from the beginning: (LSN, id) in the order the pages gave them."""
    seen: list[tuple[int, str]] = []
    after = 0
    while len(seen) < until and not stop.is_set():
        page = await store.read_feed("db", "items", 0, after_lsn=after, max_items=7)
        seen += [(d["_lsn"], d["id"]) for d in page.items]
        after = page.continuation
        await asyncio.sleep(0)
    return seen


async def test_two_hosts_writing_one_partition_give_a_gapless_feed(tmp_path: Path, postgres_dsn: str,
                                                                   postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        docs_a, docs_b = a.documents("CosmosDB"), b.documents("CosmosDB")
        assert isinstance(docs_a.clock, ServerClock)  # `_ts` and TTLs by the server's clock
        await docs_a.create_database("db")
        await docs_a.create_container("db", "items", partition_key_path="/pk", partitions=1)
        stop = asyncio.Event()
        reader = asyncio.create_task(follow(docs_b, 120, stop))
        await asyncio.gather(*((docs_a if i % 2 else docs_b).create_item("db", "items", {"id": f"i{i}", "pk": i})
                               for i in range(120)))
        try:
            seen = await asyncio.wait_for(reader, 30)
        finally:
            stop.set()
        assert [lsn for lsn, _ in seen] == list(range(1, 121))  # gapless, in order, nothing skipped
        assert sorted(item for _, item in seen) == sorted(f"i{i}" for i in range(120))
        assert await docs_a.latest_lsn("db", "items", 0) == 120
    finally:
        await a.aclose()
        await b.aclose()


async def test_an_if_match_write_from_two_hosts_has_one_winner(tmp_path: Path, postgres_dsn: str,
                                                               postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        docs_a, docs_b = a.documents(), b.documents()
        await docs_a.create_database("db")
        await docs_a.create_container("db", "leases", partition_key_path="/id")
        lease = await docs_a.create_item("db", "leases", {"id": "0", "Owner": None})

        async def take(store: DocumentStore, owner: str) -> bool:
            try:
                await store.replace_item("db", "leases", "0", {"id": "0", "Owner": owner}, if_match=lease["_etag"])
                return True
            except CosmosAccessConditionFailedError:
                return False

        won = await asyncio.gather(*(take(docs_a if i % 2 else docs_b, f"host{i}") for i in range(10)))
        assert sum(won) == 1
        owner = (await docs_b.read_item("db", "leases", "0", "0"))["Owner"]
        assert owner == f"host{won.index(True)}"
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_nul_character_is_bad_input_not_a_busy_server(tmp_path: Path, postgres_dsn: str,
                                                              postgres_schema: str) -> None:
    """PostgreSQL text cannot hold NUL: refused with 400 before the driver (which would be a retryable 503)."""
    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        docs = a.documents()
        await docs.create_database("db")
        await docs.create_container("db", "items", partition_key_path="/pk")
        with pytest.raises(CosmosBadRequestError):
            await docs.create_item("db", "items", {"id": "a\x00b", "pk": "x"})
        with pytest.raises(CosmosBadRequestError):
            await docs.read_item("db", "items", "a\x00b", "x")
        await docs.create_item("db", "items", {"id": "ab", "pk": "x\x00y"})  # a value inside JSON is escaped
        assert (await docs.read_item("db", "items", "ab", "x\x00y"))["pk"] == "x\x00y"
        tables = a.tables()
        await tables.create_table("Keys")
        with pytest.raises(StorageError) as refused:
            await tables.query_entities("Keys", filter="PartitionKey eq 'a\x00'")
        assert refused.value.status == 400
    finally:
        await a.aclose()
