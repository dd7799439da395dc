"""The Service Bus trigger and output through the in-process host, on a manual clock.

Each test is one row of the invariants table (docs/servicebus.md, shared spec §3.3).
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import pytest

from funchost.testing import write_app

APP = """
import asyncio
import json
import azure.functions as func

app = func.FunctionApp()
SEEN = []
STATE = {"running": 0, "max_running": 0}

@app.service_bus_queue_trigger(arg_name="msg", queue_name="orders", connection="ServiceBus")
def on_order(msg: func.ServiceBusMessage) -> None:
    body = msg.get_body().decode()
    SEEN.append({"body": body, "id": msg.message_id, "count": msg.delivery_count, "seq": msg.sequence_number,
                 "props": msg.user_properties, "app": msg.application_properties, "lock": msg.lock_token,
                 "enq": msg.enqueued_time_utc, "exp": msg.expires_at_utc, "locked_until": msg.locked_until,
                 "reason": msg.dead_letter_reason, "ttl": msg.time_to_live, "ct": msg.content_type,
                 "label": msg.label, "subject": msg.subject, "session": msg.session_id,
                 "meta": sorted(msg.metadata)})
    if body.startswith("fail"):
        raise RuntimeError("boom " + body)
"""

SLOW = """
RELEASE = asyncio.Event()

@app.service_bus_queue_trigger(arg_name="msg", queue_name="slow", connection="ServiceBus")
async def slow(msg: func.ServiceBusMessage) -> None:
    STATE["running"] += 1
    STATE["max_running"] = max(STATE["max_running"], STATE["running"])
    try:
        await RELEASE.wait()
    finally:
        STATE["running"] -= 1
    SEEN.append(msg.get_body().decode())
"""


def module():
    return sys.modules["function_app"]


def bodies(seen):
    return [s["body"] if isinstance(s, dict) else s for s in seen]


async def start(funchost_app, tmp_path, code=APP, *, host_json=None, settings=None, files=None):
    app = write_app(tmp_path / "app", code, host_json=host_json, settings=settings, files=files)
    host = await funchost_app(app)
    return host


async def test_message_is_delivered_with_the_hosts_metadata_and_completed(funchost_app, tmp_path):
    host = await start(funchost_app, tmp_path)
    seq = await host.servicebus.send("orders", {"id": 1}, message_id="m-1", subject="order",
                                     application_properties={"tenant": "a", "n": 2})
    await host.advance(1)
    [seen] = module().SEEN
    assert seen["body"] == '{"id": 1}' and seen["id"] == "m-1" and seen["seq"] == seq
    assert seen["count"] == 1 and seen["props"] == seen["app"] == {"tenant": "a", "n": 2}
    assert seen["label"] == seen["subject"] == "order"
    assert seen["lock"] and seen["enq"] is not None
    assert seen["exp"].year == 9999  # DateTimeOffset.MaxValue: no TTL
    # Keys the extension does not send stay None, exactly as under the real host.
    assert (seen["locked_until"], seen["reason"], seen["ttl"]) == (None, None, None)
    assert "LockedUntil" not in seen["meta"] and "UserProperties" in seen["meta"] and "ExpiresAt" in seen["meta"]
    assert "ContentType" not in seen["meta"]  # null values are not sent
    assert (await host.servicebus.info("orders")).active == 0
    assert host.servicebus.completed("on_order") == 1


async def test_always_failing_function_runs_max_delivery_count_times_then_dead_letters(funchost_app, tmp_path):
    # SB-2 and SB-3: abandon is immediate (no lock wait), the DLQ reason is MaxDeliveryCountExceeded.
    host = await start(funchost_app, tmp_path)
    await host.servicebus.send("orders", "fail-forever")
    await host.advance(0.5)
    attempts = [s["count"] for s in module().SEEN]
    assert attempts == list(range(1, 11))  # the service default MaxDeliveryCount is 10
    [dead] = await host.servicebus.peek("orders/$deadletterqueue")
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded" and dead.delivery_count == 10
    assert await host.servicebus.dead_letters("orders") == ["fail-forever"]
    assert host.servicebus.abandoned("on_order") == 10


async def test_config_json_sets_max_delivery_count(funchost_app, tmp_path):
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "orders", "Properties": {"MaxDeliveryCount": 3, "LockDuration": "PT30S"}}]}]}}
    host = await start(funchost_app, tmp_path, files={"Config.json": "// emulator format\n" + json.dumps(config)})
    await host.servicebus.send("orders", "fail-x")
    await host.advance(0.5)
    assert [s["count"] for s in module().SEEN] == [1, 2, 3]
    assert (await host.servicebus.info("orders")).properties.lock_duration == 30


AUTO_OFF = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.service_bus_queue_trigger(arg_name="msg", queue_name="manual", connection="ServiceBus",
                               auto_complete_messages=False)
def manual(msg: func.ServiceBusMessage) -> None:
    SEEN.append(msg.delivery_count)
"""


