"""The shared secrets (`funchost.storage.secrets`) in one table on the server: hosts with separate
data folders agree on their HTTP keys, Event Grid topic keys and storage endpoints' identity.

`create` is ``INSERT ... ON CONFLICT DO NOTHING`` then ``SELECT``: the first writer wins and every
host reads what it wrote. `update` reads the row ``FOR UPDATE``, so two hosts adding a system
key or a topic key at once apply their changes one after the other and neither is lost. The
calls are synchronous (keys are read at start and, rarely, created on a first request), each in
one short transaction on this thread's connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from funchost.storage.postgres.db import PgDatabase

T = TypeVar("T")

COMPONENT = "secrets"
MIGRATIONS = [
    """
    CREATE TABLE secrets (
        name text COLLATE "C" PRIMARY KEY,
        body text NOT NULL,
        updated timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    """,
]


class _Raced(Exception):
    """Another host created the row between this one's read and insert: read it again."""


class PostgresSecrets:
    def __init__(self, database: PgDatabase) -> None:
        self.database = database
        self._migrated = False

    def _run(self, fn: Callable[[Any], T]) -> T:
        if not self._migrated:
            self.database.migrate(COMPONENT, MIGRATIONS)
            self._migrated = True
        return self.database.run_sync(fn)

    def create(self, name: str, text: str) -> str:
        def run(conn: Any) -> str:
            conn.execute("INSERT INTO secrets(name, body) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                         (name, text))
            return str(conn.execute("SELECT body FROM secrets WHERE name = %s", (name,)).fetchone()[0])

        return self._run(run)

    def read(self, name: str) -> str | None:
        row = self._run(lambda conn: conn.execute("SELECT body FROM secrets WHERE name = %s", (name,)).fetchone())
        return None if row is None else str(row[0])

    def update(self, name: str, change: Callable[[str | None], str]) -> str:
        def run(conn: Any) -> str:
            row = conn.execute("SELECT body FROM secrets WHERE name = %s FOR UPDATE", (name,)).fetchone()
            text = change(None if row is None else str(row[0]))
            if row is not None:
                conn.execute("UPDATE secrets SET body = %s, updated = clock_timestamp() WHERE name = %s",
                             (text, name))
            elif not conn.execute("INSERT INTO secrets(name, body) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                                  (name, text)).rowcount:
                raise _Raced
            return text

        while True:
            try:
                return self._run(run)
            except _Raced:
                continue

    def locate(self, name: str) -> str:
        return f"'{name}' in the secrets table of PostgreSQL schema '{self.database.config.schema}'"

    def describe(self) -> str:
        return f"PostgreSQL ({self.database.config.describe()}, schema {self.database.config.schema})"
