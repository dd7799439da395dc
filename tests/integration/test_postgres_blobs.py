"""Blobs on PostgreSQL across hosts: two backends with separate data folders on one schema (two
machines that share nothing but the server) see one store, one lease holder, one journal."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from tests.support.postgres_hosts import host

from funchost.clock import ManualClock
from funchost.errors import LeaseConflict, ResourceConflict
from funchost.storage.blobsql.blob_rows import CHUNK_SIZE
from funchost.storage.postgres.db import ServerClock

pytestmark = pytest.mark.postgres



async def test_two_hosts_share_blobs_leases_and_the_journal(tmp_path: Path, postgres_dsn: str,
                                                            postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        assert "blobs" not in a.local_services
        blobs_a, blobs_b = a.blobs(), b.blobs()
        assert isinstance(blobs_a.clock, ServerClock)  # lease times are the server's
        await blobs_a.create_container("shared")
        await blobs_a.upload_blob("shared", "x.txt", b"from a")
        data, props = await blobs_b.download_blob("shared", "x.txt")
        assert data == b"from a"
        lease = await blobs_b.acquire_lease("shared", "x.txt", duration=15)
        with pytest.raises(LeaseConflict):
            await blobs_a.acquire_lease("shared", "x.txt", duration=15)
        await blobs_b.release_lease("shared", "x.txt", lease)
        changes = await blobs_b.changes_since(None)
        assert [(c.kind, c.name) for c in changes] == [("BlobCreated", "x.txt")]
        assert not (tmp_path / "a" / "storage" / "devstoreaccount1" / "blobs.db").exists()
    finally:
        await a.aclose()
        await b.aclose()


async def test_concurrent_writers_on_two_hosts_one_create_wins_and_the_journal_has_no_gaps(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        await a.blobs().create_container("c")

        async def create(blobs: object, i: int) -> bool:
            try:
                await blobs.upload_blob("c", "once", str(i).encode(), overwrite=False)  # type: ignore[attr-defined]
                return True
            except ResourceConflict:
                return False

        won = await asyncio.gather(*(create(a.blobs() if i % 2 else b.blobs(), i) for i in range(16)))
        assert sum(won) == 1
        await asyncio.gather(*((a.blobs() if i % 2 else b.blobs()).upload_blob("c", f"b{i}", b"x")
                               for i in range(40)))
        changes = await b.blobs().changes_since(None, limit=1000)
        numbers = [int(c.sequencer, 16) for c in changes]
        assert numbers == list(range(1, 42))  # gapless, commit-ordered
        assert sorted(c.name for c in changes) == sorted(["once", *(f"b{i}" for i in range(40))])
        after = await a.blobs().changes_since(changes[20].sequencer, limit=1000)
        assert [c.sequencer for c in after] == [c.sequencer for c in changes[21:]]
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_manual_clock_drives_lease_expiry(tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    clock = ManualClock()
    a = host(tmp_path, "a", postgres_dsn, postgres_schema, clock)
    b = host(tmp_path, "b", postgres_dsn, postgres_schema, clock)
    try:
        blobs_a, blobs_b = a.blobs(), b.blobs()
        assert blobs_a.clock is clock
        await blobs_a.create_container("locks")
        await blobs_a.upload_blob("locks", "l", b"")
        await blobs_a.acquire_lease("locks", "l", duration=15)
        with pytest.raises(LeaseConflict):
            await blobs_b.acquire_lease("locks", "l", duration=15)
        await clock.advance(16)
        assert await blobs_b.acquire_lease("locks", "l", duration=15)
    finally:
        await a.aclose()
        await b.aclose()


async def test_large_blobs_are_chunked_and_ranges_cross_chunks(tmp_path: Path, postgres_dsn: str,
                                                               postgres_schema: str) -> None:
    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        blobs = a.blobs()
        await blobs.create_container("big")
        body = bytes(range(256)) * (2 * CHUNK_SIZE // 256) + b"tail"
        await blobs.upload_blob("big", "b.bin", body)
        data, props = await blobs.download_blob("big", "b.bin", offset=CHUNK_SIZE - 3, length=10)
        assert data == body[CHUNK_SIZE - 3:CHUNK_SIZE + 7] and props.size == len(body)
        count = await a.database.run(lambda c: c.execute(
            'SELECT count(*) FROM "' + postgres_schema + '__devstoreaccount1".chunks').fetchone()[0])
        assert count == 3
        await blobs.delete_blob("big", "b.bin")
        count = await a.database.run(lambda c: c.execute(
            'SELECT count(*) FROM "' + postgres_schema + '__devstoreaccount1".chunks').fetchone()[0])
        assert count == 0
    finally:
        await a.aclose()


async def test_a_host_frozen_inside_a_write_stalls_the_others_only_until_the_server_ends_it(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    from funchost.storage.postgres.connect import connect_sync
    from funchost.storage.postgres.scoped import LOCK_NAMESPACE

    a = host(tmp_path, "a", postgres_dsn, postgres_schema)
    try:
        blobs = a.blobs()
        await blobs.create_container("c")
        frozen = connect_sync(a.config, "frozen", autocommit=False)  # the session settings every host has
        schema = f"{postgres_schema}__devstoreaccount1"
        frozen.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, schema))
        # ... and then nothing: a host stopped in the middle of a blob write
        started = time.monotonic()
        await blobs.upload_blob("c", "after", b"x")
        waited = time.monotonic() - started
        assert 5 < waited < 15, waited  # idle_in_transaction_session_timeout (10 s) ended the frozen session
        assert (await blobs.download_blob("c", "after"))[0] == b"x"
        assert frozen.closed or frozen.broken or _dead(frozen)
    finally:
        await a.aclose()


def _dead(conn: object) -> bool:
    try:
        conn.execute("SELECT 1")  # type: ignore[attr-defined]
    except Exception:
        return True
    return False


async def test_subscribers_hear_of_changes_made_on_another_host(tmp_path: Path, postgres_dsn: str,
                                                               postgres_schema: str) -> None:
    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        await a.blobs().create_container("c")
        heard: list[tuple[str, str]] = []
        unsubscribe = b.blobs().subscribe(lambda change: heard.append((change.kind, change.name)))
        for _ in range(100):  # bounded wait until B listens
            listening = await a.database.run(lambda c: c.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'funchost/blob-listener/%' "
                "AND query LIKE 'LISTEN%'").fetchone()[0])
            if listening:
                break
            await asyncio.sleep(0.05)
        await a.blobs().upload_blob("c", "remote", b"x")
        await b.blobs().upload_blob("c", "local", b"y")
        await a.blobs().delete_blob("c", "remote")
        for _ in range(100):  # bounded wait for the notifications
            if len(heard) >= 3:
                break
            await asyncio.sleep(0.05)
        assert sorted(heard) == [("BlobCreated", "local"), ("BlobCreated", "remote"), ("BlobDeleted", "remote")]
        unsubscribe()
    finally:
        await a.aclose()
        await b.aclose()


async def test_after_a_server_restart_writes_resume_and_subscribers_hear_again(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str, postgres_server: object) -> None:
    from funchost.errors import StorageError

    a, b = host(tmp_path, "a", postgres_dsn, postgres_schema), host(tmp_path, "b", postgres_dsn, postgres_schema)
    try:
        await a.blobs().create_container("c")
        heard: list[str] = []
        unsubscribe = b.blobs().subscribe(lambda change: heard.append(change.name))
        for attempt in range(100):  # bounded: the subscriber hears from when its feed has read its start cursor
            await a.blobs().upload_blob("c", f"before-{attempt}", b"x")
            await asyncio.sleep(0.1)
            if heard:
                break
        assert heard, "the subscriber on the other host never heard a write before the restart"
        await asyncio.get_running_loop().run_in_executor(None, postgres_server.restart)  # type: ignore[attr-defined]
        written = False
        for _ in range(300):  # bounded (30 s): calls answer 503 until the server is back on new connections
            try:
                await a.blobs().upload_blob("c", "after", b"y")
                written = True
                break
            except StorageError as exc:
                assert exc.status == 503
                await asyncio.sleep(0.1)
        assert written, "no write succeeded within 30 s of the restart"
        for _ in range(800):  # bounded (40 s): the listener reconnects with back-off (1, 2, 4, 8 s...) and catches up
            if "after" in heard:
                break
            await asyncio.sleep(0.05)
        assert "after" in heard
        assert (await b.blobs().download_blob("c", "after"))[0] == b"y"
        unsubscribe()
    finally:
        await a.aclose()
        await b.aclose()
