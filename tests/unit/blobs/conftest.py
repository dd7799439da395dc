"""An embedded blob service on a ManualClock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.storage.sqlite.blobs import SqliteBlobService

START = datetime(2026, 12, 2, 15, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def blobs(tmp_path: Path, clock: ManualClock) -> AsyncIterator[SqliteBlobService]:
    service = SqliteBlobService(tmp_path / "acct", "devstoreaccount1", clock)
    await service.create_container("box")
    yield service
    await service.aclose()
