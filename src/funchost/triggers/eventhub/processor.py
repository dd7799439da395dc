"""One owned partition: read it in order, invoke the function, checkpoint (servicebus-eventhubs 2.3).

The extension's `PartitionProcessor.ProcessEventsAsync`, step for step:

* single dispatch reads batches of ONE event (the extension sets the processor's batch size to 1
  for cardinality one) and invokes once per event; batch dispatch reads up to
  `maxEventBatchSize` and invokes once per batch, or, with `minEventBatchSize > 1`, caches events
  until the minimum is reached or `maxWaitTime` has passed (then a partial batch);
* events of one partition are handed over strictly one invocation at a time, in order;
* after each batch the checkpoint (the last event's offset and sequence number) is written
  **whether the function succeeded or failed**, every `batchCheckpointFrequency`-th batch;
* never when the host is stopping or the partition's ownership was lost meanwhile: the new
  owner re-reads from the last checkpoint (at-least-once, duplicates possible).

The reader's position lives in memory (as the SDK's prefetching consumer does); it starts at the
checkpoint, or per `initialOffsetOptions` when there is none. Reads poll the broker with a short
back-off; a send in this process wakes the processor at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from funchost.clock import Clock
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.listeners.delays import RandomizedExponentialBackoff
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime.faults import NO_FAULTS, FaultInjector
from funchost.storage.eventhubs import EventHubBroker, EventPosition, ReceivedEvent
from funchost.triggers.eventhub.checkpoints import BlobCheckpointStore
from funchost.triggers.eventhub.events import PartitionInfo, batch_request, single_request
from funchost.triggers.eventhub.options import EventHubsOptions

log = logging.getLogger("Host.Triggers.EventHubs")

POLL_MINIMUM = 0.05  # seconds between reads of an idle partition, growing to...
POLL_MAXIMUM = 1.0  # ...this: how soon a send by another process is seen


@dataclass
class Partitioned:
    """What every partition processor of one listener shares."""

    function: FunctionSpec
    invoker: FunctionInvoker
    clock: Clock
    broker: EventHubBroker
    store: BlobCheckpointStore
    fully_qualified_namespace: str
    hub: str
    consumer_group: str
    options: EventHubsOptions
    single_dispatch: bool
    faults: FaultInjector = field(default_factory=lambda: NO_FAULTS)


class PartitionProcessor:
    def __init__(self, partition_id: str, shared: Partitioned) -> None:
        self.partition_id = partition_id
        self.shared = shared
        self.position: EventPosition | None = None
        self.lost = False
        self.stopping = False
        self.invocations = 0
        self.checkpoints = 0
        self._batch_counter = 0
        self._first_invocation = True
        self._last_checkpoint_time: datetime | None = None
        self._cache: list[ReceivedEvent] = []
        self._guard = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._timer_dispatching = False
        name = f"eventhub:{shared.function.name}:{partition_id}"
        self._loop = PollLoop(name, self._poll, RandomizedExponentialBackoff(POLL_MINIMUM, POLL_MAXIMUM),
                              shared.clock, on_error=self._survivable)

    @property
    def cancelled(self) -> bool:
        """The extension's linked token: host stopping or ownership lost."""
        return self.lost or self.stopping

    def start(self) -> None:
        log.debug("%s", self._details("OpenAsync"))
        self._loop.start()

    def notify(self) -> None:
        self._loop.notify()

    async def stop(self, *, lost: bool = False) -> None:
        """Stop reading; the invocation in flight finishes but is not checkpointed; cached events
        are dropped (the next owner reads them again from the checkpoint)."""
        if lost:
            self.lost = True
        else:
            self.stopping = True
        timer = self._timer
        if timer is not None and not timer.done():
            if self._timer_dispatching:
                await asyncio.gather(timer, return_exceptions=True)
            else:
                timer.cancel()
                await asyncio.gather(timer, return_exceptions=True)
        await self._loop.stop()
        self._cache.clear()
        log.debug("%s", self._details(f"CloseAsync, {'OwnershipLost' if lost else 'Shutdown'}"))

    # -- reading -----------------------------------------------------------------------------------

    def _survivable(self, exc: BaseException) -> bool:
        log.warning("Processing error (Partition Id: '%s', EventHubPath: '%s'): %s", self.partition_id,
                    self.shared.hub, exc)
        return True

    async def _initial_position(self) -> EventPosition:
        s = self.shared
        checkpoint = await s.store.get_checkpoint(s.fully_qualified_namespace, s.hub, s.consumer_group,
                                                  self.partition_id)
        if checkpoint is not None:
            self._last_checkpoint_time = checkpoint.last_modified
            if checkpoint.offset is not None:
                return EventPosition.after_offset(checkpoint.offset)
            assert checkpoint.sequence_number is not None
            return EventPosition.after_sequence(checkpoint.sequence_number)
        initial = s.options.initial_offset
        if initial.type == "fromEnd":
            props = await s.broker.partition_properties(s.hub, self.partition_id)
            return EventPosition.after_sequence(props.last_enqueued_sequence_number)
        if initial.type == "fromEnqueuedTime" and initial.enqueued_time is not None:
            return EventPosition.enqueued_at_or_after(initial.enqueued_time)
        return EventPosition.earliest()

    async def _poll(self) -> bool:
        if self.cancelled:
            return False
        s = self.shared
        if self.position is None:
            self.position = await self._initial_position()
        size = 1 if s.single_dispatch else s.options.max_event_batch_size
        events = await s.broker.read(s.hub, self.partition_id, self.position, size, consumer_group=s.consumer_group)
        if not events:
            return False
        self.position = EventPosition.after_sequence(events[-1].sequence_number)
        await self._process(events)
        return True

    # -- ProcessEventsAsync ------------------------------------------------------------------------

    async def _process(self, events: Sequence[ReceivedEvent]) -> None:
        s = self.shared
        to_checkpoint: ReceivedEvent | None = None
        checkpointing = False
        if s.single_dispatch:
            checkpointing = self._count_batch(events)
            for event in events:
                if self.cancelled:
                    break
                await self._invoke(single_request(s.function, self._partition(checkpointing), event))
                to_checkpoint = event
        elif s.options.min_event_batch_size > 1:
            async with self._guard:
                self._cache.extend(events)
                batch = self._take(allow_partial=False)
                if batch:
                    checkpointing = self._count_batch(batch)
                    await self._invoke(batch_request(s.function, self._partition(checkpointing), batch))
                    to_checkpoint = batch[-1]
                    if self._timer is not None:
                        self._timer.cancel()
                        self._timer = None
                if self._timer is None and self._cache:
                    self._timer = asyncio.get_running_loop().create_task(
                        self._monitor_cache(), name=f"eventhub-cache:{s.function.name}:{self.partition_id}")
        else:
            checkpointing = self._count_batch(events)
            await self._invoke(batch_request(s.function, self._partition(checkpointing), events))
            to_checkpoint = events[-1]
        if to_checkpoint is not None and not self.cancelled:
            await self._checkpoint(to_checkpoint, checkpointing)

    def _count_batch(self, events: Sequence[ReceivedEvent]) -> bool:
        """`UpdateCheckpointContext`: will this batch be checkpointed after its invocation?"""
        self._batch_counter += 1
        frequency = self.shared.options.batch_checkpoint_frequency
        return bool(events) and (frequency == 1 or self._batch_counter >= frequency)

    def _take(self, *, allow_partial: bool) -> list[ReceivedEvent]:
        options = self.shared.options
        if len(self._cache) >= options.min_event_batch_size or (allow_partial and self._cache):
            batch = self._cache[:options.max_event_batch_size]
            del self._cache[:options.max_event_batch_size]
            return batch
        return []

    def _adjusted_wait(self) -> float:
        """`GetAdjustedMaxWaitTime`: the first wait after (re)acquiring honours the last checkpoint."""
        configured = self.shared.options.max_wait_time
        if not self._first_invocation:
            return configured
        if self._last_checkpoint_time is None:
            return 0.0
        since = (self.shared.clock.now() - self._last_checkpoint_time).total_seconds()
        return configured - since if since < configured else 0.0

    async def _monitor_cache(self) -> None:
        s = self.shared
        try:
            await s.clock.sleep(self._adjusted_wait())
            async with self._guard:
                if self.cancelled:
                    return
                self._timer_dispatching = True
                batch = self._take(allow_partial=True)
                if batch:
                    log.debug("Partition Processor has waited MaxWaitTime since last invocation and is attempting "
                              "to invoke function on all held events (%s)", self._details("MaxWaitTimeElapsed"))
                    checkpointing = self._count_batch(batch)
                    await self._invoke(batch_request(s.function, self._partition(checkpointing), batch))
                    if not self.cancelled:
                        await self._checkpoint(batch[-1], checkpointing)
        finally:
            self._timer_dispatching = False
            if self._timer is asyncio.current_task():
                self._timer = None

    async def _invoke(self, request: InvocationRequest) -> None:
        await self.shared.invoker.invoke(request)  # never raises; failures are not retried by the trigger
        self.invocations += 1
        self._first_invocation = False

    async def _checkpoint(self, event: ReceivedEvent, checkpointing: bool) -> None:
        if not checkpointing:
            return
        s = self.shared
        if s.faults.enabled:
            await s.faults.hit("eventhubs.checkpoint.before", partition=self.partition_id,
                               sequence_number=event.sequence_number)
        await s.store.update_checkpoint(s.fully_qualified_namespace, s.hub, s.consumer_group, self.partition_id,
                                        event.offset, event.sequence_number)
        self._batch_counter = 0
        self.checkpoints += 1
        log.debug("%s", self._details("CheckpointAsync"))

    def _partition(self, checkpointing: bool) -> PartitionInfo:
        s = self.shared
        return PartitionInfo(s.fully_qualified_namespace, s.hub, s.consumer_group, self.partition_id, checkpointing)

    def _details(self, operation: str) -> str:
        s = self.shared
        return (f'{{"operation":"{operation}","partitionContext":{{"partitionId":"{self.partition_id}",'
                f'"eventHubPath":"{s.hub}"}}}}')
