"""A runtime around the queue listener with a ManualClock and a fake invoker (the Protocol, faked)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.support.runtime import make_test_runtime

from funchost.clock import ManualClock
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.runtime.contracts import Runtime
from funchost.settings.app_settings import AppSettings
from funchost.settings.host_json import HostOptions
from funchost.triggers.queue import SUPPORT
from funchost.triggers.queue.options import QueuesOptions


@dataclass
class FakeInvoker:
    """Records requests; `behaviour(request)` may be async and returns True for success."""

    behaviour: Callable[[InvocationRequest], object] = lambda request: True
    requests: list[InvocationRequest] = field(default_factory=list)
    running: int = 0
    max_running: int = 0

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        self.requests.append(request)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            outcome = self.behaviour(request)
            if asyncio.iscoroutine(outcome):
                outcome = await outcome
        finally:
            self.running -= 1
        return InvocationResult(request.invocation_id, request.function.name, bool(outcome))

    def bodies(self) -> list[str]:
        return [r.trigger_value.value for r in self.requests]


def queue_function(queue: str = "work", name: str = "worker", data_type: str | None = None) -> FunctionSpec:
    trigger = BindingSpec("msg", "queueTrigger", "in", data_type,
                          {"queueName": queue, "connection": "AzureWebJobsStorage"}, is_trigger=True)
    return FunctionSpec(name=name, func=lambda msg: None, trigger=trigger, bindings=(trigger,), parameters=(),
                        return_binding=None, return_annotation=None, is_async=False,
                        script_file="function_app.py", directory=".", source_line=1)


@dataclass
class QueueRig:
    clock: ManualClock
    runtime: Runtime
    invoker: FakeInvoker

    @property
    def service(self):  # type: ignore[no-untyped-def]
        return self.runtime.storage.queues()

    def listener(self, function: FunctionSpec | None = None, seed: int = 7):  # type: ignore[no-untyped-def]
        listener = SUPPORT.create_listener(function or queue_function(), self.runtime)
        listener.strategy._rng = random.Random(seed)  # deterministic back-off draws
        return listener

    async def settle(self) -> None:
        for _ in range(3):
            for _ in range(20):
                await asyncio.sleep(0)
            await asyncio.sleep(0.002)

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds, settle=self.settle)


def make_runtime(tmp_path: Path, clock: ManualClock, invoker: FakeInvoker, *,
                 options: QueuesOptions | None = None, settings: dict[str, str] | None = None,
                 data: str = "data") -> Runtime:
    return make_test_runtime(tmp_path, tmp_path / data, clock, invoker, settings=AppSettings(settings or {}, environ={}),
                             options=HostOptions(extensions={"queues": options or QueuesOptions()}))


@pytest.fixture
async def rig_factory(tmp_path: Path) -> AsyncIterator[Callable[..., QueueRig]]:
    made: list[QueueRig] = []

    def make(*, options: QueuesOptions | None = None, settings: dict[str, str] | None = None,
             behaviour: Callable[[InvocationRequest], object] | None = None) -> QueueRig:
        clock = ManualClock()
        invoker = FakeInvoker(behaviour) if behaviour else FakeInvoker()
        rig = QueueRig(clock, make_runtime(tmp_path, clock, invoker, options=options, settings=settings), invoker)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        await rig.runtime.storage.aclose()
