"""An invocation piece registered through `registry.MIDDLEWARE_MODULES` in test_middleware.py."""

from __future__ import annotations

from typing import Any

from funchost.invocation.contracts import InvocationResult
from funchost.invocation.middleware import CallNext, Invocation, Middleware

SEEN: list[tuple[str, bool, Any]] = []


def middleware(runtime: Any) -> Middleware:
    async def probe(invocation: Invocation, call_next: CallNext) -> InvocationResult:
        result = await call_next(invocation)
        SEEN.append((invocation.plan.function.name, result.succeeded, runtime.host_id))
        return result

    return probe
