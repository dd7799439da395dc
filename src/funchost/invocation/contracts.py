"""The contract between triggers and the executor.

A trigger builds an `InvocationRequest` (the trigger value and metadata as the library's
`Datum`s, exactly what the Python worker would receive from the host) and awaits
`FunctionInvoker.invoke`, which never raises: the outcome is an `InvocationResult`.
"""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from azure.functions.meta import Datum

from funchost.indexing.spec import FunctionSpec

_ids = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _ids.seed(os.urandom(32)))
_VERSION_4 = (0x4000 << 64) | (0x8000 << 48)
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))


def new_invocation_id() -> str:
    """A random (version 4) UUID, as `str(uuid.uuid4())`, from a generator seeded by the OS:
    one per invocation, without a system call or a UUID object each time."""
    h = f"{_ids.getrandbits(128) & _VERSION_MASK | _VERSION_4:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass
class InvocationRequest:
    function: FunctionSpec
    trigger_value: Datum
    # Trigger metadata as the worker receives it (azure-semantics 2.4): names as the host uses
    # them (``DequeueCount``, ``Id``, ...), values as Datums (json for numbers and datetimes).
    trigger_metadata: Mapping[str, Datum] = field(default_factory=dict)
    # Values for `{name}` expressions in other bindings' paths (case-insensitive names).
    binding_data: Mapping[str, Any] = field(default_factory=dict)
    # The log line's reason: "Executing 'Functions.X' (Reason='<reason>', Id=...)".
    reason: str = ""
    invocation_id: str = field(default_factory=new_invocation_id)
    trace_parent: str | None = None
    trace_state: str | None = None  # W3C tracestate going with trace_parent
    # Trigger-specific details logged with the invocation (MessageId, DequeueCount, ...).
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class InvocationResult:
    invocation_id: str
    function_name: str
    succeeded: bool
    error: BaseException | None = None
    duration_ms: float = 0.0
    # Encoded outputs by binding name ("$return" included). Non-HTTP outputs have already been
    # written by their binding providers when `succeeded` is True; HTTP outputs are left for
    # the HTTP trigger to turn into a response.
    outputs: dict[str, Datum] = field(default_factory=dict)
    attempts: int = 1
    # True when the host began stopping while the retry policy still had attempts left: the
    # outcome is "cancelled", not final, so callers must not treat the work as settled.
    abandoned: bool = False

    @property
    def error_message(self) -> str:
        if self.error is None:
            return ""
        return f"{type(self.error).__name__}: {self.error}"


class FunctionInvoker(Protocol):
    def invoke(self, request: InvocationRequest) -> Awaitable[InvocationResult]:
        """Run the function (with its retry policy and timeout); never raises. An awaitable, not
        necessarily a coroutine: `asyncio.ensure_future` makes it a task."""
