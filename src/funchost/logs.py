"""Console logging as Core Tools prints it, or NDJSON events (`--output json`).

Records get a Functions-style category (``Function.<name>``, ``Function.<name>.User``,
``Host.<area>``) filtered by host.json `logging.logLevel`. Records logged inside an invocation,
including the user's own `logging` calls from sync functions in the thread pool, carry its
invocation id through a context variable.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, TextIO

from funchost import user_output
from funchost.invocation.context import current_invocation

_LEVELS = {"Trace": 5, "Debug": logging.DEBUG, "Information": logging.INFO, "Warning": logging.WARNING,
           "Error": logging.ERROR, "Critical": logging.CRITICAL, "None": logging.CRITICAL + 10}
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
_QUIET = ("uvicorn", "uvicorn.error", "uvicorn.access", "httpx", "httpcore", "azure", "asyncio", "urllib3")


def category_of(record: logging.LogRecord) -> str:
    function = getattr(record, "function", None)
    if record.name == "funchost.results" and function:
        return f"Function.{function}"
    if record.name.startswith("funchost"):
        area = record.name.split(".", 1)[1] if "." in record.name else "General"
        return f"Host.{area.capitalize()}"
    if record.name.startswith("Host."):
        return record.name  # already a host category (e.g. Host.Triggers.CosmosDB)
    info = current_invocation.get()
    if info is not None:
        return f"Function.{info.function_name}.User"
    return f"Host.{record.name}"


class CategoryFilter(logging.Filter):
    """Adds `category` and `invocation_id`; drops records below the category's level."""

    def __init__(self, levels: Mapping[str, str]) -> None:
        super().__init__()
        self.levels = {k.lower(): _LEVELS[v] for k, v in levels.items() if v in _LEVELS}
        self.default = self.levels.get("default", logging.INFO)
        self._cache: dict[str, int] = {}

    def threshold(self, category: str) -> int:
        cached = self._cache.get(category)
        if cached is None:
            cached = self._cache[category] = self._lookup(category)
        return cached

    def _lookup(self, category: str) -> int:
        parts = category.lower().split(".")
        for end in range(len(parts), 0, -1):
            key = ".".join(parts[:end])
            if key in self.levels:
                return self.levels[key]
        return self.default

    def filter(self, record: logging.LogRecord) -> bool:
        category = category_of(record)
        record.category = category
        info = current_invocation.get()
        if info is not None and not hasattr(record, "invocation_id"):
            record.invocation_id = info.invocation_id
            record.function = info.function_name
        return record.levelno >= self.threshold(category)


_second_cache: tuple[int, str] = (-1, "")


def _timestamp(record: logging.LogRecord) -> str:
    return timestamp_of(record.created)


MILLIS = tuple(f"{millis:03d}Z" for millis in range(1000))


def timestamp_of(created: float) -> str:
    """ISO 8601 UTC with milliseconds; the per-second prefix is cached (a hot path under load)."""
    global _second_cache
    whole = int(created)
    if _second_cache[0] != whole:
        prefix = datetime.fromtimestamp(whole, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.")
        _second_cache = (whole, prefix)
    return _second_cache[1] + MILLIS[int((created - whole) * 1000)]


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and not getattr(record, "event", None):
            message += "\n" + self.formatException(record.exc_info)
        user = str(getattr(record, "category", "")).endswith(".User")
        if user and getattr(record, "invocation_id", None):
            function = getattr(record, "function", "")
            invocation_id = getattr(record, "invocation_id", "")
            message = f"[Functions.{function} Id={invocation_id}] {message}"
        return f"[{_timestamp(record)}] {message}"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "category": getattr(record, "category", record.name),
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in ("category",) and not key.startswith("_"):
                event[camel_key(key)] = value
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return json.dumps(event, default=str)


def camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.capitalize() for part in rest)


FLUSH_INTERVAL = 0.1  # seconds a console line may wait in the buffer when stdout is not a terminal
LINES_DELAY = 0.02  # seconds the invocation lines may wait for more (`ConsoleHandler.queue_line`); each write
# takes the GIL from the busy loop and back: at 2 ms the console's thread cost 2.3 µs of CPU per HTTP
# request served, at 20 ms 0.5 (benchmarks/README.md, "Eighth pass")


class ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Line by line on a terminal. On a pipe or a file, lines go to the stream's buffer and are
    flushed at most FLUSH_INTERVAL later by a small thread (and at exit), so a busy host does not
    pay one write system call per line.

    The flusher is not a daemon: a daemon thread caught inside stdout's lock while the
    interpreter finalizes aborts the process. It is told to finish (after a last flush) from
    `threading`'s exit hooks, which run before the interpreter waits for threads.

    On any stream that is not a terminal (`defers`), the invocations' Executing/Executed lines
    (`direct_lines`) written on an event loop wait in `waiting` and go out in one write: written by
    the flusher LINES_DELAY after the first of them on a stream that writes every line through
    (PYTHONUNBUFFERED, `python -u`, line buffering), FLUSH_INTERVAL after on a block-buffered one
    (where they waited as long in the stream's buffer before), by a thread, not a timer of the
    loop (a function that blocks the loop does not hold back its own Executing line); before any
    other line (`emit`, `print_line`), before what the app writes to sys.stdout or sys.stderr
    (`user_output`, for the console of `configure`; for another, before user code runs:
    `write_waiting`, called by the executor) and on `flush`. Written one by one, each line costs a
    write system call that also hands the GIL to other threads and back, or on a block-buffered
    stream the lock and an encoding into its buffer (the two lines of an HTTP invocation: 5.05 µs
    against 4.37 deferred, benchmarks/README.md, "Seventh pass").
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._describe(stream)
        self._dirty = False
        self._wake = threading.Event()
        self._stopping = threading.Event()  # ends the flusher's wait at once (`_signal_stop`)
        self._closing = False
        self._flusher: threading.Thread | None = None
        self.waiting: deque[str] = deque()  # appended on the loop, taken under the lock by any thread
        self._lines_due = False  # the flusher was woken for the waiting lines
        self.orders_user_output = False  # the app's sys.stdout/sys.stderr write the waiting lines first

    def _describe(self, stream: TextIO) -> None:
        self.buffered = not _is_terminal(stream)
        self.writes_through = bool(getattr(stream, "write_through", False) or getattr(stream, "line_buffering", False))

    @property
    def defers(self) -> bool:
        """Whether the invocation lines made on a loop wait (class docstring): on every stream
        that is not a terminal."""
        return self.buffered

    def setStream(self, stream: TextIO) -> TextIO | None:  # noqa: N802 - logging's name
        """The lines waiting for the old stream go to it first; the new one's kind decides the rest."""
        with self.lock:  # type: ignore[union-attr]
            if self.waiting and stream is not self.stream:
                self._write_waiting()
        old = super().setStream(stream)
        self._describe(stream)
        return old

    def queue_line(self, line: str) -> None:
        """A line formatted elsewhere (`direct_lines`): written with the others waiting (class
        docstring). Appended before the flag is read: a flusher that cleared the flag writes it."""
        self.waiting.append(line)
        if not self._lines_due:
            self._lines_due = True
            if self._flusher is None:
                self._start_flusher()
            self._wake.set()

    def write_waiting(self) -> None:
        """Write the waiting lines now (after a write of them another thread has begun)."""
        with self.lock:  # type: ignore[union-attr]
            if self.waiting:
                self._write_waiting()

    def _write_waiting(self) -> None:  # the lock held
        waiting, parts = self.waiting, []
        while waiting:  # popleft: a line appended meanwhile stays for the next write, never lost
            parts.append(waiting.popleft())
        text = "".join(parts)
        try:
            self._write(text)
        except RecursionError:
            raise
        except Exception:
            self.handleError(logging.makeLogRecord({"msg": text}))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.waiting:  # the lines before this one first
                self._write_waiting()
            self._write(self.format(record) + self.terminator)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def write_line(self, line: str) -> bool:
        """A line formatted elsewhere (`direct_lines`), under the handler's lock as `handle` takes
        it; False if writing failed (the caller then logs the record, which reports the error)."""
        with self.lock:  # type: ignore[union-attr]
            if self.waiting:
                self._write_waiting()
            try:
                if self._dirty and self.buffered and not self._closing:  # `_write`'s common case, inline
                    try:
                        self.stream.write(line)
                        return True
                    except UnicodeEncodeError:
                        pass  # `_write` escapes it
                self._write(line)
            except RecursionError:
                raise
            except Exception:  # noqa: BLE001 - reported by the record the caller logs instead
                return False
        return True

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line)
        except UnicodeEncodeError:  # e.g. a lone surrogate a client sent: escape it, keep the line
            self.stream.write(_encodable(line, self.stream))
        if not self.buffered or self._closing:
            self.stream.flush()
        elif not self._dirty:
            self._dirty = True
            if self._flusher is None:
                self._start_flusher()
            self._wake.set()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            if self.waiting:
                self._write_waiting()
            self._dirty = False
            super().flush()

    def close(self) -> None:
        # Only signal: logging.shutdown() calls close() holding this handler's lock, which the
        # flusher needs to finish, so joining here would wait out the timeout.
        self.write_waiting()
        self._signal_stop()
        super().close()

    def _start_flusher(self) -> None:
        self._flusher = threading.Thread(target=self._flush_soon, name="console-flush")
        self._flusher.start()
        _flushers_to_stop.append(self)

    def _signal_stop(self) -> None:
        """Tell the flusher to write what is left and leave, its wait cut short. `_closing` is the
        flag the write path reads; `_stopping` is the same state as an event the flusher waits on."""
        self._closing = True
        self._stopping.set()
        self._wake.set()

    def _stop_flusher(self) -> None:
        self._signal_stop()
        flusher = self._flusher
        if flusher is not None and flusher is not threading.current_thread():
            flusher.join(timeout=2)

    def _flush_soon(self) -> None:
        while not self._closing:
            self._wake.wait()
            self._wake.clear()
            if not self._closing:
                self._stopping.wait(LINES_DELAY if self.writes_through else FLUSH_INTERVAL)
            self._lines_due = False  # before the write: a line queued from now on wakes us again
            try:
                self.flush()
            except (OSError, ValueError):  # the stream was closed under us
                return


