"""One owned lease: renew it, read its partition's change feed, invoke, checkpoint.

Per-lease loop (azure-semantics 7.6) on the shared `PollLoop` with a fixed ``feedPollDelay``:
read a page after the in-memory position (the lease's continuation, or the start options when
it has none); no items → wait the poll delay; items → invoke the function through the
executor (which applies any ``@app.retry`` policy). The checkpoint moves only when the function
succeeded (seed 004); after a failure the position stays, so the same batch comes again at the
next poll. ``checkpoint_on_failure`` reproduces the Azure extension instead (7.7). A full page
is followed at once by the next one (drain while there are more results).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from azure.functions.meta import Datum

from funchost.clock import Clock
from funchost.errors import StorageError
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.listeners.delays import FixedDelay
from funchost.listeners.poll_loop import PollLoop
from funchost.listeners.renewal import Renewer
from funchost.runtime.faults import NO_FAULTS, FaultInjector
from funchost.storage.documents import DocumentStore, FeedPage
from funchost.triggers.changefeed.leases import Lease, LeaseLost, LeaseManager, continuation_token
from funchost.triggers.changefeed.options import TriggerOptions

log = logging.getLogger("Host.Triggers.CosmosDB")


@dataclass
class FeedSource:
    """The monitored container as the processor reads it."""

    store: DocumentStore
    database: str
    container: str

    async def read(self, pid: int, after: int | None, start: datetime | None, max_items: int) -> FeedPage:
        return await self.store.read_feed(self.database, self.container, pid, after_lsn=after, start_time=start,
                                          max_items=max_items)


def documents_datum(items: list[dict[str, Any]]) -> Datum:
    """The trigger value as the host sends it: a json array, which CosmosDBConverter turns into
    a `func.DocumentList`."""
    return Datum(json.dumps(items), "json")


class LeaseProcessor:
    def __init__(
        self,
        lease: Lease,
        *,
        leases: LeaseManager,
        source: FeedSource,
        options: TriggerOptions,
        function: FunctionSpec,
        invoker: FunctionInvoker,
        clock: Clock,
        checkpoint_on_failure: bool,
        on_lost: Callable[[str], None],
        faults: FaultInjector = NO_FAULTS,
    ) -> None:
        self.lease = lease
        self._leases = leases
        self._source = source
        self._options = options
        self._function = function
        self._invoker = invoker
        self._clock = clock
        self._checkpoint_on_failure = checkpoint_on_failure
        self._on_lost = on_lost
        self._faults = faults
        self.position: int | None = lease.continuation_lsn
        self.lost = False
        self.delivered = 0
        self._loop = PollLoop(f"{function.name}:lease:{lease.token}", self._poll,
                              FixedDelay(options.feed_poll_delay), clock, on_error=self._survivable)
        self._renewer = Renewer(f"{function.name}:lease:{lease.token}", self._renew, clock,
                                interval=options.lease_renew_interval,
                                minimum=min(1.0, options.lease_renew_interval),
                                first=options.lease_renew_interval / 2)

    @property
    def token(self) -> str:
        return self.lease.token

    def start(self) -> None:
        self._loop.start()
        self._renewer.start()

    def notify(self) -> None:
        self._loop.notify()

    async def stop(self, *, release: bool) -> None:
        """Finish the batch in flight (and its checkpoint), stop renewing, release the lease."""
        await self._loop.stop()
        await self._renewer.stop()
        if release and not self.lost:
            try:
                await self._leases.release(self.lease)
                log.info("Lease %s was released.", self.token)
            except (LeaseLost, StorageError) as exc:
                log.info("Lease %s could not be released: %s", self.token, exc)

    def _lose(self, reason: BaseException) -> None:
        if not self.lost:
            self.lost = True
            log.info("Lease %s was lost: %s", self.token, reason)
            self._on_lost(self.token)

    async def _renew(self) -> bool:
        if self.lost:
            return False
        try:
            self.lease = await self._leases.renew(self.lease)
        except LeaseLost as exc:
            self._lose(exc)
            return False
        return True

    def _survivable(self, exc: BaseException) -> bool:
        log.warning("change feed read for lease %s failed: %s", self.token, exc)
        return True  # transient store errors: try again after the poll delay

    async def _poll(self) -> bool:
        if self.lost:
            return False
        start = self._options.initial_start_time if self.position is None else None
        page = await self._source.read(int(self.token), self.position, start, self._options.page_size)
        if not page.items:
            self.position = page.continuation  # 304: nothing to checkpoint, remember where we are
            return False
        log.debug("Events delivered to lease %s, Continuation %s with diagnostics %s", self.token,
                  continuation_token(page.continuation), f"{{items: {len(page.items)}}}")
        result = await self._invoker.invoke(self._request(page))
        self.delivered += 1
        # A retry loop cut short by a stopping host is a cancellation: as on Azure, never
        # checkpointed, even with checkpoint_on_failure.
        if not result.succeeded and (not self._checkpoint_on_failure or result.abandoned):
            log.info("Function %s failed for lease %s; the batch of %d will be delivered again",
                     self._function.name, self.token, len(page.items))
            return False
        await self._faults.hit("changefeed.checkpoint.before", lease=self.token, continuation=page.continuation)
        try:
            self.lease = await self._leases.checkpoint(self.lease, continuation_token(page.continuation))
        except LeaseLost as exc:
            self._lose(exc)
            return False
        self.position = page.continuation
        return page.has_more

    def _request(self, page: FeedPage) -> InvocationRequest:
        now = self._clock.now().isoformat().replace("+00:00", "Z")
        return InvocationRequest(
            function=self._function,
            trigger_value=documents_datum(page.items),
            reason=f"New changes on container {self._options.container} at {now}",
            details={"LeaseToken": self.token, "Documents": len(page.items)},
        )
