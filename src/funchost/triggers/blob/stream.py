"""The trigger blob as a `func.InputStream` without holding it whole in memory.

The library's `InputStream` wraps the blob's bytes in a `BytesIO`, so a blob larger than memory
cannot be handed over that way. The host downloads the blob in 4 MiB ranges, pinned to the ETag it
is processing, into a spooled temporary file (in memory up to 8 MiB, on disk past it) and gives the
function the library's own `InputStream` class reading from that file: same type, same properties
(``name``, ``uri``, ``length``, ``blob_properties``, ``metadata``), same non-seekable reads.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import IO, Any

from azure.functions.blob import InputStream

from funchost.runtime import activity
from funchost.storage.blobs import BlobProperties, BlobService

CHUNK = 4 * 1024 * 1024
IN_MEMORY_LIMIT = 8 * 1024 * 1024


class SpooledInputStream(InputStream):
    """`azure.functions.blob.InputStream` over a file instead of a `BytesIO`."""

    def __init__(self, *, file: IO[bytes], name: str | None, uri: str | None, length: int | None,
                 blob_properties: dict[str, Any] | None, metadata: dict[str, Any] | None) -> None:
        super().__init__(data=b"", name=name, uri=uri, length=length, blob_properties=blob_properties,
                         metadata=metadata)
        self._io = file  # type: ignore[assignment]

    def close(self) -> None:
        self._io.close()
        super().close()


async def spool_blob(service: BlobService, props: BlobProperties, *, if_match: str | None) -> IO[bytes]:
    """Download the blob range by range into a spooled temporary file, rewound for reading.

    Raises BlobNotFound when it disappeared, PreconditionFailed when `if_match` no longer holds."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_LIMIT)
    try:
        offset = 0
        while offset < props.size:
            data, _ = await service.download_blob(props.container, props.name, offset=offset, length=CHUNK,
                                                  if_match=if_match)
            if not data:
                break
            if spool.tell() + len(data) > IN_MEMORY_LIMIT:
                with activity.busy():  # framework work in flight, for the test harness's idleness
                    await asyncio.to_thread(spool.write, data)  # may roll over to disk: off the loop
            else:
                spool.write(data)
            offset += len(data)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool
