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


@pytest.mark.parametrize("kind", ["transaction", "read"])
def test_close_waits_for_a_transaction_running_on_another_thread(tmp_path, kind):
    # Closing a connection under a statement another thread runs crashed the process (a host
    # stopping while a lease was being taken); close now lets the transaction end first.
    store = JobStore(SqliteDatabase(tmp_path / "jobs.db"))
    store.intake.accept(NewJob("j1", "t", "u", "e"), OutboxMessage("q", "{}"))
    inside, release, outcome = threading.Event(), threading.Event(), []

    def worker():
        try:
            with getattr(store.db, kind)() as tx:
                inside.set()
                release.wait(5)
                if kind == "transaction":
                    tx.execute("UPDATE jobs SET reason = 'x' WHERE job_id = 'j1'")
                outcome.append(tx.one("SELECT reason FROM jobs WHERE job_id = 'j1'"))
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    assert inside.wait(5)
    closer = threading.Thread(target=store.db.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # waiting for the transaction, not closing under it
    release.set()
    thread.join(5)
    closer.join(5)
    assert not closer.is_alive()
    assert outcome == [{"reason": "x" if kind == "transaction" else None}]
    with pytest.raises(JobStoreError):
        store.jobs.get("j1")  # closed now
    reopened = JobStore(SqliteDatabase(tmp_path / "jobs.db"))
    assert reopened.jobs.get("j1").reason == ("x" if kind == "transaction" else None)
    reopened.db.close()
