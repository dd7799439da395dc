"""A `--storage postgres` backend as one host opens it: its own data folder under `tmp_path`
(hosts on separate machines share nothing but the server), the session's server and schema; and
the table on that server where the hosts' functions record what they handled; and what a
transaction of a test read from a port's table (the plans of statements on tables without
statistics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def enter_schema_of(conn: Any, schema: str, table: str, *, unanalyzed: bool) -> str:
    """The schema (of the session's `schema`) that holds the port's `table`, made the search path of
    `conn` as the hosts' connections have it; with `unanalyzed`, asserts the table was never
    analyzed, the case of a table filled in a burst before autovacuum looked."""
    (found,) = conn.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = %s "
                            "AND starts_with(table_schema, %s)", (table, schema)).fetchone()
    if unanalyzed:
        analyzed = conn.execute("SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE "
                                "schemaname = %s AND relname = %s", (found, table)).fetchone()
        assert analyzed == (None, None)  # the case these tests are about
    conn.execute(f'SET search_path TO "{found}"')
    return str(found)


def rows_read(conn: Any, schema: str, table: str) -> tuple[int, int]:
    """(rows fetched through indexes, rows read by sequential scans) from `table` in the current
    transaction of `conn` (its own statistics, before they are flushed)."""
    fetched, scanned = conn.execute("SELECT idx_tup_fetch, seq_tup_read FROM pg_stat_xact_user_tables "
                                    "WHERE schemaname = %s AND relname = %s", (schema, table)).fetchone()
    return int(fetched), int(scanned)
