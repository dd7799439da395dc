"""Monitoring counters and gauges of the pipeline (pipeline.md section 7).

Thread-safe, in-process, exported as a flat dict by `snapshot()`; a label set becomes part of
the key (`intake.rejected{reason=too_large}`). Apps forward the snapshot to their telemetry
(Application Insights custom metrics, a /metrics endpoint, funchost's dashboard).
"""

from __future__ import annotations

import threading
from typing import Any

# intake
INTAKE_ACCEPTED = "intake.accepted"
INTAKE_ALREADY_ACCEPTED = "intake.already_accepted"
INTAKE_CONFLICT = "intake.conflict"
INTAKE_REJECTED = "intake.rejected"  # label: reason
# outbox (gauges refreshed from the store, counters from the dispatcher)
OUTBOX_PENDING = "outbox.pending"
OUTBOX_DISPATCH_FAILED = "outbox.dispatch_failed"
OUTBOX_DISPATCH_UNKNOWN = "outbox.dispatch_unknown"
OUTBOX_OLDEST_AGE = "outbox.oldest_age_seconds"
OUTBOX_DISPATCHED_TOTAL = "outbox.dispatched_total"
OUTBOX_FAILED_TOTAL = "outbox.dispatch_failed_total"
OUTBOX_UNKNOWN_TOTAL = "outbox.dispatch_unknown_total"
# queues (label: queue)
QUEUE_LENGTH = "queue.length"
QUEUE_OLDEST_AGE = "queue.oldest_message_age_seconds"
POISON_COUNT = "queue.poison_count"
# workers and jobs
RETRY_LATER = "worker.retry_later"
MARK_COMPLETED_FAILURES = "worker.mark_completed_failures"
PROCESSING_PAST_LEASE = "jobs.processing_past_lease"
# event grid and blobs
EVENTGRID_DELIVERY_FAILURES = "eventgrid.delivery_failures"
EVENTGRID_DEAD_LETTERS = "eventgrid.dead_letters"
DISALLOWED_BLOB_REFERENCES = "blob.disallowed_references"
# poison handling and watchdog
POISON_QUARANTINED = "poison.quarantined"
ALERTS = "alerts"
WATCHDOG_REQUEUED = "watchdog.requeued_jobs"
WATCHDOG_STUCK_OUTBOX = "watchdog.stuck_outbox_rows"


def metric_key(name: str, labels: dict[str, Any]) -> str:
    if not labels:
        return name
    inner = ",".join(f"{k}={labels[k]}" for k in sorted(labels))
    return f"{name}{{{inner}}}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, float] = {}

    def incr(self, name: str, value: float = 1, **labels: Any) -> None:
        key = metric_key(name, labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0) + value

    def set_gauge(self, name: str, value: float, **labels: Any) -> None:
        with self._lock:
            self._values[metric_key(name, labels)] = value

    def get(self, name: str, **labels: Any) -> float:
        with self._lock:
            return self._values.get(metric_key(name, labels), 0)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._values)

    def reset(self) -> None:
        with self._lock:
            self._values.clear()


#: The process-wide registry used when a component is not given its own.
default_metrics = Metrics()


def refresh_store_gauges(metrics: Metrics, store: Any) -> None:
    """Set the outbox and lease gauges from a `JobStore`."""
    stats = store.outbox.stats()
    metrics.set_gauge(OUTBOX_PENDING, stats["Pending"])
    metrics.set_gauge(OUTBOX_DISPATCH_FAILED, stats["DispatchFailed"])
    metrics.set_gauge(OUTBOX_DISPATCH_UNKNOWN, stats["DispatchUnknown"])
    metrics.set_gauge(OUTBOX_OLDEST_AGE, stats["oldest_age_seconds"])
    metrics.set_gauge(PROCESSING_PAST_LEASE, store.jobs.count_expired_leases(store.now()))
