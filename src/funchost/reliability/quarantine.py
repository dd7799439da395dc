"""Poison quarantine: "failed maxDequeueCount times, needs investigation", not a business error.

`Quarantine.handle(message)`:
1. hashes the raw body (sha256) and parses the jobId when the body is a JSON object with one;
2. stores the raw body through the injected blob writer in the quarantine container (which the
   deployment must restrict: only operators read it; the body may hold personal data);
3. records the quarantine entry and marks the job NeedsAttention (unless it is final, or a live
   run owns it: Processing with an unexpired lease), in one transaction;
4. raises the alert: `poison.quarantined` + `alerts` metrics and one ERROR log line with JobId,
   MessageHash, QueueMessageId, DequeueCount, FunctionVersion - never the raw body.

`Quarantine.redrive(quarantine_id, reader)` reads the stored body back and, in one transaction,
puts the job back to Enqueued and adds an outbox row to the original queue.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from funchost.reliability import metrics as m
from funchost.reliability.canonical import sha256_hex
from funchost.reliability.jobs import JobState
from funchost.reliability.logfields import log_event
from funchost.reliability.outbox import OutboxMessage, insert_row

log = logging.getLogger("funchost.reliability.quarantine")

# writer(container, blob_name, data, metadata); reader(container, blob_name) -> bytes
BlobWriter = Callable[[str, str, bytes, dict[str, str]], "None | Awaitable[None]"]
BlobReader = Callable[[str, str], "bytes | Awaitable[bytes]"]

_JOB_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
POISON_SUFFIX = "-poison"


@dataclass(frozen=True)
class PoisonMessage:
    queue_name: str
    body: bytes
    message_id: str | None = None
    dequeue_count: int | None = None

    @classmethod
    def from_queue_message(cls, msg: Any, queue_name: str) -> PoisonMessage:
        """From an `azure.functions.QueueMessage` (or anything with get_body/id/dequeue_count)."""
        return cls(queue_name=queue_name, body=msg.get_body(), message_id=getattr(msg, "id", None),
                   dequeue_count=getattr(msg, "dequeue_count", None))

    def __repr__(self) -> str:  # never show the body
        return (f"PoisonMessage(queue_name={self.queue_name!r}, message_id={self.message_id!r}, "
                f"dequeue_count={self.dequeue_count!r}, body=<{len(self.body)} bytes>)")


@dataclass(frozen=True)
class QuarantineRecord:
    quarantine_id: str
    queue_name: str
    message_id: str | None
    message_hash: str
    job_id: str | None
    dequeue_count: int | None
    blob_name: str
    job_marked: bool = False


def parse_job_id(body: bytes, field: str = "jobId") -> str | None:
    """The jobId of a JSON message body, if there is a plausible one."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    value = data.get(field) if isinstance(data, dict) else None
    return value if isinstance(value, str) and _JOB_ID.match(value) else None


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Quarantine:
    def __init__(self, store: Any, writer: BlobWriter, *, container: str = "quarantine",
                 function_version: str = "unknown", job_id_field: str = "jobId",
                 metrics: m.Metrics | None = None) -> None:
        self.store = store
        self.writer = writer
        self.container = container
        self.function_version = function_version
        self.job_id_field = job_id_field
        self.metrics = metrics if metrics is not None else m.default_metrics

    async def handle(self, message: PoisonMessage) -> QuarantineRecord:
        now = self.store.now()
        message_hash = sha256_hex(message.body)
        job_id = parse_job_id(message.body, self.job_id_field)
        quarantine_id = "qtn_" + uuid.uuid4().hex
        blob_name = f"{message.queue_name}/{now:%Y/%m/%d}/{quarantine_id}.msg"
        metadata = {"messagehash": message_hash, "queuename": message.queue_name,
                    "messageid": message.message_id or "", "dequeuecount": str(message.dequeue_count or ""),
                    "jobid": job_id or "", "functionversion": self.function_version}
        await _maybe_await(self.writer(self.container, blob_name, message.body, metadata))
        record = QuarantineRecord(quarantine_id, message.queue_name, message.message_id, message_hash,
                                  job_id, message.dequeue_count, blob_name)

        marked = await asyncio.to_thread(self._record, record, now)
        record = QuarantineRecord(**{**record.__dict__, "job_marked": marked})
        self.metrics.incr(m.POISON_QUARANTINED, queue=message.queue_name)
        self.metrics.incr(m.ALERTS, kind="poison")
        log_event(log, logging.ERROR, "Poison message detected", JobId=job_id, MessageHash=message_hash,
                  QueueMessageId=message.message_id, DequeueCount=message.dequeue_count,
                  FunctionVersion=self.function_version, QueueName=message.queue_name,
                  QuarantineBlob=f"{self.container}/{blob_name}", JobMarked=marked)
        return record

    def handle_sync(self, message: PoisonMessage) -> QuarantineRecord:
        """`handle` for sync functions (the writer must then be synchronous too)."""

        return asyncio.run(self.handle(message))

    def _record(self, record: QuarantineRecord, now: Any) -> bool:
        marked = 0
        with self.store.db.transaction() as tx:
            tx.execute(
                "INSERT INTO quarantine (quarantine_id, queue_name, message_id, message_hash, job_id,"
                " dequeue_count, function_version, blob_name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.quarantine_id, record.queue_name, record.message_id, record.message_hash,
                 record.job_id, record.dequeue_count, self.function_version, record.blob_name, now))
            if record.job_id:
                # A job a live run owns (Processing, lease not expired) is left alone: the poisoned
                # message was a duplicate that kept meeting the lease; the run finishes the job,
                # and if it dies the watchdog re-enqueues the job once the lease has expired.
                marked = tx.execute(
                    "UPDATE jobs SET state = ?, reason = ?, lease_until = NULL, updated_at = ?"
                    " WHERE job_id = ? AND (state IN (?, ?)"
                    " OR (state = ? AND (lease_until IS NULL OR lease_until <= ?)))",
                    (JobState.NEEDS_ATTENTION.value, f"poison message {record.message_hash[:16]}", now,
                     record.job_id, JobState.ENQUEUED.value, JobState.RETRYABLE_FAILED.value,
                     JobState.PROCESSING.value, self.store.now()))
        return marked == 1

    def pending(self) -> list[dict[str, Any]]:
        """Quarantined messages not yet re-driven (for the re-drive command)."""
        with self.store.db.read() as tx:
            rows = tx.all("SELECT quarantine_id, queue_name, message_id, message_hash, job_id, dequeue_count,"
                          " blob_name, created_at FROM quarantine WHERE redriven_at IS NULL ORDER BY created_at")
        return [dict(row) for row in rows]

    async def redrive(self, quarantine_id: str, reader: BlobReader, *, queue_name: str | None = None) -> str:
        """Send a quarantined message again (through the outbox); returns the outbox id."""

        with self.store.db.read() as tx:
            row = tx.one("SELECT * FROM quarantine WHERE quarantine_id = ?", (quarantine_id,))
        if row is None:
            raise KeyError(quarantine_id)
        body = await _maybe_await(reader(self.container, row["blob_name"]))
        target = queue_name or _origin_queue(row["queue_name"])
        return await asyncio.to_thread(self._redrive_tx, row, body.decode("utf-8"), target)

    def _redrive_tx(self, row: dict[str, Any], payload: str, queue_name: str) -> str:
        now = self.store.now()
        job_id = row["job_id"] or f"redrive:{row['quarantine_id']}"
        with self.store.db.transaction() as tx:
            if row["job_id"]:
                tx.execute("UPDATE jobs SET state = ?, reason = ?, updated_at = ? WHERE job_id = ? AND state = ?",
                           (JobState.ENQUEUED.value, "re-driven from quarantine", now, row["job_id"],
                            JobState.NEEDS_ATTENTION.value))
            outbox_id = insert_row(tx, job_id, OutboxMessage(queue_name, payload), now)
            tx.execute("UPDATE quarantine SET redriven_at = ? WHERE quarantine_id = ?", (now, row["quarantine_id"]))
        self.store.signal.fire()
        log_event(log, logging.WARNING, "Poison message re-driven", JobId=row["job_id"],
                  MessageHash=row["message_hash"], OutboxId=outbox_id, QueueName=queue_name)
        return outbox_id


def _origin_queue(poison_queue: str) -> str:
    return poison_queue[: -len(POISON_SUFFIX)] if poison_queue.endswith(POISON_SUFFIX) else poison_queue
