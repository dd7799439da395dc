"""The invocation history Protocol: what the dashboard shows of past invocations.

Records are written by the dashboard's recorder in batches, off the invocation path; each is one
attempt (a retried trigger event is one record per attempt, each with its own invocation id, as
on Azure) with the log lines written while it ran. The history is bounded: `prune` keeps at most
a number of records and none older than an age (the limits are the dashboard's settings,
docs/dashboard.md). Several hosts on one data folder share one history.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, overload

SUCCEEDED = "succeeded"
FAILED = "failed"
OUTCOMES = (SUCCEEDED, FAILED)

# What one record may hold, so that a chatty function cannot grow the history without bound.
MAX_LOG_LINES = 200  # per invocation; later lines are counted, not kept
MAX_MESSAGE_CHARS = 8_000  # per log line, error message or stack trace


NO_DETAILS: Mapping[str, Any] = MappingProxyType({})


class LogLine(NamedTuple):  # a tuple: built for every line an invocation writes, stored as one
    time: float  # seconds since the epoch
    level: str  # "INFO", "WARNING", ...
    category: str  # "Function.<name>.User", "Host.Triggers.Queue", ...
    message: str


class InvocationRecord(NamedTuple):  # a tuple: one is built for every invocation the dashboard records
    id: str
    function: str
    trigger: str  # the trigger's binding type ("queueTrigger", ...)
    reason: str
    started: float  # seconds since the epoch
    duration_ms: float
    outcome: str  # SUCCEEDED | FAILED
    error: str | None = None  # "<ExceptionType>: <message>"
    stack: str | None = None
    details: Mapping[str, Any] = NO_DETAILS  # the trigger's details (MessageId, ...)
    result: str | None = None  # a short summary of what it produced ("HTTP 200", "outputs: msg")
    retry_count: int = 0
    dropped_logs: int = 0  # lines past MAX_LOG_LINES
    logs: tuple[LogLine, ...] = ()  # last: a store may keep the lines apart from the rest


FIELDS = len(InvocationRecord._fields)
DETAILS = InvocationRecord._fields.index("details")
LOGS = InvocationRecord._fields.index("logs")


# Trigger details in a `RecordBatch`, as the recorder's writer leaves them: a dict of values
# marshal takes; or `(dict, dated)`, the dict with None in place of each datetime and `dated`
# ((key, state, offset), ...) the datetimes as their pickling state (10 bytes) and UTC offset in
# seconds (None for a naive one), turned into the text the history shows, `str(datetime)`, only
# when read (building that text cost more than the rest of a record's writing); marshal bytes of
# either; or a mapping marshal does not take (the store writes its JSON form).
_MARSHALLED = frozenset({str, int, float, bool, type(None), bytes})
_UTC = timezone.utc


def flat_details(details: dict[str, Any]) -> dict[str, Any] | tuple[dict[str, Any], tuple[Any, ...]] | None:
    """The details as a batch keeps them (above); None if they hold a value of another kind."""
    dated: list[tuple[str, bytes, int | None]] | None = None
    for key, value in details.items():
        kind = type(value)
        if kind in _MARSHALLED:
            continue
        if kind is not datetime:
            return None
        zone = value.tzinfo
        if zone is _UTC:
            offset: int | None = 0
        elif zone is None:
            offset = None
        else:
            delta = zone.utcoffset(value) if type(zone) is timezone else None
            if delta is None or delta.microseconds:
                return None
            offset = delta.days * 86400 + delta.seconds
        if dated is None:
            dated = []
        dated.append((key, value.__reduce__()[1][0], offset))
    if dated is None:
        return details
    plain = dict(details)
    for key, _, _ in dated:
        plain[key] = None
    return plain, tuple(dated)


_from_state: Any = datetime  # datetime(state, tzinfo): the constructor pickling uses (not in the stubs)


def details_of(stored: Any) -> dict[str, Any]:
    """Details as `flat_details` or the recorder left them, read back as a plain dict."""
    if type(stored) is bytes:
        stored = marshal.loads(stored)
    if type(stored) is tuple:
        plain, dated = stored
        plain = dict(plain)
        for key, state, offset in dated:
            zone = None if offset is None else _UTC if offset == 0 else timezone(timedelta(seconds=offset))
            plain[key] = str(_from_state(state, zone))
        return plain
    return dict(stored)


class RecordBatch(Sequence[InvocationRecord]):
    """Records as the dashboard's recorder collects them: FIELDS plain values each in one flat
    list, in `InvocationRecord`'s field order, with the details as `flat_details` leaves them (or
    marshal bytes of those) and the log lines as marshal bytes of their tuples (or None).
    A store that knows the layout encodes the values as they are, with no object per record
    (the SQLite history does: its cost per invocation, benchmarks/README.md); to anything else it
    is a sequence of records."""

    __slots__ = ("encoded", "values")

    def __init__(self, values: list[Any], encoded: bytes | None = None) -> None:
        self.values = values
        self.encoded = encoded  # marshal bytes of `values` when they hold no log lines, if known

    def __len__(self) -> int:
        return len(self.values) // FIELDS

    @overload
    def __getitem__(self, index: int) -> InvocationRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[InvocationRecord]: ...

    def __getitem__(self, index: int | slice) -> InvocationRecord | Sequence[InvocationRecord]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        values = list(self.values[index * FIELDS:(index + 1) * FIELDS])
        details = values[DETAILS]
        values[DETAILS] = details_of(details)
        lines = values[LOGS]
        values[LOGS] = tuple(map(LogLine._make, marshal.loads(lines))) if lines is not None else ()
        return InvocationRecord._make(values)

    def __iter__(self) -> Iterator[InvocationRecord]:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True)
class StoredInvocation:
    seq: int  # the order of writing: a cursor for "newer than" and paging
    record: InvocationRecord


@dataclass(frozen=True)
class FunctionActivity:
    function: str
    total: int
    failed: int
    last_started: float | None
    last_outcome: str | None


class InvocationHistoryStore(Protocol):
    async def append(self, records: Sequence[InvocationRecord]) -> None:
        """Store the records and their log lines in one transaction, in this order (each gets
        the next seq). Invocation ids are unique by construction; `get` answers the last one."""

    async def recent(self, *, function: str | None = None, outcome: str | None = None, limit: int = 50,
                     before_seq: int | None = None, after_seq: int | None = None) -> list[StoredInvocation]:
        """Newest first, without log lines. `function` compares case-insensitively."""

    async def get(self, invocation_id: str) -> StoredInvocation | None:
        """One record with its log lines (in the order they were written); the latest written
        if the id was written more than once."""

    async def activity(self) -> list[FunctionActivity]:
        """Per function: how many records, how many failed, the last start and outcome."""

    async def last_seq(self) -> int:
        """The newest record's seq (0 when empty): what a live view compares against."""

    async def prune(self, *, max_count: int, oldest_started: float) -> int:
        """Delete records beyond the newest `max_count` and those started before
        `oldest_started`, with their log lines; returns how many were deleted."""

    async def aclose(self) -> None: ...
