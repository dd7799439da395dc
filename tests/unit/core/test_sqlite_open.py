"""The first open of a SQLite file waits out another process converting it to WAL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from funchost.sqlite_open import FIRST_RETRY_SECONDS, connect_wal, is_busy


def _locked_in_rollback_mode(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE IF NOT EXISTS t (x)")
    holder.execute("BEGIN IMMEDIATE")  # another process writing (or converting) the new file
    holder.execute("INSERT INTO t VALUES (1)")
    return holder


def test_a_file_being_converted_by_another_connection_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    holder = _locked_in_rollback_mode(path)
    with pytest.raises(sqlite3.OperationalError) as plain:  # at once, despite the 5 s busy timeout
        sqlite3.connect(path, timeout=5, isolation_level=None).execute("PRAGMA journal_mode=WAL")
    assert is_busy(plain.value)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            holder.execute("COMMIT")  # the other process is done

    conn = connect_wal(path, busy_timeout=5, sleep=sleep)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # a doubling back-off with ±50 % jitter (the jittered sleeps themselves need not be in order)
    assert len(sleeps) == 3
    for attempt, slept in enumerate(sleeps):
        base = FIRST_RETRY_SECONDS * 2 ** attempt
        assert 0.5 * base <= slept <= 1.5 * base
    conn.close()
    holder.close()


def test_gives_up_after_the_busy_timeout(tmp_path: Path) -> None:
    holder = _locked_in_rollback_mode(tmp_path / "q.db")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        connect_wal(tmp_path / "q.db", busy_timeout=0.05)
    holder.close()


def test_setup_runs_once_the_file_is_open_and_errors_other_than_locks_are_raised(tmp_path: Path) -> None:
    seen: list[str] = []
    conn = connect_wal(tmp_path / "ok.db", busy_timeout=1, setup=lambda c: seen.append("setup"))
    assert seen == ["setup"]
    conn.close()

    def broken(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE broken (")

    with pytest.raises(sqlite3.OperationalError, match="incomplete input|syntax"):
        connect_wal(tmp_path / "ok.db", busy_timeout=1, setup=broken)
