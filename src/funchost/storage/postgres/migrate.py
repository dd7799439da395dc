"""Versioned schema migrations, one numbered list per component (queues, blobs, ...).

Each component's steps are applied in order and its version recorded in `migrations`, all under
one advisory transaction lock per schema, so hosts starting at once on an empty database both
start (one migrates, the other waits, then finds the work done). The version is read first
without any lock: an up-to-date schema costs one query and is never held up by a host that is
frozen inside a migration. A schema newer than this funchost knows is refused, not guessed at.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from funchost.errors import ConfigError

_LOCK_NAMESPACE = 0x66686D67  # "fhmg": the advisory lock of funchost's migrations


def migrate(conn: Any, schema: str, component: str, steps: Sequence[str]) -> int:
    """Apply `steps` not yet applied to `component` in `schema`; the version reached.

    `conn` is a psycopg connection in autocommit mode; each step is SQL (several statements
    allowed) run with `search_path` set to the schema."""
    from psycopg import errors
    from psycopg import sql as pgsql

    current = _version(conn, schema, component)
    if current == len(steps):
        return current
    if current > len(steps):
        raise _too_new(schema, component, current, len(steps))
    ident = pgsql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_NAMESPACE, schema))
        try:
            with conn.transaction():  # a savepoint: a racing creator outside the lock is harmless
                conn.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
        except (errors.UniqueViolation, errors.DuplicateSchema):
            pass
        conn.execute(pgsql.SQL("SET LOCAL search_path TO {}").format(ident))
        conn.execute("CREATE TABLE IF NOT EXISTS migrations (component text PRIMARY KEY, version int NOT NULL)")
        row = conn.execute("SELECT version FROM migrations WHERE component = %s", (component,)).fetchone()
        current = int(row[0]) if row else 0
        if current > len(steps):
            raise _too_new(schema, component, current, len(steps))
        for step in steps[current:]:
            conn.execute(step)
        conn.execute("INSERT INTO migrations(component, version) VALUES (%s, %s) ON CONFLICT (component) "
                     "DO UPDATE SET version = EXCLUDED.version", (component, len(steps)))
    return len(steps)


def _version(conn: Any, schema: str, component: str) -> int:
    row = conn.execute("SELECT to_regclass(format('%%I.migrations', %s::text)) IS NOT NULL", (schema,)).fetchone()
    if not row or not row[0]:
        return 0
    from psycopg import sql as pgsql

    found = conn.execute(pgsql.SQL("SELECT version FROM {}.migrations WHERE component = %s").format(
        pgsql.Identifier(schema)), (component,)).fetchone()
    return int(found[0]) if found else 0


def _too_new(schema: str, component: str, found: int, known: int) -> ConfigError:
    return ConfigError(f"the {component} tables in PostgreSQL schema '{schema}' are at version {found}, newer than "
                       f"this funchost knows ({known}): upgrade funchost on this host", path="FUNCHOST_POSTGRES_SCHEMA")
