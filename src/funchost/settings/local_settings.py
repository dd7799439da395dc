"""local.settings.json, as Core Tools reads it.

`Values` become app settings (strings only, the real environment wins); `Host.LocalHttpPort`
sets the default port; `ConnectionStrings` become `ConnectionStrings:<name>` settings
(`settings/exported.py`). Unknown top-level or Host keys are
errors naming their path, so a typo never passes silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funchost.errors import ConfigError

FILE_NAME = "local.settings.json"
_TOP_KEYS = {"IsEncrypted", "Values", "Host", "ConnectionStrings"}
_HOST_KEYS = {"LocalHttpPort", "CORS", "CORSCredentials"}


@dataclass(frozen=True)
class LocalSettings:
    values: dict[str, str] = field(default_factory=dict)
    local_http_port: int | None = None
    connection_strings: dict[str, str] = field(default_factory=dict)
    path: Path | None = None


def load_local_settings(app_dir: Path) -> LocalSettings:
    path = Path(app_dir) / FILE_NAME
    if not path.exists():
        return LocalSettings()
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=FILE_NAME) from exc
    return parse_local_settings(raw, path)


def parse_local_settings(raw: Any, path: Path | None = None) -> LocalSettings:
    if not isinstance(raw, dict):
        raise ConfigError("the top level must be a JSON object", path=FILE_NAME)
    for key in raw:
        if key not in _TOP_KEYS:
            raise ConfigError(f"unknown key (expected one of {sorted(_TOP_KEYS)})", path=f"{FILE_NAME}: {key}")
    if raw.get("IsEncrypted") is True:
        raise ConfigError("encrypted settings are not supported; set IsEncrypted to false",
                          path=f"{FILE_NAME}: IsEncrypted")
    values_raw = raw.get("Values") or {}
    if not isinstance(values_raw, dict):
        raise ConfigError("must be an object of string values", path=f"{FILE_NAME}: Values")
    values: dict[str, str] = {}
    for name, value in values_raw.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int | float):
            value = str(value)
        elif value is None:
            value = ""
        elif not isinstance(value, str):
            raise ConfigError("values must be strings", path=f"{FILE_NAME}: Values.{name}")
        values[name] = value
    host = raw.get("Host") or {}
    if not isinstance(host, dict):
        raise ConfigError("must be an object", path=f"{FILE_NAME}: Host")
    for key in host:
        if key not in _HOST_KEYS:
            raise ConfigError(f"unknown key (expected one of {sorted(_HOST_KEYS)})", path=f"{FILE_NAME}: Host.{key}")
    port = host.get("LocalHttpPort")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise ConfigError("must be a port number", path=f"{FILE_NAME}: Host.LocalHttpPort")
    conns = raw.get("ConnectionStrings") or {}
    if not isinstance(conns, dict):
        raise ConfigError("must be an object", path=f"{FILE_NAME}: ConnectionStrings")
    return LocalSettings(values, port, {str(k): _connection_string(k, v) for k, v in conns.items()}, path)


def _connection_string(name: str, value: Any) -> str:
    """A string, or Core Tools' object form `{"ConnectionString": ..., "ProviderName": ...}`."""
    if isinstance(value, dict):
        value = value.get("ConnectionString")
    if not isinstance(value, str):
        raise ConfigError('must be a string or {"ConnectionString": "..."}',
                          path=f"{FILE_NAME}: ConnectionStrings.{name}")
    return value
