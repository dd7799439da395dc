"""The PostgreSQL backend's foundation on a real server: settings, migrations, errors, clocks."""

from __future__ import annotations

import asyncio
import multiprocessing
from datetime import UTC, datetime

import pytest

from funchost.clock import ManualClock, SystemClock
from funchost.errors import ConfigError, StorageError
from funchost.settings.postgres import PostgresConfig, postgres_config
from funchost.storage.postgres.db import PgDatabase, ServerClock, server_time

pytestmark = pytest.mark.postgres

STEPS = ["CREATE TABLE things (id int PRIMARY KEY)", "ALTER TABLE things ADD COLUMN name text"]


def _migrate_in_process(dsn: str, schema: str) -> int:
    database = PgDatabase(PostgresConfig(dsn, schema))
    return database.migrate("things", STEPS)


def test_settings_name_the_missing_server_and_hide_the_password() -> None:
    with pytest.raises(ConfigError, match="FUNCHOST_POSTGRES"):
        postgres_config({})
    config = postgres_config({"FUNCHOST_POSTGRES": "postgresql://app:s3cret@db.internal:6432/jobs"})
    assert config.describe() == "db.internal:6432/jobs as app"
    assert "s3cret" not in config.describe()
    with pytest.raises(ConfigError, match="schema name"):
        postgres_config({"FUNCHOST_POSTGRES": "host=x", "FUNCHOST_POSTGRES_SCHEMA": "1; drop"})


def test_four_hosts_migrating_an_empty_schema_at_once_all_start(postgres_dsn: str, postgres_schema: str) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        versions = pool.starmap(_migrate_in_process, [(postgres_dsn, postgres_schema)] * 4)
    assert versions == [2, 2, 2, 2]
    database = PgDatabase(PostgresConfig(postgres_dsn, postgres_schema))
    assert database.migrate("things", STEPS) == 2
    assert database.run_sync(lambda c: c.execute("SELECT count(*) FROM things").fetchone()[0]) == 0


def test_a_schema_newer_than_this_host_knows_is_refused(postgres_dsn: str, postgres_schema: str) -> None:
    database = PgDatabase(PostgresConfig(postgres_dsn, postgres_schema))
    database.migrate("things", STEPS)
    with pytest.raises(ConfigError, match="newer than this funchost knows"):
        database.migrate("things", STEPS[:1])


async def test_a_failed_transaction_writes_nothing(postgres_dsn: str, postgres_schema: str) -> None:
    database = PgDatabase(PostgresConfig(postgres_dsn, postgres_schema))
    database.migrate("things", STEPS)

    def insert_then_fail(conn: object) -> None:
        conn.execute("INSERT INTO things(id) VALUES (1)")  # type: ignore[attr-defined]
        conn.execute("INSERT INTO things(id) VALUES (1)")  # type: ignore[attr-defined]

    with pytest.raises(StorageError):
        await database.run(insert_then_fail)
    async with database.connection() as conn:
        assert (await (await conn.execute("SELECT count(*) FROM things")).fetchone())[0] == 0
    await database.aclose()


async def test_an_unreachable_server_is_a_retryable_error_naming_it() -> None:
    config = PostgresConfig("host=127.0.0.1 port=1 user=app password=s3cret connect_timeout=2", "funchost",
                            "--postgres")
    database = PgDatabase(config)
    with pytest.raises(StorageError) as caught:
        await database.run(lambda c: None)
    assert caught.value.status == 503
    assert "127.0.0.1:1" in str(caught.value) and "--postgres" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    await database.aclose()


async def test_clocks_use_the_server_unless_time_is_driven_by_hand(postgres_dsn: str, postgres_schema: str) -> None:
    database = PgDatabase(PostgresConfig(postgres_dsn, postgres_schema))
    manual = ManualClock(datetime(2024, 5, 1, tzinfo=UTC))
    assert server_time(manual) == manual.now().timestamp()
    assert server_time(SystemClock()) is None
    clock = ServerClock(database)
    assert server_time(clock) is None
    assert abs(clock.now().timestamp() - datetime.now(UTC).timestamp()) < 5  # same machine, same clock
    await asyncio.sleep(0)
    await database.aclose()