async def test_without_auto_complete_the_message_returns_after_lock_expiry(funchost_app, tmp_path):
    # SB-4: success without settlement -> nothing; redelivery only when the lock expires.
    host = await start(funchost_app, tmp_path, AUTO_OFF)
    await host.servicebus.send("manual", "x")
    await host.advance(1)
    assert module().SEEN == [1]
    await host.advance(58)
    assert module().SEEN == [1]
    await host.advance(2)
    assert module().SEEN == [1, 2]


async def test_lock_is_renewed_while_the_function_runs_up_to_the_maximum(funchost_app, tmp_path):
    code = APP + SLOW
    host = await start(funchost_app, tmp_path, code,
                       host_json={"version": "2.0", "extensions": {"serviceBus": {
                           "maxAutoLockRenewalDuration": "00:02:00"}}})
    await host.servicebus.send("slow", "long job")
    # Renewed at 50 s and 100 s (each 10 s before expiry); the next one would pass the 2-minute
    # maximum, so the lock lapses at 160 s and the message is delivered again.
    await host.advance(159)
    assert module().STATE["running"] == 1
    await host.advance(3)
    assert module().STATE["running"] == 2
    module().RELEASE.set()
    await host.advance(1)
    await host.wait_until_idle()


async def test_concurrency_is_capped_by_max_concurrent_calls(funchost_app, tmp_path):
    # SB-6: at most maxConcurrentCalls invocations in flight.
    host = await start(funchost_app, tmp_path, APP + SLOW,
                       host_json={"version": "2.0", "extensions": {"serviceBus": {"maxConcurrentCalls": 3}}})
    for i in range(8):
        await host.servicebus.send("slow", f"m{i}")
    await host.advance(1)
    assert module().STATE["running"] == 3
    module().RELEASE.set()
    await host.advance(1)
    await host.wait_until_idle()
    assert sorted(s for s in module().SEEN if isinstance(s, str)) == [f"m{i}" for i in range(8)]
    assert module().STATE["max_running"] == 3


SESSIONS = """
import asyncio
import azure.functions as func
app = func.FunctionApp()
ORDER = []
RUNNING = {}

@app.service_bus_queue_trigger(arg_name="msg", queue_name="carts", connection="ServiceBus",
                               is_sessions_enabled=True)
async def carts(msg: func.ServiceBusMessage) -> None:
    session = msg.session_id
    RUNNING[session] = RUNNING.get(session, 0) + 1
    assert RUNNING[session] == 1, "two messages of one session at once"
    await asyncio.sleep(0)
    body = msg.get_body().decode()
    ORDER.append((session, body, msg.delivery_count))
    RUNNING[session] -= 1
    if body == "a2" and msg.delivery_count == 1:
        raise RuntimeError("retry a2")
"""


async def test_sessions_are_fifo_one_at_a_time_including_redelivery(funchost_app, tmp_path):
    # SB-5: never concurrent within a session, sequence order even across an abandon.
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "carts", "Properties": {"RequiresSession": True}}]}]}}
    host = await start(funchost_app, tmp_path, SESSIONS, files={"Config.json": json.dumps(config)})
    await host.servicebus.send_many("carts", ["a1", "a2", "a3"], session_id="A")
    await host.servicebus.send_many("carts", ["b1", "b2"], session_id="B")
    await host.advance(1)
    order = module().ORDER
    a = [(body, count) for session, body, count in order if session == "A"]
    assert a == [("a1", 1), ("a2", 1), ("a2", 2), ("a3", 1)]
    assert [body for session, body, _ in order if session == "B"] == ["b1", "b2"]


