"""The invocation history on embedded SQLite: ``<data>/dashboard/invocations.db``.

The recorder writes a batch of records at a time, so the history is stored as a log of
*segments*: one row per batch, its records encoded together. A row per record cost about 6-11 µs
of CPU per invocation (the insert, its B-tree and the columns' conversions); a segment costs
under 1 µs per record, which is what lets the dashboard stay on under load (benchmarks/README.md,
"The dashboard's cost"). Reads are rare (a page view) and scan segments newest first; the
history is bounded (`MAX_HISTORY_COUNT`), so a scan is a few milliseconds at most.

Each segment row holds its records' seq range, their start-time range (age pruning drops whole
segments by it), `records` and `logs` (marshal: ``{seq: ((time, level, category, message), ...)}``
for the records that wrote lines, NULL when none did), last in the row so listings never read
them. `records` has these layouts, named by `format`: RECORD_FORMAT, a tuple of record tuples
(`RECORD_FIELDS` order, each with its seq), written for records given one by one and when a
prune rewrites a segment; FLAT_FORMAT, the recorder's `RecordBatch` values as they are (one flat
list, `InvocationRecord` order without seqs, which follow from `first_seq`; details as
`invocations.flat_details` leaves them, datetimes as their 10-byte state, decoded on read), so
that writing a batch builds no object per record; FLAT_BYTES_FORMAT, the same written by the
previous version (details as marshal bytes), still read. marshal
encodes exactly the plain values a record holds (str, float, int, None, dict, list, tuple) and
nothing else: no code runs when a segment is read, and a value of any other type in trigger
details is written as its JSON form. `format` names the encoding; a reader skips a format it does
not know (a newer version's rows) instead of misreading it.

Seqs come from a one-row counter updated in the writing transaction (`BEGIN IMMEDIATE` keeps
other processes of the data folder out), so they keep growing across prunes and processes.
Pruning deletes whole segments and rewrites at most the segments that straddle a limit.
"""

from __future__ import annotations

import json
import marshal
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from funchost.storage.invocations import (
    FAILED,
    FIELDS,
    LOGS,
    FunctionActivity,
    InvocationRecord,
    LogLine,
    RecordBatch,
    StoredInvocation,
    details_of,
)
from funchost.storage.sqlite.db import SqliteDatabase

DB_FILE = "invocations.db"
RECORD_FORMAT = 1  # marshal of RECORD_FIELDS tuples; logs by seq
FLAT_BYTES_FORMAT = 2  # marshal of a `RecordBatch`'s flat values (details as marshal bytes, no logs); logs by seq
FLAT_FORMAT = 3  # the same, details as `flat_details` leaves them (datetimes as their state) or marshal bytes
FORMATS = (RECORD_FORMAT, FLAT_BYTES_FORMAT, FLAT_FORMAT)
# Segments are large blobs (a batch of 500 records is about 100 KB): 16 KB pages write them with
# a quarter of the WAL frames and half the CPU of SQLite's default 4 KB (a file created before
# keeps its page size).
PAGE_SIZE = 16384

# The first version kept one row per invocation (tables `invocations` and `invocation_logs`): a
# history is an observation of the past, so an older file's rows are dropped rather than converted.
SCHEMA = """
DROP TABLE IF EXISTS invocation_logs;
DROP TABLE IF EXISTS invocations;
CREATE TABLE IF NOT EXISTS history_segments (
    last_seq INTEGER PRIMARY KEY,
    first_seq INTEGER NOT NULL,
    count INTEGER NOT NULL,
    oldest_started REAL NOT NULL,
    newest_started REAL NOT NULL,
    format INTEGER NOT NULL,
    records BLOB NOT NULL,
    logs BLOB
);
CREATE TABLE IF NOT EXISTS history_counter (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq INTEGER NOT NULL
);
INSERT OR IGNORE INTO history_counter VALUES (1, 0)
"""

# A stored record: its seq, then the `InvocationRecord` fields but the log lines (kept apart).
RECORD_FIELDS = ("seq", *InvocationRecord._fields[:-1])
SEQ, ID, FUNCTION, STARTED, OUTCOME, DETAILS = (RECORD_FIELDS.index(name) for name in
                                                ("seq", "id", "function", "started", "outcome", "details"))
