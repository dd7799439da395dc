"""A store call that failed with what passes by itself (a 503: the server restarting, a connection
it ended, a lock or serialization time-out) is tried again, as the Azure SDKs' default retry
policy does for the host's clients of Azure Storage and Service Bus (Azure.Core `RetryOptions`,
`ServiceBusRetryOptions`: `MaxRetries` 3, exponential from `Delay` 0.8 s). Azure's services answer
those clients with a 503 or a dropped connection in the same cases, and the SDK hides them.

What a retried write did can have committed before its answer was lost: it runs again, as an SDK
request does (a delete then answers 404, a send can store its message twice). docs/postgres.md,
"Faults".
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from funchost.errors import StorageError

T = TypeVar("T")

RETRY_DELAYS = (0.8, 1.6, 3.2)  # seconds before each retry, before the jitter
JITTER = 0.2  # each delay is drawn within ±20 % of its value, as Azure.Core's exponential mode does
log = logging.getLogger("funchost.storage")


async def retried(fn: Callable[..., Awaitable[T]], *args: Any,
                  sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> T:
    """`await fn(*args)`, tried again after each 503 up to `len(RETRY_DELAYS)` times."""
    for delay in RETRY_DELAYS:
        try:
            return await fn(*args)
        except StorageError as exc:
            if exc.status != 503:
                raise
            log.debug("PostgreSQL call failed (%s); retrying in %.1fs", exc.code, delay)
        await sleep(delay * random.uniform(1 - JITTER, 1 + JITTER))
    return await fn(*args)
