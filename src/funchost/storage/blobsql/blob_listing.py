"""Reads of the embedded Blob API: full properties and List Blobs with a delimiter.

Listing walks names in order from the marker; with a delimiter, a name that has the delimiter
after the prefix becomes one `BlobPrefix` and the walk jumps past every name under it, so a
folder of a million blobs costs one step. The marker is the next name to return (opaque to
clients); prefixes count toward `maxresults` as blobs do.
"""

from __future__ import annotations

from collections.abc import Callable

from funchost.clock import Clock
from funchost.errors import StorageError
from funchost.storage.blob_api import ListedPage
from funchost.storage.blobs import BlobProperties
from funchost.storage.blobsql.blob_extras import full_properties
from funchost.storage.blobsql.blob_rows import lease_of
from funchost.storage.blobsql.blob_sql import check_etag, container_versioning, read_range, resolve
from funchost.storage.sqlconn import Conn

BATCH = 256


def reader(container: str, name: str, version_id: str | None, clock: Clock) -> Callable[[Conn],
                                                                                         BlobProperties]:
    now = clock.now().timestamp()

    def run(conn: Conn) -> BlobProperties:
        row, lease = resolve(conn, container, name, version_id, now)
        return full_properties(row, lease)

    return run


def downloader(container: str, name: str, offset: int, length: int | None, version_id: str | None,
               if_match: str | None, clock: Clock) -> Callable[[Conn], tuple[bytes, BlobProperties]]:
    """A range of the content and the full properties, from one snapshot."""
    now = clock.now().timestamp()

    def run(conn: Conn) -> tuple[bytes, BlobProperties]:
        row, lease = resolve(conn, container, name, version_id, now)
        check_etag(row, if_match)
        size = row["size"]
        if (offset > 0 or length is not None) and offset >= size:
            raise StorageError(f"the range starts at {offset}, past the blob's {size} bytes", code="InvalidRange",
                               status=416)
        end = size if length is None else min(size, offset + length)
        return read_range(conn, row["content_id"], offset, end), full_properties(row, lease)

    return run


def _after(prefix: str) -> str:
    """The smallest string greater than every string that starts with `prefix`."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def lister(container: str, prefix: str, delimiter: str, marker: str, max_results: int,
           now: float) -> Callable[[Conn], ListedPage]:
    def run(conn: Conn) -> ListedPage:
        container_versioning(conn, container)
        blobs: list[BlobProperties] = []
        prefixes: list[str] = []
        cursor, past = max(prefix, marker), False  # past: the cursor's name itself was returned
        while True:
            rows = conn.execute(
                f"SELECT * FROM blobs WHERE container = ? AND name {'>' if past else '>='} ? "
                "AND substr(name, 1, ?) = ? ORDER BY name LIMIT ?",
                (container, cursor, len(prefix), prefix, BATCH)).fetchall()
            if not rows:
                return ListedPage(blobs, prefixes, None)
            for row in rows:
                name = row["name"]
                if name < cursor or (past and name == cursor):
                    continue
                if len(blobs) + len(prefixes) >= max_results:
                    return ListedPage(blobs, prefixes, name)
                cut = name.find(delimiter, len(prefix)) if delimiter else -1
                if cut >= 0:
                    folder = name[:cut + len(delimiter)]
                    prefixes.append(folder)
                    cursor, past = _after(folder), False
                    break
                blobs.append(full_properties(row, lease_of(row).effective(now)))
                cursor, past = name, True
            else:
                continue

    return run
