"""Synchronous futures and coroutines: the .NET tasks of a replay, without an event loop.

The Durable Task Framework replays an orchestration on a synchronous task scheduler: when a
history event completes a task, the code awaiting it continues at once, before the next history
event is read. `replay` needs exactly that to allocate sequence ids in the same order, so it
runs its coroutines here: `Future.set_result` runs the waiting coroutine's next step inline.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator, Sequence
from typing import Any

_PENDING, _DONE, _FAILED, _CANCELLED = "pending", "done", "failed", "cancelled"


class Cancelled(Exception):
    """Awaiting a cancelled future (a cancelled durable timer) raises this."""


class Future:
    def __init__(self) -> None:
        self._state = _PENDING
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    @property
    def done(self) -> bool:
        return self._state != _PENDING

    @property
    def failed(self) -> bool:
        return self._state in (_FAILED, _CANCELLED)

    def set_result(self, value: Any = None) -> None:
        self._finish(_DONE, value, None)

    def set_exception(self, error: BaseException) -> None:
        self._finish(_FAILED, None, error)

    def cancel(self) -> bool:
        if self.done:
            return False
        self._finish(_CANCELLED, None, Cancelled())
        return True

    def _finish(self, state: str, value: Any, error: BaseException | None) -> None:
        if self.done:
            return
        self._state, self._value, self._error = state, value, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        if self.done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def __await__(self) -> Generator[Future, None, Any]:
        if not self.done:
            yield self
        return self.result()


def start(coroutine: Coroutine[Future, None, Any]) -> Future:
    """Run `coroutine` until its first incomplete await; its outcome is the returned future."""
    outcome = Future()

    def step(value: Any, error: BaseException | None) -> None:
        try:
            waited = coroutine.throw(error) if error is not None else coroutine.send(value)
        except StopIteration as stop:
            outcome.set_result(stop.value)
            return
        except Exception as exc:  # noqa: BLE001 - the coroutine's failure is its future's
            outcome.set_exception(exc)
            return
        waited.add_done_callback(resume)

    def resume(future: Future) -> None:
        if future._error is not None:
            step(None, future._error)
        else:
            step(future._value, None)

    step(None, None)
    return outcome


def when_all(futures: Sequence[Future]) -> Future:
    """Completes when every future has (``Task.WhenAll``: fails with the first failure, but only
    once all are done)."""
    combined = Future()
    remaining = len(futures)
    if remaining == 0:
        combined.set_result([])
        return combined

    def on_done(_: Future) -> None:
        nonlocal remaining
        remaining -= 1
        if remaining == 0:
            failure = next((f._error for f in futures if f._error is not None), None)
            if failure is not None:
                combined.set_exception(failure)
            else:
                combined.set_result([f._value for f in futures])

    for future in futures:
        future.add_done_callback(on_done)
    return combined


def when_any(futures: Sequence[Future]) -> Future:
    """Completes with the first future to complete (``Task.WhenAny``: never fails)."""
    combined = Future()
    for future in futures:
        future.add_done_callback(lambda f: combined.set_result(f) if not combined.done else None)
    return combined


def completed(value: Any = None) -> Future:
    future = Future()
    future.set_result(value)
    return future
