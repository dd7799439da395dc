"""Fixtures of the reliability tests. `store` is parametrized by `store_kind` (sqlite here; the
PostgreSQL integration module re-runs the same store tests with `postgres`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:  # `tests.support` is imported by name
    sys.path.insert(0, str(_ROOT))

from tests.support.postgres_fixtures import _postgres_server, postgres_dsn, postgres_schema  # noqa: E402,F401
from tests.support.reliability import SteppingNow, make_store  # noqa: E402

from funchost.reliability.jobstore import JobStore  # noqa: E402


@pytest.fixture
def now() -> SteppingNow:
    return SteppingNow()


@pytest.fixture(params=["sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_target(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """(sqlite path or postgres DSN, postgres schema) of the test's store."""
    if store_kind == "postgres":
        return request.getfixturevalue("postgres_dsn"), request.getfixturevalue("postgres_schema")
    return str(tmp_path / "jobs.db"), None


@pytest.fixture
def store(store_kind: str, store_target: tuple[str, str | None], tmp_path: Path, now: SteppingNow) -> Iterator[JobStore]:
    target, schema = store_target
    s = make_store(store_kind, tmp_path=tmp_path, now=now, dsn=target, schema=schema)
    yield s
    s.close()
