"""Quick statements of a SQLite file (`db.quick`): on the calling loop's own connection, on the
file's thread whenever that connection would wait or belongs to another thread."""

import asyncio
import sqlite3
import threading

import pytest

from funchost.errors import StorageError
from funchost.storage.sqlite.db import CHECKPOINT_EVERY, LOCK_TRIES_ON_LOOP, SqliteDatabase

SCHEMA = "CREATE TABLE IF NOT EXISTS items (n INTEGER PRIMARY KEY, body BLOB)"


def _insert(n: int, body: bytes = b"") -> object:
    def op(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO items VALUES (?, ?)", (n, body))
        return threading.current_thread().name

    return op


def _count(path) -> int:
    with sqlite3.connect(path) as other:
        return other.execute("SELECT count(*) FROM items").fetchone()[0]


async def test_quick_statements_run_on_the_calling_thread_once_its_connection_is_open(tmp_path):
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    try:
        first = await db.quick.write(_insert(1))  # opens the loop's connection on the file's thread
        later = [await db.quick.write(_insert(n)) for n in range(2, 5)]
        read_on = await db.quick.read(lambda c: threading.current_thread().name)
    finally:
        await db.aclose()
    assert first.startswith("t-db")
    assert later == [threading.current_thread().name] * 3
    assert read_on == threading.current_thread().name
    assert _count(tmp_path / "q.db") == 4


async def _hold_the_lock_for(turns: int, path, db: SqliteDatabase) -> str:
    """A quick write while another connection (another process's writer, say) holds the write
    lock for `turns` of the loop; the thread the write ran on."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO items VALUES (2, x'')")
        waiting = asyncio.ensure_future(db.quick.write(_insert(3)))
        for _ in range(turns):
            await asyncio.sleep(0)
            assert not waiting.done()
        other.execute("COMMIT")
        return await waiting
    finally:
        other.close()


async def test_a_quick_write_waits_on_the_file_thread_while_another_connection_holds_the_lock(tmp_path):
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    try:
        await db.quick.write(_insert(1))  # the loop's connection is open from here on
        # Held past the loop's tries: the write went to the file's thread, which waited.
        ran_on = await _hold_the_lock_for(LOCK_TRIES_ON_LOOP + 2, tmp_path / "q.db", db)
    finally:
        await db.aclose()
    assert ran_on.startswith("t-db")
    assert _count(tmp_path / "q.db") == 3


async def test_a_lock_released_within_the_loops_tries_is_taken_on_the_loop(tmp_path):
    """Another host's short transaction on the same file: the write waits a few turns of the loop,
    not the file thread's busy handler (at least 1 ms) and two thread wake-ups."""
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    try:
        await db.quick.write(_insert(1))
        ran_on = await _hold_the_lock_for(2, tmp_path / "q.db", db)
    finally:
        await db.aclose()
    assert ran_on == threading.current_thread().name
    assert _count(tmp_path / "q.db") == 3


async def test_a_file_closed_while_a_quick_write_waits_for_the_lock_refuses_it(tmp_path):
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    other = sqlite3.connect(tmp_path / "q.db", isolation_level=None)
    try:
        await db.quick.write(_insert(1))
        other.execute("BEGIN IMMEDIATE")
        waiting = asyncio.ensure_future(db.quick.write(_insert(3)))
        await asyncio.sleep(0)
        await db.aclose()
        with pytest.raises(StorageError, match="closed"):
            await waiting
    finally:
        other.execute("ROLLBACK")
        other.close()
        await db.aclose()
    assert _count(tmp_path / "q.db") == 1


async def test_a_quick_write_that_fails_leaves_nothing_behind(tmp_path):
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")

    def fails(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO items VALUES (7, x'')")
        raise StorageError("refused", code="Refused", status=409)

    try:
        await db.quick.write(_insert(1))
        with pytest.raises(StorageError, match="refused"):
            await db.quick.write(fails)
        on = await db.quick.write(_insert(2))  # the transaction was rolled back, not left open
    finally:
        await db.aclose()
    assert on == threading.current_thread().name
    with sqlite3.connect(tmp_path / "q.db") as check:
        assert [n for (n,) in check.execute("SELECT n FROM items ORDER BY n")] == [1, 2]


async def test_the_file_thread_checkpoints_what_the_loop_commits(tmp_path):
    """The loop's connection never checkpoints (an fsync on the loop); the file's thread does,
    every CHECKPOINT_EVERY commits: the WAL is reused instead of growing with every write."""
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    body = bytes(16 * 1024)  # five pages a commit
    try:
        for n in range(8 * CHECKPOINT_EVERY):
            await db.quick.write(_insert(n, body))
            if n % CHECKPOINT_EVERY == 0:
                await db.read(lambda c: None)  # the file's thread has done what was queued
        wal = (tmp_path / "q.db-wal").stat().st_size
    finally:
        await db.aclose()
    # Without checkpoints: 8 x 64 commits of five 4 KiB pages, over 10 MB.
    assert wal < 4 * 1024 * 1024


async def test_a_quick_statement_from_another_thread_goes_to_the_file_thread(tmp_path):
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    try:
        await db.quick.write(_insert(1))
        await db.quick.write(_insert(2))  # the loop's connection is this thread's
        elsewhere: list[str] = []
        thread = threading.Thread(target=lambda: elsewhere.append(asyncio.run(db.quick.write(_insert(3)))))
        thread.start()
        await asyncio.to_thread(thread.join)
    finally:
        await db.aclose()
    assert len(elsewhere) == 1 and elsewhere[0].startswith("t-db")
    assert _count(tmp_path / "q.db") == 3


async def test_quick_statements_after_close_are_refused(tmp_path):
    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    await db.quick.write(_insert(1))
    await db.aclose()
    with pytest.raises(StorageError, match="closed"):
        await db.quick.write(_insert(2))
    with pytest.raises(StorageError, match="closed"):
        await db.quick.read(lambda c: None)


def test_two_services_on_one_folder_drain_a_queue_each_message_once(tmp_path):
    """Two hosts' queue services on one data folder, each on its own thread and loop, drain at
    the same moment (their quick connections meet each other's write lock in some runs and then
    wait on the file's thread): every message is received by one of them, once, and deleted."""
    from funchost.clock import SystemClock
    from funchost.storage.sqlite.queues import SqliteQueueService

    async def fill() -> None:
        service = SqliteQueueService(tmp_path / "acct", "acct", SystemClock())
        await service.create_queue("shared")
        await asyncio.gather(*(service.put_message("shared", str(n)) for n in range(1000)))
        await service.aclose()

    asyncio.run(fill())
    received: list[list[str]] = [[], []]
    start = threading.Barrier(2)

    def host(index: int) -> None:
        async def drain() -> None:
            service = SqliteQueueService(tmp_path / "acct", "acct", SystemClock())
            await service.queue_exists("shared")  # opens this host's quick connection
            await service.queue_exists("shared")
            start.wait()  # both hosts then drain at the same moment
            try:
                while True:
                    batch = await service.get_messages("shared", max_messages=16, visibility_timeout=300)
                    if not batch:
                        break
                    received[index].extend(m.content for m in batch)
                    await asyncio.gather(*(service.delete_message("shared", m.id, m.pop_receipt or "")
                                           for m in batch))
            finally:
                await service.aclose()

        asyncio.run(drain())

    threads = [threading.Thread(target=host, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = received[0] + received[1]
    assert sorted(everything, key=int) == [str(n) for n in range(1000)]  # each once, none lost

    async def left() -> int:
        service = SqliteQueueService(tmp_path / "acct", "acct", SystemClock())
        try:
            return (await service.get_queue_properties("shared")).approximate_message_count
        finally:
            await service.aclose()

    assert asyncio.run(left()) == 0


async def test_a_grouped_write_is_in_flight_from_its_request_until_its_caller_resumes(tmp_path):
    """Quick writes run on the loop, so nothing waits on a thread: the write group itself counts
    the request as framework work in flight, or the test harness could find the host idle
    between a message's steps and move the clock past them (tests/unit/core/test_readme_example.py)."""
    from funchost.runtime import activity
    from funchost.storage.write_group import WriteGroup

    db = SqliteDatabase(tmp_path / "q.db", SCHEMA, name="t")
    group = WriteGroup(db.quick)
    try:
        await db.quick.write(_insert(1))  # the loop's connection is open
        before = activity.in_flight()
        request = asyncio.ensure_future(group.run(_insert(2)))
        await asyncio.sleep(0)  # requested; the group's transaction has not run yet
        assert activity.in_flight() == before + 1
        assert await request == threading.current_thread().name  # ran on the loop's connection
        assert activity.in_flight() == before
    finally:
        await db.aclose()
