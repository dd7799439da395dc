"""`func.Context` and friends, as the Python worker fills them (azure-semantics 2.5)."""

from __future__ import annotations

import contextvars
import threading
from typing import Any, NamedTuple

import azure.functions as func
from azure.functions import _abc

# The invocation whose code is running: used to tag user log records.
current_invocation: contextvars.ContextVar[InvocationInfo | None] = contextvars.ContextVar(
    "funchost_current_invocation", default=None
)


class InvocationInfo(NamedTuple):
    """Immutable; a named tuple rather than a frozen dataclass, which sets each field through
    `object.__setattr__` (one of these is made per invocation)."""

    invocation_id: str
    function_name: str


class TraceContext(_abc.TraceContext):
    def __init__(self, trace_parent: str = "", trace_state: str = "", attributes: dict[str, str] | None = None):
        self._trace_parent = trace_parent
        self._trace_state = trace_state
        self._attributes = attributes or {}

    @property
    def trace_parent(self) -> str:
        return self._trace_parent

    @property
    def trace_state(self) -> str:
        return self._trace_state

    @property
    def attributes(self) -> dict[str, str]:
        return self._attributes


class RpcException(_abc.RpcException):
    def __init__(self, message: str, stack_trace: str = "", source: str = "") -> None:
        self._message = message
        self._stack_trace = stack_trace
        self._source = source

    @property
    def message(self) -> str:
        return self._message

    @property
    def stack_trace(self) -> str:
        return self._stack_trace

    @property
    def source(self) -> str:
        return self._source


class RetryContext(_abc.RetryContext):
    """The worker's dataclass exposes `rpc_exception`; the library's ABC names it `exception`.

    The worker reads these fields from the invocation request's protobuf, where an unset message
    field reads as an empty message: without a previous failure `rpc_exception` is an
    RpcException with empty fields, never None.
    """

    def __init__(self, retry_count: int, max_retry_count: int, rpc_exception: RpcException | None) -> None:
        self._retry_count = retry_count
        self._max_retry_count = max_retry_count
        self._rpc_exception = rpc_exception if rpc_exception is not None else RpcException("")

    @property
    def retry_count(self) -> int:
        return self._retry_count

    @property
    def max_retry_count(self) -> int:
        return self._max_retry_count

    @property
    def rpc_exception(self) -> RpcException:
        return self._rpc_exception

    @property
    def exception(self) -> RpcException:
        return self._rpc_exception


class InvocationContext(func.Context):
    def __init__(
        self,
        invocation_id: str,
        function_name: str,
        function_directory: str,
        trace_context: TraceContext,
        retry_context: RetryContext | None,
    ) -> None:
        self._invocation_id = invocation_id
        self._function_name = function_name
        self._function_directory = function_directory
        self._trace_context = trace_context
        # The worker always builds one: without a retry policy the host sends no RetryContext and
        # the protobuf defaults give retry_count 0, max_retry_count 0 (dispatcher `_get_context`).
        self._retry_context = retry_context if retry_context is not None else RetryContext(0, 0, None)
        self._thread_local_storage = threading.local()

    @property
    def invocation_id(self) -> str:
        return self._invocation_id

    @property
    def thread_local_storage(self) -> Any:
        return self._thread_local_storage

    @property
    def function_name(self) -> str:
        return self._function_name

    @property
    def function_directory(self) -> str:
        return self._function_directory

    @property
    def trace_context(self) -> TraceContext:
        return self._trace_context

    @property
    def retry_context(self) -> RetryContext:
        return self._retry_context


class OutValue(func.Out):  # type: ignore[type-arg]
    """The `func.Out` handed to output parameters; None means 'do not send this output'."""

    def __init__(self) -> None:
        self._value: Any = None

    def set(self, val: Any) -> None:
        self._value = val

    def get(self) -> Any:
        return self._value
