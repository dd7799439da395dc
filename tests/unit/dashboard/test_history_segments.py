"""The embedded invocation history's file: one segment row per batch, files of the first version,
rows of an unknown format, two processes writing one history, and the details of a batch
(datetimes kept as their state, read back as their text)."""

from __future__ import annotations

import marshal
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from funchost.storage.invocations import SUCCEEDED, InvocationRecord, RecordBatch, details_of, flat_details
from funchost.storage.sqlite.invocations import (
    DB_FILE,
    FLAT_BYTES_FORMAT,
    FLAT_FORMAT,
    PAGE_SIZE,
    SqliteInvocationHistory,
)


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


def flat_values(n: int, details: Any) -> list[Any]:
    return [f"id-{n}", "hello", "queueTrigger", "test", 1000.0 + n, 1.0, SUCCEEDED, None, None, details, None, 0, 0,
            None]


DATETIMES = [datetime(2026, 12, 3, 17, 0, 1, 250, tzinfo=UTC), datetime(2026, 12, 3, 17, 0),  # aware, naive
             datetime(2026, 12, 3, 17, 0, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
             datetime(2026, 10, 25, 1, 30, fold=1, tzinfo=timezone(timedelta(hours=2), "CEST"))]


def test_datetimes_in_details_wait_as_their_state_and_read_back_as_their_text() -> None:
    for when in DATETIMES:
        details = {"MessageId": "m", "InsertedOn": when, "DequeueCount": 2, "Body": b"x"}
        flat = flat_details(details)
        assert type(flat) is tuple and flat[0]["InsertedOn"] is None  # no text built on the writer's side
        assert list(details_of(flat)) == list(details)  # the keys' order kept
        assert details_of(flat) == {**details, "InsertedOn": str(when)}
        assert details_of(marshal.dumps(flat)) == details_of(flat)
    assert flat_details({"n": 1, "s": "x"}) == {"n": 1, "s": "x"}
    assert flat_details({"when": datetime(2026, 1, 1).date()}) is None  # not a datetime: the recorder's text
    odd = timezone(timedelta(seconds=1, microseconds=5))
    assert flat_details({"when": datetime(2026, 1, 1, tzinfo=odd)}) is None


async def test_a_batch_is_one_flat_segment_whose_datetimes_read_back_as_text(tmp_path: Path) -> None:
    history = SqliteInvocationHistory(tmp_path)
    values: list[Any] = []
    for n, when in enumerate(DATETIMES, 1):
        values += flat_values(n, flat_details({"MessageId": f"m{n}", "InsertedOn": when}))
    await history.append(RecordBatch(values))
    with sqlite3.connect(tmp_path / DB_FILE) as conn:
        assert conn.execute("SELECT format FROM history_segments").fetchall() == [(FLAT_FORMAT,)]
        assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
    for n, when in enumerate(DATETIMES, 1):
        stored = await history.get(f"id-{n}")
        assert stored is not None and stored.record.details == {"MessageId": f"m{n}", "InsertedOn": str(when)}
    assert [s.record.details["InsertedOn"] for s in await history.recent()] == [str(w) for w in DATETIMES[::-1]]
    await history.prune(max_count=3, oldest_started=0)  # rewrites the segment in the record layout
    assert [s.record.details["InsertedOn"] for s in await history.recent()] == [str(w) for w in DATETIMES[:0:-1]]
    await history.aclose()


async def test_segments_of_the_previous_flat_layout_are_still_read(tmp_path: Path) -> None:
    history = SqliteInvocationHistory(tmp_path)
    await history.append([record(1)])
    encoded = marshal.dumps(flat_values(2, marshal.dumps({"MessageId": "old"})))
    with sqlite3.connect(tmp_path / DB_FILE) as conn:  # as the previous version wrote a batch
        conn.execute("INSERT INTO history_segments VALUES (2, 2, 1, 1002.0, 1002.0, ?, ?, NULL)",
                     (FLAT_BYTES_FORMAT, encoded))
        conn.execute("UPDATE history_counter SET last_seq = 2")
    stored = await history.get("id-2")
    assert stored is not None and stored.record.details == {"MessageId": "old"}
    assert [a.total for a in await history.activity()] == [2]
    await history.aclose()
