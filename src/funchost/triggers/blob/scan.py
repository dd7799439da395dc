"""Stage A of the polling source: find new and changed blobs in the watched containers.

One strategy per host, chosen from the host storage as the extension chooses from its host blob
client (blob-trigger spec 2):

* `JournalStrategy` (embedded storage): at start, and whenever the journal cannot vouch for what
  happened (a new container registered, changes trimmed away), every blob of the watched containers
  is a candidate, as after each start of ScanContainersStrategy; then only the store's change
  journal is read from the cursor taken before that scan. In-process writes wake it at once.
* `ContainerScanStrategy` (path-style endpoints, i.e. Azurite): ScanContainersStrategy, every 2 s a
  full listing, high-water mark in memory (so every existing blob is offered again at each start
  and receipts absorb it).
* `HybridScanStrategy` (host-style endpoints, i.e. Azure): the container sweep of
  ScanBlobScanLogHybridPollingStrategy, a page per container every 10 s within a 10,000-blob
  budget, its high-water mark persisted in the scan-info blob. The Storage Analytics log polling
  half is not done (docs/deviations.md).

A candidate runs every executor registered on its container, one after another; a failed one is
offered again at the next iteration (the in-memory notification queue), as are blobs the stage-B
processor found changed (`notify`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from funchost.errors import BlobNotFound, ContainerNotFound, StorageError
from funchost.storage.blobs import BlobChangeJournal, BlobProperties, BlobService
from funchost.triggers.blob.executor import BlobTriggerExecutor
from funchost.triggers.blob.options import DEV_STORAGE_SCAN_INTERVAL, HYBRID_SCAN_BUDGET, HYBRID_SCAN_INTERVAL
from funchost.triggers.blob.receipts import HOSTS_CONTAINER

log = logging.getLogger("funchost.blobs")

NEVER = datetime.min.replace(tzinfo=UTC)
LIST_PAGE = 5000
JOURNAL_BATCH = 1000
OFFER_WINDOW = 32  # blobs handed to executors at once

WatchKey = tuple[str, str]  # (account, container)


@dataclass
class Watch:
    service: BlobService
    container: str
    executors: list[BlobTriggerExecutor] = field(default_factory=list)
    mark: datetime = NEVER  # high-water mark of last-modified times (scan strategies)
    current: datetime = NEVER  # hybrid: the running sweep's latest
    marker: str | None = None  # hybrid: continuation of the running sweep
    scanned: bool = False  # journal: a full scan has covered this container


class DiscoveryStrategy:
    """Registrations, the fast-path notification queue and running executors; subclasses list."""

    interval = DEV_STORAGE_SCAN_INTERVAL

    def __init__(self) -> None:
        self.watches: dict[WatchKey, Watch] = {}
        self._notifications: deque[tuple[WatchKey, str]] = deque()

    async def register(self, executor: BlobTriggerExecutor) -> None:
        service = executor.target.service
        key = (service.account_name, executor.container)
        watch = self.watches.setdefault(key, Watch(service, executor.container))
        watch.executors.append(executor)

    def unregister(self, executor: BlobTriggerExecutor) -> None:
        for key, watch in list(self.watches.items()):
            if executor in watch.executors:
                watch.executors.remove(executor)
            if not watch.executors:
                del self.watches[key]

    def notify(self, account: str, container: str, blob_name: str) -> None:
        """A blob changed (stage B saw another ETag): offer it again at the next iteration."""
        self._notifications.append(((account, container), blob_name))

    async def execute(self) -> None:
        failed: list[tuple[WatchKey, str]] = []
        while self._notifications:
            key, name = self._notifications.popleft()
            await self._offer(key, name, failed)
        await self.discover(failed)
        self._notifications.extend(failed)

    async def discover(self, failed: list[tuple[WatchKey, str]]) -> None:
        raise NotImplementedError

    async def _offer_all(self, key: WatchKey, blobs: Iterable[BlobProperties],
                         failed: list[tuple[WatchKey, str]]) -> None:
        """Offer listed blobs, a window at a time: receipts make the order irrelevant, and the
        storage round trips of one blob no longer wait for those of the previous one."""
        window: list[BlobProperties] = []
        for props in blobs:
            window.append(props)
            if len(window) == OFFER_WINDOW:
                await asyncio.gather(*(self._offer(key, p.name, failed, p) for p in window))
                window = []
        if window:
            await asyncio.gather(*(self._offer(key, p.name, failed, p) for p in window))

    async def _offer(self, key: WatchKey, name: str, failed: list[tuple[WatchKey, str]],
                     listed: BlobProperties | None = None) -> bool:
        watch = self.watches.get(key)
        if watch is None:
            return True
        ok = True
        for executor in list(watch.executors):
            try:
                done = await executor.execute(key[1], name, listed)
            except StorageError as exc:
                log.warning("Blob '%s/%s' could not be handed to function '%s' (%s); trying again",
                            key[1], name, executor.target.function.name, exc.code or type(exc).__name__)
                done = False
            if not done:
                ok = False
        if not ok:
            failed.append((key, name))
        return ok

    async def _list_all(self, watch: Watch) -> list[BlobProperties]:
        """Every blob of the container (none when it does not exist yet)."""
        items: list[BlobProperties] = []
        marker: str | None = None
        try:
            while True:
                page = await watch.service.list_blobs(watch.container, marker=marker, max_results=LIST_PAGE)
                items.extend(page.items)
                marker = page.next_marker
                if not marker:
                    return items
        except ContainerNotFound:
            log.debug("Container '%s' does not exist.", watch.container)
            return []


class ContainerScanStrategy(DiscoveryStrategy):
    """ScanContainersStrategy. Candidates are last-modified >= the mark (the extension: >): with
    1-second timestamps a blob written in the second of the last scan would otherwise be missed
    until the next start (docs/deviations.md); receipts absorb the repeats."""

    async def discover(self, failed: list[tuple[WatchKey, str]]) -> None:
        for key, watch in list(self.watches.items()):
            previous = watch.mark
            blobs = await self._list_all(watch)
            for props in blobs:
                watch.mark = max(watch.mark, props.last_modified)
            await self._offer_all(key, (p for p in blobs if p.last_modified >= previous), failed)


class JournalStrategy(DiscoveryStrategy):
    """A full scan where needed, then the embedded store's change journal from a cursor."""

    def __init__(self, journal_for: Callable[[str | None], BlobChangeJournal | None]) -> None:
        super().__init__()
        self._journal_for = journal_for
        self.journals: dict[str, BlobChangeJournal | None] = {}  # account -> its change journal
        self._cursors: dict[str, str | None] = {}  # account -> last change handled

    async def register(self, executor: BlobTriggerExecutor) -> None:
        await super().register(executor)
        account = executor.target.service.account_name
        self.watches[(account, executor.container)].scanned = False
        if account not in self.journals:
            self.journals[account] = self._journal_for(executor.target.connection)

    async def discover(self, failed: list[tuple[WatchKey, str]]) -> None:
        by_account: dict[str, list[WatchKey]] = {}
        for key in self.watches:
            by_account.setdefault(key[0], []).append(key)
        for account, keys in by_account.items():
            journal = self.journals.get(account)
            if journal is None:
                continue
            if account in self._cursors and not await self._follow(account, journal, failed):
                del self._cursors[account]  # changes were trimmed away unseen: look at everything
                for key in keys:
                    self.watches[key].scanned = False
            if all(self.watches[key].scanned for key in keys):
                continue
            cursor = await journal.current_cursor()  # before listing: later changes are followed
            for key in keys:
                watch = self.watches[key]
                if not watch.scanned:
                    await self._offer_all(key, await self._list_all(watch), failed)
                    watch.scanned = True
            self._cursors.setdefault(account, cursor)

    async def _follow(self, account: str, journal: BlobChangeJournal, failed: list[tuple[WatchKey, str]]) -> bool:
        """Offer the blobs created since the cursor; False when some changes were trimmed unseen."""
        while True:
            cursor = self._cursors[account]
            changes = await journal.changes_since(cursor, limit=JOURNAL_BATCH)
            if not changes:
                return True
            expected = int(cursor, 16) + 1 if cursor else 1
            if int(changes[0].sequencer, 16) != expected:
                return False
            created: dict[tuple[str, str], BlobProperties] = {}  # the latest version of each blob
            for change in changes:
                if change.kind == "BlobCreated" and change.properties is not None \
                        and (account, change.container) in self.watches:
                    created[(change.container, change.name)] = change.properties
            self._cursors[account] = changes[-1].sequencer
            for container in {c for c, _ in created}:
                await self._offer_all((account, container), (p for (c, _), p in created.items() if c == container),
                                      failed)
            if len(changes) < JOURNAL_BATCH:
                return True


