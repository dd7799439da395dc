"""The Cosmos DB trigger listener: one change feed processor instance per function and start.

Start: check both containers (Azure's message when one is missing), create the lease
container if asked, then in the background initialize the lease store (bootstrap) and run the
load balancer every ``leaseAcquireInterval``; each acquired lease gets a `LeaseProcessor`.
Stop: finish in-flight batches, then release every owned lease (``Owner = null``) so another
instance takes it at its next balancing instead of after expiry.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from funchost.documents.aio import ContainerProxy
from funchost.documents.exceptions import CosmosResourceNotFoundError
from funchost.errors import ConfigError, StorageError
from funchost.indexing.spec import FunctionSpec
from funchost.listeners.delays import FixedDelay
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime.contracts import Runtime
from funchost.runtime.signals import documents_topic
from funchost.storage.documents import ContainerInfo, DocumentStore, PartitionRange
from funchost.triggers.changefeed import bootstrap
from funchost.triggers.changefeed.balancer import select_leases_to_take
from funchost.triggers.changefeed.leases import Lease, LeaseLost, LeaseManager, lease_prefix
from funchost.triggers.changefeed.messages import missing_container_message, missing_in_store
from funchost.triggers.changefeed.options import TriggerOptions
from funchost.triggers.changefeed.processor import FeedSource, LeaseProcessor

log = logging.getLogger("Host.Triggers.CosmosDB")

LEASE_PK_MESSAGE = "The lease container, if partitioned, must have partition key equal to id."




class ChangeFeedListener:
    def __init__(self, function: FunctionSpec, runtime: Runtime, options: TriggerOptions,
                 *, checkpoint_on_failure: bool) -> None:
        self.function = function
        self.runtime = runtime
        self.options = options
        self.checkpoint_on_failure = checkpoint_on_failure
        self.instance = str(uuid.uuid4())  # a new host name per start, as the extension does
        self.processors: dict[str, LeaseProcessor] = {}
        self.leases: LeaseManager | None = None
        self._source: FeedSource | None = None
        self._balance: PollLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Any = None
        self._stopping = False
        self._closing: set[asyncio.Task[None]] = set()  # processors of lost leases, still finishing

    # -- start -------------------------------------------------------------------------------------

    async def start(self) -> None:
        o = self.options
        store = self.runtime.storage.documents(o.connection)
        lease_store = self.runtime.storage.documents(o.lease_connection)
        missing = missing_in_store(store, o.database, o.container, self.runtime)
        try:
            monitored = await store.get_container(o.database, o.container)
            missing = missing_in_store(lease_store, o.lease_database, o.lease_container, self.runtime, lease=True)
            lease_info = await self._lease_container(lease_store)
        except CosmosResourceNotFoundError as exc:
            log.error("Starting the listener for %s failed. Exception: %s.", self._details(), exc)
            raise ConfigError(missing_container_message(o, missing)) from exc
        if lease_info.partition_key_path not in ("/id", "/partitionKey"):
            raise ConfigError(LEASE_PK_MESSAGE)
        prefix = lease_prefix(o.prefix, store.endpoint_host, monitored.database_rid, monitored.rid)
        self.leases = LeaseManager(ContainerProxy(lease_store, o.lease_database, o.lease_container), prefix,
                                   self.instance, self.runtime.clock,
                                   pk_is_partition_key=lease_info.partition_key_path == "/partitionKey")
        self._source = FeedSource(store, o.database, o.container)
        self._unsubscribe = self.runtime.signals.subscribe(
            documents_topic(store.name, o.database, o.container), self._notify_all)
        partitions = await store.partition_ranges(o.database, o.container)
        self._task = asyncio.get_running_loop().create_task(self._run(partitions),
                                                            name=f"changefeed:{self.function.name}")
        log.debug("Started the listener for %s.", self._details())

    async def _lease_container(self, lease_store: DocumentStore) -> ContainerInfo:
        o = self.options
        if not o.create_lease_container:
            return await lease_store.get_container(o.lease_database, o.lease_container)
        await lease_store.create_database(o.lease_database, exist_ok=True)
        return await lease_store.create_container(o.lease_database, o.lease_container, partition_key_path="/id",
                                                  default_ttl=-1, exist_ok=True)

    def _details(self) -> str:
        o = self.options
        return (f"prefix='{o.prefix}', monitoredContainer='{o.container}', monitoredDatabase='{o.database}', "
                f"leaseContainer='{o.lease_container}', leaseDatabase='{o.lease_database}', "
                f"functionId='Functions.{self.function.name}'")

    async def _run(self, partitions: list[PartitionRange]) -> None:
        assert self.leases is not None
        await bootstrap.initialize(self.leases, partitions, self.runtime.clock)
        if self._stopping:
            return
        self._balance = PollLoop(f"{self.function.name}:balance", self._balance_once,
                                 FixedDelay(self.options.lease_acquire_interval), self.runtime.clock,
                                 on_error=self._balance_failed)
        self._balance.start()

    # -- balancing ---------------------------------------------------------------------------------

    def _balance_failed(self, exc: BaseException) -> bool:
        log.warning("lease balancing for %s failed: %s", self.function.name, exc)
        return True

    async def _balance_once(self) -> bool:
        assert self.leases is not None
        all_leases = await self.leases.all_leases()
        chosen = select_leases_to_take(all_leases, self.instance, self.runtime.clock.now(),
                                       self.options.lease_expiration_interval)
        for lease in chosen:
            if self._stopping:
                break
            await self._take(lease)
        return False  # always wait the acquire interval

    async def _take(self, lease: Lease) -> None:
        assert self.leases is not None
        try:
            acquired = await self.leases.acquire(lease)
        except (LeaseLost, StorageError) as exc:
            log.debug("Lease %s could not be acquired: %s", lease.token, exc)
            return
        current = self.processors.get(acquired.token)
        if current is not None and not current.lost:
            current.lease = acquired  # ours already (renewals had lapsed): keep processing
            return
        log.info("Lease %s was acquired to start processing.", acquired.token)
        processor = LeaseProcessor(
            acquired, leases=self.leases, source=self._source,  # type: ignore[arg-type]
            options=self.options, function=self.function, invoker=self.runtime.invoker,
            clock=self.runtime.clock, checkpoint_on_failure=self.checkpoint_on_failure,
            on_lost=self._lost, faults=self.runtime.faults)
        self.processors[acquired.token] = processor
        processor.start()

    def _lost(self, token: str) -> None:
        processor = self.processors.pop(token, None)
        if processor is not None:
            task = asyncio.get_running_loop().create_task(processor.stop(release=False), name=f"lease-lost:{token}")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def _notify_all(self) -> None:
        for processor in list(self.processors.values()):
            processor.notify()

    def owned_tokens(self) -> list[str]:
        return sorted(self.processors, key=lambda t: (len(t), t))

    # -- stop --------------------------------------------------------------------------------------

    async def stop(self) -> None:
        self._stopping = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._balance is not None:
            await self._balance.stop()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        processors = list(self.processors.values())
        self.processors.clear()
        await asyncio.gather(*(p.stop(release=True) for p in processors), *self._closing, return_exceptions=True)
        log.debug("Stopped the listener for %s.", self._details())
