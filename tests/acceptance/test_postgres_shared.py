"""Two `funchost start` processes with separate data folders on one PostgreSQL schema: the keys
one host makes work on the other, and Event Grid events published to either are delivered once."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import sql
from tests.acceptance.support import RunningHost, copy_example, start_funchost, stop_funchost, wait_until

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.eventgrid import NewEvent, Target
from funchost.storage.host_storage import open_storage

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]

HELLO = Path(__file__).resolve().parents[2] / "examples" / "hello"
EVENTS = 40


def server_env(dsn: str, schema: str) -> dict[str, str]:
    return {"FUNCHOST_POSTGRES": dsn, "FUNCHOST_POSTGRES_SCHEMA": schema}


def stored_secret(dsn: str, schema: str, name: str) -> dict[str, object]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql.SQL("SELECT body FROM {}.secrets WHERE name = %s").format(sql.Identifier(schema)),
                           (name,)).fetchone()
    assert row is not None, f"{name} is not on the server"
    return dict(json.loads(row[0]))


@pytest.fixture
def stop_all() -> Iterator[list[RunningHost]]:
    hosts: list[RunningHost] = []
    yield hosts
    for host in hosts:
        stop_funchost(host)


def test_keys_made_by_one_host_work_on_the_other(tmp_path: Path, postgres_dsn: str, postgres_schema: str,
                                                 stop_all: list[RunningHost]) -> None:
    env = server_env(postgres_dsn, postgres_schema)
    first = start_funchost(HELLO, "--storage", "postgres", "--no-storage-endpoints", data_dir=tmp_path / "a",
                           env=env, master_key="master-of-a")
    stop_all.append(first)
    function_key = httpx.get(f"{first.base_url}/admin/functions/secure/keys", headers=first.admin_headers,
                             timeout=10).json()["keys"][0]["value"]
    host_key = re.search(r"Host function key 'default': (\S+)", first.output())
    assert host_key is not None, first.output()
    stored_master = stored_secret(postgres_dsn, postgres_schema, "keys/host.json")["masterKey"]
    # The second host runs without FUNCHOST_MASTER_KEY: it uses the master key stored on the server.
    second = start_funchost(HELLO, "--storage", "postgres", "--no-storage-endpoints", data_dir=tmp_path / "b",
                            env={**env, "FUNCHOST_MASTER_KEY": ""},
                            master_key=str(stored_master["value"]))  # type: ignore[index]
    stop_all.append(second)
    assert not (tmp_path / "b" / "keys").exists()  # nothing of the keys in its own data folder
    with httpx.Client(base_url=second.base_url, timeout=10) as client:
        assert client.get("/api/secure").status_code == 401
        assert client.get("/api/secure", params={"code": function_key}).text == "you hold a function key"
        assert client.get("/api/secure", headers={"x-functions-key": host_key.group(1)}).status_code == 200
        keys = client.get("/admin/functions/secure/keys", headers=second.admin_headers).json()["keys"]
        assert keys[0]["value"] == function_key
        # FUNCHOST_MASTER_KEY still wins on the host that sets it: the stored master is no admin there.
        assert client.get("/api/maintenance", headers=first.admin_headers).status_code == 401
    with httpx.Client(base_url=first.base_url, timeout=10) as client:
        assert client.get("/api/maintenance", headers=first.admin_headers).status_code == 200
        assert client.get("/api/maintenance", headers=second.admin_headers).status_code == 401


def test_event_grid_events_are_delivered_once_by_whichever_host_leases_them(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str, stop_all: list[RunningHost]) -> None:
    app = copy_example("eventgrid", tmp_path)
    env = server_env(postgres_dsn, postgres_schema)
    hosts = [start_funchost(app, "--storage", "postgres", "--no-storage-endpoints", data_dir=tmp_path / name,
                            env=env) for name in ("a", "b")]
    stop_all.extend(hosts)
    topic_keys = stored_secret(postgres_dsn, postgres_schema, "eventgrid/keys.json")["topics"]
    key = topic_keys["default"]["key1"]  # type: ignore[index]
    for n in range(EVENTS // 2):  # through either host's topic endpoint, with the one shared key
        response = httpx.post(f"{hosts[n % 2].base_url}/eventgrid/topics/default/api/events", json=[event(n)],
                              headers={"aeg-sas-key": key}, timeout=10)
        assert response.status_code == 200, response.text
    # A third process appends the rest straight into the store: neither host was told, both poll for them.
    asyncio.run(append_directly(tmp_path / "publisher", server_env(postgres_dsn, postgres_schema),
                                range(EVENTS // 2, EVENTS)))

    def delivered(host: RunningHost) -> list[str]:
        return re.findall(r"event (once-\d+) Demo\.Once", host.output())

    wait_until(lambda: len({e for h in hosts for e in delivered(h)}) == EVENTS, "every event delivered",
               timeout=60, hosts=hosts)
    time.sleep(2.0)  # a second delivery of any event would show up within the hosts' 1 s poll
    by_host = [delivered(h) for h in hosts]
    seen = [e for found in by_host for e in found]
    twice = sorted(e for e in set(seen) if seen.count(e) > 1)
    assert sorted(seen) == sorted(f"once-{n}" for n in range(EVENTS)), f"delivered twice: {twice}"
    # The events written straight into the store reached no host's endpoint: the hosts found them
    # on the server; and both hosts delivered.
    assert all(by_host), f"deliveries per host: {[len(found) for found in by_host]}"


def event(n: int) -> dict[str, object]:
    return {"id": f"once-{n}", "eventType": "Demo.Once", "subject": f"demo/{n}", "data": {"n": n},
            "dataVersion": "1", "eventTime": "2024-05-01T12:00:00Z"}


async def append_directly(data: Path, env: dict[str, str], numbers: range) -> None:
    storage = open_storage("postgres", data, AppSettings(env, environ={}), SystemClock())
    store = storage.eventgrid_store()
    spread = random.Random(7)
    try:
        for n in numbers:
            routed = [NewEvent(event(n), (Target("custom-events", 30, 86400.0),))]
            await store.append("default", "EventGridSchema", routed, time.time())
            await asyncio.sleep(spread.uniform(0.05, 0.35))  # over several of the hosts' 1 s polls
    finally:
        await storage.aclose()
