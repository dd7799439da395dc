"""Shared secrets on a real PostgreSQL server: hosts with separate data folders updating at once
lose nothing, and agree on Event Grid topic keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from funchost.eventgrid.auth import KeyRing
from funchost.settings.postgres import PostgresConfig
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.secrets import PostgresSecrets

pytestmark = pytest.mark.postgres


@pytest.fixture
def hosts(postgres_dsn: str, postgres_schema: str) -> Iterator[list[PostgresSecrets]]:
    databases = [PgDatabase(PostgresConfig(postgres_dsn, postgres_schema)) for _ in range(2)]
    yield [PostgresSecrets(d) for d in databases]
    for database in databases:
        database._close_sync()


def test_updates_from_two_hosts_at_once_are_all_kept(hosts: list[PostgresSecrets]) -> None:
    def add(i: int) -> None:
        hosts[i % 2].update("eventgrid/keys.json", lambda current: json.dumps(
            {**json.loads(current or "{}"), f"topic-{i}": True}))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(add, range(32)))
    assert set(json.loads(hosts[0].read("eventgrid/keys.json") or "{}")) == {f"topic-{i}" for i in range(32)}


def test_hosts_adding_topics_at_once_agree_on_every_key(hosts: list[PostgresSecrets]) -> None:
    with ThreadPoolExecutor(4) as pool:
        rings = list(pool.map(lambda i: KeyRing(hosts[i % 2]).ensure(["orders", f"only-{i}"]), range(4)))
    final = KeyRing(hosts[1]).load()
    assert set(final) == {"orders", "only-0", "only-1", "only-2", "only-3"}
    for i, ring in enumerate(rings):
        assert ring["orders"] == final["orders"] and ring[f"only-{i}"] == final[f"only-{i}"]
