"""Work in flight, so the test harness can tell when the host is idle.

Two kinds: framework work (storage calls on worker threads, output writes, deliveries), counted
by `busy()`; and user functions running, tracked by invocation id, because a test may block a
function on purpose and time must still be able to move around it.

Both are on every invocation's path, so they are plain functions: the count under a lock (`+=`
on a global is several steps another thread may interleave), the set without one (`add`,
`discard` and the copy are each one step under the interpreter lock). `busy()` is the
context manager for the framework's callers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_lock = threading.Lock()
_in_flight = 0
_running: set[str] = set()


class _Busy:
    """The in-flight count, entered and left: `with busy():` on the framework's paths (the
    context manager's own methods, no helper call each time), `enter_busy` / `exit_busy` for
    callers that take plain callbacks."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _in_flight
        with _lock:
            _in_flight += 1

    def __exit__(self, *exc: object) -> None:
        global _in_flight
        with _lock:
            _in_flight -= 1


_BUSY = _Busy()
enter_busy: Callable[[], None] = _BUSY.__enter__
exit_busy: Callable[[], None] = _BUSY.__exit__


def busy() -> _Busy:
    """`with busy():` counts the enclosed framework work as in flight."""
    return _BUSY


# The set's own methods, no Python frame around them: each is one step under the interpreter
# lock, so no lock of ours.
function_started: Callable[[str], None] = _running.add
function_finished: Callable[[str], None] = _running.discard


def in_flight() -> int:
    return _in_flight


def running_functions() -> frozenset[str]:
    return frozenset(_running)  # copied in one step, as the set is changed
