"""A `--storage postgres` backend as one host opens it: its own data folder under `tmp_path`
(hosts on separate machines share nothing but the server), the session's server and schema; and
the table on that server where the hosts' functions record what they handled."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import Clock, SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.postgres.backend import PostgresStorage, open_backend


def host(tmp_path: Path, name: str, dsn: str, schema: str, clock: Clock | None = None) -> PostgresStorage:
    settings = AppSettings({"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": schema}, environ={})
    return open_backend(tmp_path / name, settings, clock or SystemClock())


def record_table(dsn: str, schema: str, name: str, columns: str) -> tuple[str, dict[str, str]]:
    """`schema.name` made with `columns` for the functions to write to, and the environment of a
    host on that server and schema that names it (`RECORD_TABLE`)."""
    import psycopg

    table = f"{schema}.{name}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.execute(f"CREATE TABLE {table} ({columns})")
    return table, {"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": schema, "RECORD_TABLE": table}
