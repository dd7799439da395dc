"""host.json ``extensions.blobs`` (Microsoft.Azure.WebJobs.Extensions.Storage.Blobs v5).

Both settings configure the blob trigger (`funchost.triggers.blob.options` derives its internal
queue's batch size, threshold and poison count from them); typos are reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from funchost.settings.sections import SectionReader

DEFAULT_POISON_BLOB_THRESHOLD = 5


def default_max_degree_of_parallelism() -> int:
    """8 x the processor count, the extension's default."""
    return 8 * (os.cpu_count() or 1)


@dataclass(frozen=True)
class BlobsOptions:
    max_degree_of_parallelism: int
    poison_blob_threshold: int = DEFAULT_POISON_BLOB_THRESHOLD


def parse(reader: SectionReader) -> BlobsOptions:
    return BlobsOptions(
        max_degree_of_parallelism=reader.integer("maxDegreeOfParallelism", default_max_degree_of_parallelism(),
                                                 minimum=1),
        poison_blob_threshold=reader.integer("poisonBlobThreshold", DEFAULT_POISON_BLOB_THRESHOLD, minimum=1),
    )
