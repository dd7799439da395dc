"""Service Bus and Event Hubs across machines: two `funchost start --storage postgres` processes
with separate data folders on one PostgreSQL schema (they share nothing but the server). The app
records each message and event it handles in a table on the same server; messages and events are
sent by a third process, the CLI with `--storage postgres` and a data folder of its own.

* Service Bus: 200 messages on one queue, each handled exactly once (delivery count 1), both
  hosts working; a host killed (SIGKILL) mid-drain loses none: the messages it held locked come
  back when their lock lapses by the server's clock, and the survivor handles them.
* Event Hubs: the four partitions split 2/2 between the hosts, 200 events each handled once by
  the owner of its partition; after a SIGKILL of one host the other takes its partitions over
  and every event sent after the kill is handled (nothing lost).
* The AMQP endpoint: the SDK clients send through one machine's `funchost amqp serve --storage
  postgres` and receive through another's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from tests.acceptance.support import (
    CLI,
    RunningHost,
    free_port,
    run_cli,
    start_funchost,
    stop_funchost,
    wait_until,
)
from tests.support.postgres_hosts import record_table

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]
# The table the functions record into (`record_table`), and its columns.
RECORDS = ("handled", "kind text, body text, pid int, count int")

MESSAGES = 200
EVENTS = 200
RECORD = '''
import os
import threading
import time

import azure.functions as func
import psycopg

app = func.FunctionApp()
_lock = threading.Lock()
_conn = None


def _record(kind, body, count):
    global _conn
    with _lock:
        if _conn is None or _conn.closed or _conn.broken:
            _conn = psycopg.connect(os.environ["FUNCHOST_POSTGRES"], autocommit=True)
        _conn.execute("INSERT INTO " + os.environ["RECORD_TABLE"] + "(kind, body, pid, count)"
                      " VALUES (%s, %s, %s, %s)", (kind, body, os.getpid(), count))
'''
SERVICEBUS_APP = RECORD + '''

@app.service_bus_queue_trigger(arg_name="msg", queue_name="work", connection="ServiceBusConnection")
def work(msg: func.ServiceBusMessage) -> None:
    body = msg.get_body().decode("utf-8")
    hold = os.environ.get("HOLD_FILE")
    if hold:  # a test holds every invocation here until it removes the file
        _record("sb-start", body, msg.delivery_count)
        while os.path.exists(hold):
            time.sleep(0.02)
    time.sleep(0.02)
    _record("sb", body, msg.delivery_count)
'''
EVENTHUBS_APP = RECORD + '''

@app.event_hub_message_trigger(arg_name="event", event_hub_name="shared", connection="EventHubs")
def work(event: func.EventHubEvent) -> None:
    _record("eh", event.get_body().decode("utf-8"), 0)
'''
def config(lock: str) -> dict[str, object]:
    return {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "work", "Properties": {"LockDuration": lock, "MaxDeliveryCount": 10}}], "Topics": []}]}}


CONFIG = config("PT1M")
SERVICEBUS_HOST = {"version": "2.0", "extensions": {"serviceBus": {"maxConcurrentCalls": 8}}}
EVENTHUBS_HOST = {"version": "2.0", "extensions": {"eventHubs": {
    "loadBalancingUpdateInterval": "00:00:01", "partitionOwnershipExpirationInterval": "00:00:06"}}}
HOST_ARGS = ("--storage", "postgres", "--no-storage-endpoints", "--no-amqp")


def make_app(tmp_path: Path, code: str, host_json: dict[str, object], config: dict[str, object] | None) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "function_app.py").write_text(code)
    (app / "host.json").write_text(json.dumps(host_json))
    (app / "local.settings.json").write_text(json.dumps({"Values": {"FUNCTIONS_WORKER_RUNTIME": "python"}}))
    if config is not None:
        (app / "Config.json").write_text(json.dumps(config))
    return app


def handled(dsn: str, table: str, kind: str = "handled") -> list[tuple[str, int, int]]:
    """(body, pid, delivery count) of each recorded invocation: `kind` "started" for the rows
    an invocation writes before it waits on HOLD_FILE, "handled" for the rows it writes at the end."""
    import psycopg

    condition = "kind = 'sb-start'" if kind == "started" else "kind <> 'sb-start'"
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(  # type: ignore[misc]
            f"SELECT body, pid, count FROM {table} WHERE {condition}")]


def start_hosts(app: Path, tmp_path: Path, env: dict[str, str]) -> list[RunningHost]:
    return [start_funchost(app, *HOST_ARGS, data_dir=tmp_path / name, env=env) for name in ("data-a", "data-b")]


def cli(app: Path, tmp_path: Path, env: dict[str, str], *args: str) -> str:
    """A command run on a third machine: the CLI with a data folder of its own."""
    return run_cli(*args, "--storage", "postgres", "--app", str(app), "--data", str(tmp_path / "sender"), env=env)


def queue_counts(app: Path, tmp_path: Path, env: dict[str, str]) -> list[tuple[str, int, int]]:
    """(entity, active, dead-lettered) as `funchost servicebus list` on a third machine shows them."""
    rows = [json.loads(line) for line in cli(app, tmp_path, env, "servicebus", "list", "--output",
                                             "json").splitlines()]
    return [(row["path"], row["active"], row["deadLetter"]) for row in rows]


def send_events(app: Path, tmp_path: Path, env: dict[str, str], prefix: str, count: int) -> set[str]:
    """`count` events to the hub `shared` from a third machine, one batch per partition (bodies
    `prefix000`...); the bodies sent."""
    bodies = [f"{prefix}{i:03d}" for i in range(count)]
    for partition in range(4):
        (tmp_path / "chunk.txt").write_text("\n".join(bodies[partition::4]))
        cli(app, tmp_path, env, "eventhubs", "send", "shared", "--file", str(tmp_path / "chunk.txt"),
            "--partition-id", str(partition))
    return set(bodies)


def test_servicebus_messages_each_handled_once_by_two_hosts(tmp_path: Path, postgres_dsn: str,
                                                           postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    app = make_app(tmp_path, SERVICEBUS_APP, SERVICEBUS_HOST, CONFIG)
    hosts = start_hosts(app, tmp_path, env)
    try:
        bodies = [f"m{i:03d}" for i in range(MESSAGES)]
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        cli(app, tmp_path, env, "servicebus", "send", "work", "--file", str(tmp_path / "bodies.txt"))
        wait_until(lambda: len(handled(postgres_dsn, table)) >= MESSAGES, "every message handled", 60, hosts)
        for host in hosts:  # a second look: nothing runs again
            host.wait_for_output("no such line", timeout=1)
        found = handled(postgres_dsn, table)
        counts = Counter(body for body, _, _ in found)
        assert sorted(counts) == bodies and set(counts.values()) == {1}
        assert {count for _, _, count in found} == {1}  # no lock lapsed, nothing delivered twice
        by_host = Counter(pid for _, pid, _ in found)
        assert set(by_host) == {host.process.pid for host in hosts}, by_host  # both hosts worked
        print(f"messages per host: {sorted(by_host.values())}")
        assert queue_counts(app, tmp_path, env) == [("work", 0, 0)]
        assert not list(tmp_path.rglob("sbemulatorns.db"))  # nothing of the namespace in a data folder
    finally:
        outputs = [stop_funchost(host) for host in hosts]
    for code, output in outputs:
        assert code == 0, output


def test_servicebus_host_killed_mid_drain_loses_no_message(tmp_path: Path, postgres_dsn: str,
                                                         postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    hold = tmp_path / "hold"
    hold.touch()
    env["HOLD_FILE"] = str(hold)  # every invocation waits until the file is gone
    app = make_app(tmp_path, SERVICEBUS_APP, SERVICEBUS_HOST, config("PT5S"))
    hosts = start_hosts(app, tmp_path, env)
    victim, survivor = hosts
    bodies = [f"k{i:03d}" for i in range(120)]
    try:
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        cli(app, tmp_path, env, "servicebus", "send", "work", "--file", str(tmp_path / "bodies.txt"))

        def held_by_victim() -> set[str]:
            return {body for body, pid, _ in handled(postgres_dsn, table, "started") if pid == victim.process.pid}

        # Every slot of the victim busy (maxConcurrentCalls 8), each holding a locked message.
        wait_until(lambda: len(held_by_victim()) == 8, "the victim's eight slots to be busy", 30, hosts)
        held = held_by_victim()
        victim.process.send_signal(signal.SIGKILL)  # mid-invocation: no settlement, no release
        victim.process.wait(timeout=10)
        hold.unlink()
        wait_until(lambda: {body for body, _, _ in handled(postgres_dsn, table)} >= set(bodies),
                   "every message handled", 60, [survivor])
        found = handled(postgres_dsn, table)
        assert all(pid == survivor.process.pid for _, pid, _ in found)  # the victim finished nothing
        again = {body for body, _, count in found if count > 1}
        # Exactly what the victim held comes back, once its lock lapsed by the server's clock.
        assert again == held, (sorted(again), sorted(held))
        assert Counter(body for body, _, _ in found) == Counter(bodies)  # each handled once
        wait_until(lambda: queue_counts(app, tmp_path, env) == [("work", 0, 0)], "the queue to be empty", 20,
                   [survivor])
    finally:
        if victim.process.poll() is None:
            victim.process.kill()
        code, output = stop_funchost(survivor)
    assert code == 0, output


def test_eventhubs_partitions_shared_by_two_hosts_and_taken_over_after_a_kill(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    app = make_app(tmp_path, EVENTHUBS_APP, EVENTHUBS_HOST, None)

    def owners() -> list[str]:
        rows = json.loads(cli(app, tmp_path, env, "eventhubs", "checkpoints", "shared", "--output",
                              "json"))["partitions"]
        return [row["owner"] or "" for row in rows]

    def send(prefix: str, count: int) -> set[str]:
        return send_events(app, tmp_path, env, prefix, count)

    def bodies_seen() -> set[str]:
        return {body for body, _, _ in handled(postgres_dsn, table)}

    hosts = start_hosts(app, tmp_path, env)
    try:
        wait_until(lambda: sorted(owners().count(o) for o in set(owners())) == [2, 2] and "" not in owners(),
                   "the partitions to split 2/2", 40, hosts)
        first = send("a", EVENTS)
        wait_until(lambda: first <= bodies_seen(), f"the first {EVENTS} events", 40, hosts)
        found = handled(postgres_dsn, table)
        counts = Counter(body for body, _, _ in found)
        assert set(counts) == first and set(counts.values()) == {1}  # each once
        assert {pid for _, pid, _ in found} == {host.process.pid for host in hosts}  # partitions shared

        victim, survivor = hosts
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(timeout=10)
        second = send("b", 40)
        wait_until(lambda: len(set(owners())) == 1 and "" not in owners(), "the survivor to own all 4", 40,
                   [survivor])
        wait_until(lambda: second <= bodies_seen(), "every event sent after the kill", 40, [survivor])
        assert {pid for body, pid, _ in handled(postgres_dsn, table) if body.startswith("b")} \
            == {survivor.process.pid}
        assert first | second <= bodies_seen()  # nothing lost
        assert not list(tmp_path.rglob("eventhubs.db"))  # nothing of the namespace in a data folder
    finally:
        for host in hosts:
            if host.process.poll() is None:
                stop_funchost(host)


def serve_amqp(tmp_path: Path, name: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    """`funchost amqp serve --storage postgres` of one machine (a data folder of its own)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "amqp", "serve", "--storage", "postgres", "--data", str(tmp_path / name),
         "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **env})
    seen, deadline = "", time.monotonic() + 30
    assert process.stdout is not None
    while time.monotonic() < deadline and "Press Ctrl+C" not in seen:
        line = process.stdout.readline()
        if not line:
            break
        seen += line
    assert "Press Ctrl+C" in seen, seen
    return process, port