BATCH = """
import azure.functions as func
from typing import List
app = func.FunctionApp()
BATCHES = []

@app.service_bus_queue_trigger(arg_name="msgs", queue_name="bulk", connection="ServiceBus", cardinality="many")
def bulk(msgs: List[func.ServiceBusMessage]) -> None:
    BATCHES.append([(m.get_body().decode(), m.delivery_count, m.sequence_number, m.message_id) for m in msgs])
    if any(m.get_body() == b"poison" and m.delivery_count == 1 for m in msgs):
        raise RuntimeError("bad batch")
"""


async def test_batches_respect_max_size_order_and_abandon_together(funchost_app, tmp_path):
    # SB-7 and SB-3 (batch): arrays in batch order, size <= maxMessageBatchSize, failure abandons all.
    host = await start(funchost_app, tmp_path, BATCH,
                       host_json={"version": "2.0", "extensions": {"serviceBus": {"maxMessageBatchSize": 3}}})
    await host.servicebus.send_many("bulk", ["1", "2", "poison", "4"])
    await host.advance(1)
    batches = module().BATCHES
    # The abandoned batch is back at the head of the queue, ahead of "4".
    assert [[b for b, *_ in batch] for batch in batches] == [["1", "2", "poison"], ["1", "2", "poison"], ["4"]]
    assert [c for _, c, *_ in batches[1]] == [2, 2, 2]
    seqs = [s for _, _, s, _ in batches[0]]
    assert seqs == sorted(seqs) and all(mid for *_, mid in batches[0])
    assert (await host.servicebus.info("bulk")).active == 0


async def test_min_batch_size_waits_for_max_batch_wait_time(funchost_app, tmp_path):
    host = await start(funchost_app, tmp_path, BATCH, host_json={"version": "2.0", "extensions": {"serviceBus": {
        "minMessageBatchSize": 3, "maxBatchWaitTime": "00:00:10"}}})
    await host.servicebus.send_many("bulk", ["1", "2"])
    await host.advance(5)
    assert module().BATCHES == []
    await host.advance(6)
    assert [[b for b, *_ in batch] for batch in module().BATCHES] == [["1", "2"]]


TOPIC = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.service_bus_topic_trigger(arg_name="msg", topic_name="events", subscription_name="audit", connection="ServiceBus")
def audit(msg: func.ServiceBusMessage) -> None:
    SEEN.append(("audit", msg.get_body().decode(), msg.delivery_count))
    if msg.delivery_count == 1:
        raise RuntimeError("audit fails once")

@app.service_bus_topic_trigger(arg_name="msg", topic_name="events", subscription_name="billing",
                               connection="ServiceBus")
def billing(msg: func.ServiceBusMessage) -> None:
    SEEN.append(("billing", msg.get_body().decode(), msg.delivery_count))