FLAT_DETAILS = DETAILS - 1  # in a `RecordBatch`'s record (no seq)
Row = tuple[Any, ...]  # one record as stored, RECORD_FIELDS order


class SqliteInvocationHistory:
    def __init__(self, directory: Path) -> None:
        self.db = SqliteDatabase(Path(directory) / DB_FILE, SCHEMA, name="history", page_size=PAGE_SIZE)
        # Per segment (its seq range and count identify its content: segments are only ever
        # rewritten shorter): the activity of its records, so a page view decodes new segments only.
        self._activity: dict[tuple[int, int, int], dict[str, _Tally]] = {}

    async def append(self, records: Sequence[InvocationRecord]) -> None:
        if records:
            await self.db.write(lambda conn: _append(conn, records))

    async def recent(self, *, function: str | None = None, outcome: str | None = None, limit: int = 50,
                     before_seq: int | None = None, after_seq: int | None = None) -> list[StoredInvocation]:
        wanted = function.casefold() if function is not None else None

        def read(conn: sqlite3.Connection) -> list[StoredInvocation]:
            found: list[StoredInvocation] = []
            if limit <= 0:
                return found
            for row in _newest_first(conn, before_seq, after_seq):
                if ((before_seq is None or row[SEQ] < before_seq) and (after_seq is None or row[SEQ] > after_seq)
                        and (wanted is None or row[FUNCTION].casefold() == wanted)
                        and (outcome is None or row[OUTCOME] == outcome)):
                    found.append(_stored(row, ()))
                    if len(found) == limit:
                        break
            return found

        return await self.db.read(read)

    async def get(self, invocation_id: str) -> StoredInvocation | None:
        needle = marshal.dumps(invocation_id)[1:]  # the id as it appears inside an encoded segment

        def read(conn: sqlite3.Connection) -> StoredInvocation | None:
            for last_seq, first_seq, record_format, blob in conn.execute(
                    f"SELECT last_seq, first_seq, format, records FROM history_segments WHERE format IN {FORMATS} "
                    "ORDER BY last_seq DESC"):
                if needle not in blob:  # skip decoding segments that cannot hold it
                    continue
                for row in reversed(_rows(record_format, blob, first_seq)):
                    if row[ID] == invocation_id:
                        logs = conn.execute("SELECT logs FROM history_segments WHERE last_seq = ?",
                                            (last_seq,)).fetchone()[0]
                        lines = marshal.loads(logs).get(row[SEQ], ()) if logs is not None else ()
                        return _stored(row, tuple(LogLine(*line) for line in lines))
            return None

        return await self.db.read(read)

    async def activity(self) -> list[FunctionActivity]:
        def read(conn: sqlite3.Connection) -> list[FunctionActivity]:
            segments = conn.execute(f"SELECT first_seq, last_seq, count FROM history_segments WHERE format IN {FORMATS}"
                                    ).fetchall()
            keys = [(first, last, count) for first, last, count in segments]
            cache, self._activity = self._activity, {}
            totals: dict[str, _Tally] = {}
            for key in keys:
                tallies = cache.get(key)
                if tallies is None:
                    blob = conn.execute("SELECT format, records FROM history_segments WHERE last_seq = ?",
                                        (key[1],)).fetchone()
                    tallies = _tally(_rows(blob[0], blob[1], key[0])) if blob is not None else {}
                self._activity[key] = tallies
                for name, tally in tallies.items():
                    total = totals.get(name)
                    totals[name] = tally if total is None else total.merge(tally)
            return [FunctionActivity(t.function, t.total, t.failed, t.last_started, t.last_outcome)
                    for _, t in sorted(totals.items())]

        return await self.db.read(read)

    async def last_seq(self) -> int:
        row = await self.db.read(lambda conn: conn.execute("SELECT MAX(last_seq) FROM history_segments").fetchone())
        return int(row[0] or 0)

    async def prune(self, *, max_count: int, oldest_started: float) -> int:
        return await self.db.write(lambda conn: _prune_by_age(conn, oldest_started)
                                   + _prune_by_count(conn, max(0, max_count)))

    async def aclose(self) -> None:
        await self.db.aclose()


# -- writing -------------------------------------------------------------------------------------


