"""The executor: runs one function invocation and returns a result; never raises.

Built with the host's `Runtime`. Each call goes through the middleware chain composed once here
(`middleware`): retry policy, log lines, binding (arguments through the library's converters,
input bindings, the return-value rules, output bindings written on success; the function marked
running around the rest), fault points and ``functionTimeout``, then the call itself. Sync functions run in a thread pool
sized like the worker's (PYTHON_THREADPOOL_THREAD_COUNT), async functions on the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import time
from asyncio import current_task
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from azure.functions.meta import Datum

from funchost.direct_lines import before_user_code
from funchost.errors import InvocationError
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.arguments import is_blocking
from funchost.invocation.context import (
    InvocationContext,
    InvocationInfo,
    OutValue,
    RetryContext,
    TraceContext,
    current_invocation,
)
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.invocation.log import log_invocation
from funchost.invocation.middleware import AttemptObserver, CallNext, Invocation, Middleware, compose
from funchost.invocation.pieces import FaultPoints, FunctionTimeout
from funchost.invocation.plan import INPUT, OUT, TRIGGER, InvocationPlan
from funchost.invocation.retry import RetryPolicy
from funchost.runtime import activity, registry
from funchost.thread_pool import ThreadPool

if TYPE_CHECKING:
    from funchost.runtime.contracts import Runtime

log = logging.getLogger("funchost.host")

DEFAULT_THREAD_COUNT = 1000  # what the Functions host injects for Python (azure-semantics 2.3)
_NO_OUTS: dict[str, OutValue] = {}


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
    def __init__(self, runtime: Runtime, *, middleware: Sequence[Middleware | AttemptObserver | None] | None = None,
                 rng: random.Random | None = None) -> None:
        """`middleware`: pieces of features that see every attempt and its result (tracing,
        metrics), run inside the log lines and around binding, and observers binding tells of
        each attempt. By default, those of `registry.MIDDLEWARE_MODULES`."""
        self.runtime = runtime
        self._pool = ThreadPool(thread_count_from(runtime.settings.get("PYTHON_THREADPOOL_THREAD_COUNT")),
                                "function")
        self._plans: dict[str, tuple[InvocationPlan, CallNext]] = {}
        self._stopping = asyncio.Event()
        self._running: dict[asyncio.Task[Any], int] = {}  # tasks inside an attempt (`_bind`), for a forced stop
        self._retry = RetryPolicy(runtime.clock, self._stopping, rng)
        timeout = runtime.options.function_timeout
        if middleware is None:  # a factory returns None when its feature is off: no piece at all
            middleware = [factory(runtime) for factory in registry.middleware_factories()]
        pieces: list[Middleware] = []
        observers: list[AttemptObserver] = []
        for made in middleware:
            if isinstance(made, AttemptObserver):
                observers.append(made)
            elif made is not None:
                pieces.append(made)
        self._observers = tuple(observers)
        self._attempt: list[Middleware] = [
            log_invocation,
            *pieces,
            self._bind,  # marks the function running around the rest (`activity`)
            FaultPoints(runtime.faults),
            *([FunctionTimeout(runtime.clock, timeout)] if timeout is not None else []),
        ]

    # -- public ----------------------------------------------------------------------------------

    def invoke(self, request: InvocationRequest) -> Awaitable[InvocationResult]:
        plan, handle = self._plan_and_chain(request.function)
        return handle(Invocation(request, plan))

    def end_retries(self) -> None:
        """The host begins stopping: waits between retry attempts end now (the attempt in
        progress finishes; its failure is returned `abandoned`), so no retry holds the stop."""
        self._stopping.set()

    def cancel_running(self) -> int:
        """Cancel the tasks running an invocation (the stop timeout has passed); how many.
        A sync function's thread cannot be interrupted: its invocation ends, the thread runs on."""
        tasks = [task for task in self._running if not task.done()]
        for task in tasks:
            task.cancel()
        return len(tasks)

    async def stop(self) -> None:
        """End retry waits (the attempt in progress finishes) and let the threads go once their
        calls are done; callers drain their own work."""
        self._stopping.set()
        self._pool.shutdown()

    def plan(self, function: FunctionSpec) -> InvocationPlan:
        """The function's precomputed invocation plan (built on first use, then reused)."""
        return self._plan_and_chain(function)[0]

    def _plan_and_chain(self, function: FunctionSpec) -> tuple[InvocationPlan, CallNext]:
        cached = self._plans.get(function.name)
        if cached is None or cached[0].function is not function:
            # The chain is composed once per function: the retry policy only where there is one.
            pieces: list[Middleware] = [self._retry, *self._attempt] if function.retry is not None else self._attempt
            cached = self._plans[function.name] = (InvocationPlan(function), compose(pieces, self._call))
        return cached

    # -- binding: arguments in, outputs out --------------------------------------------------------

    async def _bind(self, invocation: Invocation, call_next: CallNext) -> InvocationResult:
        """The attempt's result: failures below this piece (conversion, the function, its outputs)
        become a failed result here; output bindings are written only on success."""
        plan, request = invocation.plan, invocation.request
        observers = self._observers
        for observer in observers:
            observer.attempt_started(invocation)
        started = time.perf_counter()
        result = invocation.result = InvocationResult(request.invocation_id, plan.function.name, succeeded=False)
        task = invocation.task = current_task()
        running = self._running
        if task is not None:
            running[task] = running.get(task, 0) + 1
        try:
            if plan.has_inputs:
                outs = await self._arguments_with_inputs(invocation)
            else:
                outs = self._arguments(invocation)
            invocation_id = request.invocation_id
            activity.function_started(invocation_id)  # running, for the test harness's idleness
            try:
                await call_next(invocation)
            finally:
                activity.function_finished(invocation_id)
            outputs = self._collect_outputs(plan, invocation.value, outs)
            result.outputs = outputs
            if outputs and plan.writes_outputs:
                with activity.busy():
                    await self._write_outputs(plan, outputs, request)
            result.succeeded = True
        except asyncio.CancelledError:
            for observer in observers:
                observer.attempt_finished(invocation, None)
            raise
        except BaseException as exc:  # noqa: BLE001 - the executor never raises into listeners
            result.error = exc
        finally:
            if task is not None:
                count = running.pop(task) - 1
                if count:
                    running[task] = count
        result.duration_ms = (time.perf_counter() - started) * 1000
        for observer in observers:
            observer.attempt_finished(invocation, result)
        return result

    def _arguments(self, invocation: Invocation) -> dict[str, OutValue]:
        """Arguments of a function without input bindings: no await needed."""
        plan, request = invocation.plan, invocation.request
        outs = {name: OutValue() for name in plan.out_names} if plan.out_names else _NO_OUTS
        kwargs = invocation.kwargs
        metadata = request.trigger_metadata
        for name, kind, decode in plan.steps:
            if kind is TRIGGER:
                kwargs[name] = decode(request.trigger_value, metadata)
            elif kind is OUT:
                kwargs[name] = outs[name]
            else:
                kwargs[name] = _context(request, invocation.retry_context)
        return outs

    async def _arguments_with_inputs(self, invocation: Invocation) -> dict[str, OutValue]:
        plan, request = invocation.plan, invocation.request
        outs = {name: OutValue() for name in plan.out_names}
        kwargs = invocation.kwargs
        metadata = request.trigger_metadata
        for name, kind, decode in plan.steps:
            if kind is TRIGGER:
                if is_blocking(decode):  # an SDK type may download at bind time: not on the loop
                    with activity.busy():
                        kwargs[name] = await asyncio.to_thread(decode, request.trigger_value, metadata)
                else:
                    kwargs[name] = decode(request.trigger_value, metadata)
            elif kind is OUT:
                kwargs[name] = outs[name]
            elif kind is INPUT:
                binding, support = plan.inputs[name]
                with activity.busy():
                    datum = await support.read(binding, request, self.runtime)
                    # The worker passes trigger metadata to the trigger parameter only.
                    kwargs[name] = await asyncio.to_thread(decode, datum, None) if is_blocking(decode) \
                        else decode(datum, None)
            else:
                kwargs[name] = _context(request, invocation.retry_context)
        return outs

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
        for name, datum in outputs.items():
            entry = plan.writable.get(name)
            if entry is not None:  # HTTP responses are the HTTP trigger's to send
                binding, support = entry
                await support.write(binding, datum, request, self.runtime)

    # -- the call --------------------------------------------------------------------------------

    def _call(self, invocation: Invocation) -> Awaitable[InvocationResult]:
        """The call itself. A sync function's call is the pool's future, with no coroutine of its
        own: the thread stores the value, and the future's result is the attempt's result."""
        plan = invocation.plan
        function = plan.function
        if function.is_async:
            return self._call_async(invocation)
        # Set in the call's own copy of the context only: user log records in the pool thread
        # carry the invocation id, the task's context stays as it is.
        context = contextvars.copy_context()
        context.run(current_invocation.set, InvocationInfo(invocation.request.invocation_id, function.name))
        if plan.context_name is None:
            return self._pool.run(context.run, _run_sync, invocation)
        return self._pool.run(context.run, _run_sync_with_context, invocation, plan.context_name)

    async def _call_async(self, invocation: Invocation) -> InvocationResult:
        request = invocation.request
        # Set for this task only: user log records of the function carry the invocation id.
        token = current_invocation.set(InvocationInfo(request.invocation_id, invocation.plan.function.name))
        try:
            # Awaited in this task, as the worker does: no extra task per invocation.
            before_user_code()
            invocation.value = await invocation.plan.function.func(**invocation.kwargs)
        finally:
            current_invocation.reset(token)
        return invocation.result  # type: ignore[return-value]  # created by _bind


def _context(request: InvocationRequest, retry_context: RetryContext | None) -> InvocationContext:
    function = request.function
    return InvocationContext(request.invocation_id, function.name, function.directory,
                             TraceContext(request.trace_parent or "", request.trace_state or "", {}), retry_context)


def _run_sync(invocation: Invocation) -> InvocationResult:
    """On a pool thread: the value goes to the invocation, which the loop reads once the call's
    future is done."""
    before_user_code()
    invocation.value = invocation.plan.function.func(**invocation.kwargs)
    return invocation.result  # type: ignore[return-value]  # created by _bind


def _run_sync_with_context(invocation: Invocation, context_name: str) -> InvocationResult:
    invocation.kwargs[context_name].thread_local_storage.invocation_id = invocation.request.invocation_id
    return _run_sync(invocation)
