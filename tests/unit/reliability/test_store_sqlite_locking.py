"""SQLite jobs DB: writers of one file take turns on a process lock; readers take no write lock."""

import threading

import pytest

from funchost.reliability.errors import JobStoreError
from funchost.reliability.jobs import NewJob
from funchost.reliability.jobstore import JobStore
from funchost.reliability.outbox import OutboxMessage
from funchost.reliability.store.sqlite import SqliteDatabase, writer_lock


def test_every_handle_on_one_file_shares_one_writer_lock(tmp_path):
    (tmp_path / "sub").mkdir()
    a = SqliteDatabase(tmp_path / "jobs.db")
    b = SqliteDatabase(tmp_path / "sub" / ".." / "jobs.db")
    assert writer_lock(a.path) is writer_lock(b.path)
    assert writer_lock(tmp_path / "jobs.db") is not writer_lock(tmp_path / "other.db")


def test_a_read_does_not_wait_for_an_open_write_transaction(tmp_path):
    store = JobStore(SqliteDatabase(tmp_path / "jobs.db", busy_timeout=0.2))
    store.intake.accept(NewJob("j1", "t", "u", "e"), OutboxMessage("q", "{}"))
    inside, release = threading.Event(), threading.Event()

    def writer():
        with store.db.transaction() as tx:
            tx.execute("UPDATE jobs SET reason = 'x' WHERE job_id = 'j1'")
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert inside.wait(5)
        job = store.jobs.get("j1")  # with a write lock this would time out (busy) after 0.2 s
        assert job is not None and job.reason is None  # the committed snapshot
        assert store.outbox.for_job("j1")[0].job_id == "j1"
    finally:
        release.set()
        thread.join()
    assert store.jobs.get("j1").reason == "x"
    store.close()


def test_a_write_cannot_join_a_read(tmp_path):
    db = SqliteDatabase(tmp_path / "jobs.db")
    JobStore(db)
    with db.read():
        with pytest.raises(JobStoreError), db.transaction() as tx:
            tx.execute("DELETE FROM jobs")
    db.close()
