"""Service Bus across real `funchost start` processes sharing one data folder."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import copy_example, run_cli, start_funchost, stop_funchost, wait_until

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

TIMEOUT = 90.0
EMULATOR = ("Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")

# The flow of the Python worker's end-to-end Service Bus app (tests/endtoend/servicebus_functions):
# HTTP -> Service Bus output -> Service Bus trigger -> blob output, read back over HTTP, with the
# emulator connection string. Every property the worker's test asserts must be present.
ROUND_TRIP = """
import json
import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="put_message")
@app.service_bus_queue_output(arg_name="msg", connection="SbConnection", queue_name="testqueue")
def put_message(req: func.HttpRequest, msg: func.Out[str]):
    msg.set(req.get_body().decode("utf-8"))
    return "OK"

@app.route(route="get_servicebus_triggered")
@app.blob_input(arg_name="file", path="python-worker-tests/test-servicebus-triggered.txt",
                connection="AzureWebJobsStorage")
def get_servicebus_triggered(req: func.HttpRequest, file: func.InputStream) -> str:
    return func.HttpResponse(file.read().decode("utf-8"), mimetype="application/json")

def _iso(value):
    return value.isoformat() if value else None

@app.service_bus_queue_trigger(arg_name="msg", connection="SbConnection", queue_name="testqueue")
@app.blob_output(arg_name="$return", path="python-worker-tests/test-servicebus-triggered.txt",
                 connection="AzureWebJobsStorage")
def servicebus_trigger(msg: func.ServiceBusMessage) -> str:
    names = ["message_id", "content_type", "delivery_count", "label", "partition_key", "reply_to",
             "reply_to_session_id", "session_id", "time_to_live", "to", "user_properties",
             "application_properties", "correlation_id", "dead_letter_error_description", "dead_letter_reason",
             "dead_letter_source", "enqueued_sequence_number", "lock_token", "sequence_number", "state",
             "subject", "transaction_partition_key"]
    result = {name: getattr(msg, name) for name in names}
    result["body"] = msg.get_body().decode("utf-8")
    for name in ("expiration_time", "scheduled_enqueue_time", "enqueued_time_utc", "expires_at_utc", "locked_until"):
        result[name] = _iso(getattr(msg, name))
    return json.dumps(result, default=str)
"""
WORKER_ASSERTED = {"message_id", "body", "content_type", "delivery_count", "expiration_time", "label",
                   "partition_key", "reply_to", "reply_to_session_id", "scheduled_enqueue_time", "session_id",
                   "time_to_live", "to", "user_properties", "application_properties", "correlation_id",
                   "dead_letter_error_description", "dead_letter_reason", "dead_letter_source",
                   "enqueued_sequence_number", "enqueued_time_utc", "expires_at_utc", "locked_until", "lock_token",
                   "sequence_number", "state", "subject", "transaction_partition_key"}


def test_http_output_trigger_blob_round_trip_with_the_emulator_connection_string(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", ROUND_TRIP, settings={"SbConnection": EMULATOR})
    host = start_funchost(app, data_dir=tmp_path / "data")
    try:
        data = str(round(time.time()))
        response = httpx.post(f"{host.base_url}/api/put_message", content=data, timeout=10)
        assert (response.status_code, response.text) == (200, "OK")
        seen: dict[str, object] = {}

        def triggered() -> bool:
            reply = httpx.get(f"{host.base_url}/api/get_servicebus_triggered", timeout=10)
            if reply.status_code != 200:
                return False
            seen.update(reply.json())
            return seen.get("body") == data

        wait_until(triggered, "the Service Bus trigger to write the blob", TIMEOUT, [host])
        assert WORKER_ASSERTED <= set(seen)
        assert seen["delivery_count"] == 1 and seen["content_type"] == "text/plain"
        assert seen["locked_until"] is None and seen["dead_letter_reason"] is None  # not sent by the real host
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    assert EMULATOR not in output and "SAS_KEY_VALUE" not in output  # no secret in any log line


def task_lines(log: Path) -> list[tuple[str, str, int, int]]:
    if not log.exists():
        return []
    lines = []
    for line in log.read_text().splitlines():
        kind, body, pid, count = line.split(" ")
        lines.append((kind, body, int(pid), int(count)))
    return lines


def test_two_hosts_and_a_sigkill_lose_no_message(tmp_path: Path) -> None:
    # SB-1: every message completed at least once; the killed host's locked messages come back
    # after their lock (LockDuration PT5S in the example's Config.json) and are processed.
    app = copy_example("servicebus", tmp_path)
    data, log = tmp_path / "data", tmp_path / "tasks.log"
    # Invocations long enough that the victim always holds locked messages when it is killed, and a
    # queue deep enough that it is still busy then (with 0.05 s both hosts could drain it between polls).
    env = {"TASK_LOG": str(log), "SLOW_TASK_SECONDS": "0.25"}
    hosts = [start_funchost(app, data_dir=data, env=env) for _ in range(2)]
    survivor = hosts[1]
    bodies = [f"slow-{i}" for i in range(160)]
    try:
        (tmp_path / "bodies.txt").write_text("\n".join(bodies) + "\n")
        run_cli("servicebus", "send", "orders", "--file", str(tmp_path / "bodies.txt"), "--app", str(app),
                "--data", str(data))
        victim_pid = hosts[0].process.pid
        wait_until(lambda: sum(1 for _, _, pid, _ in task_lines(log) if pid == victim_pid) >= 10,
                   "the first host to be busy", TIMEOUT, hosts)
        hosts[0].process.send_signal(signal.SIGKILL)  # mid-invocation: no settlement, no release
        hosts[0].process.wait(timeout=10)

        def all_done() -> bool:
            return {body for kind, body, _, _ in task_lines(log) if kind == "done"} >= set(bodies)

        wait_until(all_done, "every message to be completed", TIMEOUT, [survivor])

        def counts() -> tuple[int, int]:
            listing = {row["path"]: row for row in map(json.loads, run_cli(
                "servicebus", "list", "--app", str(app), "--data", str(data), "--output", "json").splitlines())}
            return listing["orders"]["active"], listing["orders"]["deadLetter"]

        # A message the victim finished but had not yet settled when it died is still locked: it
        # comes back when its lock lapses (5 s) and the survivor handles it again.
        wait_until(lambda: counts() == (0, 0), "the queue to be empty", TIMEOUT, [survivor])
        done = Counter(body for kind, body, _, _ in task_lines(log) if kind == "done")
        assert set(done) == set(bodies)
        redelivered = [count for kind, _, pid, count in task_lines(log) if kind == "done" and count > 1]
        assert redelivered, "the kill interrupted no invocation"
        assert all(count == 2 for count in redelivered)  # the killed host's messages, delivered again
    finally:
        for host in hosts[1:]:
            stop_funchost(host)
