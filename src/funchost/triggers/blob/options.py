"""The blob trigger's options: host.json ``extensions.blobs`` and what the extension derives from it.

The stage-B queue listener (the internal queue ``azure-webjobs-blobtrigger-{hostId}``) gets a fresh
options object built from ``maxDegreeOfParallelism`` and ``poisonBlobThreshold``
(SharedBlobQueueListenerFactory / BlobsExtensionConfigProvider, blob-trigger spec 4.2): batchSize
``min(32, mdop / 2 + 1)``, newBatchThreshold ``mdop - batchSize``, maxDequeueCount
``poisonBlobThreshold``, a 1-minute polling maximum (no Development override) and a visibility of
0 on failure. Only ``extensions.queues.messageEncoding`` is taken from the queue settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from funchost.bindings.blob_options import (
    DEFAULT_POISON_BLOB_THRESHOLD,
    BlobsOptions,
    default_max_degree_of_parallelism,
)
from funchost.runtime.contracts import Runtime
from funchost.triggers.queue.options import DEFAULT_MAX_POLLING_INTERVAL, MAX_BATCH_SIZE, QueuesOptions

SOURCE_POLLING = "LogsAndContainerScan"
SOURCE_EVENT_GRID = "EventGrid"
SOURCES = {SOURCE_POLLING.lower(): SOURCE_POLLING, SOURCE_EVENT_GRID.lower(): SOURCE_EVENT_GRID}

# Discovery intervals (ScanContainersStrategy: 2 s; ScanBlobScanLogHybridPollingStrategy: 10 s).
DEV_STORAGE_SCAN_INTERVAL = 2.0
HYBRID_SCAN_INTERVAL = 10.0
HYBRID_SCAN_BUDGET = 10_000  # blobs listed per hybrid iteration, split between containers
RECEIPT_LEASE_SECONDS = 30


@dataclass(frozen=True)
class BlobTriggerOptions:
    max_degree_of_parallelism: int
    poison_blob_threshold: int = DEFAULT_POISON_BLOB_THRESHOLD
    message_encoding: str = "base64"

    @property
    def batch_size(self) -> int:
        return min(MAX_BATCH_SIZE, self.max_degree_of_parallelism // 2 + 1)

    @property
    def new_batch_threshold(self) -> int:
        return self.max_degree_of_parallelism - self.batch_size

    def queue_options(self) -> QueuesOptions:
        """What the shared stage-B queue listener runs with."""
        return QueuesOptions(
            batch_size=self.batch_size,
            new_batch_threshold=self.new_batch_threshold,
            max_polling_interval=DEFAULT_MAX_POLLING_INTERVAL,
            max_polling_interval_is_default=False,  # a fresh options object: no 2 s Development cap
            visibility_timeout=0.0,
            max_dequeue_count=self.poison_blob_threshold,
            message_encoding=self.message_encoding,
        )


def _extension(runtime: Runtime, name: str) -> object | None:
    try:
        found: object = runtime.options.extension(name)
        return found
    except KeyError:
        return None


def blob_trigger_options(runtime: Runtime) -> BlobTriggerOptions:
    blobs = _extension(runtime, "blobs")
    queues = _extension(runtime, "queues")
    encoding = queues.message_encoding if isinstance(queues, QueuesOptions) else "base64"
    if isinstance(blobs, BlobsOptions):
        return BlobTriggerOptions(blobs.max_degree_of_parallelism, blobs.poison_blob_threshold, encoding)
    return BlobTriggerOptions(default_max_degree_of_parallelism(), DEFAULT_POISON_BLOB_THRESHOLD, encoding)


def trigger_source(value: object) -> str:
    """The binding's ``source``: LogsAndContainerScan (default) or EventGrid, case-insensitively."""
    if value is None or str(value).strip() == "":
        return SOURCE_POLLING
    found = SOURCES.get(str(value).strip().lower())
    if found is None:
        raise ValueError(f"Invalid blob trigger source '{value}'. Valid values are "
                         f"'{SOURCE_POLLING}' and '{SOURCE_EVENT_GRID}'.")
    return found
