"""Named fault-injection points.

Production code calls `await runtime.faults.hit("queue.delete.before", queue=..., id=...)` at
the places a crash or an error matters; normally nothing happens. `funchost.testing` arms a
point to raise an exception (or run a callback) once or every time, so tests can prove what
happens when a write or delete fails half-way.

Known points (keep this list in sync with the code):
    queue.<op>.before / queue.<op>.during   for put, get, update, delete, around every queue
                                            call of the host (storage/faults.py)
    queue.put.after                         once a message is sent (storage/queue_send.py: output
                                            binding, poison copies, harness, Event Grid, app code)
    queue.delete.after / queue.update.after the queue processor after completing / releasing
    function.before / function.after        around the user function (invocation/pieces.py)
    changefeed.checkpoint.before          (before a change-feed lease checkpoint)
    eventhubs.checkpoint.before           (before an Event Hubs partition checkpoint)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Action = Callable[..., Any] | Callable[..., Awaitable[Any]] | BaseException | type[BaseException]


@dataclass
class _Armed:
    action: Action
    times: int | None  # None = every time
    when: Callable[..., bool] | None
    hits: int = 0


@dataclass
class FaultInjector:
    _armed: dict[str, list[_Armed]] = field(default_factory=dict)
    history: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # Whether any point is armed (kept by `arm` and `disarm`): read on every message and
    # invocation, so an attribute, not a property call each time.
    enabled: bool = field(default=False, init=False)

    def arm(
        self,
        point: str,
        action: Action,
        *,
        times: int | None = 1,
        when: Callable[..., bool] | None = None,
    ) -> None:
        self._armed.setdefault(point, []).append(_Armed(action, times, when))
        self.enabled = True

    def disarm(self, point: str | None = None) -> None:
        if point is None:
            self._armed.clear()
        else:
            self._armed.pop(point, None)
        self.enabled = bool(self._armed)

    async def hit(self, point: str, **details: Any) -> None:
        armed = self._armed.get(point)
        if not armed:
            return
        self.history.append((point, details))
        for entry in list(armed):
            if entry.when is not None and not entry.when(**details):
                continue
            entry.hits += 1
            if entry.times is not None and entry.hits >= entry.times:
                armed.remove(entry)
            action = entry.action
            if isinstance(action, BaseException):
                raise action
            if isinstance(action, type) and issubclass(action, BaseException):
                raise action(f"fault injected at {point}")
            outcome = action(**details)
            if inspect.isawaitable(outcome):
                await outcome
            return


NO_FAULTS = FaultInjector()
