"""Opening connections: the session settings every funchost connection carries, and what an
unreachable server becomes (a message naming the server and the setting, never the password).
"""

from __future__ import annotations

import os
from typing import Any

from funchost.errors import StorageError
from funchost.settings.postgres import PostgresConfig

# A host frozen (SIGSTOP) inside a transaction must not stall the others for longer than this:
# the server ends its session and rolls back, releasing its row locks.
IDLE_IN_TRANSACTION_TIMEOUT = "10s"
# No statement of funchost's runs long; one that waits this long is stuck behind a frozen peer.
STATEMENT_TIMEOUT = "30s"
LOCK_TIMEOUT = "15s"
CONNECT_TIMEOUT = 10


def session_options() -> str:
    """libpq `options`: set at connect, so pooled and listener connections all carry them."""
    return (f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT} "
            f"-c statement_timeout={STATEMENT_TIMEOUT} -c lock_timeout={LOCK_TIMEOUT}")


def connect_kwargs(config: PostgresConfig, role: str) -> dict[str, Any]:
    """Keyword arguments for psycopg.connect / AsyncConnection.connect (and pools' `kwargs`)."""
    return {
        "options": session_options(),
        "application_name": f"funchost/{role}/{os.getpid()}",
        "connect_timeout": CONNECT_TIMEOUT,
        "keepalives": 1,
        "keepalives_idle": 30,
    }


def connect_sync(config: PostgresConfig, role: str, *, autocommit: bool = True) -> Any:
    """A psycopg connection with the session settings; `unreachable` when the server is not there."""
    import psycopg

    try:
        return psycopg.connect(config.conninfo, autocommit=autocommit, **connect_kwargs(config, role))
    except psycopg.OperationalError as exc:
        raise unreachable(config, exc) from exc


def unreachable(config: PostgresConfig, exc: BaseException) -> StorageError:
    """The server cannot be reached: where it was looked for and where that was configured."""
    return StorageError(f"cannot reach PostgreSQL at {config.describe()} (from {config.source}): "
                        f"{first_line(exc)}", code="ServerBusy", status=503)


def statement_failed(exc: BaseException, *, passes: bool) -> StorageError:
    """A statement the server refused, as the ports see it (both drivers' translations): ServerBusy
    (503, retryable) for a failure that passes by itself, else InternalError (500)."""
    if passes:
        return StorageError(f"PostgreSQL: {first_line(exc)}", code="ServerBusy", status=503)
    return StorageError(f"PostgreSQL: {first_line(exc)}", code="InternalError", status=500)


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
