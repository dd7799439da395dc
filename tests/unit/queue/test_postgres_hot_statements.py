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
    confused = translate_asyncpg(CONFIG, asyncpg.exceptions.InternalClientError("another operation is in progress"))
    assert confused is not None and confused.status == 503


async def test_an_unreachable_server_is_a_retryable_error_naming_it_without_the_password() -> None:
    config = PostgresConfig("host=127.0.0.1 port=1 user=app password=s3cret connect_timeout=2", "funchost",
                            "--postgres")
    hot = HotStatements.for_config(config, "host")
    assert hot is not None
    hot.connection_wait = 0.5  # refused all along: given up after the wait, as psycopg's pool does
    with pytest.raises(StorageError) as caught:
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert caught.value.status == 503
    assert "127.0.0.1:1" in str(caught.value) and "--postgres" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    await hot.aclose()



class _FakeConnection:
    """An asyncpg connection whose statements fail with `failures` in turn, then answer [(1,)]."""

    def __init__(self, failures: list[BaseException], *, closed: bool = False) -> None:
        self.failures = failures
        self.terminated = False
        self.closed = closed  # the server ended it

    async def fetch(self, text: str, *args: object) -> list[tuple[int]]:
        if self.failures:
            raise self.failures.pop(0)
        return [(1,)]

    def is_closed(self) -> bool:
        return self.terminated or self.closed

    def is_in_transaction(self) -> bool:
        return False

    def terminate(self) -> None:
        self.terminated = True


def _connecting(monkeypatch: pytest.MonkeyPatch, outcomes: list[object]) -> list[object]:
    """asyncpg.connect raising or returning `outcomes` in turn; the reconnect delays made zero."""
    monkeypatch.setattr("funchost.storage.postgres.hot._RECONNECT_DELAYS", (0.0,))
    made: list[object] = []

    async def connect(**arguments: object) -> object:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        made.append(outcome)
        return outcome

    monkeypatch.setattr(asyncpg, "connect", connect)
    return made


async def test_a_server_shutting_down_or_starting_is_waited_for_then_connected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _FakeConnection([])
    made = _connecting(monkeypatch, [asyncpg.exceptions.CannotConnectNowError("the database system is shutting down"),
                                     ConnectionRefusedError(111, "Connect call failed"),
                                     asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
                                     conn])
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None
    assert await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"}) == [(1,)]
    assert made == [conn]


async def test_a_refused_login_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes: list[object] = [asyncpg.exceptions.InvalidPasswordError("password authentication failed"),
                              _FakeConnection([])]
    _connecting(monkeypatch, outcomes)
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None
    with pytest.raises(StorageError, match="password authentication failed"):
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert len(outcomes) == 1  # one attempt


async def test_a_server_away_past_the_wait_is_a_retryable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _connecting(monkeypatch, [ConnectionRefusedError(111, "Connect call failed")] * 1000)
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None
    hot.connection_wait = 0.0
    with pytest.raises(StorageError) as caught:
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert caught.value.status == 503 and "db.internal:6432" in str(caught.value)


@pytest.mark.parametrize("failure", [
    asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command"),
    asyncpg.exceptions.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
])
async def test_a_session_a_shutdown_or_the_protocol_ended_is_not_used_again(
        monkeypatch: pytest.MonkeyPatch, failure: BaseException) -> None:
    first, second = _FakeConnection([failure]), _FakeConnection([])
    _connecting(monkeypatch, [first, second])
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None
    with pytest.raises(StorageError) as caught:
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert caught.value.status == 503  # a queue listener backs off and polls again; it does not stop
    assert first.terminated and first not in hot._idle
    assert await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"}) == [(1,)]
    assert hot._idle == [second]


async def test_a_statement_the_server_refused_keeps_its_session(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _FakeConnection([asyncpg.exceptions.UndefinedColumnError('column "x" does not exist')])
    _connecting(monkeypatch, [conn])
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None
    with pytest.raises(StorageError) as caught:
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert caught.value.status == 500
    assert hot._idle == [conn] and not conn.terminated


async def test_an_idle_connection_the_server_ended_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    ended, fresh = _FakeConnection([asyncpg.InterfaceError("connection is closed")], closed=True), _FakeConnection([])
    _connecting(monkeypatch, [fresh])
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None
    hot._idle.append(ended)
    assert await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"}) == [(1,)]
    assert hot._idle == [fresh] and ended.terminated


async def test_a_connection_closed_under_a_statement_is_a_retryable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _FakeConnection([])
    _connecting(monkeypatch, [conn])
    hot = HotStatements.for_config(CONFIG, "host")
    assert hot is not None

    async def closed_under_it(text: str, *args: object) -> list[tuple[int]]:
        conn.closed = True
        raise asyncpg.InterfaceError("connection is closed")

    conn.fetch = closed_under_it  # type: ignore[method-assign]
    with pytest.raises(StorageError) as caught:
        await hot.rows(queue_sql.EXISTS, {"a": "devstoreaccount1", "n": "q"})
    assert caught.value.status == 503 and "db.internal:6432" in str(caught.value)
    assert conn not in hot._idle
