"""pytest plugin (entry point `funchost`): the `funchost_app` factory and `manual_clock` fixtures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.testing.harness import HostHarness


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def funchost_app(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[HostHarness]]]:
    """Start function apps in-process: `host = await funchost_app(app_dir, settings={...})`.

    Every harness started through the factory is stopped at the end of the test.
    """
    started: list[HostHarness] = []

    async def start(app_dir: Path | str, **kwargs: Any) -> HostHarness:
        kwargs.setdefault("data_dir", tmp_path / f"data{len(started)}")
        harness = HostHarness(app_dir, **kwargs)
        await harness.start()
        started.append(harness)
        return harness

    yield start
    for harness in reversed(started):
        await harness.stop()
