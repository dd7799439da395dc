"""Contract of `InvocationHistoryStore` (the dashboard's invocation history), on every backend.

Both backends keep the history in the data folder: `--storage azure` hands out the embedded
store, so the suite runs on both to check that each backend offers it.
"""

from __future__ import annotations

import marshal
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import open_storage
from funchost.storage.invocations import (
    FAILED,
    SUCCEEDED,
    InvocationHistoryStore,
    InvocationRecord,
    LogLine,
    RecordBatch,
)
from funchost.storage.sqlite.invocations import SqliteInvocationHistory


class BatchAppending:
    """The store, given each append as the recorder gives it: a `RecordBatch` of flat values."""

    def __init__(self, store: InvocationHistoryStore) -> None:
        self.store = store

    async def append(self, records: Sequence[InvocationRecord]) -> None:
        await self.store.append(as_batch(records))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def as_batch(records: Sequence[InvocationRecord]) -> RecordBatch:
    values: list[Any] = []
    for r in records:
        try:
            details: Any = marshal.dumps(dict(r.details))
        except ValueError:  # waits as the mapping (the store writes its JSON form)
            details = r.details
        values.extend((*r[:-5], details, *r[-4:-1], marshal.dumps(tuple(map(tuple, r.logs))) if r.logs else None))
    return RecordBatch(values)


