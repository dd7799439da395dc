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
import threading
import time
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from azure.functions.meta import Datum

from funchost.errors import FunctionTimeoutError, InvocationError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation import arguments, retry
from funchost.invocation.context import (
    InvocationContext,
    InvocationInfo,
    OutValue,
    RetryContext,
    RpcException,
    TraceContext,
    current_invocation,
)
from funchost.invocation.contracts import InvocationRequest, InvocationResult, new_invocation_id
from funchost.invocation.threads import FunctionThreadPool
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
        self._pool = FunctionThreadPool(thread_count, "function")
        self._plans: dict[str, InvocationPlan] = {}
        self._rng = rng or random.Random()
        self._stopping = asyncio.Event()
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
            if result.succeeded:
                return result
            if self._stopping.is_set():
                result.abandoned = retry.should_retry(options, attempt)
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
                result.abandoned = True  # host stopping: give up with the last failure
                return result
            error = result.error
            retry_context = RetryContext(attempt, options.max_retry_count, _rpc_exception(error))
            current = replace(request, invocation_id=new_invocation_id())

    async def stop(self) -> None:
        """End retry waits (the attempt in progress finishes); callers drain their own work."""
        self._stopping.set()
        self._pool.shutdown()

    # -- one attempt -----------------------------------------------------------------------------

    @property
    def _clock(self) -> Any:
        assert self.runtime is not None, "executor used before the host created its runtime"
        return self.runtime.clock

    def plan(self, function: FunctionSpec) -> InvocationPlan:
        """The function's precomputed invocation plan (built on first use, then reused)."""
        cached = self._plans.get(function.name)
        if cached is None or cached.function is not function:
            cached = self._plans[function.name] = InvocationPlan(function)
        return cached

    async def _attempt(self, request: InvocationRequest, retry_context: RetryContext | None) -> InvocationResult:
        function = request.function
        runtime = self.runtime
        assert runtime is not None
        plan = self.plan(function)
        invocation_id = request.invocation_id
        if results_log.isEnabledFor(logging.INFO):
            _log_executing(plan, request)
        started = time.perf_counter()
        result = InvocationResult(invocation_id, function.name, succeeded=False)
        faults = runtime.faults
        try:
            activity.function_started(invocation_id)
            try:
                if plan.has_inputs:
                    kwargs, outs = await self._arguments_with_inputs(plan, request, retry_context)
                else:
                    kwargs, outs = self._arguments(plan, request, retry_context)
                if faults.enabled:
                    await faults.hit("function.before", function=function.name, invocation_id=invocation_id)
                value = await self._call(plan, kwargs, request)
                if faults.enabled:
                    await faults.hit("function.after", function=function.name, invocation_id=invocation_id)
            finally:
                activity.function_finished(invocation_id)
            outputs = self._collect_outputs(plan, value, outs)
            result.outputs = outputs
            if outputs and plan.writes_outputs:
                with activity.busy():
                    await self._write_outputs(plan, outputs, request)
            result.succeeded = True
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - the executor never raises into listeners
            result.error = exc
        result.duration_ms = (time.perf_counter() - started) * 1000
        _log_executed(plan, request, result)
        return result

    def _arguments(
        self, plan: InvocationPlan, request: InvocationRequest, retry_context: RetryContext | None
    ) -> tuple[dict[str, Any], dict[str, OutValue]]:
        """Arguments of a function without input bindings: no await needed."""
        outs = {name: OutValue() for name in plan.out_names} if plan.out_names else _NO_OUTS
        kwargs: dict[str, Any] = {}
        metadata = request.trigger_metadata
        for name, kind, decode in plan.steps:
            if kind is _TRIGGER:
                kwargs[name] = decode(request.trigger_value, metadata)
            elif kind is _OUT:
                kwargs[name] = outs[name]
            else:
                kwargs[name] = _context(request, retry_context)
        return kwargs, outs

    async def _arguments_with_inputs(
        self, plan: InvocationPlan, request: InvocationRequest, retry_context: RetryContext | None
    ) -> tuple[dict[str, Any], dict[str, OutValue]]:
        runtime = self.runtime
        assert runtime is not None
        outs = {name: OutValue() for name in plan.out_names}
        kwargs: dict[str, Any] = {}
        metadata = request.trigger_metadata
        for name, kind, decode in plan.steps:
            if kind is _TRIGGER:
                kwargs[name] = decode(request.trigger_value, metadata)
            elif kind is _OUT:
                kwargs[name] = outs[name]
            elif kind is _INPUT:
                binding = plan.inputs[name]
                support = registry.require_binding(binding.type)
                with activity.busy():
                    datum = await support.read(binding, request, runtime)
                # The worker passes trigger metadata to the trigger parameter only.
                kwargs[name] = decode(datum, None)
            else:
                kwargs[name] = _context(request, retry_context)
        return kwargs, outs

    async def _call(self, plan: InvocationPlan, kwargs: dict[str, Any], request: InvocationRequest) -> Any:
        runtime = self.runtime
        assert runtime is not None
        function = plan.function
        timeout = runtime.options.function_timeout
        # Set for this task only: user log records in async functions (and, through the copied
        # context, in the pool thread of sync ones) carry the invocation id.
        token = current_invocation.set(InvocationInfo(request.invocation_id, function.name))
        try:
            if function.is_async:
                # Awaited in this task, as the worker does: no extra task per invocation.
                call: Any = function.func(**kwargs)
            elif plan.context_name is None:
                call = self._pool.run(contextvars.copy_context().run, _run_sync, function.func, kwargs)
            else:
                call = self._pool.run(contextvars.copy_context().run, _run_sync_with_context, function.func,
                                      kwargs, kwargs[plan.context_name], request.invocation_id)
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

    def _collect_outputs(self, plan: InvocationPlan, value: Any, outs: dict[str, OutValue]) -> dict[str, Datum]:
        outputs: dict[str, Datum] = {}
        if plan.return_encoder is None:
            if value is not None:
                raise InvocationError(
                    f"function {plan.function.name} without a $return binding returned a non-None value"
                )
        else:
            datum = plan.return_encoder(value)
            if datum is not None:
                outputs[plan.return_name] = datum
        for name, encoder in plan.out_encoders:
            datum = encoder(outs[name].get())
            if datum is not None:
                outputs[name] = datum
        return outputs

    async def _write_outputs(self, plan: InvocationPlan, outputs: dict[str, Datum], request: InvocationRequest) -> None:
        runtime = self.runtime
        assert runtime is not None
        for name, datum in outputs.items():
            binding = plan.writable.get(name)
            if binding is None:
                continue  # HTTP responses are the HTTP trigger's to send
            support = registry.require_binding(binding.type)
            await support.write(binding, datum, request, runtime)


