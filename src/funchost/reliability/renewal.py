"""Keeping a run's job lease while the run works.

A live run renews its lease at half the lease period (`LeaseRepository.renew`, which also
records the heartbeat that tells CurrentlyProcessing from LeaseNotExpired). A renewal that
fails for a transient reason (`StoreUnavailable`: the database was locked or unreachable for a
moment) is retried soon, not given up: one failed renewal must not leave the rest of a long run
unprotected, which would let a duplicate message take the job over while the run still works.
Renewal ends when the lease is lost (another run owns the job), on a non-transient store error,
or when the caller cancels it (the run finished).

    renewal = asyncio.ensure_future(keep_lease(renew, lease_seconds, sleep, fields=run_fields))
    try:
        ...  # the work
    finally:
        renewal.cancel()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from funchost.reliability.errors import JobStoreError, StoreUnavailable
from funchost.reliability.logfields import log_event, short_error

log = logging.getLogger("funchost.reliability.renewal")

Renew = Callable[[], Awaitable[datetime | None]]
Sleep = Callable[[float], Awaitable[None]]

MAX_RETRY_SECONDS = 5.0


class RenewalEnd(StrEnum):
    LEASE_LOST = "LeaseLost"
    STORE_ERROR = "StoreError"


def retry_delay(lease_seconds: float) -> float:
    """Wait after a transient renewal failure: a tenth of the lease, at most 5 s, so several
    attempts fit in the half lease that remains before the lease runs out."""
    return min(lease_seconds / 10, MAX_RETRY_SECONDS)


async def keep_lease(renew: Renew, lease_seconds: float, sleep: Sleep = asyncio.sleep, *,
                     fields: Mapping[str, Any] | None = None) -> RenewalEnd:
    """Call `renew()` every `lease_seconds / 2` until cancelled; see the module docstring.

    `renew` returns the new deadline, or None when the run no longer owns the job. `fields`
    (JobId, RunId, ...) go into the log lines."""
    context = dict(fields or {})
    delay = lease_seconds / 2
    failures = 0
    while True:
        await sleep(delay)
        try:
            until = await renew()
        except StoreUnavailable as exc:
            failures += 1
            delay = retry_delay(lease_seconds)
            log_event(log, logging.WARNING, "Job lease renewal failed; retrying", **context,
                      Failures=failures, RetryInSeconds=delay, Error=short_error(exc))
            continue
        except JobStoreError as exc:
            log_event(log, logging.ERROR, "Job lease renewal stopped by a store error", **context,
                      Error=short_error(exc))
            return RenewalEnd.STORE_ERROR
        if until is None:
            log_event(log, logging.WARNING, "Job lease lost while running", **context)
            return RenewalEnd.LEASE_LOST
        if failures:
            log_event(log, logging.INFO, "Job lease renewed after failures", **context, Failures=failures)
        failures = 0
        delay = lease_seconds / 2
