"""pytest fixtures for PostgreSQL (register with `pytest_plugins` in the root conftest).

- `postgres_dsn` (session): DSN of the throwaway server (or FUNCHOST_TEST_POSTGRES_DSN).
  When PostgreSQL cannot be started, every test that uses it fails with the reason; it is
  never skipped.
- `postgres_schema`: a fresh, empty PostgreSQL schema name for one test, dropped afterwards with
  the schemas named after it (`<schema>_...`: the reference pipeline's `<schema>_imports`, the blob
  accounts' `<schema>__<account>`).
- `postgres_server`: the session's server itself, for tests that restart it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from tests.support.postgres import PostgresServer, PostgresUnavailable, start_postgres


@pytest.fixture(scope="session")
def _postgres_server() -> Iterator[PostgresServer | PostgresUnavailable]:
    try:
        server: PostgresServer | PostgresUnavailable = start_postgres()
    except PostgresUnavailable as exc:
        server = exc
    yield server
    if isinstance(server, PostgresServer):
        server.stop()


@pytest.fixture
def postgres_dsn(_postgres_server: PostgresServer | PostgresUnavailable) -> str:
    if isinstance(_postgres_server, PostgresUnavailable):
        pytest.fail(f"PostgreSQL is required for this test and could not be started: {_postgres_server}",
                    pytrace=False)
    return _postgres_server.dsn


@pytest.fixture
def postgres_server(postgres_dsn: str, _postgres_server: PostgresServer | PostgresUnavailable) -> PostgresServer:
    assert isinstance(_postgres_server, PostgresServer)  # postgres_dsn failed the test otherwise
    return _postgres_server


@pytest.fixture
def postgres_schema(postgres_dsn: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = "t_" + uuid.uuid4().hex[:16]
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        # the schema and those named after it (`<schema>_imports`, `<schema>__<account>`)
        found = [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR "
                                            "starts_with(nspname, %s)", (name, name + "_"))]
        for schema in found:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
