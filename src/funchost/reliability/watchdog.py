"""Watchdog: finds work that stopped moving and puts it back on the queue, via the outbox.

- Processing jobs whose lease expired: their runner crashed or hung, and the queue message that
  could have re-acquired them may already be gone. Each gets ONE new outbox row per expired
  lease (a copy of its last outbox message), unless an undispatched row already exists.
- Outbox rows stuck in Pending / DispatchUnknown for longer than `stuck_after_seconds` (no
  dispatcher running, or one that keeps losing its lease): made due now and dispatchers in this
  process are woken.

`scan()` returns the counts and logs them; it is meant for a timer trigger.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from funchost.reliability import metrics as m
from funchost.reliability.jobs import Job, JobState
from funchost.reliability.logfields import log_event
from funchost.reliability.outbox import OutboxMessage, OutboxState, insert_row
from funchost.reliability.store.db import to_dt

log = logging.getLogger("funchost.reliability.watchdog")

_OPEN = ", ".join(f"'{s.value}'" for s in (OutboxState.PENDING, OutboxState.DISPATCH_FAILED,
                                           OutboxState.DISPATCH_UNKNOWN))
_STUCK = f"'{OutboxState.PENDING.value}', '{OutboxState.DISPATCH_UNKNOWN.value}'"


@dataclass(frozen=True)
class WatchdogOptions:
    stuck_after_seconds: float = 300.0
    limit: int = 100


@dataclass(frozen=True)
class WatchdogReport:
    expired_leases: int = 0
    requeued_jobs: int = 0
    stuck_outbox: int = 0
    rescheduled_outbox: int = 0


class Watchdog:
    def __init__(self, store: Any, options: WatchdogOptions = WatchdogOptions(),
                 metrics: m.Metrics | None = None) -> None:
        self.store = store
        self.options = options
        self.metrics = metrics if metrics is not None else m.default_metrics

    def scan(self) -> WatchdogReport:
        now = self.store.now()
        expired = self.store.jobs.expired_leases(now, self.options.limit)
        requeued = sum(1 for job in expired if self._requeue(job))
        stuck, rescheduled = self._reschedule_stuck()
        if requeued or rescheduled:
            self.store.signal.fire()
        report = WatchdogReport(len(expired), requeued, stuck, rescheduled)
        self.metrics.set_gauge(m.PROCESSING_PAST_LEASE, len(expired))
        self.metrics.incr(m.WATCHDOG_REQUEUED, requeued)
        self.metrics.incr(m.WATCHDOG_STUCK_OUTBOX, stuck)
        level = logging.WARNING if (report.expired_leases or report.stuck_outbox) else logging.DEBUG
        log_event(log, level, "Watchdog scan finished", ExpiredLeases=report.expired_leases,
                  RequeuedJobs=report.requeued_jobs, StuckOutbox=report.stuck_outbox,
                  RescheduledOutbox=report.rescheduled_outbox)
        return report

    def _requeue(self, job: Job) -> bool:
        now = self.store.now()
        db = self.store.db
        with db.transaction() as tx:
            current = tx.one(f"SELECT state, lease_until FROM jobs WHERE job_id = ?{db.lock_row}", (job.job_id,))
            if current is None or current["state"] != JobState.PROCESSING.value:
                return False
            lease_until = to_dt(current["lease_until"])
            if lease_until is None or lease_until > now:
                return False
            last = tx.one(
                "SELECT queue_name, connection, payload, created_at FROM outbox WHERE job_id = ?"
                " ORDER BY created_at DESC LIMIT 1", (job.job_id,))
            if last is None:
                return False
            opened = tx.one(f"SELECT COUNT(*) AS n FROM outbox WHERE job_id = ? AND state IN ({_OPEN})",
                            (job.job_id,))
            if (opened and int(opened["n"]) > 0) or to_dt(last["created_at"]) >= lease_until:  # type: ignore[operator]
                return False  # already queued again for this expiry
            outbox_id = insert_row(tx, job.job_id, OutboxMessage(last["queue_name"], last["payload"],
                                                                 last["connection"]), now)
        log_event(log, logging.WARNING, "Processing lease expired; job re-enqueued through the outbox",
                  JobId=job.job_id, RunId=job.run_id, TenantId=job.tenant_id, OutboxId=outbox_id)
        return True

    def _reschedule_stuck(self) -> tuple[int, int]:
        now = self.store.now()
        threshold = now - timedelta(seconds=self.options.stuck_after_seconds)
        db = self.store.db
        with db.transaction() as tx:
            rows = tx.all(
                f"SELECT outbox_id, job_id, state FROM outbox WHERE state IN ({_STUCK}) AND updated_at <= ?"
                " ORDER BY updated_at LIMIT ?", (threshold, self.options.limit))
            rescheduled = 0
            for row in rows:
                rescheduled += tx.execute(
                    "UPDATE outbox SET next_attempt_at = ?, updated_at = ? WHERE outbox_id = ?"
                    " AND (lease_until IS NULL OR lease_until <= ?)",
                    (now, now, row["outbox_id"], now))
        for row in rows:
            log_event(log, logging.WARNING, "Outbox row stuck; scheduled for dispatch now",
                      OutboxId=row["outbox_id"], JobId=row["job_id"], State=row["state"])
        return len(rows), rescheduled
