"""An embedded blob service on a ManualClock, as the host hands it out (Azure's rules first)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from funchost.clock import ManualClock
from funchost.storage.sqlite.blobs import SqliteBlobService
from funchost.storage.validation import ValidatingBlobService

START = datetime(2026, 12, 2, 15, 0, 0, tzinfo=UTC)


class CheckedBlobs(ValidatingBlobService):
    """The validated service, with the embedded store's change journal still reachable."""

    inner: SqliteBlobService

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def blobs(tmp_path: Path, clock: ManualClock) -> AsyncIterator[CheckedBlobs]:
    service = CheckedBlobs(SqliteBlobService(tmp_path / "acct", "devstoreaccount1", clock))
    await service.create_container("box")
    yield service
    await service.aclose()
