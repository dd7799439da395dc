"""The Python worker's trigger end-to-end apps on `funchost start`, with the flows of its tests.

Ported from Azure/azure-functions-python-worker `tests/endtoend/` (sources in
`worker_apps/SOURCE.md`): `test_queue_functions.py` (`TestQueueFunctionsStein`,
`TestQueueFunctionsSteinGeneric`), `test_timer_functions.py`, `test_retry_policy_functions.py`,
`test_generic_functions.py`, `test_cosmosdb_functions.py` (stein and generic) and
`test_durable_functions.py`. Where the worker's test sleeps a fixed time and then asserts, the
port polls with a deadline for the same result.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import run_cli
from tests.acceptance.worker_apps_support import WorkerAppHost, poll, start_apps, stop_all

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import open_storage

pytestmark = pytest.mark.acceptance

QUEUE_APPS = ["queue_functions/queue_functions_stein", "queue_functions/queue_functions_stein/generic"]
COSMOS_APPS = ["cosmosdb_functions/cosmosdb_functions_stein", "cosmosdb_functions/cosmosdb_functions_stein/generic"]
COSMOS_V3_APPS = ["cosmosdb_functions/cosmosdb_v3_functions_stein",
                  "cosmosdb_functions/cosmosdb_v3_functions_stein/generic"]
TIMER_APP = "timer_functions/timer_functions_stein"
FIXED_RETRY_APP = "retry_policy_functions/fixed_strategy"
EXPONENTIAL_RETRY_APP = "retry_policy_functions/exponential_strategy"
DURABLE_APP = "durable_functions/durable_functions_stein"
GENERIC_APP = "generic_functions/generic_functions_stein"
TIMER_LINE = "This timer trigger function executed successfully"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, WorkerAppHost]]:
    # The retry apps first: their timers fire every second and their flows take a few seconds
    # of retries, which then overlap the other apps' start-up and flows.
    apps = [FIXED_RETRY_APP, EXPONENTIAL_RETRY_APP, *QUEUE_APPS, *COSMOS_APPS, *COSMOS_V3_APPS,
            TIMER_APP, DURABLE_APP, GENERIC_APP]
    # The worker's test environment has the monitored container; a change-feed listener started
    # before it exists starts later, from that moment on, and misses what was written before.
    started = start_apps(apps, tmp_path_factory.mktemp("triggers"),
                         prepare={**{app: create_monitored_container for app in COSMOS_APPS},
                                  GENERIC_APP: create_table_read_by_every_function})
    yield started
    stop_all(started.values())


def create_monitored_container(data: Path) -> None:
    run_cli("docs", "create", "--data", str(data), "--connection", "AzureWebJobsCosmosDBConnectionString",
            "-d", "test", "-c", "items", "--partition-key-path", "/id")


def create_table_read_by_every_function(data: Path) -> None:
    """The generic app's table, which exists in the worker's test account (its Event Hubs batch
    tests write to it); a table input binding on a missing table fails the invocation."""
    async def create() -> None:
        storage = open_storage("embedded", data, AppSettings({}, environ={}), SystemClock())
        try:
            await storage.tables().create_table("EventHubBatchTest")
        finally:
            await storage.aclose()

    asyncio.run(create())


# test_queue_functions.py: an HTTP function writes a queue message, the queue trigger writes
# the message to a blob, an HTTP function reads the blob back.

@pytest.mark.parametrize("app", QUEUE_APPS)
def test_queue_basic(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    response = host.request("POST", "put_queue", content="test-message")
    assert response.status_code == 200 and response.text == "OK"
    response = poll(lambda: host.request("GET", "get_queue_blob"), lambda r: r.status_code == 200,
                    "queue_trigger to write its blob")
    msg = response.json()["queue"]
    assert msg["body"] == "test-message"
    for attr in ("id", "expiration_time", "insertion_time", "time_next_visible", "pop_receipt", "dequeue_count"):
        assert msg.get(attr) is not None, attr


@pytest.mark.parametrize("app", QUEUE_APPS)
@pytest.mark.parametrize(("put", "get", "body"), [
    ("put_queue_return", "get_queue_blob_return", "test-message-return"),
    ("put_queue_message_return", "get_queue_blob_message_return", "test-message-object-return"),
    ("put_queue_untyped_return", "get_queue_untyped_blob_return", "test-untyped-return"),
])
def test_queue_return_flows(hosts: dict[str, WorkerAppHost], app: str, put: str, get: str, body: str) -> None:
    # test_queue_return, test_queue_message_object_return, test_queue_untyped_return
    host = hosts[app]
    assert host.request("POST", put, content=body).status_code == 200
    response = poll(lambda: host.request("GET", get), lambda r: r.status_code == 200, f"the blob {get} reads")
    assert response.text == body


@pytest.mark.parametrize("app", QUEUE_APPS)
def test_queue_return_multiple(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    response = host.request("POST", "put_queue_return_multiple", content="foo")
    assert 200 <= response.status_code < 300, response.status_code
    # The worker's test stops here; both messages also reach queue_trigger_return_multiple.
    lines = host.wait_for_log(lambda out: "trigger on message: one" in out and "trigger on message: two" in out,
                              "both messages to be processed")
    assert lines.count("trigger on message: one") >= 1


@pytest.mark.parametrize("app", QUEUE_APPS)
def test_queue_return_multiple_outparam(hosts: dict[str, WorkerAppHost], app: str) -> None:
    response = hosts[app].request("POST", "put_queue_multiple_out", content="foo")
    assert 200 <= response.status_code < 300, response.status_code
    assert response.text == "HTTP response: foo"


# test_timer_functions.py: a timer on "*/1 * * * * *"; check_log_timer counts its log line in the
# output captured during the test (about one second): one line per occurrence, no occurrence
# run twice.

def fired_at(line: str) -> datetime:
    match = re.search(r"Reason='Timer fired at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)", line)
    assert match, line
    return datetime.fromisoformat(match.group(1)[:26])


def test_timer(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts[TIMER_APP]
    assert host.request("GET", "", no_prefix=True).is_success
    lines = host.wait_for_log(lambda out: out.count(TIMER_LINE) >= 3, "three timer occurrences")
    fired = [fired_at(line) for line in lines if line.startswith("Executing 'Functions.mytimer'")]
    occurrences = [round(moment.timestamp()) for moment in fired]
    assert len(fired) >= 3 and len(set(occurrences)) == len(occurrences), fired
    done = [line for line in lines if line.startswith("Executed 'Functions.mytimer' (Succeeded")]
    assert lines.count(TIMER_LINE) in (len(done), len(done) + 1)  # one log line per invocation


# test_retry_policy_functions.py: the timer function fails until its last retry.

def test_fixed_retry_policy(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts[FIXED_RETRY_APP]
    assert host.request("GET", "", no_prefix=True).is_success
    reached = "Max retries of 3 for function mytimer has been reached"
    lines = host.wait_for_log(lambda out: reached in out, "the last retry")
    assert "Current retry count: 0" in lines and "Current retry count: 1" in lines


def test_retry_policy(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts[EXPONENTIAL_RETRY_APP]
    assert host.request("GET", "", no_prefix=True).is_success
    reached = "Max retries of 3 for function mytimer has been reached"
    lines = host.wait_for_log(lambda out: reached in out, "the last retry")
    for count in (1, 2, 3):
        assert f"Current retry count: {count}" in lines


# test_cosmosdb_functions.py: documents written through the output binding are read back by
# the input binding and by the change-feed trigger (which writes the first one to a blob).

@pytest.mark.parametrize("app", COSMOS_APPS)
def test_cosmosdb_input(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    doc = {"id": "cosmosdb-input-test", "data": str(round(time.time()))}
    response = host.request("POST", "put_document", content=json.dumps(doc))
    assert response.status_code == 200 and response.text == "OK"
    response = poll(lambda: host.request("GET", "cosmosdb_input"),
                    lambda r: r.status_code == 200 and r.json().get("data") == doc["data"], "the input binding")
    document = response.json()
    assert document["id"] == doc["id"]
    for system in ("_etag", "_rid", "_self", "_ts"):
        assert system in document, system


@pytest.mark.parametrize("app", COSMOS_APPS)
def test_cosmosdb_trigger(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    doc = {"id": "cosmosdb-trigger-test", "data": str(round(time.time()))}
    response = host.request("POST", "put_document", content=json.dumps(doc))
    assert response.status_code == 200 and response.text == "OK"

    def triggered(r: httpx.Response) -> bool:
        return r.status_code == 200 and r.json().get("id") == doc["id"] and r.json().get("data") == doc["data"]

    response = poll(lambda: host.request("GET", "get_cosmosdb_triggered"), triggered,
                    "the change-feed trigger to write the document to its blob", timeout=30)
    document = response.json()
    document.pop("_metadata", None)
    for system in ("_etag", "_lsn", "_rid", "_self", "_ts"):
        assert system in document, system


@pytest.mark.parametrize("app", COSMOS_V3_APPS)
def test_cosmosdb_v3_functions_are_in_error(hosts: dict[str, WorkerAppHost], app: str) -> None:
    # The *_v3 decorators (collectionName, connectionStringSetting) describe the Cosmos DB
    # extension 3.x; the host of today loads 4.x (extension bundle 4), which does not read them.
    host = hosts[app]
    output = host.host.output()
    for function in ("cosmosdb_input", "cosmosdb_trigger", "put_document"):
        assert re.search(rf"The '{function}' function is in error: .*uses Cosmos DB extension 3\.x properties "
                         r"'collectionName' \(now 'containerName'\)", output), output
    assert host.request("POST", "put_document", content="{}").status_code == 404
    assert host.request("GET", "cosmosdb_input").status_code == 404


# test_durable_functions.py

def test_durable(hosts: dict[str, WorkerAppHost]) -> None:
    host = hosts[DURABLE_APP]
    response = host.request("GET", "orchestrators/DurableFunctionsOrchestrator")
    assert response.status_code == 202
    status_url = response.json()["statusQueryGetUri"]
    status = poll(lambda: httpx.get(status_url, timeout=10),
                  lambda r: r.status_code == 200 and r.json()["runtimeStatus"] not in ("Pending", "Running"),
                  "the orchestration to finish").json()
    assert status["runtimeStatus"] == "Completed"
    assert status["output"] == ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]


# test_generic_functions.py: every function has a generic `table` input binding; the timer
# functions return values without a $return binding, which the worker accepts (the table type
# has no converter in the library, so the worker binds it with its GenericBinding, which has an
# implicit output): no invocation may fail.

@pytest.fixture
def generic_host(hosts: dict[str, WorkerAppHost]) -> WorkerAppHost:
    return hosts[GENERIC_APP]


def test_return_processed_last(generic_host: WorkerAppHost) -> None:
    assert generic_host.request("GET", "return_processed_last").status_code == 200


def test_return_not_processed_last(generic_host: WorkerAppHost) -> None:
    assert generic_host.request("GET", "return_not_processed_last").status_code == 200


def test_return_types(generic_host: WorkerAppHost) -> None:
    expected = [TIMER_LINE, "Return string", "Return bytes", "Return dict", "Return list", "Return int",
                "Return double", "Return bool"]
    lines = generic_host.wait_for_log(lambda out: all(line in out for line in expected), "every timer function")
    assert not [line for line in lines if "Exception" in line]
