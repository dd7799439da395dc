"""The queue's per-message statements on asyncpg (`storage.postgres.hot`), without a server: the
placeholders rewritten, the connection arguments libpq's (or none, where asyncpg could reach
another server or session), driver errors as the ports' errors, an unreachable server a 503 that
names it and hides the password."""

from __future__ import annotations

import re

import asyncpg
import pytest

from funchost.errors import StorageError
from funchost.settings.postgres import PostgresConfig
from funchost.storage.postgres import queue_sql
from funchost.storage.postgres.hot import HotStatements, asyncpg_arguments, numbered, translate_asyncpg

CONFIG = PostgresConfig("host=db.internal port=6432 user=app password=s3cret dbname=jobs", "tenant_a")


def test_placeholders_become_numbered_parameters_once_per_name() -> None:
    text, names = numbered("SELECT %(a)s, %(b)s::text[], %(a)s, '100%%' WHERE x = %(c)s")
    assert text == "SELECT $1, $2::text[], $1, '100%' WHERE x = $3"
    assert names == ("a", "b", "c")


def test_every_per_message_statement_is_rewritten_without_a_placeholder_left() -> None:
    for statement in (queue_sql.RECEIVE, queue_sql.PUT, queue_sql.UPDATE, queue_sql.DELETE, queue_sql.CLASSIFY):
        text, names = numbered(statement)
        assert "%(" not in text and names
        assert set(re.findall(r"\$\d+", text)) == {f"${i + 1}" for i in range(len(names))}


def test_key_value_and_url_strings_connect_to_the_same_server_and_session() -> None:
    arguments = asyncpg_arguments(CONFIG, "host", environ={})
    assert arguments is not None
    assert (arguments["host"], arguments["port"], arguments["user"], arguments["password"], arguments["database"]) \
        == ("db.internal", 6432, "app", "s3cret", "jobs")
    settings = arguments["server_settings"]
    assert settings["search_path"] == "tenant_a"
    assert {settings["idle_in_transaction_session_timeout"], settings["lock_timeout"]} == {"10s", "15s"}
    url = asyncpg_arguments(PostgresConfig("postgresql://app:s3cret@db.internal:6432/jobs?sslmode=require",
                                           "tenant_a"), "host", environ={})
    assert url is not None
    assert (url["host"], url["port"], url["database"], url["ssl"]) == ("db.internal", 6432, "jobs", "require")
    several = asyncpg_arguments(PostgresConfig("host=a,b port=5432,5433 dbname=jobs"), "host", environ={})
    assert several is not None and (several["host"], several["port"]) == (["a", "b"], [5432, 5433])


@pytest.mark.parametrize("conninfo", [
    "host=db options='-c work_mem=64MB'",          # session settings asyncpg would not apply
    "host=db sslmode=verify-full sslrootcert=/etc/ca.pem",  # certificate files
    "service=jobs",                                 # pg_service.conf
    "hostaddr=10.0.0.5 dbname=jobs",
])
def test_what_asyncpg_cannot_honour_stays_on_psycopg(conninfo: str) -> None:
    assert asyncpg_arguments(PostgresConfig(conninfo), "host", environ={}) is None


def test_a_libpq_only_environment_variable_keeps_the_statements_on_psycopg() -> None:
    assert asyncpg_arguments(CONFIG, "host", environ={"PGSERVICE": "jobs"}) is None
    assert asyncpg_arguments(CONFIG, "host", environ={"PGOPTIONS": "-c work_mem=1MB"}) is None
    assert asyncpg_arguments(CONFIG, "host", environ={"PGUSER": "other"}) is not None  # asyncpg reads it too


def test_driver_errors_become_the_ports_errors() -> None:
    busy = [asyncpg.exceptions.QueryCanceledError("canceling statement due to lock timeout"),
            asyncpg.exceptions.LockNotAvailableError("could not obtain lock"),
            asyncpg.exceptions.SerializationError("could not serialize"),
            asyncpg.exceptions.DeadlockDetectedError("deadlock detected"),
            asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command")]
    for exc in busy:
        error = translate_asyncpg(CONFIG, exc)
        assert error is not None and (error.status, error.code) == (503, "ServerBusy"), exc
    lost = [asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
            ConnectionRefusedError(111, "Connect call failed"), TimeoutError()]
    for exc in lost:
        error = translate_asyncpg(CONFIG, exc)
        assert error is not None and error.status == 503 and "db.internal:6432" in str(error), exc
    bug = translate_asyncpg(CONFIG, asyncpg.exceptions.UndefinedColumnError('column "x" does not exist'))
    assert bug is not None and (bug.status, bug.code) == (500, "InternalError")
    assert translate_asyncpg(CONFIG, ValueError("not the driver's")) is None


async def test_an_unreachable_server_is_a_retryable_error_naming_it_without_the_password() -> None:
    config = PostgresConfig("host=127.0.0.1 port=1 user=app password=s3cret connect_timeout=2", "funchost",
                            "--postgres")
    hot = HotStatements.for_config(config, "host")
    assert hot is not None
    with pytest.raises(StorageError) as caught:
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert caught.value.status == 503
    assert "127.0.0.1:1" in str(caught.value) and "--postgres" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    await hot.aclose()

