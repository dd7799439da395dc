"""A `--storage postgres` backend as one host opens it: its own data folder under `tmp_path`
(hosts on separate machines share nothing but the server), the session's server and schema."""

from __future__ import annotations

from pathlib import Path

from funchost.clock import Clock, SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.postgres.backend import PostgresStorage, open_backend


def host(tmp_path: Path, name: str, dsn: str, schema: str, clock: Clock | None = None) -> PostgresStorage:
    settings = AppSettings({"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": schema}, environ={})
    return open_backend(tmp_path / name, settings, clock or SystemClock())