"""


async def test_topic_subscriptions_get_independent_copies(funchost_app, tmp_path):
    host = await start(funchost_app, tmp_path, TOPIC)
    await host.servicebus.send("events", "e1")
    await host.advance(1)
    assert sorted(module().SEEN) == [("audit", "e1", 1), ("audit", "e1", 2), ("billing", "e1", 1)]


async def test_ttl_and_schedules_run_on_the_manual_clock(funchost_app, tmp_path):
    # SB-8 and SB-9.
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "orders", "Properties": {"RequiresDuplicateDetection": True,
                                          "DuplicateDetectionHistoryTimeWindow": "PT1M"}},
        {"Name": "parked", "Properties": {"DeadLetteringOnMessageExpiration": True}}]}]}}
    host = await start(funchost_app, tmp_path, files={"Config.json": json.dumps(config)})
    later = host.clock.now() + timedelta(minutes=10)
    await host.servicebus.send("orders", "scheduled", scheduled_enqueue_time=later)
    await host.servicebus.send("orders", "once", message_id="dup")
    await host.servicebus.send("orders", "twice", message_id="dup")
    await host.servicebus.send("parked", "expires", time_to_live=30)
    await host.advance(599)
    assert bodies(module().SEEN) == ["once"]
    await host.advance(2)
    assert bodies(module().SEEN) == ["once", "scheduled"]
    assert await host.servicebus.dead_letters("parked") == ["expires"]


OUTPUT = """
import json
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="send")
@app.service_bus_queue_output(arg_name="out", queue_name="outbox", connection="ServiceBus")
def send(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set(req.get_body().decode())
    return "OK"
"""


@pytest.mark.parametrize(("payload", "expected"), [
    (json.dumps(["a", "b"]), ["a", "b"]),
    ("plain text", ["plain text"]),
    ('{"k": 1}', ['{\n  "k": 1\n}']),
])
async def test_output_splits_json_arrays_into_messages(funchost_app, tmp_path, payload, expected):
    # SB-11: one message per array element, ContentType text/plain.
    host = await start(funchost_app, tmp_path, OUTPUT)
    response = await host.http("POST", "/api/send", content=payload)
    assert response.text == "OK"
    messages = await host.servicebus.peek("outbox")
    assert [m.body.decode() for m in messages] == expected
    assert {m.content_type for m in messages} == {"text/plain"}
    assert all(len(m.message_id) == 32 for m in messages)


SESSION_CAP = """
import asyncio
import azure.functions as func
from typing import List
app = func.FunctionApp()
STATE = {"running": 0, "max": 0, "batch_running": 0, "batch_max": 0, "batches": 0}
RELEASE = asyncio.Event()

@app.service_bus_queue_trigger(arg_name="msg", queue_name="carts", connection="ServiceBus", is_sessions_enabled=True)
async def carts(msg: func.ServiceBusMessage) -> None:
    STATE["running"] += 1
    STATE["max"] = max(STATE["max"], STATE["running"])
    await RELEASE.wait()
    STATE["running"] -= 1

@app.service_bus_queue_trigger(arg_name="msgs", queue_name="bulk", connection="ServiceBus", cardinality="many")
async def bulk(msgs: List[func.ServiceBusMessage]) -> None:
    STATE["batch_running"] += 1
    STATE["batch_max"] = max(STATE["batch_max"], STATE["batch_running"])
    STATE["batches"] += 1
    await RELEASE.wait()
    STATE["batch_running"] -= 1
"""


async def test_session_and_batch_concurrency_caps(funchost_app, tmp_path):
    # SB-6: sessions x calls per session in flight at most; a batch function one batch at a time.
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "carts", "Properties": {"RequiresSession": True}}, {"Name": "bulk"}]}]}}
    host = await start(funchost_app, tmp_path, SESSION_CAP, files={"Config.json": json.dumps(config)},
                       host_json={"version": "2.0", "extensions": {"serviceBus": {
                           "maxConcurrentSessions": 2, "maxConcurrentCallsPerSession": 2, "maxMessageBatchSize": 2}}})
    for session in "ABC":
        await host.servicebus.send_many("carts", ["1", "2", "3"], session_id=session)
    await host.servicebus.send_many("bulk", ["1", "2", "3", "4", "5"])
    await host.advance(1)
    state = module().STATE
    assert state["running"] == 4  # 2 sessions x 2 calls each; the third session waits
    assert (state["batch_running"], state["batches"]) == (1, 1)
    module().RELEASE.set()
    await host.advance(1)
    assert (await host.servicebus.info("carts")).active == 3  # A and B stay held until idle
    await host.advance(60)  # sessionIdleTimeout (1 min): A and B are released, C is taken
    await host.wait_until_idle()
    assert (state["max"], state["batch_max"], state["batches"]) == (4, 1, 3)
    assert (await host.servicebus.info("carts")).active == 0


TOPIC_OUT = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="publish")
@app.service_bus_topic_output(arg_name="out", topic_name="events", connection="ServiceBus")
def publish(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set('["e1", "e2"]')
    return "OK"
"""


async def test_topic_output_reaches_every_subscription(funchost_app, tmp_path):
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Topics": [
        {"Name": "events", "Subscriptions": [{"Name": "a"}, {"Name": "b"}]}]}]}}
    host = await start(funchost_app, tmp_path, TOPIC_OUT, files={"Config.json": json.dumps(config)})
    assert (await host.http("POST", "/api/publish")).text == "OK"
    assert await host.servicebus.bodies("events/Subscriptions/a") == ["e1", "e2"]
    assert await host.servicebus.bodies("events/Subscriptions/b") == ["e1", "e2"]


