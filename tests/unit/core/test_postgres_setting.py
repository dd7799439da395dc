"""`--storage postgres` on a machine without the extra `postgres`: a message naming what to install."""

from __future__ import annotations

import sys

import pytest

from funchost.errors import ConfigError
from funchost.settings.postgres import postgres_config


def test_without_psycopg_the_postgres_setting_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as on a machine without the extra
    monkeypatch.setitem(sys.modules, "psycopg.conninfo", None)
    with pytest.raises(ConfigError, match=r"pip install 'funchost\[postgres\]'"):
        postgres_config({"FUNCHOST_POSTGRES": "host=db.internal dbname=jobs"})
