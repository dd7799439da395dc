"""The function thread pool, the buffered console handler and lazily built trigger metadata."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import threading
import time

import pytest
from azure.functions.meta import Datum

from funchost.invocation.metadata import LazyMetadata
from funchost.logs import FLUSH_INTERVAL, ConsoleHandler, TextFormatter
from funchost.thread_pool import ThreadPool


async def test_pool_runs_on_named_threads_and_bounds_concurrency() -> None:
    pool = ThreadPool(max_workers=2)
    running, peak, lock = 0, 0, threading.Lock()
    release = threading.Event()

    def work(n: int) -> tuple[int, str]:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        release.wait(5)
        with lock:
            running -= 1
        return n, threading.current_thread().name

    futures = [pool.run(work, n) for n in range(5)]
    await asyncio.sleep(0.05)
    assert running == 2  # two workers at most; the rest wait in the queue
    release.set()
    results = await asyncio.wait_for(asyncio.gather(*futures), 5)
    assert [n for n, _ in results] == [0, 1, 2, 3, 4]
    assert all(name.startswith("function_") for _, name in results)
    assert peak == 2 and pool.thread_count == 2
    pool.shutdown()


async def test_quick_calls_queued_together_are_run_by_the_thread_that_is_awake() -> None:
    pool = ThreadPool(max_workers=8)
    names = await asyncio.gather(*[pool.run(lambda: threading.current_thread().name) for _ in range(16)])
    assert len(names) == 16 and pool.thread_count == 1  # one thread woken, not one per call
    for _ in range(20):  # bursts: still one thread, as long as it keeps up
        await asyncio.gather(*[pool.run(lambda: None) for _ in range(16)])
    assert pool.thread_count == 1
    pool.shutdown()


async def test_a_loop_that_holds_the_interpreter_lock_does_not_make_the_pool_wake_more_threads() -> None:
    # The awake thread has taken no call only because the loop kept the interpreter lock: that is
    # not a thread stuck in a long function, so the second look must not wake one per waiting call.
    pool = ThreadPool(max_workers=8)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)  # the loop keeps the lock from the second call to the look
    try:
        calls = [pool.run(lambda: threading.current_thread().name) for _ in range(16)]
        pool._look_again(pool._taken)  # the loop's second look, with no call taken since it was set
        assert pool.thread_count == 1
    finally:
        sys.setswitchinterval(interval)
    names = await asyncio.wait_for(asyncio.gather(*calls), 5)
    assert len(names) == 16 and pool.thread_count == 1
    pool.shutdown()


async def test_a_call_behind_a_long_function_starts_on_another_thread() -> None:
    pool = ThreadPool(max_workers=4)
    release, started = threading.Event(), threading.Event()

    def long() -> str:
        started.set()
        release.wait(5)
        return threading.current_thread().name

    first = pool.run(long)
    await asyncio.to_thread(started.wait, 5)
    behind = [pool.run(lambda: threading.current_thread().name) for _ in range(3)]
    try:  # done while the long function still runs: the loop woke another thread for them
        names = await asyncio.wait_for(asyncio.gather(*behind), 2)
        assert not first.done()
    finally:
        release.set()
    assert await asyncio.wait_for(first, 5) not in names and 2 <= pool.thread_count <= 4
    pool.shutdown()


async def test_a_finished_call_is_settled_while_its_thread_runs_a_long_one() -> None:
    pool = ThreadPool(max_workers=1)  # one thread: the long call runs right after the quick one
    gate, release = threading.Event(), threading.Event()
    quick = pool.run(gate.wait, 5)
    long = pool.run(release.wait, 5)  # queued while the thread is busy: it runs next, on that thread
    gate.set()
    try:
        assert await asyncio.wait_for(quick, 2) is True  # settled when it returned, while its thread runs the long one
        assert not long.done()
    finally:
        release.set()
    assert await asyncio.wait_for(long, 5) is True
    pool.shutdown()


async def test_pool_propagates_exceptions_and_skips_cancelled_calls() -> None:
    pool = ThreadPool(max_workers=1)
    gate = threading.Event()
    ran: list[str] = []

    def blocker() -> None:
        gate.wait(5)

    def boom() -> None:
        raise ValueError("from the thread")

    first = pool.run(blocker)
    skipped = pool.run(lambda: ran.append("should not run"))
    skipped.cancel()  # cancelled while queued (e.g. a timeout): never executed
    failing = pool.run(boom)
    gate.set()
    await asyncio.wait_for(first, 5)
    with pytest.raises(ValueError, match="from the thread"):
        await asyncio.wait_for(failing, 5)
    assert ran == []
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.run(lambda: None)


async def test_shutdown_with_wait_returns_once_the_queued_calls_are_done() -> None:
    pool = ThreadPool(max_workers=1)  # as a SQLite file's statements run: its close waits for them
    done: list[int] = []

    def slow(n: int) -> None:
        time.sleep(0.05)
        done.append(n)

    calls = [pool.run(slow, n) for n in range(3)]
    await asyncio.sleep(0.01)  # the first call is running
    await asyncio.to_thread(pool.shutdown, True)
    assert done == [0, 1, 2] and not any(thread.is_alive() for thread in pool._threads)
    await asyncio.gather(*calls)


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("funchost.host", logging.INFO, __file__, 1, message, None, None)


def test_console_is_line_by_line_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

        flushes = 0

        def flush(self) -> None:
            Terminal.flushes += 1

    stream = Terminal()
    handler = ConsoleHandler(stream)
    handler.setFormatter(TextFormatter())
    handler.handle(_record("one"))
    assert not handler.buffered and Terminal.flushes >= 1
    assert stream.getvalue().endswith("one\n")


def test_console_on_a_pipe_flushes_soon_and_on_demand() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
    handler = ConsoleHandler(stream)  # type: ignore[arg-type]
    handler.setFormatter(TextFormatter())
    assert handler.buffered
    handler.handle(_record("buffered line"))
    deadline = time.monotonic() + 5
    while b"buffered line" not in raw.getvalue() and time.monotonic() < deadline:
        time.sleep(FLUSH_INTERVAL / 4)
    assert b"buffered line" in raw.getvalue()  # written by the flusher thread, not lost
    handler.handle(_record("second"))
    handler.flush()  # logging.shutdown() does this at exit
    assert raw.getvalue().count(b"\n") == 2


def test_lazy_metadata_builds_each_datum_once_on_first_read() -> None:
    built: list[object] = []

    def encode(value: object) -> Datum:
        built.append(value)
        return Datum(str(value), "string")

    metadata = LazyMetadata({"DequeueCount": 3, "Id": "abc"}, encode)
    assert built == [] and len(metadata) == 2 and "Id" in metadata
    assert metadata["DequeueCount"] == Datum("3", "string")
    assert metadata["DequeueCount"] is metadata["DequeueCount"]
    assert built == [3]
    assert dict(metadata) == {"DequeueCount": Datum("3", "string"), "Id": Datum("abc", "string")}


def test_a_line_with_a_lone_surrogate_is_written_escaped_not_dropped() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    handler = ConsoleHandler(stream)  # type: ignore[arg-type]
    handler.setFormatter(TextFormatter())
    failures: list[logging.LogRecord] = []
    handler.handleError = failures.append  # type: ignore[method-assign]
    handler.handle(_record("name=a\ud800b"))
    handler.handle(_record("next line"))
    handler.flush()
    assert failures == []
    assert b"name=a\\ud800b\n" in raw.getvalue() and b"next line\n" in raw.getvalue()
