"""A PostgreSQL restart under a running host (`--storage postgres`). In the middle of a queue drain:
the host keeps running, reconnects by itself, loses no message, deletes every message whose
function completed (a delete caught by the restart is tried again) and runs none twice. In the
middle of a Durable fan-out: the orchestration completes with every activity's result delivered
once (an activity whose completion the restart caught runs again once its lease lapses). In the
middle of a Service Bus drain: every message is handled and settled, none dead-lettered, without
waiting for a lock to lapse (a settlement caught by the restart is tried again). Under an Event
Hubs trigger: the host keeps its partitions and handles every event sent after the restart once.
During a burst of blob triggers: every blob runs. Under two hosts' singleton timer: afterwards one
host, and only one, runs it every second."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import (
    RunningHost,
    copy_example,
    run_cli,
    start_funchost,
    stop_funchost,
    wait_until,
)
from tests.acceptance.test_postgres_messaging import (
    CONFIG,
    EVENTHUBS_APP,
    EVENTHUBS_HOST,
    HOST_ARGS,
    RECORDS,
    SERVICEBUS_APP,
    SERVICEBUS_HOST,
    cli,
    handled,
    make_app,
    queue_counts,
    send_events,
)
from tests.acceptance.test_queue_hosts import task_lines
from tests.support.postgres import PostgresServer
from tests.support.postgres_hosts import record_table

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]

TIMEOUT = 60.0


def test_a_server_restart_mid_drain_loses_nothing_and_reruns_nothing_completed(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    app = copy_example("queues", tmp_path)
    log = tmp_path / "tasks.log"
    env = {"FUNCHOST_POSTGRES": postgres_server.dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema,
           "TASK_LOG": str(log), "FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "5"}
    host = start_funchost(app, "--storage", "postgres", "--no-storage-endpoints", "--no-amqp",
                          data_dir=tmp_path / "data", env=env)
    try:
        bodies = [f"job-{i}" for i in range(800)]
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        run_cli("queue", "send", "tasks", "--file", str(tmp_path / "bodies.txt"), "--app", str(app),
                "--data", str(tmp_path / "sender"), "--storage", "postgres", env=env)
        wait_until(lambda: len(task_lines(log)) >= 150, "the drain to start", TIMEOUT, [host])
        postgres_server.restart()
        wait_until(lambda: set(bodies) <= {b for k, b, _, _ in task_lines(log) if k == "done"},
                   "the drain to finish after the restart", TIMEOUT, [host])
        # Every completed message was deleted: one whose delete failed would stay (invisible) and
        # run again once its visibility lapsed, after this test would have looked.
        wait_until(lambda: _messages_left(postgres_server.dsn, postgres_schema) == 0,
                   "every completed message to be deleted", 10.0, [host])
        time.sleep(1.0)  # anything run twice would show by now
        counts = Counter(body for kind, body, _, _ in task_lines(log) if kind == "done")
        assert set(counts) == set(bodies)
        assert max(counts.values()) == 1, sorted(b for b, c in counts.items() if c > 1)
        assert host.process.poll() is None, host.output()
    finally:
        stop_funchost(host)


def _messages_left(dsn: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(f"SELECT count(*) FROM {schema}.queue_messages m JOIN {schema}.queues q "
                           "USING (queue_id) WHERE q.name = 'tasks'").fetchone()
    return int(row[0]) if row else 0


def test_a_server_restart_mid_fan_out_completes_the_orchestration_with_every_result_once(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    from tests.acceptance.durable_support import poll, started
    from tests.acceptance.test_postgres_durable import ITEMS, runs
    from tests.acceptance.test_postgres_durable import make_app as durable_app

    app, log = durable_app(tmp_path), tmp_path / "work.log"
    env = {"FUNCHOST_POSTGRES": postgres_server.dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema,
           "WORK_SECONDS": "0.25", "WORK_LOG": str(log)}
    host = start_funchost(app, "--storage", "postgres", "--no-storage-endpoints", "--no-amqp",
                          data_dir=tmp_path / "data", env=env)
    try:
        response = httpx.post(f"{host.base_url}/api/orchestrators/fan_out_fan_in", json={"count": ITEMS}, timeout=30)
        status_url = started(response)
        wait_until(lambda: len(runs(log)) >= 6, "the fan-out to be under way", TIMEOUT, [host])
        postgres_server.restart()
        status = poll(host, status_url, timeout=TIMEOUT)
        assert status["runtimeStatus"] == "Completed", status
        assert status["output"] == {"results": [i * i for i in range(ITEMS)], "total": sum(i * i for i in range(ITEMS))}
        history = httpx.get(status_url + "&showHistory=true&showHistoryOutput=true", timeout=10).json()["historyEvents"]
        completed = [e["Result"] for e in history if e["EventType"] == "TaskCompleted"]
        assert sorted(completed) == [i * i for i in range(ITEMS)], completed  # each result delivered once
        assert host.process.poll() is None, host.output()
    finally:
        stop_funchost(host)


def test_a_server_restart_mid_service_bus_drain_handles_every_message_and_empties_the_queue(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    dsn = postgres_server.dsn
    app, table, env, host = _messaging_host(tmp_path, dsn, postgres_schema, SERVICEBUS_APP, SERVICEBUS_HOST, CONFIG)
    try:
        bodies = [f"m{i:03d}" for i in range(300)]
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        cli(app, tmp_path, env, "servicebus", "send", "work", "--file", str(tmp_path / "bodies.txt"))
        wait_until(lambda: len(handled(dsn, table)) >= 40, "the drain to start", TIMEOUT, [host])
        postgres_server.restart()
        # A function whose own insert the restart refused fails, and its message is delivered again.
        wait_until(lambda: {body for body, _, _ in handled(dsn, table)} >= set(bodies),
                   "every message handled after the restart", TIMEOUT, [host])
        wait_until(lambda: queue_counts(app, tmp_path, env) == [("work", 0, 0)],
                   "every message settled, none dead-lettered", 20.0, [host])
        assert host.process.poll() is None, host.output()
    finally:
        stop_funchost(host)


def test_after_a_server_restart_event_hubs_partitions_stay_owned_and_new_events_are_handled(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    dsn = postgres_server.dsn
    app, table, env, host = _messaging_host(tmp_path, dsn, postgres_schema, EVENTHUBS_APP, EVENTHUBS_HOST, None)

    def send(prefix: str, count: int) -> set[str]:
        return send_events(app, tmp_path, env, prefix, count)

    def seen() -> Counter[str]:
        return Counter(body for body, _, _ in handled(dsn, table))

    def owners() -> set[str]:
        rows = json.loads(cli(app, tmp_path, env, "eventhubs", "checkpoints", "shared", "--output", "json"))
        return {row["owner"] or "" for row in rows["partitions"]}

    try:
        wait_until(lambda: len(owners()) == 1 and "" not in owners(), "the host to own the 4 partitions",
                   TIMEOUT, [host])
        before = send("a", 40)
        wait_until(lambda: before <= set(seen()), "the events sent before the restart", TIMEOUT, [host])
        postgres_server.restart()
        # The app's own connection to the server is broken by the restart: its first insert fails
        # (an Event Hubs trigger does not run a failed event again), and it connects anew.
        send("w", 4)
        wait_until(lambda: any(body.startswith("w") for body in seen()), "the app to record again", TIMEOUT, [host])
        after = send("b", 40)
        wait_until(lambda: after <= set(seen()), "the events sent after the restart", TIMEOUT, [host])
        counts = seen()
        assert before | after <= set(counts) and set(counts.values()) == {1}  # each handled once
        assert len(owners()) == 1 and "" not in owners()
        assert host.process.poll() is None, host.output()
    finally:
        stop_funchost(host)


def test_a_server_restart_during_a_burst_of_blob_triggers_runs_every_blob(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    import asyncio

    from tests.acceptance.test_postgres_blob_trigger import BLOBS, RAN, upload

    app = copy_example("blobs", tmp_path)
    env = {"FUNCHOST_POSTGRES": postgres_server.dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    host = start_funchost(app, "--storage", "postgres", "--no-storage-endpoints", data_dir=tmp_path / "data", env=env)
    try:
        asyncio.run(upload(tmp_path, env))
        wait_until(lambda: len(RAN.findall(host.output())) >= 5, "the thumbnails to start", TIMEOUT, [host])
        postgres_server.restart()
        wait_until(lambda: len(set(RAN.findall(host.output()))) == BLOBS, "every blob's thumbnail after the restart",
                   TIMEOUT, [host])
        counts = Counter(RAN.findall(host.output()))
        # A blob whose receipt the restart caught may run again (blob triggers are at-least-once).
        assert sum(counts.values()) - BLOBS <= 4, counts
        assert host.process.poll() is None, host.output()
    finally:
        stop_funchost(host)


def test_after_a_server_restart_one_of_two_hosts_runs_the_singleton_timer(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    from tests.acceptance.test_timer_singleton import TAKEOVER_TIMEOUT, pids

    app, log = copy_example("timers", tmp_path), tmp_path / "timer.log"
    env = {"TIMER_LOG": str(log), "FUNCHOST_POSTGRES": postgres_server.dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    args = ("--storage", "postgres", "--no-storage-endpoints")
    hosts = [start_funchost(app, *args, data_dir=tmp_path / name, env=env) for name in ("data-a", "data-b")]
    try:
        wait_until(lambda: len(pids(log)) >= 2, "the heartbeat", 20, hosts)
        postgres_server.restart()
        mark = len(pids(log))
        wait_until(lambda: len(pids(log)) >= mark + 2, "the heartbeat after the restart", TAKEOVER_TIMEOUT, hosts)
        time.sleep(2.0)  # a lease that lapsed in the restart has been taken by one host by now
        mark = len(pids(log))
        time.sleep(4.0)
        after = pids(log)[mark:]
        assert len(after) >= 3 and len(set(after)) == 1, after  # one host, every second
        assert all(host.process.poll() is None for host in hosts)
    finally:
        for host in hosts:
            stop_funchost(host)


def _messaging_host(tmp_path: Path, dsn: str, schema: str, code: str, host_json: dict[str, object],
                    config: dict[str, object] | None) -> tuple[Path, str, dict[str, str], RunningHost]:
    """A host of an app that records what it handles in a table on the server: (app, table, env, host)."""
    table, env = record_table(dsn, schema, *RECORDS)
    app = make_app(tmp_path, code, host_json, config)
    return app, table, env, start_funchost(app, *HOST_ARGS, data_dir=tmp_path / "data", env=env)
