"""Integration fixtures: PostgreSQL (until the root conftest registers the plugin)."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import pytest  # noqa: E402
from tests.support.azurite_fixtures import ensure_registered  # noqa: E402
from tests.support.postgres_fixtures import _postgres_server, postgres_dsn, postgres_schema  # noqa: E402,F401


def pytest_configure(config: pytest.Config) -> None:
    ensure_registered(config)  # the azurite fixture + known-deviation summary (tests/support/azurite_fixtures.py)
