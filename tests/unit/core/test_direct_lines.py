"""The Executing/Executed lines written straight to the console are the lines `logging` writes,
and any other handler, filter or formatter on the way sends them through `logging` again; on an
event loop the lines of a turn are written together, before any other line and before what a
function prints."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from funchost import direct_lines, logs
from funchost.invocation import log as invocation_log

ID = "0b1c5a4e-2f0d-4c1e-9a57-3f1f2d7e9b10"
EXECUTING = (invocation_log.STARTED, ("FunctionStarted", "hello", ID, "This function was programmatically called "
             "via the host APIs.", MappingProxyType({"MessageId": "m-1", "DequeueCount": 2,
                                                           "InsertedOn": "2026-01-01T00:00:00+00:00"})))
EXECUTED = (invocation_log.COMPLETED, ("FunctionCompleted", "hello", ID, True, 1.234))
LINES = [(f"Executing 'Functions.hello' (Reason='x', Id={ID})", EXECUTING),
         (f"Executed 'Functions.hello' (Succeeded, Id={ID}, Duration=1ms)", EXECUTED)]


class Observer(logging.Handler):
    """A root handler that takes the lines of `running` ids only (as the dashboard's capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.running: set[str] = set()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "invocation_id", None) in self.running:
            self.seen.append(record.getMessage())

    def takes_invocation_line(self, invocation_id: str) -> bool:
        return invocation_id in self.running


@contextmanager
def only_console() -> Iterator[tuple[logs.ConsoleHandler, io.StringIO]]:
    """The host's console handler alone on the root logger (pytest's own handlers set aside: they
    are added for the test's body, so this runs inside it)."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    root.handlers.clear()
    stream = io.StringIO()
    handler = logs.configure("text", stream=stream)
    try:
        yield handler, stream
    finally:
        handler.close()
        root.handlers[:] = saved
        root.setLevel(level)


def _write_both_ways(handler: logs.ConsoleHandler, stream: io.StringIO) -> tuple[list[str], list[str]]:
    """The lines written directly, then the same lines through `logging`."""
    for message, fields in LINES:
        assert direct_lines.write(logging.INFO, message, *fields)
    handler.flush()
    direct = stream.getvalue().splitlines()
    stream.seek(0)
    stream.truncate()
    forced = logging.NullHandler()  # a handler direct_lines does not know: `logging` writes the lines
    logging.getLogger().addHandler(forced)
    try:
        for message, fields in LINES:
            assert not direct_lines.write(logging.INFO, message, *fields)
            invocation_log._emit(logging.INFO, message, *fields)
    finally:
        logging.getLogger().removeHandler(forced)
    handler.flush()
    return direct, stream.getvalue().splitlines()


def _without_time(line: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "<time>", line)


def test_text_lines_are_the_formatters() -> None:
    with only_console() as console:
        direct, logged = _write_both_ways(*console)
    assert len(direct) == 2 and direct[0].endswith(LINES[0][0]) and direct[0].startswith("[20")
    assert [_without_time(line) for line in direct] == [_without_time(line) for line in logged]


def test_ndjson_events_are_the_formatters() -> None:
    with only_console() as (handler, stream):
        handler.setFormatter(logs.JsonFormatter())
        direct, logged = _write_both_ways(handler, stream)
    events = [json.loads(line) for line in direct]
    assert [list(event) for event in events] == [list(json.loads(line)) for line in logged]
    assert events[0]["invocationId"] == ID and events[0]["details"]["DequeueCount"] == 2
    assert events[1]["durationMs"] == 1.234 and events[1]["category"] == "Function.hello"
    for event, line in zip(events, logged, strict=True):
        expected = json.loads(line)
        assert {k: v for k, v in event.items() if k != "time"} == {k: v for k, v in expected.items() if k != "time"}


def test_a_line_an_observer_takes_goes_through_logging() -> None:
    with only_console() as (handler, stream):
        observer = Observer()
        logging.getLogger().addHandler(observer)
        assert direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])  # not running: written directly
        observer.running.add(ID)
        assert not direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])
        invocation_log._emit(logging.INFO, LINES[0][0], *LINES[0][1])
        assert observer.seen == [LINES[0][0]]
        handler.flush()
        assert len(stream.getvalue().splitlines()) == 2


@pytest.mark.parametrize("change", ["handler on the logger", "filter on the logger", "not propagated",
                                    "another formatter", "console level", "console filter", "two consoles"])
def test_any_other_route_goes_through_logging(change: str) -> None:
    with only_console() as (handler, _):
        _check_route(handler, change)


def _check_route(handler: logs.ConsoleHandler, change: str) -> None:
    assert direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])  # before the change: written directly
    results = logging.getLogger(direct_lines.RESULTS_LOGGER)
    undo: list[Any] = []
    if change == "handler on the logger":
        extra = logging.NullHandler()
        results.addHandler(extra)
        undo.append(lambda: results.removeHandler(extra))
    elif change == "filter on the logger":
        only = logging.Filter("nothing")
        results.addFilter(only)
        undo.append(lambda: results.removeFilter(only))
    elif change == "not propagated":
        results.propagate = False
        undo.append(lambda: setattr(results, "propagate", True))
    elif change == "another formatter":
        handler.setFormatter(logging.Formatter("%(message)s"))
    elif change == "console level":
        handler.setLevel(logging.WARNING)
    elif change == "console filter":
        handler.addFilter(logging.Filter())
    else:
        second = logs.ConsoleHandler(io.StringIO())
        logging.getLogger().addHandler(second)
        undo.append(lambda: logging.getLogger().removeHandler(second))
    try:
        assert not direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])
    finally:
        for step in undo:
            step()
    assert direct_lines.write(logging.INFO, LINES[1][0], *LINES[1][1]) == (change not in ("another formatter", "console level",
                                                                           "console filter"))


def test_a_category_level_drops_the_line() -> None:
    with only_console() as (handler, stream):
        handler.filters[0] = logs.CategoryFilter({"Function.hello": "Warning"})
        assert direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])  # handled: nothing to write
        handler.flush()
        assert stream.getvalue() == ""


def test_a_formatter_replaced_after_the_first_line_is_followed() -> None:
    with only_console() as (handler, stream):
        assert direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])
        handler.setFormatter(logs.JsonFormatter())
        assert direct_lines.write(logging.INFO, LINES[1][0], *LINES[1][1])
        handler.flush()
        text, event = stream.getvalue().splitlines()
        assert text.endswith(LINES[0][0]) and json.loads(event)["message"] == LINES[1][0]


class Recording(io.TextIOWrapper):
    """A stream that writes each line through (as stdout with PYTHONUNBUFFERED), keeping each write."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), write_through=True)
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)