def _append(conn: sqlite3.Connection, records: Sequence[InvocationRecord]) -> None:
    first = conn.execute("SELECT last_seq FROM history_counter").fetchone()[0] + 1
    if isinstance(records, RecordBatch):
        _write_flat_segment(conn, records.values, first, records.encoded)
        conn.execute("UPDATE history_counter SET last_seq = ?", (first + len(records) - 1,))
        return
    rows = [(seq, *r[:-1]) for seq, r in enumerate(records, first)]
    logs = {seq: tuple(map(tuple, r.logs)) for seq, r in enumerate(records, first) if r.logs}
    conn.execute("UPDATE history_counter SET last_seq = ?", (first + len(rows) - 1,))
    _write_segment(conn, rows, logs)


def _write_segment(conn: sqlite3.Connection, rows: list[Row], logs: dict[int, Any]) -> None:
    try:
        encoded = marshal.dumps(tuple(rows))
    except ValueError:  # a value marshal does not encode (details from an app's own event): its JSON form
        rows = [(*row[:DETAILS], json.loads(_json(dict(row[DETAILS]))), *row[DETAILS + 1:]) for row in rows]
        encoded = marshal.dumps(tuple(rows))
    started = [row[STARTED] for row in rows]
    conn.execute("INSERT OR REPLACE INTO history_segments VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (rows[-1][SEQ], rows[0][SEQ], len(rows), min(started), max(started), RECORD_FORMAT, encoded,
                  marshal.dumps(logs) if logs else None))


def _write_flat_segment(conn: sqlite3.Connection, values: list[Any], first: int, encoded: bytes | None) -> None:
    """A `RecordBatch` as one FLAT_FORMAT segment: its values as they are (details as
    `flat_details` left them, or marshal bytes), each record's seq its position after `first`;
    log lines into the logs column. `encoded`: marshal bytes of values without log lines, when
    the recorder made them (then nothing here looks at each record)."""
    logs: dict[int, Any] = {}
    if encoded is None or any(values[LOGS::FIELDS]):
        if any(values[LOGS::FIELDS]):
            values = list(values)  # the batch stays as it came (the recorder keeps it if this fails)
            for index in range(LOGS, len(values), FIELDS):
                lines = values[index]
                if lines is not None:
                    logs[first + index // FIELDS] = tuple(marshal.loads(lines))
                    values[index] = None
        try:
            encoded = marshal.dumps(values)
        except ValueError:  # details marshal does not take (an app's own event): their JSON form, as bytes
            values = [marshal.dumps(json.loads(_json(dict(value)))) if index % FIELDS == FLAT_DETAILS
                      and type(value) is not bytes and type(value) is not tuple else value
                      for index, value in enumerate(values)]
            encoded = marshal.dumps(values)
    started = values[STARTED - 1::FIELDS]
    count = len(values) // FIELDS
    conn.execute("INSERT OR REPLACE INTO history_segments VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (first + count - 1, first, count, min(started), max(started), FLAT_FORMAT, encoded,
                  marshal.dumps(logs) if logs else None))


def _rows(record_format: int, blob: bytes, first_seq: int) -> Sequence[Row]:
    """A segment's records as rows (RECORD_FIELDS order, details decoded), oldest first."""
    if record_format == RECORD_FORMAT:
        rows: Sequence[Row] = marshal.loads(blob)
        return rows
    values = marshal.loads(blob)
    decoded: list[Row] = []
    for seq, start in enumerate(range(0, len(values), FIELDS), first_seq):
        decoded.append((seq, *values[start:start + FLAT_DETAILS], details_of(values[start + FLAT_DETAILS]),
                        *values[start + FLAT_DETAILS + 1:start + LOGS]))
    return decoded


_json = json.JSONEncoder(default=str).encode


# -- pruning -------------------------------------------------------------------------------------


def _prune_by_age(conn: sqlite3.Connection, oldest_started: float) -> int:
    deleted = conn.execute("SELECT COALESCE(SUM(count), 0) FROM history_segments WHERE newest_started < ?",
                           (oldest_started,)).fetchone()[0]
    conn.execute("DELETE FROM history_segments WHERE newest_started < ?", (oldest_started,))
    straddling = conn.execute("SELECT last_seq FROM history_segments WHERE oldest_started < ?",
                              (oldest_started,)).fetchall()
    for (last_seq,) in straddling:
        deleted += _rewrite(conn, last_seq, lambda rows: [row for row in rows if row[STARTED] >= oldest_started])
    return int(deleted)


