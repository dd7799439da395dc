"""Funchost's storage endpoints in the test's loop on free ports, on a ManualClock (SAS times).

`served` serves the embedded store; the blob API's tests also run it over accounts kept on
PostgreSQL (`served_backend` "postgres": the session's server, a fresh schema).
"""

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
def served_backend() -> str:
    return "embedded"


@pytest.fixture
async def served(tmp_path: Path, clock: ManualClock, served_backend: str,
                 request: pytest.FixtureRequest) -> AsyncIterator[ServedEndpoints]:
    settings: dict[str, str] = {}
    if served_backend == "postgres":
        settings = {"FUNCHOST_POSTGRES": request.getfixturevalue("postgres_dsn"),
                    "FUNCHOST_POSTGRES_SCHEMA": request.getfixturevalue("postgres_schema")}
    async with serve_endpoints(tmp_path / "data", clock=clock, settings=settings, backend=served_backend) as endpoints:
        yield endpoints
