"""Work in flight, so the test harness can tell when the host is idle.

Two kinds: framework work (storage calls on worker threads, output writes, deliveries), counted
by `busy()`; and user functions running, tracked by invocation id, because a test may block a
function on purpose and time must still be able to move around it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_in_flight = 0
_running: set[str] = set()


@contextmanager
def busy() -> Iterator[None]:
    global _in_flight
    with _lock:
        _in_flight += 1
    try:
        yield
    finally:
        with _lock:
            _in_flight -= 1


@contextmanager
def running_function(invocation_id: str) -> Iterator[None]:
    with _lock:
        _running.add(invocation_id)
    try:
        yield
    finally:
        with _lock:
            _running.discard(invocation_id)


def in_flight() -> int:
    return _in_flight


def running_functions() -> frozenset[str]:
    with _lock:
        return frozenset(_running)