@contextmanager
def write_through_console() -> Iterator[tuple[logs.ConsoleHandler, list[str]]]:
    """The host's console handler alone, on a stream that writes each line through (as stdout
    with PYTHONUNBUFFERED): the lines of an event loop's turn wait and go out together."""
    stream = Recording()
    writes = stream.writes
    with only_console() as (handler, _):
        handler.setStream(stream)  # a stream that writes each line through: the lines wait
        yield handler, writes


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_every_stream_but_a_terminal_defers_lines_for_as_long_as_its_kind_holds_them() -> None:
    through = [logs.ConsoleHandler(io.TextIOWrapper(io.BytesIO(), write_through=True)),
               logs.ConsoleHandler(io.TextIOWrapper(io.BytesIO(), line_buffering=True))]
    buffered = [logs.ConsoleHandler(io.TextIOWrapper(io.BytesIO())), logs.ConsoleHandler(io.StringIO())]
    assert all(h.defers and h.writes_through for h in through)  # LINES_DELAY
    assert all(h.defers and not h.writes_through for h in buffered)  # FLUSH_INTERVAL, as its buffer did
    assert not logs.ConsoleHandler(Terminal()).defers  # a person reads it: each line at once
    handler = buffered[0]
    handler.setStream(Terminal())
    assert not handler.defers


