"""Counts work in flight (storage calls on worker threads, invocations, deliveries).

The test harness's `wait_until_idle()` needs to know when nothing is happening except waits on
the clock: anything that awaits a thread or an outside call wraps itself in `busy()`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_in_flight = 0


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


def in_flight() -> int:
    return _in_flight
