"""Shared pieces for the timer tests: a manual clock, embedded blob storage, a recording invoker."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.storage.sqlite.blobs import SqliteBlobService
from funchost.testing import settle  # noqa: F401  (re-exported for the tests here)

START = datetime(2025, 1, 6, 10, 0, 0, tzinfo=timezone.utc)  # a Monday




async def advance(clock: ManualClock, seconds: float) -> None:
    await clock.advance(seconds, settle=settle)


def timer_function(name: str = "tick", schedule: str = "0 */5 * * * *", **props: Any) -> FunctionSpec:
    trigger = BindingSpec("timer", "timerTrigger", "in", None, {"schedule": schedule, **props}, is_trigger=True)
    return FunctionSpec(
        name=name, func=lambda timer: None, trigger=trigger, bindings=(trigger,), parameters=(),
        return_binding=None, return_annotation=None, is_async=False, script_file="function_app.py",
        directory=".", source_line=7,
    )


@dataclass
class RecordingInvoker:
    """The FunctionInvoker contract: records each request; a run may take clock time."""

    clock: ManualClock
    durations: list[float] = field(default_factory=list)  # per invocation, in order; then 0
    requests: list[InvocationRequest] = field(default_factory=list)
    started_at: list[datetime] = field(default_factory=list)

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        self.requests.append(request)
        self.started_at.append(self.clock.now())
        duration = self.durations.pop(0) if self.durations else 0.0
        if duration:
            await self.clock.sleep(duration)
        return InvocationResult(request.invocation_id, request.function.name, True)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def blobs(tmp_path: Path, clock: ManualClock):  # type: ignore[no-untyped-def]
    service = SqliteBlobService(tmp_path / "storage" / "devstoreaccount1", "devstoreaccount1", clock)
    yield service
    await service.aclose()
