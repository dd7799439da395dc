"""Work in flight, so the test harness can tell when the host is idle.

Two kinds: framework work (storage calls on worker threads, output writes, deliveries), counted
by `busy()`; and user functions running, tracked by invocation id, because a test may block a
function on purpose and time must still be able to move around it.

Both are on every invocation's path, so they are plain functions under one lock (the context
managers are thin wrappers for the less frequent callers).
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_in_flight = 0
_running: set[str] = set()


def enter_busy() -> None:
    global _in_flight
    with _lock:
        _in_flight += 1


def exit_busy() -> None:
    global _in_flight
    with _lock:
        _in_flight -= 1


class _Busy:
    __slots__ = ()

    def __enter__(self) -> None:
        enter_busy()

    def __exit__(self, *exc: object) -> None:
        exit_busy()


_BUSY = _Busy()


def busy() -> _Busy:
    """`with busy():` counts the enclosed framework work as in flight."""
    return _BUSY


def function_started(invocation_id: str) -> None:
    with _lock:
        _running.add(invocation_id)


def function_finished(invocation_id: str) -> None:
    with _lock:
        _running.discard(invocation_id)


def in_flight() -> int:
    return _in_flight


def running_functions() -> frozenset[str]:
    with _lock:
        return frozenset(_running)
