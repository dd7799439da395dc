"""The invocation history recorder: an invocation middleware piece and a writer in the background.

The piece (`registry.MIDDLEWARE_MODULES`, inside the Executing/Executed lines, around binding)
does no I/O: it notes the attempt as running, lets `LogCapture` collect the log lines written
while it runs, and on completion appends the request and result to a pending list. The writer
task turns pending attempts into `InvocationRecord`s and writes them in one transaction per
batch: when `flush_batch` are waiting, else at most `flush_interval` after the first one. It
applies the history's limits (count and age) at start and then at most every `prune_interval`.

If the writer falls `pending_limit` attempts behind (a store that stopped answering), the oldest
waiting ones are dropped and counted: the history is an observation, never a reason to slow
down or stop the functions it observes.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections import deque
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from funchost.clock import Clock
from funchost.dashboard.notifier import Notifier
from funchost.dashboard.options import DashboardOptions, from_settings
from funchost.invocation.context import current_invocation
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.invocation.http_response import HttpResponseDatum
from funchost.invocation.middleware import CallNext, Invocation, Middleware
from funchost.storage.invocations import (
    FAILED,
    MAX_LOG_LINES,
    MAX_MESSAGE_CHARS,
    SUCCEEDED,
    InvocationHistoryStore,
    InvocationRecord,
    LogLine,
)

if TYPE_CHECKING:
    from funchost.runtime.contracts import Runtime

log = logging.getLogger("funchost.dashboard")


def middleware(runtime: Runtime) -> Middleware:
    """The recorder's piece for this host's executor (`registry.MIDDLEWARE_MODULES`); the
    dashboard service finds the recorder with ``runtime.services.find(HistoryRecorder)``."""
    options = from_settings(runtime.settings)
    if not options.enabled:
        return pass_through
    recorder = HistoryRecorder(runtime.clock, options)
    runtime.services.provide(recorder)
    return recorder.piece


def pass_through(invocation: Invocation, call_next: CallNext) -> Awaitable[InvocationResult]:
    """With the dashboard off: no coroutine of its own on the invocation path."""
    return call_next(invocation)


class Attempt:
    """An attempt while it runs: what the dashboard shows as running, and its log lines so far."""

    __slots__ = ("dropped", "function", "lines", "started")

    def __init__(self, function: str, started: float) -> None:
        self.function = function
        self.started = started
        self.lines: list[LogLine] = []
        self.dropped = 0


class Done:
    """A finished attempt waiting for the writer: only what its record needs, so the request and
    result (trigger data, outputs) are freed at once instead of living on until the next batch."""

    __slots__ = ("attempt", "details", "duration_ms", "error", "function", "id", "reason", "result", "retry_count")

    def __init__(self, request: InvocationRequest, result: InvocationResult, attempt: Attempt,
                 retry_count: int) -> None:
        self.id = request.invocation_id
        self.function = request.function
        self.reason = request.reason
        self.details = request.details
        self.attempt = attempt
        self.duration_ms = result.duration_ms
        self.error = None if result.succeeded else (result.error, result.error_message)
        self.result = result_summary(request, result) if result.succeeded else None
        self.retry_count = retry_count


class HistoryRecorder:
    def __init__(self, clock: Clock, options: DashboardOptions) -> None:
        self.clock = clock
        self.options = options
        self.running: dict[str, Attempt] = {}  # invocation id -> attempt, while it runs
        self.dropped = 0  # attempts never written (the writer was too far behind)
        self.notifier = Notifier()  # told after each batch is written
        self._pending: deque[Done] = deque()
        self._wake = asyncio.Event()  # the first attempt of a batch is waiting
        self._full = asyncio.Event()  # a whole batch is waiting
        self._store: InvocationHistoryStore | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._last_prune: float | None = None

    # -- the middleware piece (on every invocation: no I/O) --------------------------------------

    async def piece(self, invocation: Invocation, call_next: CallNext) -> InvocationResult:
        request = invocation.request
        attempt = Attempt(request.function.name, self.clock.now().timestamp())
        running = self.running
        running[request.invocation_id] = attempt
        try:
            result = await call_next(invocation)
        finally:
            del running[request.invocation_id]
        retry = invocation.retry_context
        pending = self._pending
        if len(pending) >= self.options.pending_limit:
            pending.popleft()
            self.dropped += 1
        pending.append(Done(request, result, attempt, retry.retry_count if retry is not None else 0))
        if len(pending) == 1:
            self._wake.set()
        elif len(pending) >= self.options.flush_batch:
            self._full.set()
        return result

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
            if self._pending and not self._stopping and len(self._pending) < self.options.flush_batch:
                self._full.clear()
                await self.clock.wait(self._full, self.options.flush_interval)
            await self.flush()

    async def flush(self) -> int:
        """Write every waiting attempt now (one transaction); returns how many were written."""
        store = self._store
        if store is None:
            return 0
        batch = list(self._pending)
        self._pending.clear()
        written = 0
        if batch:
            records = [to_record(done) for done in batch]
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

    def _requeue(self, batch: list[Done]) -> None:
        room = max(0, self.options.pending_limit - len(self._pending))
        keep = batch[-room:] if room else []
        self.dropped += len(batch) - len(keep)
        self._pending.extendleft(reversed(keep))

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

    def handle(self, record: logging.LogRecord) -> bool:
        invocation_id = getattr(record, "invocation_id", None)
        if invocation_id is None:
            info = current_invocation.get()
            if info is None:
                return False
            invocation_id = info.invocation_id
        attempt = self.recorder.running.get(invocation_id)
        if attempt is None or (self.accept is not None and not self.accept.filter(record)):
            return False
        if len(attempt.lines) >= MAX_LOG_LINES:
            attempt.dropped += 1
            return False
        attempt.lines.append(LogLine(record.created, record.levelname, str(getattr(record, "category", record.name)),
                                     clip(_message(record))))
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


def to_record(done: Done) -> InvocationRecord:
    error = stack = None
    if done.error is not None:
        exc, message = done.error
        error = clip(message or "the invocation failed")
        if exc is not None:
            stack = clip("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
    attempt, function = done.attempt, done.function
    return InvocationRecord(
        done.id, function.name, function.trigger_type, done.reason, attempt.started, done.duration_ms,
        SUCCEEDED if done.error is None else FAILED, error, stack, done.details, done.result, done.retry_count,
        tuple(attempt.lines), attempt.dropped)


def result_summary(request: InvocationRequest, result: InvocationResult) -> str | None:
    """"HTTP 201" for an HTTP function's response; the output bindings written otherwise."""
    outputs = result.outputs
    if not outputs:
        return "HTTP 200" if request.function.is_http else None  # no output: the host answers 200
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


def _status(value: Any) -> str:
    raw = getattr(value, "value", value)
    return str(raw) if raw not in (None, "") else "200"
