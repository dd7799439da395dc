"""Invocation middleware: cross-cutting behaviour as a chain of small pieces around the call.

    async def piece(invocation: Invocation, call_next: CallNext) -> InvocationResult:
        ...                                   # before
        result = await call_next(invocation)  # the rest of the chain, down to the user function
        ...                                   # after
        return result

The executor composes its chain once (`compose`), outermost first: the retry policy (once per
trigger event), the Executing/Executed log lines (per attempt), any added pieces, binding
(arguments in, outputs out: the boundary where a failure becomes a failed result), activity
tracking, the ``function.before/after`` fault points and ``functionTimeout``, then the call.
Pieces above binding get a finished `InvocationResult` and must not raise; pieces below it let
failures propagate as exceptions, and the result they return is the one binding completes.
A feature that needs to see every invocation (tracing, metrics) adds a piece.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from funchost.invocation.context import RetryContext
from funchost.invocation.contracts import InvocationRequest, InvocationResult

if TYPE_CHECKING:
    from funchost.invocation.plan import InvocationPlan


class Invocation:
    """One attempt at running a function, as it passes through the chain."""

    __slots__ = ("kwargs", "plan", "request", "result", "retry_context", "value")

    def __init__(self, request: InvocationRequest, plan: InvocationPlan,
                 retry_context: RetryContext | None = None) -> None:
        self.request = request
        self.plan = plan
        self.retry_context = retry_context
        self.kwargs: dict[str, Any] = {}  # the user function's arguments (set by binding)
        self.value: Any = None  # what the user function returned
        self.result: InvocationResult | None = None  # the attempt's result (created by binding)


CallNext = Callable[[Invocation], Awaitable[InvocationResult]]
Middleware = Callable[[Invocation, CallNext], Awaitable[InvocationResult]]


class _Link:
    """`piece` bound to the rest of the chain; calling it starts the piece (no extra frame)."""

    __slots__ = ("call_next", "piece")

    def __init__(self, piece: Middleware, call_next: CallNext) -> None:
        self.piece = piece
        self.call_next = call_next

    def __call__(self, invocation: Invocation) -> Awaitable[InvocationResult]:
        return self.piece(invocation, self.call_next)


def compose(pieces: Sequence[Middleware], endpoint: CallNext) -> CallNext:
    """One callable running `pieces` (outermost first) around `endpoint`."""
    handler = endpoint
    for piece in reversed(pieces):
        handler = _Link(piece, handler)
    return handler