@pytest.fixture(params=["embedded", "embedded-batch", "azure"])
async def history(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[InvocationHistoryStore]:
    backend, _, batch = str(request.param).partition("-")
    storage = open_storage(backend, tmp_path / "data", AppSettings({}, environ={}), SystemClock())
    store = storage.invocation_history()
    yield BatchAppending(store) if batch else store  # type: ignore[misc]
    await storage.aclose()


def record(n: int, *, function: str = "hello", outcome: str = SUCCEEDED, started: float | None = None,
           logs: tuple[LogLine, ...] = ()) -> InvocationRecord:
    return InvocationRecord(id=f"id-{n}", function=function, trigger="httpTrigger", reason="test",
                            started=1000.0 + n if started is None else started, duration_ms=1.5,
                            outcome=outcome, error="ValueError: boom" if outcome == FAILED else None,
                            details={"Method": "GET", "n": n}, logs=logs)


async def test_append_then_recent_newest_first_without_logs(history: InvocationHistoryStore) -> None:
    line = LogLine(1001.0, "INFO", "Function.hello.User", "said <hi>")
    await history.append([record(1, logs=(line,)), record(2)])
    found = await history.recent()
    assert [s.record.id for s in found] == ["id-2", "id-1"]
    assert found[0].seq > found[1].seq
    assert found[1].record.logs == ()  # lists carry no log lines
    assert found[1].record.details == {"Method": "GET", "n": 1}
    assert await history.last_seq() == found[0].seq


async def test_get_returns_log_lines_in_order(history: InvocationHistoryStore) -> None:
    lines = tuple(LogLine(1000.0 + i, "INFO", "Function.hello.User", f"line {i}") for i in range(5))
    await history.append([record(1, outcome=FAILED, logs=lines)])
    stored = await history.get("id-1")
    assert stored is not None
    assert stored.record.logs == lines
    assert stored.record.error == "ValueError: boom"
    assert await history.get("missing") is None


async def test_filters_by_function_case_insensitively_and_outcome(history: InvocationHistoryStore) -> None:
    await history.append([record(1, function="Hello"), record(2, function="other", outcome=FAILED),
                          record(3, function="hello", outcome=FAILED)])
    assert [s.record.id for s in await history.recent(function="HELLO")] == ["id-3", "id-1"]
    assert [s.record.id for s in await history.recent(outcome=FAILED)] == ["id-3", "id-2"]
    assert [s.record.id for s in await history.recent(function="hello", outcome=SUCCEEDED)] == ["id-1"]


async def test_paging_with_seq_cursors(history: InvocationHistoryStore) -> None:
    await history.append([record(n) for n in range(10)])
    first = await history.recent(limit=4)
    assert [s.record.id for s in first] == ["id-9", "id-8", "id-7", "id-6"]
    second = await history.recent(limit=4, before_seq=first[-1].seq)
    assert [s.record.id for s in second] == ["id-5", "id-4", "id-3", "id-2"]
    newer = await history.recent(after_seq=second[0].seq)
    assert [s.record.id for s in newer] == ["id-9", "id-8", "id-7", "id-6"]


async def test_get_answers_the_latest_record_of_an_id(history: InvocationHistoryStore) -> None:
    await history.append([record(1, logs=(LogLine(1.0, "INFO", "c", "first"),))])
    await history.append([record(1, outcome=FAILED)])
    stored = await history.get("id-1")
    assert stored is not None and stored.record.outcome == FAILED and stored.record.logs == ()


async def test_seq_keeps_growing_after_a_prune_and_across_batches(history: InvocationHistoryStore) -> None:
    await history.append([record(1), record(2)])
    top = await history.last_seq()
    await history.prune(max_count=0, oldest_started=0)
    await history.append([record(3, logs=(LogLine(1.0, "INFO", "c", "three"),))])
    found = await history.recent()
    assert found[0].seq > top
    stored = await history.get("id-3")
    assert stored is not None and [line.message for line in stored.record.logs] == ["three"]


async def test_prune_by_count_keeps_the_newest(history: InvocationHistoryStore) -> None:
    await history.append([record(n, logs=(LogLine(1.0, "INFO", "c", f"l{n}"),)) for n in range(10)])
    assert await history.prune(max_count=3, oldest_started=0) == 7
    assert [s.record.id for s in await history.recent()] == ["id-9", "id-8", "id-7"]
    assert await history.get("id-0") is None
    assert await history.prune(max_count=3, oldest_started=0) == 0


async def test_prune_by_age(history: InvocationHistoryStore) -> None:
    await history.append([record(n, started=100.0 * n) for n in range(5)])
    assert await history.prune(max_count=100, oldest_started=250.0) == 3
    assert sorted(s.record.id for s in await history.recent()) == ["id-3", "id-4"]


async def test_prune_deletes_the_log_lines_too(history: InvocationHistoryStore) -> None:
    await history.append([record(1, logs=(LogLine(1.0, "INFO", "c", "old"),))])
    await history.prune(max_count=0, oldest_started=0)
    await history.append([record(2)])
    assert await history.recent(limit=10) != [] and await history.get("id-1") is None


async def test_activity_per_function(history: InvocationHistoryStore) -> None:
    await history.append([record(1, function="a"), record(2, function="a", outcome=FAILED),
                          record(3, function="b")])
    activity = {a.function: a for a in await history.activity()}
    assert activity["a"].total == 2 and activity["a"].failed == 1
    assert activity["a"].last_outcome == FAILED and activity["a"].last_started == 1002.0
    assert activity["b"].total == 1 and activity["b"].failed == 0


async def test_empty_history(history: InvocationHistoryStore) -> None:
    assert await history.recent() == []
    assert await history.last_seq() == 0
    assert await history.activity() == []
    assert await history.prune(max_count=10, oldest_started=0) == 0


async def test_prune_by_count_across_batches_keeps_the_newest_with_their_lines(history: InvocationHistoryStore) -> None:
    for batch in range(4):  # four batches of five: the limit falls inside the second
        await history.append([record(n, logs=(LogLine(1.0, "INFO", "c", f"l{n}"),))
                              for n in range(batch * 5, batch * 5 + 5)])
    assert await history.prune(max_count=12, oldest_started=0) == 8
    assert [s.record.id for s in await history.recent(limit=100)] == [f"id-{n}" for n in range(19, 7, -1)]
    for n in (8, 9, 19):
        stored = await history.get(f"id-{n}")
        assert stored is not None and [line.message for line in stored.record.logs] == [f"l{n}"]
    assert await history.get("id-7") is None
    activity = {a.function: a for a in await history.activity()}
    assert activity["hello"].total == 12


async def test_prune_by_age_inside_a_batch_keeps_the_young_ones(history: InvocationHistoryStore) -> None:
    # Records of one batch are written in the order they finished, not the order they started.
    await history.append([record(1, started=500.0), record(2, started=100.0), record(3, started=400.0),
                          record(4, started=200.0, logs=(LogLine(1.0, "INFO", "c", "kept?"),))])
    assert await history.prune(max_count=100, oldest_started=300.0) == 2
    assert [s.record.id for s in await history.recent()] == ["id-3", "id-1"]
    assert await history.get("id-4") is None


async def test_filtered_pages_span_batches(history: InvocationHistoryStore) -> None:
    for batch in range(5):
        await history.append([record(n, function="a" if n % 3 == 0 else "b") for n in range(batch * 4, batch * 4 + 4)])
    page = await history.recent(function="A", limit=3)
    assert [s.record.id for s in page] == ["id-18", "id-15", "id-12"]
    older = await history.recent(function="a", limit=3, before_seq=page[-1].seq)
    assert [s.record.id for s in older] == ["id-9", "id-6", "id-3"]
    assert [s.record.id for s in await history.recent(function="a", after_seq=older[0].seq)] == [
        "id-18", "id-15", "id-12"]


async def test_details_of_any_type_are_kept_in_their_json_form(history: InvocationHistoryStore) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    odd = InvocationRecord(id="id-odd", function="hello", trigger="eventGridTrigger", reason="test", started=1.0,
                           duration_ms=1.0, outcome=SUCCEEDED, details={"When": when, "Ids": ("a", "b"), "N": 1})
    await history.append([odd, record(2)])
    stored = await history.get("id-odd")
    assert stored is not None and stored.record.details == {"When": str(when), "Ids": ["a", "b"], "N": 1}
    assert (await history.get("id-2")) is not None


async def test_ids_and_lines_keep_any_text(history: InvocationHistoryStore) -> None:
    ids = ["é-ünïcode-id", "x" * 300, "lone \udcff surrogate"]
    line = LogLine(2.0, "ERROR", "Function.hello.User", "ünïcode \udcff and <markup>")
    await history.append([InvocationRecord(id=i, function="hello", trigger="httpTrigger", reason="test",
                                           started=1.0, duration_ms=1.0, outcome=SUCCEEDED, logs=(line,))
                          for i in ids])
    for i in ids:
        stored = await history.get(i)
        assert stored is not None and stored.record.id == i and stored.record.logs == (line,)


async def test_segments_of_both_layouts_read_and_prune_together(tmp_path: Path) -> None:
    store = SqliteInvocationHistory(tmp_path)
    try:
        await store.append([record(n, logs=(LogLine(1.0, "INFO", "c", f"l{n}"),)) for n in range(3)])
        await store.append(as_batch([record(n, logs=(LogLine(1.0, "INFO", "c", f"l{n}"),)) for n in range(3, 6)]))
        await store.append([record(6)])
        assert [s.record.id for s in await store.recent()] == [f"id-{n}" for n in range(6, -1, -1)]
        found = await store.get("id-4")
        assert found is not None and found.record == record(4, logs=(LogLine(1.0, "INFO", "c", "l4"),))
        assert [a.total for a in await store.activity()] == [7]
        assert await store.prune(max_count=3, oldest_started=0) == 4  # inside the batch's segment
        assert [s.record.id for s in await store.recent()] == ["id-6", "id-5", "id-4"]
        found = await store.get("id-5")
        assert found is not None and [line.message for line in found.record.logs] == ["l5"]
    finally:
        await store.aclose()


def test_a_record_batch_reads_as_its_records() -> None:
    lines = (LogLine(1.0, "INFO", "c", "one"), LogLine(2.0, "ERROR", "c", "two"))
    records = [record(1, logs=lines), record(2, outcome=FAILED)]
    batch = as_batch(records)
    assert len(batch) == 2 and list(batch) == records and batch[-1] == records[1] and batch[0:1] == records[:1]
    with pytest.raises(IndexError):
        batch[2]
