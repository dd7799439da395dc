"""The embedded invocation history's file: one segment row per batch, files of the first version,
rows of an unknown format, and two processes writing one history."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from funchost.storage.invocations import SUCCEEDED, InvocationRecord
from funchost.storage.sqlite.invocations import DB_FILE, SqliteInvocationHistory


def record(n: int, function: str = "hello") -> InvocationRecord:
    return InvocationRecord(id=f"id-{n}", function=function, trigger="queueTrigger", reason="test",
                            started=1000.0 + n, duration_ms=1.0, outcome=SUCCEEDED, details={"n": n})


def segments(directory: Path) -> list[tuple[int, int, int]]:
    with sqlite3.connect(directory / DB_FILE) as conn:
        return conn.execute("SELECT first_seq, last_seq, count FROM history_segments ORDER BY last_seq").fetchall()


async def test_one_row_per_batch(tmp_path: Path) -> None:
    history = SqliteInvocationHistory(tmp_path)
    await history.append([record(n) for n in range(500)])
    await history.append([record(500)])
    assert segments(tmp_path) == [(1, 500, 500), (501, 501, 1)]
    await history.aclose()


async def test_a_file_of_the_first_version_starts_empty(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_FILE) as conn:  # the row-per-invocation tables of the first version
        conn.execute("CREATE TABLE invocations (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL)")
        conn.execute("CREATE TABLE invocation_logs (invocation_seq INTEGER NOT NULL, n INTEGER NOT NULL)")
        conn.execute("INSERT INTO invocations (id) VALUES ('old')")
    history = SqliteInvocationHistory(tmp_path)
    assert await history.recent() == []
    await history.append([record(1)])
    assert [s.record.id for s in await history.recent()] == ["id-1"]
    with sqlite3.connect(tmp_path / DB_FILE) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "invocations" not in tables and "invocation_logs" not in tables
    await history.aclose()


async def test_rows_of_an_unknown_format_are_skipped_not_misread(tmp_path: Path) -> None:
    history = SqliteInvocationHistory(tmp_path)
    await history.append([record(1)])
    with sqlite3.connect(tmp_path / DB_FILE) as conn:  # as a newer version might write
        conn.execute("INSERT INTO history_segments VALUES (9, 9, 1, 1.0, 1.0, 99, x'00ff', NULL)")
    assert [s.record.id for s in await history.recent()] == ["id-1"]
    assert await history.get("id-9") is None
    assert [a.total for a in await history.activity()] == [1]
    await history.aclose()


async def test_two_writers_share_one_history_and_its_activity(tmp_path: Path) -> None:
    first, second = SqliteInvocationHistory(tmp_path), SqliteInvocationHistory(tmp_path)
    await first.append([record(1), record(2)])
    assert [(a.function, a.total) for a in await first.activity()] == [("hello", 2)]
    await second.append([record(3, "Other"), record(4)])
    await first.append([record(5, "other")])
    assert [s.seq for s in await second.recent()] == [5, 4, 3, 2, 1]
    activity = {a.function: (a.total, a.last_started) for a in await first.activity()}
    assert activity == {"hello": (3, 1004.0), "other": (2, 1005.0)}  # the latest record's spelling
    await second.prune(max_count=2, oldest_started=0)
    assert sorted((a.function, a.total) for a in await first.activity()) == [("hello", 1), ("other", 1)]
    await first.aclose()
    await second.aclose()