def _prune_by_count(conn: sqlite3.Connection, max_count: int) -> int:
    total = conn.execute("SELECT COALESCE(SUM(count), 0) FROM history_segments").fetchone()[0]
    excess = total - max_count
    deleted = 0
    for last_seq, count in conn.execute("SELECT last_seq, count FROM history_segments ORDER BY last_seq").fetchall():
        if excess <= 0:
            break
        if count <= excess:
            conn.execute("DELETE FROM history_segments WHERE last_seq = ?", (last_seq,))
            deleted += count
            excess -= count
        else:  # records are in seq order: the first ones are the oldest written
            deleted += _rewrite(conn, last_seq, lambda rows, drop=excess: rows[drop:])
            excess = 0
    return int(deleted)


def _rewrite(conn: sqlite3.Connection, last_seq: int, keep: Any) -> int:
    """Rewrite one segment with the records `keep(rows)` returns; returns how many went."""
    found = conn.execute("SELECT format, records, logs, first_seq FROM history_segments WHERE last_seq = ?",
                         (last_seq,)).fetchone()
    if found is None or found[0] not in FORMATS:
        return 0
    rows = list(_rows(found[0], found[1], found[3]))  # rewritten as RECORD_FORMAT (explicit seqs)
    kept = keep(rows)
    conn.execute("DELETE FROM history_segments WHERE last_seq = ?", (last_seq,))
    if kept:
        logs = marshal.loads(found[2]) if found[2] is not None else {}
        _write_segment(conn, kept, {row[SEQ]: logs[row[SEQ]] for row in kept if row[SEQ] in logs})
    return len(rows) - len(kept)


# -- reading -------------------------------------------------------------------------------------


def _newest_first(conn: sqlite3.Connection, before_seq: int | None, after_seq: int | None) -> Iterator[Row]:
    """Records newest first from the segments that can hold seqs in (after_seq, before_seq)."""
    cursor = conn.execute(
        f"SELECT format, records, first_seq FROM history_segments WHERE format IN {FORMATS} AND first_seq < ? "
        "AND last_seq > ? ORDER BY last_seq DESC",
        (before_seq if before_seq is not None else 2**63 - 1, after_seq or 0))
    for record_format, blob, first_seq in cursor:
        yield from reversed(_rows(record_format, blob, first_seq))


def _stored(row: Row, logs: tuple[LogLine, ...]) -> StoredInvocation:
    details = row[DETAILS]
    fields = (*row[1:DETAILS], details if isinstance(details, dict) else {}, *row[DETAILS + 1:], logs)
    return StoredInvocation(row[SEQ], InvocationRecord._make(fields))


class _Tally:
    """One function's activity in some records: the last one is the one with the highest seq."""

    __slots__ = ("failed", "function", "last_outcome", "last_seq", "last_started", "total")

    def __init__(self, function: str, total: int, failed: int, last_seq: int, last_started: float,
                 last_outcome: str) -> None:
        self.function, self.total, self.failed = function, total, failed
        self.last_seq, self.last_started, self.last_outcome = last_seq, last_started, last_outcome

    def merge(self, other: _Tally) -> _Tally:
        last = other if other.last_seq > self.last_seq else self
        return _Tally(last.function, self.total + other.total, self.failed + other.failed, last.last_seq,
                      last.last_started, last.last_outcome)


def _tally(rows: Sequence[Row]) -> dict[str, _Tally]:
    tallies: dict[str, _Tally] = {}
    for row in rows:  # seq order: each row is the newest so far of its function
        key = row[FUNCTION].casefold()
        failed = 1 if row[OUTCOME] == FAILED else 0
        tally = tallies.get(key)
        if tally is None:
            tallies[key] = _Tally(row[FUNCTION], 1, failed, row[SEQ], row[STARTED], row[OUTCOME])
        else:
            tally.total += 1
            tally.failed += failed
            tally.function, tally.last_seq, tally.last_started, tally.last_outcome = (
                row[FUNCTION], row[SEQ], row[STARTED], row[OUTCOME])
    return tallies
