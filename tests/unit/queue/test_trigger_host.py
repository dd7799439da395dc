"""The queue trigger through the real in-process host, with a manual clock."""

from __future__ import annotations

import pytest

from funchost.testing import write_app

APP = """
import json
import azure.functions as func

app = func.FunctionApp()
SEEN = []
FAIL = set()

@app.queue_trigger(arg_name="msg", queue_name="Orders", connection="AzureWebJobsStorage")
def on_order(msg: func.QueueMessage) -> None:
    body = msg.get_body().decode()
    SEEN.append((body, msg.dequeue_count, msg.id, msg.pop_receipt, msg.insertion_time))
    if body in FAIL or body.startswith("fail"):
        raise RuntimeError("boom " + body)
"""

RELAY = """
@app.queue_trigger(arg_name="text", queue_name="plain", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="out", queue_name="orders", connection="AzureWebJobsStorage")
def relay(text: str, out: func.Out[str]) -> None:
    SEEN.append(("relay", text))
    out.set("from-relay")
"""


def seen(host):
    import sys
    module = sys.modules["function_app"]
    return module.SEEN


@pytest.fixture
def app_dir(tmp_path):
    return write_app(tmp_path / "app", APP)


async def test_message_is_processed_and_deleted(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.queues.create("orders")
    sent = await host.queues.send("orders", "hello")
    await host.advance(1)
    await host.wait_until_idle()
    [(body, count, msg_id, receipt, inserted)] = seen(host)
    assert (body, count, msg_id) == ("hello", 1, sent.id)
    assert receipt and inserted == sent.insertion_time
    assert await host.queues.count("orders") == 0


async def test_poison_after_exactly_max_dequeue_count(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.queues.create("orders")
    await host.queues.send("orders", "fail-1")
    for _ in range(10):
        await host.advance(3)
    runs = [s for s in seen(host) if s[0] == "fail-1"]
    assert [r[1] for r in runs] == [1, 2, 3, 4, 5]
    assert await host.queues.count("orders") == 0
    assert await host.queues.poison("orders") == ["fail-1"]
    poisoned = await host.queues.peek("orders-poison")
    assert poisoned[0].dequeue_count == 0  # a brand-new message


async def test_visibility_timeout_delays_the_retry(funchost_app, tmp_path):
    app = write_app(tmp_path / "vis", APP, host_json={
        "version": "2.0", "extensions": {"queues": {"visibilityTimeout": "00:00:30", "maxPollingInterval": "00:00:01"}}})
    host = await funchost_app(app)
    await host.queues.create("orders")
    await host.queues.send("orders", "fail-vis")
    await host.advance(2)
    assert len(seen(host)) == 1
    await host.advance(25)
    assert len(seen(host)) == 1  # still invisible
    await host.advance(6)
    assert [s[1] for s in seen(host)] == [1, 2]


async def test_output_binding_wakes_the_listener_and_encodes(funchost_app, tmp_path):
    host = await funchost_app(write_app(tmp_path / "relay", APP + RELAY))
    await host.queues.create("orders")
    await host.queues.create("plain")
    await host.advance(60)  # both listeners backed off to their maximum
    await host.queues.send("plain", "ping")
    await host.wait_until_idle()
    await host.advance(0.2)
    assert ("relay", "ping") in seen(host)
    bodies = [s[0] for s in seen(host) if s[0] == "from-relay"]
    assert bodies == ["from-relay"]  # output was base64-encoded and decoded by the trigger


async def test_undecodable_message_goes_to_poison_without_invoking(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.queues.create("orders")
    await host.queues.send("orders", "not base64 !!", raw=True)
    await host.advance(1)
    assert seen(host) == []
    assert await host.queues.poison("orders") == ["not base64 !!"]
    assert await host.queues.count("orders") == 0


async def test_listener_never_creates_the_monitored_queue(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.advance(5)
    service = host.runtime.storage.queues()
    assert not await service.queue_exists("orders")
    await host.queues.send("orders", "late")  # creates the queue
    await host.advance(3)
    assert [s[0] for s in seen(host)] == ["late"]


SELF_FEEDING = """
import asyncio
import azure.functions as func

app = func.FunctionApp()
STATE = {"running": 0, "peak": 0, "started": 0}
GATE = asyncio.Event()

@app.route(route="enqueue", auth_level=func.AuthLevel.ANONYMOUS)
@app.queue_output(arg_name="out", queue_name="slow", connection="AzureWebJobsStorage")
def enqueue(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set("work")
    return "queued"

@app.queue_trigger(arg_name="msg", queue_name="slow", connection="AzureWebJobsStorage")
async def slow(msg: func.QueueMessage) -> None:
    STATE["running"] += 1
    STATE["started"] += 1
    STATE["peak"] = max(STATE["peak"], STATE["running"])
    try:
        await GATE.wait()
    finally:
        STATE["running"] -= 1
"""


async def test_an_app_writing_to_its_own_queue_keeps_the_concurrency_cap(funchost_app, tmp_path):
    """batchSize 4, newBatchThreshold 2: each write wakes the listener's back-off, so it fetches the
    messages one by one until 3 are in flight (> 2); the writes after that do not end its
    threshold wait, so 3 run, not one per request."""
    import sys

    app = write_app(tmp_path / "self", SELF_FEEDING, host_json={
        "version": "2.0", "extensions": {"queues": {"batchSize": 4, "newBatchThreshold": 2}}})
    host = await funchost_app(app)
    await host.queues.create("slow")
    for _ in range(16):
        assert (await host.http("POST", "/api/enqueue")).status_code == 200
        await host.advance(0.2)
    module = sys.modules["function_app"]
    peak = module.STATE["peak"]
    module.GATE.set()
    assert peak == 3
    for _ in range(10):
        await host.advance(0.2)
    await host.wait_until_idle()
    assert module.STATE["started"] == 16 and module.STATE["peak"] <= 6
    assert await host.queues.count("slow") == 0


EXPRESSIONS = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="jobs", methods=["POST"])
@app.queue_output(arg_name="out", queue_name="jobs-{kind}-{rand-guid}", connection="AzureWebJobsStorage")
def jobs(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set("work")
    return "queued"

@app.route(route="daily", methods=["POST"])
@app.queue_output(arg_name="out", queue_name="day-{DateTime:yyyyMMdd}", connection="AzureWebJobsStorage")
def daily(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set("tick")
    return "queued"
"""


async def test_queue_names_resolve_the_standard_binding_expressions(funchost_app, tmp_path):
    """{rand-guid}, {DateTime:format} and the request body's {kind} in a queue name, as WebJobs
    resolves every [AutoResolve] property; before, the queue binding knew only binding data."""
    import re

    host = await funchost_app(write_app(tmp_path / "app", EXPRESSIONS))
    assert (await host.http("POST", "/api/jobs", json={"kind": "Invoices"})).text == "queued"
    assert (await host.http("POST", "/api/daily", json={})).text == "queued"
    names = await host.queues.service().list_queues()
    guid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    [job_queue] = [n for n in names if n.startswith("jobs-")]
    assert re.fullmatch(f"jobs-invoices-{guid}", job_queue), names
    assert f"day-{host.clock.now():%Y%m%d}" in names
    assert [m.content for m in await host.queues.peek(job_queue)] != []
