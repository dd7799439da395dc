"""The invocation history recorder: an attempt observer of the executor and a writer in the background.

Binding tells the recorder when each attempt begins and ends (it is an `AttemptObserver`, listed
in `registry.MIDDLEWARE_MODULES`, inside the Executing/Executed lines). There it does no I/O: it
notes the attempt as running, lets `LogCapture` collect the log lines written while it runs, and
on completion appends the record's values to a pending list (a failed attempt's stack trace is
formatted by the writer). The writer task writes pending records in one transaction per batch:
when `flush_batch` are waiting, else at most `flush_interval` after the first one. It applies
the history's limits (count and age) at start and then at most every `prune_interval`.

What it does at each attempt's start and end runs on every invocation while the dashboard is
on, so it adds no coroutine to the chain, creates no object the garbage collector tracks, and
reads only the clock's monotonic time (made wall-clock time with an offset the writer
refreshes): benchmarks/README.md, "The dashboard's cost", has the figures.

If the writer falls `pending_limit` attempts behind (a store that stopped answering), the oldest
waiting ones are dropped and counted: the history is an observation, never a reason to slow
down or stop the functions it observes.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import marshal
import time
import traceback
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from funchost.clock import Clock, SystemClock
from funchost.dashboard.notifier import Notifier
from funchost.dashboard.options import DashboardOptions, from_settings
from funchost.invocation.context import current_invocation
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.invocation.http_response import HttpResponseDatum
from funchost.invocation.middleware import Invocation
from funchost.storage.invocations import (
    DETAILS,
    FAILED,
    FIELDS,
    LOGS,
    MAX_LOG_LINES,
    MAX_MESSAGE_CHARS,
    SUCCEEDED,
    InvocationHistoryStore,
    InvocationRecord,
    RecordBatch,
    flat_details,
)

if TYPE_CHECKING:
    from funchost.runtime.contracts import Runtime

log = logging.getLogger("funchost.dashboard")


def middleware(runtime: Runtime) -> HistoryRecorder | None:
    """The recorder, an attempt observer of this host's executor (`registry.MIDDLEWARE_MODULES`),
    or None with the dashboard off; the dashboard service finds it with
    ``runtime.services.find(HistoryRecorder)``."""
    options = from_settings(runtime.settings)
    if not options.enabled:
        return None
    recorder = HistoryRecorder(runtime.clock, options)
    runtime.services.provide(recorder)
    return recorder


# What waits for the writer, per finished attempt: FIELDS values appended to one flat list, in
# `InvocationRecord`'s field order, with the log lines as marshal bytes, the trigger details as
# the request's own dict when the collector does not track it (its values are text, numbers,
# datetimes: the writer encodes it) and as marshal bytes otherwise, and, for a failure, the
# exception in the stack's place (the writer formats it, off the invocation path). None of these
# is an object Python's garbage collector walks: hundreds of records waiting for a batch as
# tuples, dicts or objects it tracks kept the collector's young generation full under load, and a
# serving host then ran young and full collections several times as often (measured:
# benchmarks/README.md, "The dashboard's cost"). Only what the record needs is kept, so the
# request and result (trigger data, outputs) are freed at once.
STACK = InvocationRecord._fields.index("stack")
FUNCTION = InvocationRecord._fields.index("function")


class HistoryRecorder:
    def __init__(self, clock: Clock, options: DashboardOptions) -> None:
        self.clock = clock
        # Read on every attempt: the real clock's own function, without SystemClock's frame around it.
        self._monotonic = time.monotonic if type(clock) is SystemClock else clock.monotonic
        self._wall = clock.now().timestamp() - clock.monotonic()  # monotonic + this = seconds since the epoch
        self.options = options
        # The attempts running now, by invocation id (dict entries only: no object per attempt).
        self.running: dict[str, Invocation] = {}
        self._began: dict[str, float] = {}  # monotonic
        self._lines: dict[str, list[tuple[float, str, str, str]]] = {}  # of running attempts that wrote some
        self._dropped_lines: dict[str, int] = {}
        self._plain_first: set[str] = set()  # functions whose trigger details hold values marshal does not take
        self.dropped = 0  # attempts never written (the writer was too far behind)
        self.notifier = Notifier()  # told after each batch is written
        self._pending: list[Any] = []  # FIELDS values per attempt
        self._full_at = options.flush_batch * FIELDS
        self._pending_cap = options.pending_limit * FIELDS
        self._wake = asyncio.Event()  # the first attempt of a batch is waiting
        self._full = asyncio.Event()  # a whole batch is waiting
        self._store: InvocationHistoryStore | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._last_prune: float | None = None
        self._plain_batch = False  # the last batch's values were written as they came (`to_records`)

    # -- the attempt observer (on every invocation: no I/O) ----------------------------------------

    def attempt_started(self, invocation: Invocation) -> None:
        invocation_id = invocation.request.invocation_id
        self.running[invocation_id] = invocation
        self._began[invocation_id] = self._monotonic()

    def attempt_finished(self, invocation: Invocation, result: InvocationResult | None) -> None:
        request = invocation.request
        invocation_id = request.invocation_id
        if self.running.pop(invocation_id, None) is None:
            return
        began = self._began.pop(invocation_id)
        lines = self._lines.pop(invocation_id, None) if self._lines else None
        dropped_lines = self._dropped_lines.pop(invocation_id, 0) if self._dropped_lines else 0
        if result is None:  # cancelled: the host is stopping
            return
        function = request.function
        trigger = function.trigger.type  # `FunctionSpec.trigger_type` without the property's call
        pending = self._pending
        if len(pending) >= self._pending_cap:
            del pending[:FIELDS]
            self.dropped += 1
        retry = invocation.retry_context
        details: Any = request.details
        if type(details) is not dict or gc.is_tracked(details):
            details = self._encode_details(function.name, details)
        # else a dict of untracked values (str, numbers, datetimes): it waits as it is, encoded by the writer
        if result.succeeded:
            outcome, error, stack = SUCCEEDED, None, None
            outputs = result.outputs
            if not outputs:  # no output: the host answers 200 to an HTTP request
                summary = HTTP_200 if trigger == HTTP_TRIGGER else None
            else:  # the common case inline (an HTTP function's response, a known status): no call
                summary = None
                if len(outputs) == 1:
                    for datum in outputs.values():
                        if type(datum) is HttpResponseDatum and type(datum.parts.status_code) is int:
                            summary = _HTTP_SUMMARIES.get(datum.parts.status_code)
                if summary is None:
                    summary = result_summary(request, result)
        else:  # the exception waits in the stack's place
            outcome, error, stack, summary = (FAILED, clip(result.error_message or "the invocation failed"),
                                              result.error, None)
        pending.extend((invocation_id, function.name, trigger, request.reason, began + self._wall,
                        result.duration_ms, outcome, error, stack, details, summary,
                        retry.retry_count if retry is not None else 0, dropped_lines,
                        marshal.dumps(lines) if lines else None))
        if len(pending) == FIELDS:
            self._wake.set()
        elif len(pending) >= self._full_at:
            self._full.set()

    def _encode_details(self, function: str, details: Mapping[str, Any]) -> bytes | Mapping[str, Any]:
        """Marshal bytes of the details, or of their plain form (values marshal does not take as
        their text); the mapping itself if even that fails."""
        if function not in self._plain_first:
            try:
                return marshal.dumps(details)  # type: ignore[arg-type]  # a ValueError if not plain
            except ValueError:  # a value marshal does not take (the queue's InsertedOn datetime): its text
                self._plain_first.add(function)  # the same trigger's next details: no failed attempt
        return _plain_details(details)

    def to_records(self, values: list[Any]) -> RecordBatch:
        """The records of pending attempts, their values changed in place: details waiting as a
        dict made what a batch keeps (`flat_details`: datetimes as their state, their text built
        on read), a failure's exception turned into its stack trace. No object per record: the
        store encodes the values. When the previous batch needed none of that (an HTTP
        function's details are text), this one is first encoded whole, without a look at each
        record, and the store writes those bytes (marshal walks a whole batch before it refuses
        a value, so a batch that needed changes is not tried whole the next time)."""
        if self._plain_batch and not any(values[LOGS::FIELDS]):
            try:
                return RecordBatch(values, marshal.dumps(values))
            except ValueError:  # a datetime in details, an exception: record by record below
                pass
        changed = False
        for index in range(DETAILS, len(values), FIELDS):
            details = values[index]
            if type(details) is dict:
                flat = flat_details(details)
                if flat is not details:
                    changed = True
                    values[index] = flat if flat is not None else \
                        self._encode_details(values[index - DETAILS + FUNCTION], details)
        for index, stack in enumerate(values[STACK::FIELDS]):
            if stack is not None and isinstance(stack, BaseException):
                changed = True
                values[index * FIELDS + STACK] = clip(
                    "".join(traceback.format_exception(type(stack), stack, stack.__traceback__)).rstrip())
        self._plain_batch = not changed
        return RecordBatch(values)

    def capture(self, invocation_id: str, line: tuple[float, str, str, str]) -> None:
        """A log line of a running attempt (at most MAX_LOG_LINES are kept, the rest counted)."""
        lines = self._lines.get(invocation_id)
        if lines is None:
            self._lines[invocation_id] = [line]
        elif len(lines) < MAX_LOG_LINES:
            lines.append(line)
        else:
            self._dropped_lines[invocation_id] = self._dropped_lines.get(invocation_id, 0) + 1

    def running_now(self) -> list[tuple[float, str, str]]:
        """(started, function, invocation id) of each attempt running now, in seconds since the epoch."""
        return [(self._began[iid] + self._wall, invocation.request.function.name, iid)
                for iid, invocation in list(self.running.items()) if iid in self._began]

    # -- the writer ------------------------------------------------------------------------------

    async def start(self, store: InvocationHistoryStore) -> None:
        self._store = store
        await self._prune()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="dashboard-history")

    async def stop(self) -> None:
        """Write what is waiting, then end the writer."""
        self._stopping = True
        self._wake.set()
        self._full.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()

    async def _run(self) -> None:
        while not self._stopping:
            if not self._pending:
                self._wake.clear()
                await self.clock.wait(self._wake, self.options.prune_interval)
            if self._pending and not self._stopping and len(self._pending) < self._full_at:
                self._full.clear()
                await self.clock.wait(self._full, self.options.flush_interval)
            await self.flush()

    async def flush(self) -> int:
        """Write every waiting attempt now (one transaction); returns how many were written."""
        store = self._store
        if store is None:
            return 0
        batch, self._pending = self._pending, []
        written = 0
        self._wall = self.clock.now().timestamp() - self.clock.monotonic()  # follows changes of the system time
        if batch:
            records = self.to_records(batch)
            try:
                await store.append(records)
                written = len(records)
            except Exception as exc:  # noqa: BLE001 - the history never stops the host
                self._requeue(batch)
                log.warning("the invocation history could not be written (%s: %s); retrying with the next batch",
                            type(exc).__name__, exc)
        if self._last_prune is None or self.clock.monotonic() - self._last_prune >= self.options.prune_interval:
            await self._prune()
        if written:
            self.notifier.notify()
        return written

    def _requeue(self, batch: list[Any]) -> None:
        room = max(0, self._pending_cap - len(self._pending))
        keep = batch[len(batch) - room:] if room < len(batch) else batch
        self.dropped += (len(batch) - len(keep)) // FIELDS
        self._pending[:0] = keep

    async def _prune(self) -> None:
        store = self._store
        if store is None:
            return
        self._last_prune = self.clock.monotonic()
        oldest = self.clock.now().timestamp() - self.options.history_age
        try:
            deleted = await store.prune(max_count=self.options.history_count, oldest_started=oldest)
        except Exception as exc:  # noqa: BLE001
            log.warning("the invocation history could not be pruned (%s: %s)", type(exc).__name__, exc)
            return
        if deleted:
            log.debug("invocation history: %d old invocation(s) deleted", deleted)


class LogCapture(logging.Handler):
    """Collects the log records written while an attempt runs (the user's, and the host's about
    it), for the attempt's record. Installed on the root logger while the dashboard runs; every
    other record costs a context-variable lookup. `accept` applies host.json's log levels."""

    def __init__(self, recorder: HistoryRecorder, accept: logging.Filter | None = None) -> None:
        super().__init__(logging.DEBUG)
        self.recorder = recorder
        self.accept = accept
        # Whether a line of this invocation would be kept (`direct_lines.LineObserver`): only
        # while its attempt runs, so never the Executing/Executed lines written around it. The
        # running dict's own lookup (asked twice per invocation: no Python frame).
        self.takes_invocation_line: Callable[[str], bool] = recorder.running.__contains__

    def handle(self, record: logging.LogRecord) -> bool:
        invocation_id = getattr(record, "invocation_id", None)
        if invocation_id is None:
            info = current_invocation.get()
            if info is None:
                return False
            invocation_id = info.invocation_id
        if invocation_id not in self.recorder.running or (self.accept is not None and not self.accept.filter(record)):
            return False
        self.recorder.capture(invocation_id, (record.created, record.levelname,
                                              str(getattr(record, "category", record.name)), clip(_message(record))))
        return True

    def emit(self, record: logging.LogRecord) -> None:  # handle() does the work
        self.handle(record)


def _message(record: logging.LogRecord) -> str:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string is the user's; keep the raw text
        message = str(record.msg)
    if record.exc_info and record.exc_info[1] is not None:
        message += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
    return message


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more characters)"


