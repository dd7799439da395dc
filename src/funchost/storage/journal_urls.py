"""Blob URLs in change-journal entries, as the endpoint that serves the account spells them.

A backend journals each change with the URL a development connection string implies
(`http://127.0.0.1:10000/<account>/<container>/<blob>`). When this host serves (or shares) the
Blob endpoint on another port, the events Event Grid publishes and the blob trigger's `Uri` must
name that endpoint, so a client can fetch the blob from the URL: the journal handed out by
`HostStorage.blob_changes` rewrites the origin (scheme, host, port) of every change it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from urllib.parse import urlsplit

from funchost.storage.blobs import BlobChange, BlobChangeJournal, BlobChangeListener


def rebase(change: BlobChange, origin: str | None) -> BlobChange:
    """`change` with its URL on `origin` (`http://127.0.0.1:20000`); unchanged when None."""
    if origin is None:
        return change
    parts = urlsplit(change.url)
    rebased = origin.rstrip("/") + parts.path + (f"?{parts.query}" if parts.query else "")
    return replace(change, url=rebased)


class ServedJournal:
    """A `BlobChangeJournal` whose changes carry the URL of the Blob endpoint being served."""

    def __init__(self, inner: BlobChangeJournal, origin: Callable[[], str | None]) -> None:
        self.inner = inner
        self._origin = origin  # read per call: the endpoint may start after the journal is handed out
        self.current_cursor = inner.current_cursor

    async def changes_since(self, cursor: str | None, limit: int = 100) -> list[BlobChange]:
        origin = self._origin()
        return [rebase(change, origin) for change in await self.inner.changes_since(cursor, limit)]

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        return self.inner.subscribe(lambda change: listener(rebase(change, self._origin())))