async def test_on_a_block_buffered_console_the_lines_wait_in_one_place_and_keep_their_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines queued on a loop reach a buffered stream in one write, after what came before them and
    before what follows: the flush interval, a host line, or a flush."""
    with only_console() as (handler, stream):
        handler.setStream(stream)
        assert handler.defers and not handler.writes_through
        logging.getLogger("funchost.host").warning("before")
        for message, fields in LINES:
            assert direct_lines.write(logging.INFO, message, *fields)
        assert [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()] == ["before"]
        logging.getLogger("funchost.host").warning("after")
        handler.flush()
        assert [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()] == [
            "before", LINES[0][0], LINES[1][0], "after"]


async def test_on_an_event_loop_waiting_lines_are_written_together_before_any_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "LINES_DELAY", 60.0)
    with write_through_console() as (handler, writes):
        for message, fields in LINES:
            assert direct_lines.write(logging.INFO, message, *fields)
        await asyncio.sleep(0.05)
        assert writes == []  # waiting (LINES_DELAY) for more lines to write with them
        handler.flush()
        assert len(writes) == 1 and writes[0].count("\n") == 2  # one write for both
    monkeypatch.setattr(logs, "LINES_DELAY", 0.0)
    with write_through_console() as (handler, writes):
        for message, fields in LINES:
            assert direct_lines.write(logging.INFO, message, *fields)
        time.sleep(0.05)  # the loop blocked, as by a function that blocks it: the console's thread writes
        assert len(writes) == 1 and writes[0].count("\n") == 2
        assert direct_lines.write(logging.INFO, LINES[0][0], *LINES[0][1])
        logging.getLogger("funchost.host").warning("a host line")  # through `logging`: after the waiting line
        assert [line.split("] ", 1)[1] for line in "".join(writes[1:]).splitlines()] == [LINES[0][0], "a host line"]
        assert direct_lines.write(logging.INFO, LINES[1][0], *LINES[1][1])
        direct_lines.before_user_code()  # what a function prints comes after the lines before it
        assert writes[-1].endswith(LINES[1][0] + "\n")
        assert direct_lines.write(logging.INFO, LINES[1][0], *LINES[1][1])
        handler.flush()
        assert writes[-1].endswith(LINES[1][0] + "\n")
        assert direct_lines.write(logging.INFO, LINES[1][0], *LINES[1][1])
        printed = len(writes)
        logs.print_line("Host stopped.")  # a banner line: after the lines still waiting
        assert writes[printed].endswith(LINES[1][0] + "\n")


FUNCTIONS = """
import azure.functions as func
app = func.FunctionApp()

@app.queue_trigger(arg_name="msg", queue_name="printing-a", connection="AzureWebJobsStorage")
async def printing_async(msg: str) -> None:
    print("printed by", msg)

@app.queue_trigger(arg_name="msg", queue_name="printing-s", connection="AzureWebJobsStorage")
def printing_sync(msg: str) -> None:
    print("printed by", msg)

@app.queue_trigger(arg_name="msg", queue_name="silent-s", connection="AzureWebJobsStorage")
def silent_sync(msg: str) -> None:
    return None

@app.queue_trigger(arg_name="msg", queue_name="silent-a", connection="AzureWebJobsStorage")
async def silent_async(msg: str) -> None:
    return None
"""


@pytest.mark.parametrize("function", ["printing_async", "printing_sync"])
async def test_what_a_function_prints_comes_between_its_two_lines(tmp_path: Path, function: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from azure.functions.meta import Datum

    from funchost.invocation.contracts import InvocationRequest
    from funchost.testing import HostHarness, write_app

    write_app(tmp_path / "app", FUNCTIONS)
    async with HostHarness(tmp_path / "app") as host:
        with write_through_console() as (handler, writes):
            monkeypatch.setattr(sys, "stdout", handler.stream)  # print() writes to the console's stream
            for n in range(3):
                request = InvocationRequest(function=host.runtime.functions[function],
                                            trigger_value=Datum(f"m{n}", "string"), reason="test")
                assert (await host.runtime.invoker.invoke(request)).succeeded
            handler.flush()
    lines = [line.split("] ", 1)[-1].split(" (")[0] for line in "".join(writes).splitlines()]
    assert lines == [item for n in range(3) for item in
                     (f"Executing 'Functions.{function}'", f"printed by m{n}", f"Executed 'Functions.{function}'")]


@pytest.mark.parametrize("ndjson", [False, True])
def test_the_middleware_writes_directly_what_logging_writes(ndjson: bool) -> None:
    """`log_invocation` builds the records' fields only when a line needs them (NDJSON, `logging`):
    the lines are the same each way."""
    from types import SimpleNamespace

    from funchost.invocation.middleware import Invocation

    request = SimpleNamespace(reason="x", invocation_id=ID, details=EXECUTING[1][4])
    plan = SimpleNamespace(function=SimpleNamespace(name="hello"), executing_prefix="Executing 'Functions.hello' "
                           "(Reason='", executed_prefix="Executed 'Functions.hello' (")
    invocation = Invocation(request, plan)  # type: ignore[arg-type]

    async def call_next(_: Invocation) -> Any:
        return SimpleNamespace(succeeded=True, duration_ms=1.234)

    def lines(handler: logs.ConsoleHandler, stream: io.StringIO) -> list[str]:
        asyncio.run(invocation_log.log_invocation(invocation, call_next))  # type: ignore[arg-type]
        handler.flush()
        written = stream.getvalue().splitlines()
        stream.seek(0)
        stream.truncate()
        return [_without_time(line) for line in written]

    with only_console() as (handler, stream):
        if ndjson:
            handler.setFormatter(logs.JsonFormatter())
        direct = lines(handler, stream)
        forced = logging.NullHandler()
        logging.getLogger().addHandler(forced)
        try:
            logged = lines(handler, stream)
        finally:
            logging.getLogger().removeHandler(forced)
    assert direct == logged and len(direct) == 2
    if ndjson:
        assert [json.loads(line)["message"] for line in direct] == [message for message, _ in LINES]
        assert json.loads(direct[0])["details"]["DequeueCount"] == 2 and json.loads(direct[1])["durationMs"] == 1.234
    else:
        assert [line.split("] ", 1)[1] for line in direct] == [message for message, _ in LINES]


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_on_the_process_console_what_a_function_prints_puts_the_waiting_lines_first(
        tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console `configure` makes on an unbuffered sys.stdout: the executor no longer writes
    the waiting lines before each function (a write system call per invocation); the app's own
    writes to sys.stdout and sys.stderr put them first."""
    from azure.functions.meta import Datum

    from funchost import user_output
    from funchost.invocation.contracts import InvocationRequest
    from funchost.testing import HostHarness, write_app

    stream = Recording()
    writes = stream.writes
    write_app(tmp_path / "app", FUNCTIONS)
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    monkeypatch.setattr(logs, "LINES_DELAY", 60.0)  # the lines wait for a write, not for the timer
    async with HostHarness(tmp_path / "app") as host:
        monkeypatch.setattr(sys, "stdout", stream)
        monkeypatch.setattr(sys, "stderr", sys.stdout)
        root.handlers.clear()
        handler = logs.configure("text")

        async def invoke(function: str, n: int) -> None:
            request = InvocationRequest(function=host.runtime.functions[function],
                                        trigger_value=Datum(f"m{n}", "string"), reason="test")
            assert (await host.runtime.invoker.invoke(request)).succeeded

        try:
            assert handler.defers and handler.orders_user_output
            assert isinstance(sys.stdout, user_output.OrderedStream)  # print() goes through it
            for n in range(3):
                await invoke(f"silent_{kind}", n)
            assert writes == []  # six lines waiting: the executor wrote none of them before a call
            for n in range(3):
                await invoke(f"printing_{kind}", n)
            handler.flush()
        finally:
            handler.close()
            root.handlers[:] = saved
            root.setLevel(level)
    lines = [line.split("] ", 1)[-1].split(" (")[0] for line in "".join(writes).splitlines()]
    assert lines == [item for n in range(3) for item in (f"Executing 'Functions.silent_{kind}'",
                                                         f"Executed 'Functions.silent_{kind}'")] + \
        [item for n in range(3) for item in
         (f"Executing 'Functions.printing_{kind}'", f"printed by m{n}", f"Executed 'Functions.printing_{kind}'")]


def test_an_ordered_stream_is_the_stream_it_wraps_for_everything_else() -> None:
    from funchost import user_output

    inner = io.StringIO()
    stream = user_output.OrderedStream(inner)
    assert stream.write("a") == 1
    stream.writelines(["b", "c"])
    assert inner.getvalue() == "abc" and stream.getvalue() == "abc"  # type: ignore[attr-defined]
    assert user_output.unwrapped(stream) is inner  # type: ignore[arg-type]
    assert user_output.unwrapped(inner) is inner
