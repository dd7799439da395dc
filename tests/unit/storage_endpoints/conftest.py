"""Funchost's storage endpoints in the test's loop on free ports, on a ManualClock (SAS times)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.endpoints import ServedEndpoints, serve_endpoints

from funchost.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def served(tmp_path: Path, clock: ManualClock) -> AsyncIterator[ServedEndpoints]:
    async with serve_endpoints(tmp_path / "data", clock=clock) as endpoints:
        yield endpoints
