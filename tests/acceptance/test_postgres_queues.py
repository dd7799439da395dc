"""Queue triggers across machines: two `funchost start --storage postgres` processes with separate
data folders on one PostgreSQL schema (they share nothing but the server). The app records each
message it processes in a table on the same server (body, message id, process, dequeue count):
1,000 messages are each processed once with both hosts working, and a host killed (SIGKILL) in
the middle of a drain loses none of them."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest
from tests.acceptance.support import RunningHost, start_funchost, stop_funchost, wait_until
from tests.support.postgres_hosts import record_table

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.postgres.backend import open_backend

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]
# The table the functions record into (`record_table`), and its columns.
RECORDS = ("processed", "body text, message_id text, pid int, dequeue_count int")

MESSAGES = 1000
APP = '''
import os
import threading
import time

import azure.functions as func
import psycopg

app = func.FunctionApp()
_lock = threading.Lock()
_conn = None


def _record(body, message_id, dequeue_count):
    global _conn
    with _lock:
        if _conn is None or _conn.closed or _conn.broken:
            _conn = psycopg.connect(os.environ["FUNCHOST_POSTGRES"], autocommit=True)
        _conn.execute(
            "INSERT INTO " + os.environ["RECORD_TABLE"] + "(body, message_id, pid, dequeue_count)"
            " VALUES (%s, %s, %s, %s)", (body, message_id, os.getpid(), dequeue_count))


@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
def work(msg: func.QueueMessage) -> None:
    time.sleep(float(os.environ.get("WORK_SECONDS", "0.002")))
    _record(msg.get_body().decode("utf-8"), msg.id, msg.dequeue_count)
'''
HOST_JSON = ('{"version": "2.0", "extensions": {"queues": {"batchSize": 16, "maxPollingInterval": "00:00:02",'
             ' "visibilityTimeout": "00:00:00", "messageEncoding": "none"}}}')


def make_app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "function_app.py").write_text(APP)
    (app / "host.json").write_text(HOST_JSON)
    return app


def records(dsn: str, table: str) -> list[tuple[str, str, int, int]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(f"SELECT body, message_id, pid, dequeue_count FROM {table}")]  # type: ignore[misc]


async def put_messages(tmp_path: Path, env: dict[str, str]) -> None:
    """Another machine putting the messages: a backend of its own on the same server."""
    storage = open_backend(tmp_path / "sender", AppSettings(env, environ={}), SystemClock())
    try:
        queues = storage.queues()
        await queues.create_queue("work")
        for start in range(0, MESSAGES, 100):
            await asyncio.gather(*(queues.put_message("work", f"m{i:04d}") for i in range(start, start + 100)))
    finally:
        await storage.aclose()


def start_hosts(app: Path, tmp_path: Path, env: dict[str, str]) -> list[RunningHost]:
    args = ("--storage", "postgres", "--no-storage-endpoints", "--no-amqp")
    return [start_funchost(app, *args, data_dir=tmp_path / name, env=env) for name in ("data-a", "data-b")]


def test_a_thousand_messages_each_processed_once_by_two_hosts(tmp_path: Path, postgres_dsn: str,
                                                             postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    hosts = start_hosts(make_app(tmp_path), tmp_path, env)
    try:
        asyncio.run(put_messages(tmp_path, env))
        wait_until(lambda: len(records(postgres_dsn, table)) >= MESSAGES, "every message processed", 45, hosts)
        for host in hosts:  # a second look: nothing runs again
            host.wait_for_output("no such line", timeout=1)
        found = records(postgres_dsn, table)
        counts = Counter(body for body, *_ in found)
        assert sorted(counts) == [f"m{i:04d}" for i in range(MESSAGES)]
        assert set(counts.values()) == {1}, {body: n for body, n in counts.items() if n > 1}
        assert len({message_id for _, message_id, _, _ in found}) == MESSAGES
        by_host = Counter(pid for *_, pid, _ in found)
        assert set(by_host) == {host.process.pid for host in hosts}, by_host  # both hosts worked
        print(f"messages per host: {sorted(by_host.values())}")
        assert {count for *_, count in found} == {1}
        assert not list(tmp_path.rglob("queues.db"))  # nothing of the queues in a data folder
    finally:
        outputs = [stop_funchost(host) for host in hosts]
    for code, output in outputs:
        assert code == 0, output


def test_a_host_killed_mid_drain_loses_no_message(tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    # Slow enough work that the drain lasts seconds however fast the hosts are (2 hosts x 24 in flight).
    env.update({"FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "3", "WORK_SECONDS": "0.2"})
    hosts = start_hosts(make_app(tmp_path), tmp_path, env)
    doomed, survivor = hosts
    try:
        asyncio.run(put_messages(tmp_path, env))
        wait_until(lambda: sum(pid == doomed.process.pid for *_, pid, _ in records(postgres_dsn, table)) >= 50,
                   "the doomed host to be mid-drain", 30, hosts)
        doomed.process.send_signal(signal.SIGKILL)  # no graceful stop: its received messages stay invisible
        doomed.process.wait(timeout=10)
        at_kill = len({body for body, *_ in records(postgres_dsn, table)})
        assert at_kill < MESSAGES - 100, "the drain was nearly over before the kill"
        wait_until(lambda: len({body for body, *_ in records(postgres_dsn, table)}) >= MESSAGES,
                   "every message processed", 45, [survivor])
        found = records(postgres_dsn, table)
        counts = Counter(body for body, *_ in found)
        assert sorted(counts) == [f"m{i:04d}" for i in range(MESSAGES)]
        again = [body for body, n in counts.items() if n > 1]  # processed by the killed host, not deleted
        assert len(again) <= 64, again  # at most what it held (batchSize 16 + 8 prefetched, per receive)
        assert all(pid == survivor.process.pid for body, _, pid, count in found if count > 1)
        print(f"at the kill {at_kill} of {MESSAGES} done; {len(again)} processed again after it")
    finally:
        if doomed.process.poll() is None:
            doomed.process.kill()
        code, output = stop_funchost(survivor)
    assert code == 0, output
