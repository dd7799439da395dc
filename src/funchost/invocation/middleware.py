"""Invocation middleware: cross-cutting behaviour as a chain of small pieces around the call.

    async def piece(invocation: Invocation, call_next: CallNext) -> InvocationResult:
        ...                                   # before
        result = await call_next(invocation)  # the rest of the chain, down to the user function
        ...                                   # after
        return result

The executor composes the chain once per function (`compose`), outermost first: the retry
policy (once per trigger event; functions without one skip it), the Executing/Executed log lines
(per attempt), any added pieces, binding (arguments in, outputs out: the boundary where a failure
becomes a failed result; it also marks the function running for what follows), the
``function.before/after`` fault points and ``functionTimeout`` (when set), then the call.
Pieces above binding get a finished `InvocationResult` and must not raise; pieces below it let
failures propagate as exceptions, and the result they return is the one binding completes.
A feature that needs to see every invocation (tracing, metrics) adds a piece. A feature that
only needs to know when each attempt begins and ends (the dashboard's history) is an
`AttemptObserver` instead: binding calls it, so it adds no coroutine to the chain. That matters:
each coroutine piece is one more frame held across the await of every call, and measured on a
serving host with sync functions one pass-through piece cost more CPU per request than all the
history's recording (benchmarks/README.md, "The dashboard's cost").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from funchost.invocation.context import RetryContext
from funchost.invocation.contracts import InvocationRequest, InvocationResult

if TYPE_CHECKING:
    from funchost.invocation.plan import InvocationPlan


class Invocation:
    """One attempt at running a function, as it passes through the chain."""

    __slots__ = ("kwargs", "plan", "request", "result", "retry_context", "task", "value")

    def __init__(self, request: InvocationRequest, plan: InvocationPlan,
                 retry_context: RetryContext | None = None) -> None:
        self.request = request
        self.plan = plan
        self.retry_context = retry_context
        self.kwargs: dict[str, Any] = {}  # the user function's arguments (set by binding)
        self.value: Any = None  # what the user function returned
        self.result: InvocationResult | None = None  # the attempt's result (created by binding)
        self.task: asyncio.Task[Any] | None = None  # the task running the attempt (set by binding)


@runtime_checkable
class AttemptObserver(Protocol):
    """Told when each attempt's binding begins and ends, on the event loop; must not raise."""

    def attempt_started(self, invocation: Invocation) -> None: ...

    def attempt_finished(self, invocation: Invocation, result: InvocationResult | None) -> None:
        """`result` is the attempt's result, or None when it was cancelled (the host stopping)."""


CallNext = Callable[[Invocation], Awaitable[InvocationResult]]
# A piece may also be a plain function returning `call_next(invocation)` when it has nothing to
# do for this call: no coroutine of its own on the per-call path.
Middleware = Callable[[Invocation, CallNext], Awaitable[InvocationResult]]


def _link(piece: Middleware, call_next: CallNext) -> CallNext:
    def handle(invocation: Invocation) -> Awaitable[InvocationResult]:
        return piece(invocation, call_next)

    return handle


def compose(pieces: Sequence[Middleware], endpoint: CallNext) -> CallNext:
    """One callable running `pieces` (outermost first) around `endpoint`."""
    handler = endpoint
    for piece in reversed(pieces):
        handler = _link(piece, handler)
    return handler