_TRIGGER, _OUT, _INPUT, _CONTEXT = "trigger", "out", "input", "context"
_NO_OUTS: dict[str, OutValue] = {}


def _no_decoder(datum: Datum | None, metadata: Any) -> Any:
    return None


class InvocationPlan:
    """What the executor needs per call, worked out once per function instead of per invocation:
    each parameter's kind and decoder (the library's converter or the generic one), the output
    encoders, and which outputs a binding provider writes."""

    def __init__(self, function: FunctionSpec) -> None:
        self.function = function
        steps: list[tuple[str, str, arguments.Decoder]] = []
        self.inputs: dict[str, BindingSpec] = {}
        self.out_names: tuple[str, ...] = ()
        self.out_encoders: tuple[tuple[str, arguments.Encoder], ...] = ()
        self.context_name: str | None = None
        out_names: list[str] = []
        out_encoders: list[tuple[str, arguments.Encoder]] = []
        for param in function.parameters:
            binding = param.binding
            if param.is_context or binding is None:
                steps.append((param.name, _CONTEXT, _no_decoder))
                self.context_name = param.name
            elif binding.direction == "out":
                steps.append((param.name, _OUT, _no_decoder))
                out_names.append(param.name)
                out_encoders.append((param.name, arguments.encoder_for(binding, param.out_type)))
            elif binding.is_trigger:
                steps.append((param.name, _TRIGGER, arguments.decoder_for(param)))
            else:
                steps.append((param.name, _INPUT, arguments.decoder_for(param)))
                self.inputs[param.name] = binding
        self.steps = tuple(steps)
        self.out_names = tuple(out_names)
        self.out_encoders = tuple(out_encoders)
        self.has_inputs = bool(self.inputs)
        returned = function.return_binding
        self.return_name = returned.name if returned is not None else ""
        self.return_encoder = (arguments.encoder_for(returned, function.return_annotation)
                               if returned is not None else None)
        if returned is None and arguments.has_implicit_output(function.trigger):
            # Durable triggers: the worker sends the return value back through the trigger.
            self.return_name = "$return"
            self.return_encoder = arguments.encoder_for(function.trigger, function.return_annotation)
        # Outputs a binding provider writes (by name, first binding of that name as before).
        writable: dict[str, BindingSpec] = {}
        for name in [*out_names, *([returned.name] if returned is not None else [])]:
            binding = function.binding(name)
            if binding is not None and binding.type != "http":
                writable[name] = binding
        self.writable = writable
        self.writes_outputs = bool(writable)
        # Log lines: the fixed parts, formatted once.
        self.executing_prefix = f"Executing 'Functions.{function.name}' (Reason='"
        self.executed_prefix = f"Executed 'Functions.{function.name}' ("


