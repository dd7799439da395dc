"""Errors of the reliability toolkit, rooted in `funchost.errors.FunchostError`.

`funchost.errors` is a dependency-free module, so the toolkit keeps working inside an app
deployed to Azure, where the funchost host is not running.
"""

from __future__ import annotations

from funchost.errors import BusinessFailure, FunchostError, RetryLater

__all__ = [
    "BusinessFailure",
    "JobStoreError",
    "LeaseLost",
    "ReliabilityError",
    "RetryLater",
    "StoreUnavailable",
    "UnsafeLogValue",
]


class ReliabilityError(FunchostError):
    """Root of the errors raised by `funchost.reliability`."""


class JobStoreError(ReliabilityError):
    """The jobs database refused an operation (driver errors are translated to this)."""


class StoreUnavailable(JobStoreError):
    """A transient database failure (locked, disconnected, timeout): retrying may succeed."""


class UnsafeLogValue(ReliabilityError, ValueError):
    """A log field carried a SAS query, a token, a key or a raw message body."""


class LeaseLost(ReliabilityError):
    """The run no longer owns its job (the lease expired and another run took over): it must
    not start or record effects for the job any more."""
