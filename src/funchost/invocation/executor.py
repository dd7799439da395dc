"""The executor: runs one function invocation and returns a result; never raises.

Sync functions run in a thread pool sized like the worker's (PYTHON_THREADPOOL_THREAD_COUNT),
async functions on the event loop. The retry policy wraps attempts; each attempt converts
arguments with the library's converters, enforces functionTimeout, applies the return-value
rules and writes output bindings on success.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from azure.functions.meta import Datum

from funchost.errors import FunctionTimeoutError, InvocationError
from funchost.indexing.spec import FunctionSpec
from funchost.invocation import arguments, retry
from funchost.invocation.context import (
    InvocationContext,
    InvocationInfo,
    RetryContext,
    RpcException,
    TraceContext,
    current_invocation,
)
from funchost.invocation.contracts import InvocationRequest, InvocationResult, new_invocation_id
from funchost.runtime import activity, registry

if TYPE_CHECKING:
    from funchost.runtime.contracts import Runtime

log = logging.getLogger("funchost.host")
results_log = logging.getLogger("funchost.results")

DEFAULT_THREAD_COUNT = 1000  # what the Functions host injects for Python (azure-semantics 2.3)


def thread_count_from(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_THREAD_COUNT
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        log.warning("PYTHON_THREADPOOL_THREAD_COUNT=%r is not a positive integer; using %d",
                    value, DEFAULT_THREAD_COUNT)
        return DEFAULT_THREAD_COUNT
    return count


class Executor:
    def __init__(self, *, thread_count: int = DEFAULT_THREAD_COUNT, rng: random.Random | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=thread_count, thread_name_prefix="function")
        self._rng = rng or random.Random()
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Future[Any]] = set()
        self.runtime: Runtime | None = None  # set by the host once the Runtime exists

    # -- public ----------------------------------------------------------------------------------

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        options = request.function.retry
        if options is None:
            return await self._attempt(request, None)
        strategy = retry.delay_strategy(options, self._rng)
        attempt = 0
        retry_context = RetryContext(0, options.max_retry_count, None)
        current = request
        while True:
            result = await self._attempt(current, retry_context)
            result.attempts = attempt + 1
            if result.succeeded or self._stopping.is_set():
                return result
            if not retry.should_retry(options, attempt):
                log.info("All retries have been exhausted for function '%s'.", request.function.name)
                return result
            attempt += 1
            delay = strategy.next_delay(False)
            log.info(
                "Waiting for %s before retrying function execution. Next attempt: '%d'. Max retry count: '%d'",
                _format_delay(delay), attempt, options.max_retry_count,
            )
            if await self._clock.wait(self._stopping, delay):
                return result  # host stopping: give up with the last failure
            error = result.error
            retry_context = RetryContext(attempt, options.max_retry_count, _rpc_exception(error))
            current = replace(request, invocation_id=new_invocation_id())

    async def invoke_in_background(self, request: InvocationRequest) -> asyncio.Task[InvocationResult]:
        task = asyncio.get_running_loop().create_task(self.invoke(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self, timeout: float | None = None) -> None:
        """Stop retry waits and wait for background invocations."""
        self._stopping.set()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        self._pool.shutdown(wait=False, cancel_futures=False)

    # -- one attempt -----------------------------------------------------------------------------

    @property
    def _clock(self) -> Any:
        assert self.runtime is not None, "executor used before the host created its runtime"
        return self.runtime.clock

    async def _attempt(self, request: InvocationRequest, retry_context: RetryContext | None) -> InvocationResult:
        function = request.function
        runtime = self.runtime
        assert runtime is not None
        _log_executing(request)
        started = time.perf_counter()
        result = InvocationResult(request.invocation_id, function.name, succeeded=False)
        try:
            with activity.running_function(request.invocation_id):
                kwargs, outs = await self._arguments(request, retry_context)
                await runtime.faults.hit("function.before", function=function.name,
                                         invocation_id=request.invocation_id)
                value = await self._call(function, kwargs, request)
                await runtime.faults.hit("function.after", function=function.name,
                                         invocation_id=request.invocation_id)
            with activity.busy():
                result.outputs = self._collect_outputs(function, value, outs)
                await self._write_outputs(function, result.outputs, request)
            result.succeeded = True
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - the executor never raises into listeners
            result.error = exc
        result.duration_ms = (time.perf_counter() - started) * 1000
        _log_executed(request, result)
        return result

    async def _arguments(
        self, request: InvocationRequest, retry_context: RetryContext | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        function = request.function
        runtime = self.runtime
        assert runtime is not None
        metadata = dict(request.trigger_metadata)
        outs = arguments.new_outputs(function)
        kwargs: dict[str, Any] = {}
        for param in function.parameters:
            if param.is_context:
                kwargs[param.name] = InvocationContext(
                    request.invocation_id, function.name, function.directory,
                    TraceContext(request.trace_parent or "", "", {}), retry_context,
                )
                continue
            binding = param.binding
            assert binding is not None
            if binding.direction == "out":
                kwargs[param.name] = outs[param.name]
            elif binding.is_trigger:
                kwargs[param.name] = arguments.decode(param, request.trigger_value, metadata)
            else:
                support = registry.require_binding(binding.type)
                with activity.busy():
                    datum = await support.read(binding, request, runtime)
                # The worker passes trigger metadata to the trigger parameter only.
                kwargs[param.name] = arguments.decode(param, datum, None)
        return kwargs, outs

    async def _call(self, function: FunctionSpec, kwargs: dict[str, Any], request: InvocationRequest) -> Any:
        runtime = self.runtime
        assert runtime is not None
        timeout = runtime.options.function_timeout
        # Set for this task only: user log records in async functions (and, through the copied
        # context, in the pool thread of sync ones) carry the invocation id.
        token = current_invocation.set(InvocationInfo(request.invocation_id, function.name))
        try:
            if function.is_async:
                # Awaited in this task, as the worker does: no extra task per invocation.
                call: Any = function.func(**kwargs)
            else:
                call = asyncio.get_running_loop().run_in_executor(
                    self._pool, contextvars.copy_context().run, _run_sync, function, kwargs,
                    request.invocation_id)
            if timeout is None:
                return await call
            deadline = runtime.clock.timeout(timeout)
            try:
                async with deadline:
                    return await call
            except TimeoutError:
                if not deadline.expired():  # type: ignore[attr-defined]
                    raise  # the function's own TimeoutError
                # An async function is cancelled; a sync function's thread cannot be interrupted.
                raise FunctionTimeoutError(
                    f"Timeout value of {_format_delay(timeout)} was exceeded by function: "
                    f"Functions.{function.name}"
                ) from None
        finally:
            current_invocation.reset(token)

    def _collect_outputs(self, function: FunctionSpec, value: Any, outs: dict[str, Any]) -> dict[str, Datum]:
        outputs: dict[str, Datum] = {}
        if function.return_binding is None:
            if value is not None:
                raise InvocationError(
                    f"function {function.name} without a $return binding returned a non-None value"
                )
        else:
            datum = arguments.encode(function.return_binding, value, function.return_annotation)
            if datum is not None:
                outputs[function.return_binding.name] = datum
        for param in function.parameters:
            if param.name in outs:
                assert param.binding is not None
                datum = arguments.encode(param.binding, outs[param.name].get(), param.out_type)
                if datum is not None:
                    outputs[param.name] = datum
        return outputs

    async def _write_outputs(self, function: FunctionSpec, outputs: dict[str, Datum], request: InvocationRequest) -> None:
        runtime = self.runtime
        assert runtime is not None
        for name, datum in outputs.items():
            binding = function.binding(name)
            if binding is None or binding.type == "http":
                continue  # HTTP responses are the HTTP trigger's to send
            support = registry.require_binding(binding.type)
            await support.write(binding, datum, request, runtime)


def _run_sync(function: FunctionSpec, kwargs: dict[str, Any], invocation_id: str) -> Any:
    for value in kwargs.values():
        if isinstance(value, InvocationContext):
            value.thread_local_storage.invocation_id = invocation_id
    return function.func(**kwargs)


def _rpc_exception(error: BaseException | None) -> RpcException | None:
    if error is None:
        return None
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return RpcException(f"{type(error).__name__}: {error}", stack, type(error).__module__)


def _format_delay(seconds: float) -> str:
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{int(h):02d}:{int(m):02d}:{s:06.3f}".rstrip("0").rstrip(".")


def _log_executing(request: InvocationRequest) -> None:
    results_log.info(
        "Executing 'Functions.%s' (Reason='%s', Id=%s)",
        request.function.name, request.reason, request.invocation_id,
        extra={"event": "FunctionStarted", "function": request.function.name,
               "invocation_id": request.invocation_id, "reason": request.reason,
               "details": dict(request.details)},
    )


def _log_executed(request: InvocationRequest, result: InvocationResult) -> None:
    outcome = "Succeeded" if result.succeeded else "Failed"
    extra = {"event": "FunctionCompleted", "function": request.function.name,
             "invocation_id": request.invocation_id, "succeeded": result.succeeded,
             "duration_ms": round(result.duration_ms, 3)}
    message = "Executed 'Functions.%s' (%s, Id=%s, Duration=%dms)"
    args = (request.function.name, outcome, request.invocation_id, round(result.duration_ms))
    if result.succeeded:
        results_log.info(message, *args, extra=extra)
        return
    error = result.error
    extra["error"] = result.error_message
    results_log.error(message, *args, extra=extra)
    if error is not None:
        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        results_log.error("Result: Failure\nException: %s\nStack: %s", result.error_message, detail,
                          extra={"event": "FunctionFailed", "function": request.function.name,
                                 "invocation_id": request.invocation_id, "error": result.error_message})