def emulator(port: int) -> str:
    return (f"Endpoint=sb://localhost:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")


def test_sdk_clients_send_through_one_machines_endpoint_and_receive_through_anothers(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    env = {"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    (first, one), (second, two) = serve_amqp(tmp_path, "one", env), serve_amqp(tmp_path, "two", env)
    try:
        with ServiceBusClient.from_connection_string(emulator(one)) as client:
            with client.get_queue_sender("q") as sender:
                sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
        with ServiceBusClient.from_connection_string(emulator(two)) as client:
            with client.get_queue_receiver("q", max_wait_time=10) as receiver:
                received = []
                while len(received) < 5 and (batch := receiver.receive_messages(max_message_count=5,
                                                                                 max_wait_time=10)):
                    for message in batch:
                        receiver.complete_message(message)
                    received += [str(m) for m in batch]
        assert received == [f"m{i}" for i in range(5)]

        with EventHubProducerClient.from_connection_string(emulator(one), eventhub_name="hub") as producer:
            batch = producer.create_batch(partition_id="0")
            for i in range(3):
                batch.add(EventData(f"e{i}"))
            producer.send_batch(batch)
        events: list[str] = []
        with EventHubConsumerClient.from_connection_string(emulator(two), "$Default",
                                                           eventhub_name="hub") as consumer:
            def on_event(context: object, event: EventData | None) -> None:
                if event is not None:
                    events.append(event.body_as_str())
                if len(events) >= 3:
                    consumer.close()

            stop = threading.Timer(30, consumer.close)  # a bound on the wait, should the events never come
            stop.start()
            consumer.receive(on_event, partition_id="0", starting_position="-1", max_wait_time=2)
            stop.cancel()
        assert events == ["e0", "e1", "e2"]
    finally:
        for process in (first, second):
            process.terminate()
            process.wait(30)
