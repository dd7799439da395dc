"""The listener of a durable trigger (the extension's DurableTaskListener).

Every orchestrator, activity and entity function has one. The work itself comes from the task
hub through the durable service's dispatchers, which are shared by all of them: the first
listener to start starts them (creating the hub's storage), the last to stop stops them. When
the hub cannot be opened, the start raises and the host puts the function in error and retries.
"""

from __future__ import annotations

from funchost.durable.service import DurableService
from funchost.errors import FunchostError
from funchost.indexing.spec import FunctionSpec
from funchost.runtime.contracts import Runtime


class DurableTaskListener:
    def __init__(self, function: FunctionSpec, runtime: Runtime) -> None:
        self.function = function
        self.runtime = runtime
        self._service: DurableService | None = None

    async def start(self) -> None:
        service = self.runtime.services.find(DurableService)
        if service is None:
            raise FunchostError("the Durable Functions service is not running in this host")
        await service.listener_started(self.function.name)
        self._service = service

    async def stop(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            await service.listener_stopped(self.function.name)
