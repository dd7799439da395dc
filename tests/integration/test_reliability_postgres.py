"""The reliability store tests, run again on PostgreSQL (same test code as on SQLite).

Also checks what only PostgreSQL does: several hosts opening (migrating) the same database at
once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.reliability import SteppingNow, make_store
from tests.unit.reliability.test_store_bounded_wait import (  # noqa: F401
    test_a_write_blocked_by_another_writer_of_this_process_gives_up,
    test_outside_the_block_the_wait_is_not_bounded,
)
from tests.unit.reliability.test_store_dispatcher import *  # noqa: F403
from tests.unit.reliability.test_store_effects_watchdog import *  # noqa: F403
from tests.unit.reliability.test_store_intake import *  # noqa: F403
from tests.unit.reliability.test_store_lease import *  # noqa: F403
from tests.unit.reliability.test_store_outbox import *  # noqa: F403
from tests.unit.reliability.test_store_quarantine import *  # noqa: F403

from funchost.reliability.jobstore import JobStore, open_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture
def now() -> SteppingNow:
    return SteppingNow()


@pytest.fixture(params=["postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_target(postgres_dsn: str, postgres_schema: str) -> tuple[str, str | None]:
    return postgres_dsn, postgres_schema


@pytest.fixture
def store(store_kind: str, store_target: tuple[str, str | None], tmp_path: Path, now: SteppingNow) -> Iterator[JobStore]:
    dsn, schema = store_target
    s = make_store(store_kind, tmp_path=tmp_path, now=now, dsn=dsn, schema=schema)
    yield s
    s.close()


def test_several_hosts_open_the_same_database_at_once(postgres_dsn: str, postgres_schema: str) -> None:
    errors: list[Exception] = []
    versions: list[int] = []

    def open_one() -> None:
        try:
            store = open_postgres(postgres_dsn, schema=postgres_schema)
            versions.append(store.schema_version)
            store.close()
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and versions == [1, 1, 1, 1]


def test_hosts_racing_to_create_a_new_schema_all_succeed(postgres_dsn: str) -> None:
    """CREATE SCHEMA IF NOT EXISTS is not atomic in PostgreSQL: hosts starting together on a new
    schema collide on the catalog's unique index; every one of them must still open the store."""
    import uuid

    import psycopg
    from psycopg import sql

    errors: list[Exception] = []
    names = ["t_race_" + uuid.uuid4().hex[:12] for _ in range(15)]
    try:
        for name in names:
            barrier = threading.Barrier(6)

            def open_one(schema: str = name, gate: threading.Barrier = barrier) -> None:
                try:
                    gate.wait(timeout=30)
                    open_postgres(postgres_dsn, schema=schema).close()
                except Exception as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=open_one) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
        assert errors == []
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for name in names:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def test_timestamps_are_timestamptz(store: JobStore) -> None:
    with store.db.transaction() as tx:
        row = tx.one("SELECT data_type FROM information_schema.columns WHERE table_name = 'jobs'"
                     " AND column_name = 'lease_until' AND table_schema = current_schema()")
    assert row is not None and row["data_type"] == "timestamp with time zone"