class HybridScanStrategy(DiscoveryStrategy):
    """The container sweep of ScanBlobScanLogHybridPollingStrategy with its scan-info blob."""

    interval = HYBRID_SCAN_INTERVAL

    def __init__(self, host_blobs: BlobService, host_id: str) -> None:
        super().__init__()
        self._host_blobs = host_blobs
        self._host_id = host_id

    def scan_info_name(self, watch: Watch) -> str:
        return f"blobscaninfo/{self._host_id}/{watch.service.account_name}/{watch.container}/scanInfo"

    async def register(self, executor: BlobTriggerExecutor) -> None:
        service = executor.target.service
        key = (service.account_name, executor.container)
        if key not in self.watches:  # read before registering: a storage error leaves nothing behind
            mark = await self._read_scan_info(Watch(service, executor.container))
            await super().register(executor)
            self.watches[key].mark = mark
        else:
            await super().register(executor)

    async def discover(self, failed: list[tuple[WatchKey, str]]) -> None:
        page_size = max(1, min(LIST_PAGE, HYBRID_SCAN_BUDGET // max(1, len(self.watches))))
        for key, watch in list(self.watches.items()):
            if watch.marker is None:
                watch.current = NEVER
            try:
                page = await watch.service.list_blobs(watch.container, marker=watch.marker, max_results=page_size)
            except ContainerNotFound:
                log.debug("Container '%s' does not exist.", watch.container)
                continue
            candidates = []
            for props in page.items:
                watch.current = max(watch.current, props.last_modified)
                if props.last_modified >= watch.mark:
                    candidates.append(props)
            watch.marker = page.next_marker or None
            advanced = watch.marker is None and watch.current > watch.mark
            if advanced:
                watch.mark = watch.current
            failures_before = len(failed)
            await self._offer_all(key, candidates, failed)
            if advanced:
                await self._write_scan_info(watch, self._scan_time(watch, failed[failures_before:], candidates))

    @staticmethod
    def _scan_time(watch: Watch, failures: Iterable[tuple[WatchKey, str]],
                   candidates: list[BlobProperties]) -> datetime:
        """The mark, or the earliest failed blob's time, minus 1 ms (1-second timestamps)."""
        failed_names = {name for _, name in failures}
        earliest = [p.last_modified for p in candidates if p.name in failed_names]
        return min([watch.mark, *earliest]) - timedelta(milliseconds=1)

    async def _read_scan_info(self, watch: Watch) -> datetime:
        try:
            data, _ = await self._host_blobs.download_blob(HOSTS_CONTAINER, self.scan_info_name(watch))
            return datetime.fromisoformat(json.loads(data)["LatestScan"].replace("Z", "+00:00"))
        except (BlobNotFound, ContainerNotFound):
            return NEVER
        except (ValueError, KeyError, TypeError):
            log.warning("scan info of container '%s' is unreadable; scanning it whole", watch.container)
            return NEVER

    async def _write_scan_info(self, watch: Watch, when: datetime) -> None:
        body = json.dumps({"LatestScan": when.isoformat(timespec="milliseconds")}).encode()
        try:
            try:
                await self._host_blobs.upload_blob(HOSTS_CONTAINER, self.scan_info_name(watch), body)
            except ContainerNotFound:
                await self._host_blobs.create_container(HOSTS_CONTAINER, exist_ok=True)
                await self._host_blobs.upload_blob(HOSTS_CONTAINER, self.scan_info_name(watch), body)
        except StorageError as exc:  # the extension swallows scan-info write failures
            log.debug("writing the scan info of '%s' failed: %s", watch.container, exc)
