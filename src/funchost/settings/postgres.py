"""Where the PostgreSQL server is: `--postgres CONNINFO`, or the app setting / environment
variable `FUNCHOST_POSTGRES` (a libpq URL or key=value string); `FUNCHOST_POSTGRES_SCHEMA`
names the schema (default `funchost`), so several deployments can share one database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from funchost.errors import ConfigError

SETTING = "FUNCHOST_POSTGRES"
SCHEMA_SETTING = "FUNCHOST_POSTGRES_SCHEMA"
DEFAULT_SCHEMA = "funchost"
# Set beside SETTING by `--postgres` (which passes the server on in the environment, to worker
# processes too), so messages say where the server was given.
SOURCE_SETTING = "FUNCHOST_POSTGRES_SOURCE"
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class PostgresConfig:
    conninfo: str
    schema: str = DEFAULT_SCHEMA
    source: str = f"app setting '{SETTING}'"

    def describe(self) -> str:
        """host:port/dbname as user: what a message may show (never the password)."""
        parts = conninfo_parts(self.conninfo)
        host = parts.get("host") or parts.get("hostaddr") or "localhost"
        port = parts.get("port") or "5432"
        user = parts.get("user")
        where = f"{host}:{port}/{parts.get('dbname') or user or 'postgres'}"
        return f"{where} as {user}" if user else where


def conninfo_parts(conninfo: str) -> dict[str, str]:
    """The connection string's parameters (libpq's own parsing); ConfigError when malformed, or
    when psycopg (the extra `postgres`) is not installed."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError as exc:
        raise ConfigError("--storage postgres needs psycopg, which is not installed: pip install "
                          "'funchost[postgres]'", path=SETTING) from exc

    try:
        return {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if v is not None}
    except Exception as exc:  # psycopg.ProgrammingError; its text never holds the password
        raise ConfigError(f"not a PostgreSQL connection string: {_first_line(exc)}", path=SETTING) from exc


def postgres_config(settings: Mapping[str, str], conninfo: str | None = None) -> PostgresConfig:
    """The server of `--postgres` (`conninfo`) or of the `FUNCHOST_POSTGRES` setting."""
    source = "--postgres" if conninfo or settings.get(SOURCE_SETTING) == "--postgres" else f"app setting '{SETTING}'"
    value = conninfo or settings.get(SETTING)
    if not value or not value.strip():
        raise ConfigError(f"--storage postgres needs a server: set the app setting or environment variable "
                          f"{SETTING} (a libpq URL such as postgresql://user@host:5432/db, or host=... "
                          "dbname=...) or pass --postgres CONNINFO", path=SETTING)
    conninfo_parts(value)
    schema = (settings.get(SCHEMA_SETTING) or DEFAULT_SCHEMA).strip()
    if not _SCHEMA_NAME.match(schema):
        raise ConfigError(f"'{schema}' is not a usable schema name (letters, digits and _, not starting with "
                          "a digit, at most 63 characters)", path=SCHEMA_SETTING)
    return PostgresConfig(value.strip(), schema, source)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
