"""Fixtures of the pipeline tests: the reference app in the in-process host (SQLite jobs DB by
default; `pipeline_pg` runs the same app on PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from tests.support.pipeline import APP_DIR, Pipeline, settings
from tests.support.postgres_fixtures import _postgres_server, postgres_dsn, postgres_schema  # noqa: F401

from funchost.testing import HostHarness

Factory = Callable[..., Awaitable[Pipeline]]


def postgres_url(dsn: str) -> str:
    """`IMPORTS_DB` takes a postgresql:// URL; the test server hands out a keyword DSN."""
    if dsn.startswith(("postgres://", "postgresql://")):
        return dsn
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(dsn)
    user = parts.get("user", "postgres")
    return f"postgresql://{user}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{parts.get('dbname', 'postgres')}"


@pytest.fixture
async def start_pipeline(funchost_app: Callable[..., Awaitable[HostHarness]]) -> AsyncIterator[Factory]:
    started: list[Pipeline] = []

    async def start(**extra: str) -> Pipeline:
        host = await funchost_app(APP_DIR, settings=settings(**extra))
        pipeline = await Pipeline(host).start()
        started.append(pipeline)
        return pipeline

    yield start
    for pipeline in started:
        await pipeline.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def pipeline(start_pipeline: Factory) -> Pipeline:
    """The app on SQLite."""
    return await start_pipeline()


@pytest.fixture
async def any_pipeline(start_pipeline: Factory, store_kind: str, request: pytest.FixtureRequest) -> Pipeline:
    """The app on SQLite and on PostgreSQL (store-dependent rules)."""
    if store_kind == "postgres":
        dsn = postgres_url(request.getfixturevalue("postgres_dsn"))
        schema = request.getfixturevalue("postgres_schema")
        return await start_pipeline(IMPORTS_DB=dsn, IMPORTS_DB_SCHEMA=schema)
    return await start_pipeline()
