"""A host using another app's storage endpoints (`peer.py`) says when they stop answering.

The queue listeners, bindings and SDK clients retry on their own (the SDKs' retry policies, the
listeners' back-off), so nothing is lost while the serving host is away; this watch only makes
the cause visible: one warning when the endpoints stop accepting connections, one line when
they are back (whichever host serves them then). A connection accepted is enough: a busy host
accepts before it answers.
"""

from __future__ import annotations

import asyncio
import logging

from funchost.clock import Clock
from funchost.runtime.contracts import Runtime
from funchost.storage_endpoints.peer import Peer
from funchost.storage_endpoints.server import SERVICES

log = logging.getLogger("funchost.storage")

WATCH_INTERVAL = 2.0  # seconds between checks
CONNECT_TIMEOUT = 2.0


class PeerWatch:
    """Found by the banner with `runtime.services.find(PeerWatch)`."""

    def __init__(self, runtime: Runtime, peer: Peer, clock: Clock, interval: float = WATCH_INTERVAL) -> None:
        self.runtime = runtime
        self.peer = peer
        self.clock = clock
        self.interval = interval
        self.answering = True
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await self.clock.sleep(self.interval)
            missing = [s for s in SERVICES if not await self._accepts(self.peer.ports[s])]
            if missing and self.answering:
                self.answering = False
                log.warning("The storage endpoints this host uses do not answer (%s): is the host serving them "
                            "stopped? Queues, blobs and tables wait for them; retrying every %gs.",
                            self.peer.describe(), self.interval, extra={"event": "StorageEndpointsGone"})
            elif not missing and not self.answering:
                self.answering = True
                log.warning("The storage endpoints on %s answer again.", self.peer.address,
                            extra={"event": "StorageEndpointsBack"})

    async def _accepts(self, port: int) -> bool:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(self.peer.address, port), CONNECT_TIMEOUT)
        except (TimeoutError, OSError):
            return False
        writer.close()
        return True

    def describe(self) -> str:
        return (f"Storage: {self.peer.describe()}, used as with --storage azure (queues, blobs and tables of "
                "its accounts; this app's other state stays in its own data folder)")

    async def stop(self) -> None:
        self.runtime.services.withdraw(self)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def start(runtime: Runtime, peer: Peer) -> PeerWatch:
    watch = PeerWatch(runtime, peer, runtime.clock)
    watch.start()
    runtime.services.provide(watch)
    return watch
