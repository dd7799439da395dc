"""Blob storage events for a storage system topic (azure-semantics 6.7).

The blob store's change journal (`BlobChangeJournal`) records every committed create/delete
with a sequencer, whichever process wrote it (``funchost blob upload`` included). The watcher
reads the journal from its cursor with the poll loop (cut short by the journal's in-process
`subscribe` callback) and publishes ``Microsoft.Storage.BlobCreated`` / ``BlobDeleted`` events. The cursor moves in the same
transaction that stores the events, with a compare-and-set, so hosts sharing a data folder
publish each change exactly once.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from funchost.clock import Clock
from funchost.eventgrid import SCHEMA_EVENTGRID, storage_account_id
from funchost.eventgrid.config import EventGridConfig, TopicConfig
from funchost.eventgrid.routing import route
from funchost.listeners.delays import FixedDelay
from funchost.listeners.poll_loop import PollLoop
from funchost.storage.blobs import BlobChange, BlobChangeJournal
from funchost.storage.eventgrid import EventGridStore

log = logging.getLogger("funchost.eventgrid")

BATCH = 100


def blob_event(change: BlobChange, clock: Clock) -> dict[str, Any]:
    props = change.properties
    data: dict[str, Any] = {"api": change.api}
    if change.kind == "BlobCreated":
        data["clientRequestId"] = str(uuid.uuid4())
    data["requestId"] = str(uuid.uuid4())
    if props is not None:
        data["eTag"] = props.etag.strip('"')
        data["contentType"] = props.content_type
        data["contentLength"] = props.size
        data["blobType"] = props.blob_type
    else:
        data["blobType"] = "BlockBlob"
    data["url"] = change.url
    data["sequencer"] = change.sequencer
    data["storageDiagnostics"] = {"batchId": str(uuid.uuid4())}
    when = props.last_modified if props is not None and change.kind == "BlobCreated" else clock.now()
    return {
        "topic": storage_account_id(change.account),
        "subject": f"/blobServices/default/containers/{change.container}/blobs/{change.name}",
        "eventType": f"Microsoft.Storage.{change.kind}",
        "id": str(uuid.uuid4()),
        "data": data,
        "dataVersion": "",
        "metadataVersion": "1",
        "eventTime": when.isoformat().replace("+00:00", "Z"),
    }


class BlobEventWatcher:
    def __init__(self, topic: TopicConfig, journal: BlobChangeJournal, account: str, store: EventGridStore,
                 config: EventGridConfig, clock: Clock, on_published: Callable[[], None], poll_interval: float) -> None:
        self.topic = topic
        self.journal = journal
        self.account = account
        self.store = store
        self.config = config
        self.clock = clock
        self.on_published = on_published
        self.cursor_name = f"blob:{account}:{topic.name}"
        self._loop = PollLoop(f"eventgrid.blobs.{account}", self._poll, FixedDelay(poll_interval), clock,
                              on_error=self._on_error)
        self._unsubscribe: Callable[[], None] | None = None

    async def start(self) -> None:
        if await self.store.get_cursor(self.cursor_name) is None:
            # First start: begin at the journal's end (earlier writes are history).
            await self.store.init_cursor(self.cursor_name, await self.journal.current_cursor() or "")
        self._unsubscribe = self.journal.subscribe(lambda change: self._loop.notify())
        self._loop.start()

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        await self._loop.stop()

    def _on_error(self, exc: BaseException) -> bool:
        log.warning("eventgrid.blob_watch_failed account=%s error=%s", self.account, type(exc).__name__)
        return True

    async def _poll(self) -> bool:
        cursor = await self.store.get_cursor(self.cursor_name)
        changes = await self.journal.changes_since(cursor or None, BATCH)
        if not changes:
            return False
        events = [blob_event(c, self.clock) for c in changes]
        routed = route(self.config, self.topic.name, events, SCHEMA_EVENTGRID)
        stored = await self.store.append(self.topic.name, SCHEMA_EVENTGRID, routed, self.clock.now().timestamp(),
                                         cursor=(self.cursor_name, cursor, changes[-1].sequencer))
        if stored:
            log.debug("eventgrid.blob_events account=%s events=%d", self.account, len(events))
            self.on_published()
        return True