_PLAIN = (str, int, float, bool, type(None), list, tuple, dict)


def _plain_details(details: Mapping[str, Any]) -> bytes | Mapping[str, Any]:
    """The details with each value marshal does not take as its text (as the store would write it);
    the mapping itself if that is not enough (the store's JSON fallback handles it)."""
    plain = {str(key): value if isinstance(value, _PLAIN) else str(value) for key, value in details.items()}
    try:
        return marshal.dumps(plain)
    except ValueError:
        return details


def result_summary(request: InvocationRequest, result: InvocationResult) -> str | None:
    """"HTTP 201" for an HTTP function's response; the output bindings written otherwise."""
    outputs = result.outputs
    if not outputs:
        return HTTP_200 if request.function.is_http else None  # no output: the host answers 200
    if len(outputs) == 1:  # the common case, an HTTP function's response on the lean path: no sorting
        (datum,) = outputs.values()
        if type(datum) is HttpResponseDatum:
            code = datum.parts.status_code
            if type(code) is int or type(code) is HTTPStatus:  # one text per status: kept once in a batch
                summary = _HTTP_SUMMARIES.get(code)
                if summary is None:
                    summary = f"HTTP {_status(code)}"
                    if len(_HTTP_SUMMARIES) < 100:
                        _HTTP_SUMMARIES[code] = summary
                return summary
            return f"HTTP {_status(code)}"
    names = sorted(outputs)
    parts = []
    for name in names:
        datum = outputs[name]
        if isinstance(datum, HttpResponseDatum):  # the lean path's response: read it without building Datums
            names.remove(name)
            parts.append(f"HTTP {_status(datum.parts.status_code)}")
            break
        if datum.type == "http" and isinstance(datum.value, Mapping):
            names.remove(name)
            parts.append(f"HTTP {_status(datum.value.get('status_code'))}")
            break
    if names:
        parts.append("outputs: " + ", ".join(names))
    return "; ".join(parts) or None


HTTP_200 = "HTTP 200"
HTTP_TRIGGER = "httpTrigger"  # `FunctionSpec.is_http`
_HTTP_SUMMARIES: dict[int, str] = {}  # by status code (ints only, at most 100 of them)


def _status(value: Any) -> str:
    raw = getattr(value, "value", value)
    return str(raw) if raw not in (None, "") else "200"