EXPRESSION_OUT = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="audit", methods=["POST"])
@app.service_bus_queue_output(arg_name="out", queue_name="audit-{data.region}-{DateTime:yyyy}", connection="ServiceBus")
def audit(req: func.HttpRequest, out: func.Out[str]) -> str:
    out.set("entry")
    return "OK"
"""


async def test_output_entity_names_resolve_the_standard_binding_expressions(funchost_app, tmp_path):
    """A dotted name into the request body and {DateTime:format}: the shared resolver, as WebJobs
    resolves the queue name like every [AutoResolve] property."""
    host = await start(funchost_app, tmp_path, EXPRESSION_OUT)
    response = await host.http("POST", "/api/audit", json={"data": {"region": "emea"}})
    assert response.text == "OK"
    assert await host.servicebus.bodies(f"audit-emea-{host.clock.now():%Y}") == ["entry"]


DEAD_LETTERS = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.service_bus_queue_trigger(arg_name="msg", queue_name="orders", connection="ServiceBus")
def orders(msg: func.ServiceBusMessage) -> None:
    raise RuntimeError("bad order")

@app.service_bus_queue_trigger(arg_name="msg", queue_name="orders/$deadletterqueue", connection="ServiceBus")
def dead_orders(msg: func.ServiceBusMessage) -> None:
    SEEN.append(("queue", msg.get_body().decode(), dict(msg.application_properties)))

@app.service_bus_topic_trigger(arg_name="msg", topic_name="events", subscription_name="audit/$deadletterqueue",
                               connection="ServiceBus")
def dead_audit(msg: func.ServiceBusMessage) -> None:
    SEEN.append(("subscription", msg.get_body().decode(), dict(msg.application_properties)))

@app.service_bus_queue_trigger(arg_name="msg", queue_name="events/Subscriptions/billing/$DeadLetterQueue",
                               connection="ServiceBus")
def dead_billing(msg: func.ServiceBusMessage) -> None:
    SEEN.append(("path", msg.get_body().decode(), dict(msg.application_properties)))
"""


async def test_dead_letter_sub_queues_are_trigger_sources(funchost_app, tmp_path):
    """`orders/$deadletterqueue`, a subscription's through subscription_name and as a path: the usual
    way to process dead letters on Azure, with DeadLetterReason / DeadLetterErrorDescription."""
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns",
                                              "Queues": [{"Name": "orders", "Properties": {"MaxDeliveryCount": 2}}],
                                              "Topics": [{"Name": "events", "Subscriptions": [
                                                  {"Name": "audit"}, {"Name": "billing"}]}]}]}}
    host = await start(funchost_app, tmp_path, DEAD_LETTERS, files={"Config.json": json.dumps(config)})
    for name in ("orders", "dead_orders", "dead_audit", "dead_billing"):
        assert host.runtime.function_errors.of(name) == [], name
    await host.servicebus.send("orders", "o-1")
    await host.servicebus.send("events", "e-1")
    for _ in range(6):
        await host.advance(5)
    namespace = host.servicebus.namespace
    for subscription in ("audit", "billing"):
        [message] = await namespace.broker.receive(f"events/Subscriptions/{subscription}", 1)
        await namespace.broker.dead_letter(f"events/Subscriptions/{subscription}", message.lock_token,
                                           "Unroutable", f"no handler for {subscription}")
    for _ in range(3):
        await host.advance(5)
    seen = {kind: (body, props) for kind, body, props in module().SEEN}
    assert seen["queue"] == ("o-1", {"DeadLetterReason": "MaxDeliveryCountExceeded",
                                     "DeadLetterErrorDescription": "Message could not be consumed after 2 delivery "
                                                                   "attempts."})
    assert seen["subscription"][1]["DeadLetterReason"] == "Unroutable"
    assert seen["path"][1]["DeadLetterErrorDescription"] == "no handler for billing"
