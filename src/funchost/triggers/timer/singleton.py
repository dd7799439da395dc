"""Singleton listener lock (SingletonListener + BlobLeaseDistributedLockManager, azure-semantics 4.6).

Before a timer listener starts, the host takes a blob lease on
``azure-webjobs-hosts/locks/{hostId}/Host.Functions.{name}.Listener`` for `listenerLockPeriod`
(60 s; 15..60) and renews it at half the period. A host that cannot get the lease does not
start the timer and tries again every `listenerLockRecoveryPollingInterval` (1 min). Stopping
stops the inner listener first, then releases the lease. So with several hosts on one storage
account only one runs each timer, and when it dies without releasing, another takes over within
one lease period plus one polling interval.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from funchost.clock import Clock
from funchost.errors import (
    ConfigError,
    LeaseConflict,
    PreconditionFailed,
    ResourceConflict,
    ResourceNotFound,
    StorageError,
)
from funchost.listeners.renewal import Renewer
from funchost.runtime.contracts import Listener
from funchost.settings.sections import SectionReader
from funchost.storage.blobs import BlobService
from funchost.triggers.timer.monitor import HOSTS_CONTAINER, timer_name

log = logging.getLogger("funchost.timer")

MIN_LEASE, MAX_LEASE = 15.0, 60.0
# TimeSpan.MaxValue (10675199.02:48:05.4775807) disables recovery polling.
_TIMESPAN_MAX_DAYS = 10675199


@dataclass(frozen=True)
class SingletonOptions:
    """host.json ``singleton`` (SingletonOptions); durations in seconds."""

    lock_period: float = 15.0
    listener_lock_period: float = 60.0
    lock_acquisition_timeout: float | None = None  # TimeSpan.MaxValue
    lock_acquisition_polling_interval: float = 5.0
    listener_lock_recovery_polling_interval: float | None = 60.0  # None = never retry


def parse_singleton_options(raw: Mapping[str, Any] | None, warnings: list[str] | None = None) -> SingletonOptions:
    """host.json `singleton`; unknown keys go to `warnings` (host.json loading reports them once)."""
    reader = SectionReader(dict(raw or {}), "host.json: singleton", warnings=[] if warnings is None else warnings)
    defaults = SingletonOptions()
    lock_period = reader.timespan("lockPeriod", defaults.lock_period, minimum=MIN_LEASE, maximum=MAX_LEASE)
    listener_period = reader.timespan("listenerLockPeriod", defaults.listener_lock_period,
                                      minimum=MIN_LEASE, maximum=MAX_LEASE)
    timeout = reader.timespan("lockAcquisitionTimeout", None)
    if timeout is not None and timeout <= 0:
        raise ConfigError("must be greater than zero", path="host.json: singleton.lockAcquisitionTimeout")
    polling = reader.timespan("lockAcquisitionPollingInterval", defaults.lock_acquisition_polling_interval,
                              minimum=0.5)
    recovery = reader.timespan("listenerLockRecoveryPollingInterval",
                               defaults.listener_lock_recovery_polling_interval)
    if recovery is not None and recovery >= _TIMESPAN_MAX_DAYS * 86400:
        recovery = None
    elif recovery is not None and recovery < MIN_LEASE:
        raise ConfigError(f"must be at least {MIN_LEASE:g} seconds (or TimeSpan.MaxValue to disable), "
                          f"got {reader.raw('listenerLockRecoveryPollingInterval')!r}",
                          path="host.json: singleton.listenerLockRecoveryPollingInterval")
    reader.finish()
    assert lock_period is not None and listener_period is not None and polling is not None  # defaults given
    return SingletonOptions(lock_period, listener_period, timeout, polling, recovery)


def listener_lock_name(host_id: str, function_name: str) -> str:
    return f"locks/{host_id}/{timer_name(function_name)}.Listener"


class SingletonListener:
    """Runs the listener made by `factory` only while this process holds the listener lock.

    When a renewal finds the lease lost (another host took it after an outage), the inner listener
    is stopped and this host goes back to recovery polling; a fresh inner listener is created on
    the next acquisition.
    """

    def __init__(
        self,
        factory: Callable[[], Listener],
        blobs: BlobService,
        host_id: str,
        function_name: str,
        options: SingletonOptions,
        clock: Clock,
    ) -> None:
        self._factory = factory
        self._blobs = blobs
        self._clock = clock
        self._options = options
        self.lock_id = f"{timer_name(function_name)}.Listener"
        self.blob_name = listener_lock_name(host_id, function_name)
        self._period = int(options.listener_lock_period)
        self._inner: Listener | None = None
        self._lease_id: str | None = None
        self._renewer: Renewer | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._lost_handler: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._state = asyncio.Lock()

    @property
    def is_listening(self) -> bool:
        return self._inner is not None

    async def start(self) -> None:
        async with self._state:
            if await self._try_acquire():
                await self._start_inner()
                return
        log.info("Unable to acquire Singleton lock (%s).", self.lock_id)
        self._start_recovery()

    async def stop(self) -> None:
        self._stopping.set()
        for task in (self._recovery, self._lost_handler):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        async with self._state:
            await self._stop_inner()
            await self._release()

    # --- lock ---------------------------------------------------------------------------------

    async def _try_acquire(self) -> bool:
        try:
            self._lease_id = await self._acquire()
        except LeaseConflict:
            return False
        except StorageError:
            log.warning("acquiring singleton lock %s failed", self.lock_id, exc_info=True)
            return False
        log.debug("Singleton lock acquired (%s)", self.lock_id)
        return True

    async def _acquire(self) -> str:
        try:
            return await self._blobs.acquire_lease(HOSTS_CONTAINER, self.blob_name, duration=self._period)
        except ResourceNotFound:
            # First use: create the lock blob (BlobLeaseDistributedLockManager does the same).
            await self._blobs.create_container(HOSTS_CONTAINER, exist_ok=True)
            try:
                await self._blobs.upload_blob(HOSTS_CONTAINER, self.blob_name, b"", overwrite=False,
                                              metadata={"FunctionInstance": f"pid-{os.getpid()}"})
            except (ResourceConflict, PreconditionFailed):
                pass  # another host created it meanwhile
            return await self._blobs.acquire_lease(HOSTS_CONTAINER, self.blob_name, duration=self._period)

    async def _renew(self) -> bool:
        lease_id = self._lease_id
        if lease_id is None:
            return False
        try:
            await self._blobs.renew_lease(HOSTS_CONTAINER, self.blob_name, lease_id)
        except (LeaseConflict, ResourceNotFound):
            log.warning("Singleton lock %s was lost; stopping the listener until it can be acquired again",
                        self.lock_id)
            self._lost_handler = asyncio.get_running_loop().create_task(self._on_lost(lease_id))
            return False
        return True

    async def _release(self) -> None:
        if self._renewer is not None:
            await self._renewer.stop()
            self._renewer = None
        lease_id, self._lease_id = self._lease_id, None
        if lease_id is None:
            return
        try:
            await self._blobs.release_lease(HOSTS_CONTAINER, self.blob_name, lease_id)
        except StorageError:
            log.debug("releasing singleton lock %s failed (already lost)", self.lock_id, exc_info=True)

    # --- inner listener ------------------------------------------------------------------------

    async def _start_inner(self) -> None:
        inner = self._factory()
        try:
            await inner.start()
        except BaseException:
            await self._release()
            raise
        self._inner = inner
        self._renewer = Renewer(f"singleton:{self.lock_id}", self._renew, self._clock,
                                interval=self._period / 2, minimum=1.0).start()

    async def _stop_inner(self) -> None:
        inner, self._inner = self._inner, None
        if inner is not None:
            await inner.stop()

    async def _on_lost(self, lease_id: str) -> None:
        async with self._state:
            if self._lease_id != lease_id or self._stopping.is_set():
                return
            self._lease_id = None
            self._renewer = None  # it stopped itself
            await self._stop_inner()
        self._start_recovery()

    def _start_recovery(self) -> None:
        interval = self._options.listener_lock_recovery_polling_interval
        if interval is None or self._stopping.is_set():
            return
        self._recovery = asyncio.get_running_loop().create_task(self._recover(interval),
                                                                name=f"singleton-recovery:{self.lock_id}")

    async def _recover(self, interval: float) -> None:
        while not self._stopping.is_set():
            if await self._clock.wait(self._stopping, interval):
                return
            async with self._state:
                if self._stopping.is_set():
                    return
                if await self._try_acquire():
                    log.info("Singleton lock acquired (%s); starting the listener", self.lock_id)
                    try:
                        await self._start_inner()
                    except Exception:
                        # _start_inner released the lock; keep polling rather than give up for good.
                        log.exception("listener of %s failed to start; retrying at the next poll",
                                      self.lock_id)
                        continue
                    return
