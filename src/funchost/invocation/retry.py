"""Function-level retry policies: the WebJobs execution loop (azure-semantics 5.2, 5.3).

The retry count lives only in this process's memory, as on Azure: a host that dies forgets it.
"""

from __future__ import annotations

import logging
import random

from funchost.indexing.spec import RetryOptions
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