_flushers_to_stop: list[ConsoleHandler] = []


def _stop_all_flushers() -> None:
    for handler in list(_flushers_to_stop):
        handler._stop_flusher()


threading._register_atexit(_stop_all_flushers)  # type: ignore[attr-defined]


def _encodable(text: str, stream: TextIO) -> str:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return text.encode(encoding, "backslashreplace").decode(encoding)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def configure(output: str = "text", levels: Mapping[str, str] | None = None,
              stream: TextIO | None = None) -> logging.Handler:
    """Install the console handler on the root logger (replacing an earlier one of ours)."""
    handler = ConsoleHandler(stream or user_output.unwrapped(sys.stdout))
    handler.setFormatter(JsonFormatter() if output == "json" else TextFormatter())
    handler.addFilter(CategoryFilter(levels or {}))
    handler.set_name("funchost-console")
    if stream is None and handler.defers:  # the process's console: what the app prints follows the lines
        user_output.order_behind(handler)
        handler.orders_user_output = True
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == "funchost-console":
            root.removeHandler(existing)
            existing.flush()
            existing.close()  # stops its flusher thread; the stream itself stays open
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    # Console lines never show the caller's file/line or thread: skip collecting them (the
    # logging HOWTO's "Optimization" advice), which halves the cost of a record.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler


def print_line(text: str, *, output: str = "text", event: str = "Info", **fields: Any) -> None:
    """Start-up banner lines: plain text, or one NDJSON event (after the invocation lines still
    waiting: "Host stopped." follows the last Executed line)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, ConsoleHandler):
            handler.write_waiting()
    if output == "json":
        payload = {"time": _timestamp(logging.makeLogRecord({})), "level": "INFO", "category": "Host.Startup",
                   "event": event, "message": text, **fields}
        print(json.dumps(payload, default=str), flush=True)
    else:
        print(text, flush=True)
