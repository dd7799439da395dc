"""The blob lease state machine (Lease Blob, REST version 2012-02-12 and later).

States: available, leased, expired, breaking, broken. Expiry and the end of a break period are
not events: the stored state is re-read against the current time on every operation, so a
lease held by a crashed process simply becomes available when its time is up.

Pure functions over `Lease`; the store calls them inside its write transaction. Argument rules
(durations, break periods, lease ids being GUIDs) are checked before, by `blob_rules`.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, replace

from funchost.errors import LeaseConflict, PreconditionFailed
from funchost.storage.blob_rules import canonical_lease_id
from funchost.storage.blobs import INFINITE_LEASE


@dataclass(frozen=True)
class Lease:
    """As stored: `state` is available | leased | breaking | broken (expired is derived)."""

    state: str = "available"
    lease_id: str | None = None
    duration: int | None = None  # seconds, INFINITE_LEASE, or None when not leased
    expires: float | None = None  # epoch seconds; None for infinite leases
    break_at: float | None = None  # epoch seconds, while breaking

    def effective(self, now: float) -> Lease:
        """The state as seen at `now` (leased -> expired, breaking -> broken)."""
        if self.state == "leased" and self.expires is not None and now >= self.expires:
            return replace(self, state="expired", expires=None)
        if self.state == "breaking" and self.break_at is not None and now >= self.break_at:
            return Lease("broken", self.lease_id)
        return self

    @property
    def status(self) -> str:
        return "locked" if self.state in ("leased", "breaking") else "unlocked"


AVAILABLE = Lease()


def _conflict(code: str, message: str) -> LeaseConflict:
    return LeaseConflict(message, code=code)


def _new_lease(duration: int, proposed: str | None, now: float) -> Lease:
    lease_id = canonical_lease_id(proposed) if proposed else str(uuid.uuid4())
    expires = None if duration == INFINITE_LEASE else now + duration
    return Lease("leased", lease_id, duration, expires)


def acquire(lease: Lease, duration: int, proposed: str | None, now: float) -> Lease:
    current = lease.effective(now)
    proposed_id = canonical_lease_id(proposed) if proposed else None
    if current.state == "leased":
        if proposed_id != current.lease_id:
            raise _conflict("LeaseAlreadyPresent", "there is already a lease present")
        return _new_lease(duration, proposed_id, now)
    if current.state == "breaking":
        if proposed_id == current.lease_id:
            raise _conflict("LeaseIsBreakingAndCannotBeAcquired", "the lease is breaking")
        raise _conflict("LeaseAlreadyPresent", "there is already a lease present")
    return _new_lease(duration, proposed_id, now)


def renew(lease: Lease, lease_id: str, now: float) -> Lease:
    lease_id = canonical_lease_id(lease_id)
    current = lease.effective(now)
    if current.state == "available" or current.lease_id != lease_id:
        raise _conflict("LeaseIdMismatchWithLeaseOperation", "the lease id does not match the blob's lease")
    if current.state in ("breaking", "broken"):
        raise _conflict("LeaseIsBrokenAndCannotBeRenewed", "the lease is broken and cannot be renewed")
    duration = current.duration if current.duration is not None else INFINITE_LEASE
    return _new_lease(duration, lease_id, now)


def release(lease: Lease, lease_id: str, now: float) -> Lease:
    lease_id = canonical_lease_id(lease_id)
    current = lease.effective(now)
    if current.state == "available" or current.lease_id != lease_id:
        raise _conflict("LeaseIdMismatchWithLeaseOperation", "the lease id does not match the blob's lease")
    return AVAILABLE


def break_(lease: Lease, break_period: int | None, now: float) -> tuple[Lease, int]:
    """Returns the new lease and the seconds until a new lease can be acquired."""
    current = lease.effective(now)
    if current.state == "available":
        raise _conflict("LeaseNotPresentWithLeaseOperation", "there is currently no lease on the blob")
    if current.state in ("expired", "broken"):
        return Lease("broken", current.lease_id), 0
    if current.state == "breaking":
        if break_period is None:
            return current, _remaining(current.break_at, now)
        break_at = min(current.break_at or now, now + break_period)
    elif break_period is None:  # leased, no period given: fixed leases run out, infinite ones stop now
        break_at = current.expires if current.expires is not None else now
    else:
        break_at = now + break_period if current.expires is None else min(current.expires, now + break_period)
    if break_at <= now:
        return Lease("broken", current.lease_id), 0
    return Lease("breaking", current.lease_id, break_at=break_at), _remaining(break_at, now)


def _remaining(until: float | None, now: float) -> int:
    return max(0, math.ceil((until or now) - now))


def check_write(lease: Lease, lease_id: str | None, now: float) -> Lease:
    """A write or delete of the blob; returns the lease the blob keeps afterwards.

    Expired and broken leases are cleared by a successful write, as the service does.
    """
    current = lease.effective(now)
    given = canonical_lease_id(lease_id) if lease_id else None
    if current.state in ("leased", "breaking"):
        if given is None:
            raise PreconditionFailed("there is currently a lease on the blob and no lease id was specified",
                                     code="LeaseIdMissing")
        if given != current.lease_id:
            raise PreconditionFailed("the lease id specified did not match the lease id for the blob",
                                     code="LeaseIdMismatchWithBlobOperation")
        return lease
    if given is not None:
        raise PreconditionFailed("there is currently no lease on the blob", code="LeaseNotPresentWithBlobOperation")
    return AVAILABLE
