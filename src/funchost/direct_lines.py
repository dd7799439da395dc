"""The two lines of every invocation written straight to the console when nothing else would see them.

Every invocation attempt writes an Executing and an Executed line (`invocation/log.py`). As a
`logging` record each one is a LogRecord, the loggers' handler walk, the category filter, the
formatter, the handler's lock and every other root handler's look at the record: 7-9 µs of CPU
per line in a host's invocation (benchmarks/README.md, `lines-http`). When the only handlers a
``funchost.results`` record would reach are the host's console handler (`logs.configure`) and
handlers that declare they take no line of the given invocation (the dashboard's log capture,
which keeps the lines of running attempts, and these two lines are written outside the attempt),
`write` formats the line as the console's formatter would and writes it to the console handler's
stream under its lock: the same text or NDJSON event, in the same order as every other line.

Anything else on the way (pytest's caplog, a handler or filter the app added, another formatter,
the OpenTelemetry log export, a level on the console handler that drops the line) makes `write`
answer False, and the caller logs the record through `logging` as before. Checked on every line:
nothing is cached that a change to the logging configuration could leave stale, except the
category's level (the console's own filter caches it the same way).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from funchost.logs import (
    MILLIS,
    CategoryFilter,
    ConsoleHandler,
    JsonFormatter,
    TextFormatter,
    camel_key,
    timestamp_of,
)

RESULTS_LOGGER = "funchost.results"
_CAMEL: dict[str, str] = {}  # field name -> NDJSON key


@runtime_checkable
class LineObserver(Protocol):
    """A root handler that may leave an invocation's Executing/Executed lines to `write`."""

    def takes_invocation_line(self, invocation_id: str) -> bool:
        """Whether a record of this invocation's lines would be kept (then `logging` is used)."""


class _Route:
    """What the root handlers were when last looked at: the console handler and the observers,
    and the console filter's level per function (kept for one filter)."""

    __slots__ = ("category_filter", "console", "handlers", "known", "takes")

    def __init__(self, handlers: list[logging.Handler]) -> None:
        self.handlers = list(handlers)  # compared with the root's list: handlers compare by identity
        self.console: ConsoleHandler | None = None
        self.takes: tuple[Callable[[str], bool], ...] = ()  # the observers' takes_invocation_line
        self.category_filter: CategoryFilter | None = None
        self.known: dict[str, tuple[str, int]] = {}
        consoles = [h for h in handlers if type(h) is ConsoleHandler]
        others = [h for h in handlers if type(h) is not ConsoleHandler]
        if len(consoles) != 1 or not all(isinstance(h, LineObserver) for h in others):
            return
        self.console = consoles[0]
        self.takes = tuple(h.takes_invocation_line for h in others)  # type: ignore[attr-defined]  # checked above

    def category(self, category_filter: CategoryFilter, function: str) -> tuple[str, int]:
        """The function's category and the console filter's level for it."""
        if self.category_filter is not category_filter:
            self.category_filter, self.known = category_filter, {}
        category = f"Function.{function}"
        found = self.known[function] = (category, category_filter.threshold(category))
        return found


_route = _Route([])
_results = logging.getLogger(RESULTS_LOGGER)
_root = logging.getLogger()
_time = time.time
_running_loop = asyncio._get_running_loop
_second: tuple[int, str] = (-1, "")  # a second since the epoch and its timestamp's text up to the millis


def _new_second(whole: int) -> tuple[int, str]:
    global _second
    _second = (whole, timestamp_of(whole)[:-4])  # `timestamp_of`'s text, its millis left off
    return _second


def write(level: int, message: str, keys: tuple[str, ...], values: tuple[Any, ...]) -> bool:
    """Write one Executing/Executed line directly; False when the record must go through
    `logging` instead (the caller has checked the logger's level). `keys` and `values` are the
    record's structured fields (`fields_of`), the function's name and the invocation id second
    and third."""
    on_loop = _running_loop() is not None
    done = write_text(level, message, values[1], values[2], on_loop)
    return done if done is not None else write_json(level, message, keys, values, on_loop)