def _context(request: InvocationRequest, retry_context: RetryContext | None) -> InvocationContext:
    function = request.function
    return InvocationContext(request.invocation_id, function.name, function.directory,
                             TraceContext(request.trace_parent or "", "", {}), retry_context)


def _run_sync(func: Any, kwargs: dict[str, Any]) -> Any:
    return func(**kwargs)


def _run_sync_with_context(func: Any, kwargs: dict[str, Any], context: InvocationContext, invocation_id: str) -> Any:
    context.thread_local_storage.invocation_id = invocation_id
    return func(**kwargs)


def _rpc_exception(error: BaseException | None) -> RpcException | None:
    if error is None:
        return None
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return RpcException(f"{type(error).__name__}: {error}", stack, type(error).__module__)


def _format_delay(seconds: float) -> str:
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{int(h):02d}:{int(m):02d}:{s:06.3f}".rstrip("0").rstrip(".")


def _log_executing(plan: InvocationPlan, request: InvocationRequest) -> None:
    details = request.details
    _emit(logging.INFO, f"{plan.executing_prefix}{request.reason}', Id={request.invocation_id})", {
        "event": "FunctionStarted", "function": plan.function.name, "invocation_id": request.invocation_id,
        "reason": request.reason, "details": details if type(details) is dict else dict(details)})


def _log_executed(plan: InvocationPlan, request: InvocationRequest, result: InvocationResult) -> None:
    name = plan.function.name
    duration = result.duration_ms
    if result.succeeded:
        if results_log.isEnabledFor(logging.INFO):
            _emit(logging.INFO,
                  f"{plan.executed_prefix}Succeeded, Id={request.invocation_id}, Duration={round(duration)}ms)",
                  {"event": "FunctionCompleted", "function": name, "invocation_id": request.invocation_id,
                   "succeeded": True, "duration_ms": round(duration, 3)})
        return
    error = result.error
    message = result.error_message
    results_log.error("Executed 'Functions.%s' (%s, Id=%s, Duration=%dms)",
                      name, "Failed", request.invocation_id, round(duration),
                      extra={"event": "FunctionCompleted", "function": name,
                             "invocation_id": request.invocation_id, "succeeded": False,
                             "duration_ms": round(duration, 3), "error": message})
    if error is not None:
        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        results_log.error("Result: Failure\nException: %s\nStack: %s", message, detail,
                          extra={"event": "FunctionFailed", "function": name,
                                 "invocation_id": request.invocation_id, "error": message})


_RECORD_BASE: dict[str, Any] = {}


def _emit(level: int, message: str, fields: dict[str, Any]) -> None:
    """`results_log.log(level, message, extra=fields)` for the two lines of every invocation,
    without LogRecord's per-call work that console lines never show (source file, thread and
    process names): the message is already formatted and the caller has checked the level."""
    if not _RECORD_BASE:
        template = logging.LogRecord(results_log.name, logging.INFO, "(unknown file)", 0, "", (), None)
        _RECORD_BASE.update(vars(template))
    now = time.time()
    record = logging.LogRecord.__new__(logging.LogRecord)
    values = record.__dict__
    values.update(_RECORD_BASE)
    values.update(fields)
    values["msg"] = message
    values["levelno"] = level
    values["levelname"] = logging.getLevelName(level)
    values["created"] = now
    values["msecs"] = int((now - int(now)) * 1000) + 0.0
    values["relativeCreated"] = (now - logging._startTime) * 1000  # type: ignore[attr-defined]
    values["thread"] = threading.get_ident()
    results_log.handle(record)
