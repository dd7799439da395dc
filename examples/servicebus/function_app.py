"""Service Bus queue and topic triggers and the Service Bus output, as an unmodified v2 app.

POST /api/orders?count=N with a text body sends N messages ("<body>-<i>") to the "orders"
queue through the output binding (a JSON array: one message per element).
`process_order` handles each message: bodies starting with "fail" raise (after MaxDeliveryCount
deliveries they are in "orders/$deadletterqueue"), bodies starting with "slow" take a while.
`audit_event` and `bill_event` each get their own copy of every message sent to the "events"
topic; `bill_batch` reads the "invoices" queue in batches.

Entities and their properties come from Config.json (the Service Bus emulator's format). With
the emulator connection string in local.settings.json the app runs the same against the
embedded Service Bus (`funchost start`) or the Docker emulator (Core Tools).

Set the app setting TASK_LOG to a file path to get one line per handled message
("<kind> <body> <pid> <delivery count>"), which the acceptance tests read.
"""

import json
import logging
import os
import time
from typing import List  # noqa: UP035 - the library's batch check wants typing.List

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


def _record(kind: str, body: str, delivery_count: int) -> None:
    path = os.environ.get("TASK_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:  # one short append per line: atomic
            log.write(f"{kind} {body} {os.getpid()} {delivery_count}\n")


@app.route(route="orders", methods=["POST"])
@app.service_bus_queue_output(arg_name="orders", queue_name="orders", connection="ServiceBusConnection")
def send_orders(req: func.HttpRequest, orders: func.Out[str]) -> func.HttpResponse:
    body = req.get_body().decode("utf-8") or "order"
    count = int(req.params.get("count", "1"))
    orders.set(json.dumps([f"{body}-{i}" for i in range(count)]))
    return func.HttpResponse(f"sent {count}", status_code=202)


@app.service_bus_queue_trigger(arg_name="msg", queue_name="orders", connection="ServiceBusConnection")
def process_order(msg: func.ServiceBusMessage) -> None:
    body = msg.get_body().decode("utf-8")
    if body.startswith("slow"):
        time.sleep(float(os.environ.get("SLOW_TASK_SECONDS", "3")))
    if body.startswith("fail"):
        _record("failed", body, msg.delivery_count)
        raise RuntimeError(f"order {msg.message_id} failed on purpose")
    _record("done", body, msg.delivery_count)
    logging.info("order %s done (delivery count %s)", msg.message_id, msg.delivery_count)


@app.service_bus_topic_trigger(arg_name="msg", topic_name="events", subscription_name="audit",
                               connection="ServiceBusConnection")
def audit_event(msg: func.ServiceBusMessage) -> None:
    _record("audit", msg.get_body().decode("utf-8"), msg.delivery_count)


@app.service_bus_topic_trigger(arg_name="msg", topic_name="events", subscription_name="billing",
                               connection="ServiceBusConnection")
def bill_event(msg: func.ServiceBusMessage) -> None:
    _record("billing", msg.get_body().decode("utf-8"), msg.delivery_count)


@app.service_bus_queue_trigger(arg_name="msgs", queue_name="invoices", connection="ServiceBusConnection",
                               cardinality="many")
def bill_batch(msgs: List[func.ServiceBusMessage]) -> None:  # noqa: UP006
    for msg in msgs:
        _record("invoice", msg.get_body().decode("utf-8"), msg.delivery_count)