def write_text(level: int, message: str, function: str, invocation_id: str, on_loop: bool) -> bool | None:
    """`write` for the console's text lines, which show none of the record's other fields (the
    caller builds them only when needed): True if written (or dropped by the console's filter),
    False if the record must go through `logging`, None if the console writes NDJSON (then
    `write_json` with the fields). `on_loop`: whether the caller runs on an event loop (the
    invocation's lines always do: asking asyncio costs a system call on Python 3.11)."""
    global _route
    results = _results
    if results.handlers or results.filters or results.disabled or not results.propagate:
        return False
    parent: Any = results.parent
    if parent is not _root and (parent.handlers or not parent.propagate or (
            parent.parent is not _root and not _passes_on(parent.parent))):
        return False
    route = _route
    if route.handlers != _root.handlers:
        route = _route = _Route(_root.handlers)
    console = route.console
    if console is None or level < console.level:
        return False
    formatter = type(console.formatter)  # read each time: a handler's formatter can be replaced
    if formatter is not TextFormatter and formatter is not JsonFormatter:
        return False
    filters = console.filters
    if len(filters) != 1 or type(filters[0]) is not CategoryFilter:
        return False
    for takes in route.takes:
        if takes(invocation_id):
            return False
    category_filter = filters[0]
    found = route.known.get(function) if route.category_filter is category_filter else None
    if found is None:
        found = route.category(category_filter, function)
    if level < found[1]:
        return True  # the console's filter drops it, and no other handler would take it
    if formatter is not TextFormatter:
        return None
    now = _time()
    whole = int(now)
    second = _second
    if second[0] != whole:
        second = _new_second(whole)
    line = f"[{second[1]}{MILLIS[int((now - whole) * 1000)]}] {message}{console.terminator}"
    return _out(console, line, on_loop)


def write_json(level: int, message: str, keys: tuple[str, ...], values: tuple[Any, ...], on_loop: bool) -> bool:
    """The NDJSON event of a line `write_text` answered None for (its checks passed just now)."""
    console = _route.console
    if console is None:
        return False
    event: dict[str, Any] = {"time": timestamp_of(_time()), "level": logging.getLevelName(level),
                             "category": f"Function.{values[1]}", "message": message}
    for key, value in fields_of(keys, values).items():
        name = _CAMEL.get(key)
        if name is None:
            name = _CAMEL[key] = camel_key(key)
        event[name] = value
    return _out(console, json.dumps(event, default=str) + console.terminator, on_loop)


def _out(console: ConsoleHandler, line: str, on_loop: bool) -> bool:
    """On an event loop, to the waiting lines of a console that writes each line through (written
    with the others of the next LINES_DELAY: `ConsoleHandler`); else written now."""
    global _deferring
    if console.buffered and on_loop:  # `defers`, read as the attribute it returns: no property call per line
        console.queue_line(line)
        if not console.orders_user_output:  # else the app's own writes put the lines first
            _deferring = console
        return True
    return console.write_line(line)


_deferring: ConsoleHandler | None = None  # the console lines have waited in


def before_user_code() -> None:
    """Write the invocation lines still waiting, so that what a function prints or writes to the
    console comes after its Executing line (called on the thread that runs the function). Nothing
    to do for the process's console, whose waiting lines the app's writes put first (`user_output`)."""
    console = _deferring
    if console is not None:
        console.write_waiting()


def fields_of(keys: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    """The record's `extra` fields; trigger details as a plain dict."""
    fields = dict(zip(keys, values, strict=True))
    details = fields.get("details")
    if details is not None and type(details) is not dict:
        fields["details"] = dict(details)
    return fields


def _passes_on(logger: Any) -> bool:
    """No handler between `logger` (an ancestor of the results logger) and the root, and each passes
    records on (their filters do not apply to records propagated to them)."""
    while logger is not _root:
        if logger.handlers or not logger.propagate:
            return False
        logger = logger.parent
    return True
