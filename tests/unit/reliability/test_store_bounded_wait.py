"""`bounded_wait`: a write that meets a lock held elsewhere gives up after the bound, with
StoreUnavailable and nothing written, instead of waiting out the 30 s busy timeout."""

import sqlite3
import threading

import pytest

from funchost.reliability.errors import StoreUnavailable
from funchost.reliability.jobs import NewJob
from funchost.reliability.jobstore import open_sqlite
from funchost.reliability.outbox import OutboxMessage


def _job(store, job_id="job-1"):
    store.intake.accept(NewJob(job_id, "t", "u", "e"), OutboxMessage("import-jobs", "{}"))


def test_a_write_blocked_by_another_writer_of_this_process_gives_up(store):
    """Another thread holds the row (PostgreSQL) / the database's write lock (SQLite)."""
    _job(store)
    holding, release = threading.Event(), threading.Event()

    def hold():
        with store.db.transaction() as tx:
            tx.execute("UPDATE jobs SET reason = 'held' WHERE job_id = ?", ("job-1",))
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        with pytest.raises(StoreUnavailable), store.db.bounded_wait(0.2):
            store.leases.acquire("job-1")
    finally:
        release.set()
        holder.join(10)
    assert store.jobs.get("job-1").state.value == "Enqueued"  # nothing written by the refused call
    assert store.leases.acquire("job-1").acquired  # without a bound, and the lock free, it works


def test_outside_the_block_the_wait_is_not_bounded(store):
    with store.db.bounded_wait(0.1):
        pass
    _job(store)
    assert store.db._wait_limit() is None


def test_a_sqlite_write_lock_held_by_another_process_is_waited_for_only_up_to_the_bound(tmp_path, now):
    """Another connection (as another process would) holds BEGIN IMMEDIATE on the file."""
    store = open_sqlite(tmp_path / "bounded.db", now=now)
    _job(store)
    other = sqlite3.connect(store.db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailable, match="locked"), store.db.bounded_wait(0.2):
            _job(store, "job-2")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.jobs.get("job-2") is None
    _job(store, "job-2")  # the connection's own busy timeout is back: later writes work
    assert store.jobs.get("job-2") is not None
    store.close()


def test_opening_a_current_database_needs_no_write_lock(tmp_path, now):
    """A host starting while another holds the write lock (frozen, say) opens the jobs DB at once."""
    from funchost.reliability.jobstore import JobStore
    from funchost.reliability.store.sqlite import SqliteDatabase

    open_sqlite(tmp_path / "jobs.db", now=now).close()  # created and migrated earlier
    other = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        store = JobStore(SqliteDatabase(tmp_path / "jobs.db", busy_timeout=0.2), now=now)
        assert store.jobs.get("nothing") is None
        store.close()
    finally:
        other.execute("ROLLBACK")
        other.close()
