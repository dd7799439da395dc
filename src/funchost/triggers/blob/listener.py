"""A blob-triggered function's listener: its registration with the host's shared blob listeners.

Starting never waits for the container: as the extension's strategies do, discovery lists a missing
container as empty and keeps polling, so a function whose container is created later starts
processing then (no start failure, nothing for the host to retry).
"""

from __future__ import annotations

from funchost.bindings.blob_sdk_reach import warn_if_unreachable
from funchost.indexing.spec import FunctionSpec
from funchost.runtime.contracts import Runtime
from funchost.triggers.blob.executor import BlobTriggerExecutor
from funchost.triggers.blob.hub import BlobTriggerHub
from funchost.triggers.blob.messages import function_id
from funchost.triggers.blob.options import SOURCE_POLLING, trigger_source
from funchost.triggers.blob.paths import parse_trigger_path
from funchost.triggers.blob.processor import Registration
from funchost.triggers.blob.receipts import BlobReceiptManager
from funchost.triggers.blob.trigger_data import BlobTarget, value_kind


def blob_target(function: FunctionSpec, runtime: Runtime, hub: BlobTriggerHub) -> BlobTarget:
    connection = function.trigger.get("connection")
    return BlobTarget(
        function=function,
        pattern=parse_trigger_path(function.trigger.get("path")),
        service=runtime.storage.blobs(connection),
        service_url=hub.service_url(connection),
        connection=connection,
        source=trigger_source(function.trigger.get("source")),
        kind=value_kind(function),
    )


class BlobTriggerListener:
    def __init__(self, function: FunctionSpec, runtime: Runtime) -> None:
        self.function = function
        self.runtime = runtime
        self.hub: BlobTriggerHub | None = None

    async def start(self) -> None:
        runtime = self.runtime
        hub = BlobTriggerHub.of(runtime)
        target = blob_target(self.function, runtime, hub)
        fid = function_id(self.function.name)
        registration = Registration(target, runtime.storage.queues(target.connection), hub.rediscover)
        executor = None
        if target.source == SOURCE_POLLING:
            executor = BlobTriggerExecutor(target, fid, runtime.host_id, BlobReceiptManager(runtime.storage.blobs(None)),
                                           hub.host_queues, hub.host_queue, hub.options.message_encoding,
                                           runtime.faults)
        await hub.add(fid, registration, executor)
        self.hub = hub
        warn_if_unreachable(self.function, runtime)  # SDK-typed parameters on the embedded store

    async def stop(self) -> None:
        if self.hub is not None:
            await self.hub.stop()
