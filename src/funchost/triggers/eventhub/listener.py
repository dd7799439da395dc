"""The Event Hubs trigger listener: one event processor per function and host start.

Start: in the background, open the hub (and its consumer group) and the checkpoint container,
then run the SDK's load balancing every `loadBalancingUpdateInterval`: renew this processor's
ownerships, list everyone's, and claim partitions one at a time until balanced (the greedy
strategy the extension configures); each owned partition gets a `PartitionProcessor`. An
ownership that could not be renewed (another host claimed it) stops its processor as
"ownership lost". Hosts on one data folder thus split the partitions evenly, and a killed host's
partitions are taken over once its ownerships expire (`partitionOwnershipExpirationInterval`).

A failure to open (an unknown hub, an unreachable namespace) puts the function in error ("The
listener for function ... was unable to start.") and is retried with back-off; the rest of the
app keeps running. Stop: stop claiming, let in-flight invocations finish without
checkpointing them, then relinquish every ownership (owner "") so others take over at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from dataclasses import replace
from typing import Any

from funchost.eventhubs.namespaces import HubTarget, eventhubs_for, hub_topic
from funchost.indexing.spec import FunctionSpec
from funchost.listeners.delays import FixedDelay
from funchost.listeners.function_listener import unable_to_start
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime.contracts import Runtime
from funchost.storage.eventhubs import EventHubBroker
from funchost.triggers.eventhub.balancer import choose_claim
from funchost.triggers.eventhub.checkpoints import BlobCheckpointStore, Ownership
from funchost.triggers.eventhub.options import EventHubsOptions
from funchost.triggers.eventhub.processor import Partitioned, PartitionProcessor

log = logging.getLogger("Host.Triggers.EventHubs")

START_RETRY_FIRST = 2.0  # seconds; doubled after each failed start, up to...
START_RETRY_MAX = 120.0


class EventHubListener:
    def __init__(self, function: FunctionSpec, runtime: Runtime, target: HubTarget, consumer_group: str,
                 options: EventHubsOptions, *, single_dispatch: bool, rng: random.Random | None = None) -> None:
        self.function = function
        self.runtime = runtime
        self.target = target
        self.consumer_group = consumer_group
        self.options = options
        self.single_dispatch = single_dispatch
        self.instance = str(uuid.uuid4())  # the owner identifier: a new one per start, as the processor's
        self.processors: dict[str, PartitionProcessor] = {}
        self.owned: dict[str, Ownership] = {}
        self.partition_ids: tuple[str, ...] = ()
        self._rng = rng or random.Random()
        self._shared: Partitioned | None = None
        self._store: BlobCheckpointStore | None = None
        self._balance: PollLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._unsubscribe: Any = None
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def hub(self) -> str:
        return self.target.hub

    def _details(self) -> str:
        return (f"'namespace='{self.target.fully_qualified_namespace}', eventHub='{self.hub}', "
                f"consumerGroup='{self.consumer_group}', functionId='Functions.{self.function.name}', "
                f"singleDispatch='{self.single_dispatch}'")

    # -- start -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Embedded: open the hub now; a failure raises and the host puts the function in error
        and retries the start. A real namespace may take the SDK's retries to answer: it is
        opened in the background, and the function is in error while it cannot be."""
        if self.target.connection.is_embedded:
            await self._open()
            self._unsubscribe = self.runtime.signals.subscribe(hub_topic(self.hub), self._notify_all)
            self._begin_balancing()
        else:
            self._task = asyncio.get_running_loop().create_task(self._open_remote(),
                                                                name=f"eventhub:{self.function.name}")

    async def _open_remote(self) -> None:
        errors = self.runtime.function_errors
        delay = START_RETRY_FIRST
        while not self._stop.is_set():
            try:
                await self._open()
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reported and retried, as the host's FunctionListener does
                reason = unable_to_start(self.function.name, exc)
                log.error(reason)
                errors.clear(self.function.name)
                errors.add(self.function.name, reason)
                await self.runtime.clock.wait(self._stop, delay)
                delay = min(delay * 2, START_RETRY_MAX)
        if self._stop.is_set():
            return
        errors.clear(self.function.name)
        self._begin_balancing()

    def _begin_balancing(self) -> None:
        self._balance = PollLoop(f"eventhub-balance:{self.function.name}", self._balance_once,
                                 FixedDelay(self.options.load_balancing_update_interval), self.runtime.clock,
                                 on_error=self._balance_failed)
        self._balance.start()
        log.debug("EventHub listener started (%s)", self._details())

    async def _open(self) -> None:
        service = eventhubs_for(self.runtime)
        broker: EventHubBroker
        broker, hub = await service.open_hub(self.target)
        await broker.ensure_consumer_group(hub.name, self.consumer_group)
        store = BlobCheckpointStore(self.runtime.storage.blobs(None))  # AzureWebJobsStorage, as on Azure
        await store.create_if_not_exists()
        self.partition_ids = hub.partition_ids
        self._store = store
        self._shared = Partitioned(
            function=self.function, invoker=self.runtime.invoker, clock=self.runtime.clock, broker=broker,
            store=store, fully_qualified_namespace=self.target.fully_qualified_namespace, hub=hub.name,
            consumer_group=self.consumer_group, options=self.options, single_dispatch=self.single_dispatch,
            faults=self.runtime.faults)

    # -- load balancing --------------------------------------------------------------------------

    def _balance_failed(self, exc: BaseException) -> bool:
        log.warning("Event Hubs load balancing for function 'Functions.%s' failed: %s", self.function.name, exc)
        return True  # try again at the next cycle, as the processor does

    async def _balance_once(self) -> bool:
        assert self._store is not None
        t = self.target
        await self._renew()
        ownerships = await self._store.list_ownership(t.fully_qualified_namespace, self.hub, self.consumer_group)
        expiration = self.options.partition_ownership_expiration
        for _ in self.partition_ids:
            if self._stop.is_set():
                break
            now = self.runtime.clock.now()
            chosen = choose_claim(ownerships, self.partition_ids, self.instance, now, expiration, self._rng)
            if chosen is None:
                break
            previous = next((o for o in ownerships if o.partition_id == chosen), None)
            claimed = await self._store.claim([Ownership(
                t.fully_qualified_namespace, self.hub, self.consumer_group, chosen, self.instance, now,
                previous.etag if previous else None)])
            if not claimed:
                break  # someone else was faster; the next cycle looks again
            ownership = claimed[0]
            self.owned[chosen] = ownership
            ownerships = [o for o in ownerships if o.partition_id != chosen] + [ownership]
            self._start_processor(chosen)
        return False  # always wait a full interval

    async def _renew(self) -> None:
        assert self._store is not None
        if not self.owned:
            return
        now = self.runtime.clock.now()
        renewed = await self._store.claim([replace(o, last_modified=now) for o in self.owned.values()])
        kept = {o.partition_id: o for o in renewed}
        for partition_id in [p for p in self.owned if p not in kept]:
            log.info("Ownership of partition '%s' of event hub '%s' was lost by function 'Functions.%s'.",
                     partition_id, self.hub, self.function.name)
            self._lose(partition_id)
        self.owned = kept

    def _start_processor(self, partition_id: str) -> None:
        assert self._shared is not None
        if partition_id in self.processors:
            return
        processor = PartitionProcessor(partition_id, self._shared)
        self.processors[partition_id] = processor
        processor.start()

    def _lose(self, partition_id: str) -> None:
        processor = self.processors.pop(partition_id, None)
        if processor is not None:
            task = asyncio.get_running_loop().create_task(processor.stop(lost=True),
                                                          name=f"eventhub-lost:{partition_id}")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def _notify_all(self) -> None:
        for processor in list(self.processors.values()):
            processor.notify()

    def owned_partitions(self) -> list[str]:
        return sorted(self.processors, key=lambda p: (len(p), p))

    # -- stop ------------------------------------------------------------------------------------

    async def stop(self) -> None:
        self._stop.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._balance is not None:
            await self._balance.stop()
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        processors = list(self.processors.values())
        self.processors.clear()
        await asyncio.gather(*(p.stop() for p in processors), *self._closing, return_exceptions=True)
        await self._relinquish()
        if not self.target.connection.is_embedded:
            await eventhubs_for(self.runtime).aclose()  # SDK clients (re-created if still needed)
        log.debug("EventHub listener stopped (%s)", self._details())

    async def _relinquish(self) -> None:
        if self._store is None or not self.owned:
            return
        try:
            await self._store.claim([replace(o, owner_id="") for o in self.owned.values()])
        except Exception as exc:  # noqa: BLE001 - expiry frees them anyway
            log.info("Ownership of event hub '%s' could not be relinquished: %s", self.hub, exc)
        self.owned.clear()
