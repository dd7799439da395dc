"""The dashboard's settings, read once from the app settings (environment over local.settings.json).

| setting | default | meaning |
|---|---|---|
| ``FUNCHOST_DASHBOARD`` | ``true`` | serve ``/_funchost/`` and record the invocation history |
| ``FUNCHOST_DASHBOARD_HISTORY_COUNT`` | ``10000`` | invocations kept (the newest) |
| ``FUNCHOST_DASHBOARD_HISTORY_AGE`` | ``7.00:00:00`` | invocations older than this TimeSpan are deleted |
| ``FUNCHOST_DASHBOARD_ALLOW_REMOTE`` | ``false`` | answer clients that are not on the loopback interface |

A value that does not parse is an error naming the setting, as for every other setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from funchost.errors import ConfigError
from funchost.settings.timespan import parse_timespan

ENABLED_SETTING = "FUNCHOST_DASHBOARD"
HISTORY_COUNT_SETTING = "FUNCHOST_DASHBOARD_HISTORY_COUNT"
HISTORY_AGE_SETTING = "FUNCHOST_DASHBOARD_HISTORY_AGE"
ALLOW_REMOTE_SETTING = "FUNCHOST_DASHBOARD_ALLOW_REMOTE"

DEFAULT_HISTORY_COUNT = 10_000
DEFAULT_HISTORY_AGE = 7 * 24 * 3600.0
MAX_HISTORY_COUNT = 100_000  # the pages scan the history (storage/sqlite/invocations.py)
FLUSH_INTERVAL = 0.5  # seconds a finished invocation may wait before its batch is written
FLUSH_BATCH = 500  # a batch this large is written at once
PENDING_LIMIT = 50_000  # records waiting for the writer; past it the oldest are dropped (counted)
PRUNE_INTERVAL = 60.0  # seconds between two applications of the limits


@dataclass(frozen=True)
class DashboardOptions:
    enabled: bool = True
    history_count: int = DEFAULT_HISTORY_COUNT
    history_age: float = DEFAULT_HISTORY_AGE  # seconds
    allow_remote: bool = False
    flush_interval: float = FLUSH_INTERVAL
    flush_batch: int = FLUSH_BATCH
    pending_limit: int = PENDING_LIMIT
    prune_interval: float = PRUNE_INTERVAL


def _boolean(settings: Mapping[str, str], name: str, default: bool) -> bool:
    raw = settings.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise ConfigError(f"expected true or false, got {raw!r}", path=f"app setting {name}")


def _count(settings: Mapping[str, str], name: str, default: int) -> int:
    raw = settings.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if not 1 <= value <= MAX_HISTORY_COUNT:
        raise ConfigError(f"expected a whole number from 1 to {MAX_HISTORY_COUNT}, got {raw!r}",
                          path=f"app setting {name}")
    return value


def _age(settings: Mapping[str, str], name: str, default: float) -> float:
    raw = settings.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        seconds = parse_timespan(raw.strip())
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise ConfigError(f"expected a positive TimeSpan such as 7.00:00:00 or 12:00:00, got {raw!r}",
                          path=f"app setting {name}")
    return seconds


def from_settings(settings: Mapping[str, str]) -> DashboardOptions:
    return DashboardOptions(
        enabled=_boolean(settings, ENABLED_SETTING, True),
        history_count=_count(settings, HISTORY_COUNT_SETTING, DEFAULT_HISTORY_COUNT),
        history_age=_age(settings, HISTORY_AGE_SETTING, DEFAULT_HISTORY_AGE),
        allow_remote=_boolean(settings, ALLOW_REMOTE_SETTING, False),
    )
