"""Journal changes made by other hosts, handed to this process's subscribers (`subscribe`).

A journalled write notifies `blob_channel(schema)` with its account inside its transaction, so
the notification leaves at commit and never for a write rolled back (and one per transaction).
While an account has subscribers in this process, one task LISTENs on the channel; on a
notification for the account it reads the journal from where it last read and calls the
subscribers with the changes this process did not publish itself. Subscribers use changes as
wake-ups and read the journal on their own poll, so a lost notification (a dropped connection,
a restart of the server) only delays them: the task reconnects with back-off and reads what it
missed.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from funchost.settings.postgres import PostgresConfig
from funchost.storage.blobs import BlobChange
from funchost.storage.postgres.connect import connect_kwargs

log = logging.getLogger("funchost.storage.blobs")

BATCH = 500
RECENT = 4096  # sequencers published here, not to be handed out again
MAX_BACKOFF = 30.0


def blob_channel(schema: str) -> str:
    """`fh_<8 hex of the schema>_blob`: one channel per deployment, whatever the schema's name."""
    return f"fh_{hashlib.sha1(schema.encode()).hexdigest()[:8]}_blob"


class RemoteChanges:
    def __init__(self, config: PostgresConfig, account: str, read: Callable[[str | None], Awaitable[list[BlobChange]]],
                 cursor: Callable[[], Awaitable[str | None]], deliver: Callable[[BlobChange], None]) -> None:
        self._config = config
        self._account = account
        self._read = read
        self._cursor = cursor
        self._deliver = deliver
        self._published: deque[str] = deque(maxlen=RECENT)
        self._task: asyncio.Task[None] | None = None
        self._delay = 1.0

    def published(self, change: BlobChange) -> None:
        """A change this process published itself (already delivered)."""
        self._published.append(change.sequencer)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"blob-changes:{self._account}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        cursor = await self._start_cursor()
        self._delay = 1.0
        while True:
            try:
                cursor = await self._listen(cursor)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server went away: back off, reconnect, catch up
                log.warning("blob change notifications for %s lost (%s); reconnecting in %.0fs", self._account,
                            type(exc).__name__, self._delay)
                await asyncio.sleep(self._delay)
                self._delay = min(self._delay * 2, MAX_BACKOFF)

    async def _start_cursor(self) -> str | None:
        delay = 1.0
        while True:
            try:
                return await self._cursor()
            except Exception:  # noqa: BLE001 - the server is away: the same back-off as a lost listener
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)

    async def _listen(self, cursor: str | None) -> str | None:
        import psycopg
        from psycopg import sql as pgsql

        kwargs = connect_kwargs(self._config, "blob-listener")
        async with await psycopg.AsyncConnection.connect(self._config.conninfo, autocommit=True, **kwargs) as conn:
            await conn.execute(pgsql.SQL("LISTEN {}").format(pgsql.Identifier(blob_channel(self._config.schema))))
            cursor = await self._catch_up(cursor)  # what was written while not listening
            self._delay = 1.0  # listening and caught up: the next loss starts its back-off afresh
            async for notify in conn.notifies():
                if notify.payload == self._account:
                    cursor = await self._catch_up(cursor)
        return cursor

    async def _catch_up(self, cursor: str | None) -> str | None:
        while True:
            changes = await self._read(cursor)
            for change in changes:
                if change.sequencer not in self._published:
                    self._deliver(change)
            if changes:
                cursor = changes[-1].sequencer
            if len(changes) < BATCH:
                return cursor
