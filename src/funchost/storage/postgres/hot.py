"""The queue's per-message statements (receive, delete, put, update) on asyncpg.

A queue drain on PostgreSQL spends its event loop on two statements per batch: the receive and
the grouped delete. Through psycopg's async connection each costs the host about 80-90 µs of CPU
more than the same prepared statement through asyncpg (the same two statements per 16 messages:
22.5 against 10-13 µs per message, benchmarks/README.md "Tenth pass"), and the loop is what
bounds a drain. So these statements go through a few asyncpg connections of their own; every other
statement, the transactions, the sync connections and LISTEN stay on psycopg (`db.PgDatabase`).

They are used only where asyncpg connects exactly as libpq would (`asyncpg_arguments`): a
connection string of host, port, user, password, dbname, passfile and sslmode only (no
certificate files, no `options`), no libpq-only environment variable (PGSERVICE, PGOPTIONS,
PGHOSTADDR, the certificate files...), asyncpg installed. Otherwise these statements stay on
psycopg, with the same results. Statements are written once with psycopg's `%(name)s`
placeholders and rewritten to `$n` here (`numbered`).

Errors become the ports' `StorageError` tree as `db.translate` makes them from psycopg's: a lost
or refused connection is `unreachable` (503), a cancelled, locked-out, serialization or shutdown
failure ServerBusy (503), anything else InternalError (500). A connection is used again only
after a statement the server refused on a healthy session; one the server ended, or that a shutdown
or a confused protocol left behind, is dropped and the next statement opens a new one. While the
server is away (refused, shutting down, starting), opening one is tried again for up to
`CONNECTION_WAIT`, as long as psycopg's pool waits for a connection, so a restart passes by itself.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
from typing import Any

from funchost.errors import StorageError
from funchost.runtime.activity import busy
from funchost.settings.postgres import PostgresConfig, conninfo_parts
from funchost.storage.postgres.connect import (
    CONNECT_TIMEOUT,
    IDLE_IN_TRANSACTION_TIMEOUT,
    LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    statement_failed,
    unreachable,
)

MAX_CONNECTIONS = 4  # a receive per queue listener and the grouped deletes: few at once
CONNECTION_WAIT = 30.0  # seconds a statement waits for the server to take a connection (db's pool: 30)
_RECONNECT_DELAYS = (0.05, 0.1, 0.2, 0.5, 1.0)  # then 1 s apart
# Connection-string parameters asyncpg takes as libpq does. `application_name` and
# `connect_timeout` are funchost's own below; `options` (server settings) has no equal here.
_UNDERSTOOD = {"host", "port", "user", "password", "dbname", "passfile", "sslmode", "application_name",
               "connect_timeout"}
# libpq environment variables asyncpg does not read, or reads otherwise (certificate files): with
# one set, libpq and asyncpg could reach different servers or sessions.
_LIBPQ_ONLY_ENV = ("PGSERVICE", "PGSERVICEFILE", "PGOPTIONS", "PGHOSTADDR", "PGREQUIRESSL", "PGSSLCRL",
                   "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGGSSENCMODE", "PGTARGETSESSIONATTRS",
                   "PGLOADBALANCEHOSTS")
# SQLSTATEs of failures that pass by themselves (db.translate's list): cancelled (statement or
# lock time-out), lock not available, serialization failure, deadlock, server shutting down or
# starting.
_BUSY_STATES = {"57014", "55P03", "40001", "40P01", "57P01", "57P02", "57P03"}
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def asyncpg_arguments(config: PostgresConfig, role: str, environ: dict[str, str] | None = None) -> dict[str, Any] | None:
    """`asyncpg.connect` keyword arguments reaching the server and session psycopg reaches, or
    None where asyncpg cannot promise that (or is not installed)."""
    env = os.environ if environ is None else environ
    if any(env.get(name) for name in _LIBPQ_ONLY_ENV):
        return None
    parts = conninfo_parts(config.conninfo)
    if not set(parts) <= _UNDERSTOOD:
        return None
    if importlib.util.find_spec("asyncpg") is None:  # found, not imported: asyncpg loads with the pool
        return None
    arguments: dict[str, Any] = {
        "timeout": float(parts.get("connect_timeout") or CONNECT_TIMEOUT),
        "server_settings": {
            "search_path": config.schema,
            "application_name": f"funchost/{role}/{os.getpid()}",
            "idle_in_transaction_session_timeout": IDLE_IN_TRANSACTION_TIMEOUT,
            "statement_timeout": STATEMENT_TIMEOUT,
            "lock_timeout": LOCK_TIMEOUT,
        },
    }
    for key, name in (("user", "user"), ("password", "password"), ("dbname", "database"), ("passfile", "passfile")):
        if parts.get(key):
            arguments[name] = parts[key]
    if parts.get("host"):
        hosts = parts["host"].split(",")
        arguments["host"] = hosts if len(hosts) > 1 else hosts[0]
    if parts.get("port"):
        ports = [int(port) for port in parts["port"].split(",")]
        arguments["port"] = ports if len(ports) > 1 else ports[0]
    if parts.get("sslmode"):  # libpq's modes, which asyncpg takes by name
        arguments["ssl"] = parts["sslmode"]
    return arguments


def numbered(statement: str) -> tuple[str, tuple[str, ...]]:
    """A statement with psycopg's `%(name)s` placeholders as asyncpg's `$n`, and the names in
    order (a name used twice is one parameter); `%%` becomes `%`."""
    names: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _PLACEHOLDER.sub(replace, statement), tuple(names)


def translate_asyncpg(config: PostgresConfig, exc: BaseException) -> StorageError | None:
    """An asyncpg (or socket) error as the ports' error tree; None for what is not a driver's."""
    import asyncpg

    if isinstance(exc, asyncpg.PostgresError):
        state = exc.sqlstate or ""
        if state.startswith("08"):  # connection exception
            return unreachable(config, exc)
        return statement_failed(exc, passes=state in _BUSY_STATES)
    if isinstance(exc, asyncpg.exceptions.ConnectionDoesNotExistError | OSError | asyncio.TimeoutError):
        return unreachable(config, exc)
    if isinstance(exc, asyncpg.InterfaceError):
        return statement_failed(exc, passes=False)
    if isinstance(exc, asyncpg.exceptions.InternalClientError):  # the protocol lost its place: a new connection
        return unreachable(config, exc)
    return None


def _ends_the_session(exc: BaseException) -> bool:
    """A server error that ends the session: a connection failure (08) or a server shutting down
    or starting (57P)."""
    import asyncpg

    return isinstance(exc, asyncpg.PostgresError) and (exc.sqlstate or "").startswith(("08", "57P"))


def _session_survives(exc: BaseException) -> bool:
    """The server refused one statement and the session goes on (not a session the server ended,
    nor the client losing its place)."""
    import asyncpg

    return (isinstance(exc, asyncpg.PostgresError) and not isinstance(exc, asyncpg.PostgresConnectionError)
            and not _ends_the_session(exc))


def _server_away(exc: BaseException) -> bool:
    """A failed connect worth trying again: nothing listening, or a server shutting down or
    starting (not a wrong password, database or certificate)."""
    return _ends_the_session(exc) or isinstance(exc, OSError | asyncio.TimeoutError)


class HotStatements:
    """A few asyncpg connections for the per-message statements of the queue port.

    Not asyncpg's pool: its release runs a reset query (a round trip) after every statement, for
    sessions these statements never change. An idle connection is taken for a statement and put
    back after it; one the statement left closed or cancelled mid-way is dropped instead.
    """

    def __init__(self, config: PostgresConfig, arguments: dict[str, Any]) -> None:
        self.config = config
        self._arguments = arguments
        self._idle: list[Any] = []
        self._open: set[Any] = set()
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self._numbered: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._closed = False
        self.connection_wait = CONNECTION_WAIT

    @classmethod
    def for_config(cls, config: PostgresConfig, role: str) -> HotStatements | None:
        arguments = asyncpg_arguments(config, role)
        return None if arguments is None else cls(config, arguments)

    async def rows(self, statement: str, args: dict[str, Any]) -> list[Any]:
        """The rows of one statement (its own transaction), as records indexable like tuples."""
        entry = self._numbered.get(statement)
        if entry is None:
            entry = self._numbered[statement] = numbered(statement)
        text, names = entry
        with busy():
            async with self._slots:
                conn = self._idle_connection() or await self._connect()
                try:
                    rows = await conn.fetch(text, *[args[name] for name in names])
                except BaseException as exc:
                    error = translate_asyncpg(self.config, exc) if isinstance(exc, Exception) else None
                    if error is not None and conn.is_closed():  # "connection is closed": lost, not refused
                        error = unreachable(self.config, exc)
                    if _session_survives(exc) and not conn.is_closed() and not conn.is_in_transaction():
                        self._idle.append(conn)  # the statement failed, the session is fine
                    else:  # lost, shut down, cancelled mid-way or not the driver's failure: not used again
                        self._drop(conn)
                    if error is not None:
                        raise error from exc
                    raise
                self._idle.append(conn)
                return rows  # type: ignore[no-any-return]

    def _idle_connection(self) -> Any:
        """An idle connection still open (the server may have ended one while it waited), or None."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.is_closed():
                return conn
            self._drop(conn)
        return None

    async def _connect(self) -> Any:
        """A new connection; while the server is away, tried again for up to `connection_wait`."""
        import asyncpg

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.connection_wait
        attempt = 0
        while True:
            if self._closed:
                raise StorageError("the PostgreSQL backend is closed", code="InternalError")
            try:
                conn = await asyncpg.connect(**self._arguments)
            except Exception as exc:  # refused, timed out, authentication: as psycopg's connect says it
                delay = _RECONNECT_DELAYS[min(attempt, len(_RECONNECT_DELAYS) - 1)]
                if not _server_away(exc) or loop.time() + delay > deadline:
                    raise unreachable(self.config, exc) from exc
                attempt += 1
                await asyncio.sleep(delay)
                continue
            if self._closed:  # closed while it connected: nothing would close this one
                conn.terminate()
                continue
            self._open.add(conn)
            return conn

    def _drop(self, conn: Any) -> None:
        self._open.discard(conn)
        conn.terminate()

    async def aclose(self) -> None:
        self._closed = True
        conns, self._open, self._idle = list(self._open), set(), []
        for conn in conns:
            try:
                await asyncio.wait_for(conn.close(), timeout=5)
            except Exception:  # a broken connection: nothing left to release
                conn.terminate()

