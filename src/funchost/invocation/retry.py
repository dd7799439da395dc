"""Function-level retry policies: the WebJobs execution loop (azure-semantics 5.2, 5.3).

`RetryPolicy` is the outermost piece of the executor's chain: it runs once per trigger event
and repeats the attempts below it. The retry count lives only in this process's memory, as on
Azure: a host that dies forgets it. Renewals and leases held by the trigger stay alive during
retries because the trigger is still awaiting the invocation.
"""

from __future__ import annotations

import asyncio
import logging
import random
import traceback
from dataclasses import replace

from funchost.clock import Clock
from funchost.indexing.spec import RetryOptions
from funchost.invocation.context import RetryContext, RpcException
from funchost.invocation.contracts import InvocationResult, new_invocation_id
from funchost.invocation.middleware import CallNext, Invocation
from funchost.invocation.pieces import format_delay
from funchost.listeners.delays import DelayStrategy, FixedDelay, RandomizedExponentialBackoff

log = logging.getLogger("funchost.host")

# Triggers whose WebJobs binding carries [SupportsRetry]; others get the host's warning.
RETRY_SUPPORTED_TRIGGERS = {"timerTrigger", "cosmosDBTrigger", "eventHubTrigger", "kafkaTrigger"}


def delay_strategy(options: RetryOptions, rng: random.Random | None = None) -> DelayStrategy:
    """A fresh strategy per trigger event (it is kept in the retry context on Azure)."""
    if options.strategy == "fixed_delay":
        return FixedDelay(options.delay_interval or 0.0)
    assert options.minimum_interval is not None and options.maximum_interval is not None
    return RandomizedExponentialBackoff(options.minimum_interval, options.maximum_interval, rng=rng)


def should_retry(options: RetryOptions, attempt: int) -> bool:
    """`attempt` = retries done so far; -1 retries forever."""
    return options.max_retry_count == -1 or attempt < options.max_retry_count


def unsupported_trigger_warning(function_name: str, trigger_type: str) -> str | None:
    if trigger_type in RETRY_SUPPORTED_TRIGGERS:
        return None
    return (
        f"Soon retries will not be supported for function '{function_name}'. "
        f"For more information, please visit http://aka.ms/func-retry-policies."
    )


class RetryPolicy:
    """Runs a trigger event's attempts under the function's retry policy, if it has one.

    A host that begins stopping ends the wait between attempts: the last failure is returned
    marked `abandoned` (cancelled, not final), so the trigger does not settle the work.
    """

    def __init__(self, clock: Clock, stopping: asyncio.Event, rng: random.Random | None = None) -> None:
        self.clock = clock
        self.stopping = stopping
        self.rng = rng or random.Random()

    async def __call__(self, invocation: Invocation, call_next: CallNext) -> InvocationResult:
        options = invocation.plan.function.retry
        if options is None:
            return await call_next(invocation)
        request = invocation.request
        strategy = delay_strategy(options, self.rng)
        attempt = 0
        current = Invocation(request, invocation.plan, RetryContext(0, options.max_retry_count, None))
        while True:
            result = await call_next(current)
            result.attempts = attempt + 1
            if result.succeeded:
                return result
            if self.stopping.is_set():
                result.abandoned = should_retry(options, attempt)
                return result
            if not should_retry(options, attempt):
                log.info("All retries have been exhausted for function '%s'.", request.function.name)
                return result
            attempt += 1
            delay = strategy.next_delay(False)
            log.info(
                "Waiting for %s before retrying function execution. Next attempt: '%d'. Max retry count: '%d'",
                format_delay(delay), attempt, options.max_retry_count,
            )
            if await self.clock.wait(self.stopping, delay):
                result.abandoned = True  # host stopping: give up with the last failure
                return result
            retry_context = RetryContext(attempt, options.max_retry_count, _rpc_exception(result.error))
            current = Invocation(replace(request, invocation_id=new_invocation_id()), invocation.plan, retry_context)


def _rpc_exception(error: BaseException | None) -> RpcException | None:
    if error is None:
        return None
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return RpcException(f"{type(error).__name__}: {error}", stack, type(error).__module__)
