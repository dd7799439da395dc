"""Durable Functions patterns as an unmodified v2 app (azure-functions-durable).

Start any orchestration with ``POST /api/orchestrators/<name>`` (JSON body = input); the 202
answer carries ``statusQueryGetUri`` to poll.

* ``chaining``: three activities one after the other -> ``["Hello Tokyo!", ...]``.
* ``fan_out_fan_in``: ``{"count": N}`` runs N ``work`` activities in parallel and sums them.
* ``approval``: human interaction. Sends a request, then waits for the ``Approval`` event
  (``POST /api/approvals/<instance id>`` with ``true``/``false``) or gives up after
  ``{"hours": H}`` (default 72).
* ``monitor``: checks ``check_job`` every ``interval`` seconds until it reports done or
  ``expires_after`` seconds pass, then sends an alert.
* The ``Counter`` entity: ``POST /api/counters/<key>?op=add`` with a number body, ``GET
  /api/counters/<key>`` to read it; ``counting`` orchestrates it.

App settings used by the acceptance tests only: ``WORK_SECONDS`` (how long each ``work``
activity takes) and ``WORK_LOG`` (a file getting one ``<item> <pid>`` line per ``work`` run).
"""

import json
import logging
import os
import time
from datetime import timedelta

import azure.durable_functions as df
import azure.functions as func

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)


# -- starting and answering ------------------------------------------------------------------------


@app.route(route="orchestrators/{functionName}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def start(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    body = req.get_body()
    payload = json.loads(body) if body else None
    instance_id = await client.start_new(req.route_params["functionName"], client_input=payload)
    logging.info("started orchestration %s", instance_id)
    return client.create_check_status_response(req, instance_id)


@app.route(route="approvals/{instanceId}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def approve(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    await client.raise_event(req.route_params["instanceId"], "Approval", req.get_json())
    return func.HttpResponse(status_code=202)


# -- function chaining -----------------------------------------------------------------------------


@app.orchestration_trigger(context_name="context")
def chaining(context: df.DurableOrchestrationContext):
    results = []
    for city in ("Tokyo", "Seattle", "London"):
        results.append((yield context.call_activity("say_hello", city)))
    return results


@app.activity_trigger(input_name="city")
def say_hello(city: str) -> str:
    return f"Hello {city}!"


# -- fan-out / fan-in ------------------------------------------------------------------------------


@app.orchestration_trigger(context_name="context")
def fan_out_fan_in(context: df.DurableOrchestrationContext):
    count = (context.get_input() or {}).get("count", 10)
    results = yield context.task_all([context.call_activity("work", i) for i in range(count)])
    return {"results": results, "total": sum(results)}


@app.activity_trigger(input_name="item")
def work(item: int) -> int:
    time.sleep(float(os.environ.get("WORK_SECONDS", "0")))
    log = os.environ.get("WORK_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:  # one short append per line: atomic
            handle.write(f"{item} {os.getpid()}\n")
    return item * item


# -- human interaction with a timeout --------------------------------------------------------------


@app.orchestration_trigger(context_name="context")
def approval(context: df.DurableOrchestrationContext):
    request = context.get_input() or {}
    yield context.call_activity("send_approval_request", request)
    deadline = context.current_utc_datetime + timedelta(hours=request.get("hours", 72))
    timeout = context.create_timer(deadline)
    answer = context.wait_for_external_event("Approval")
    winner = yield context.task_any([answer, timeout])
    if winner == answer:
        timeout.cancel()  # otherwise the instance stays Running until the timer fires
        # The SDK's client.raise_event delivers the JSON text of its data (as on Azure).
        approved = json.loads(answer.result) if isinstance(answer.result, str) else answer.result
        return "approved" if approved else "rejected"
    return "escalated"


@app.activity_trigger(input_name="request")
def send_approval_request(request: dict) -> str:
    logging.info("approval requested: %s", request)
    return "sent"


# -- monitor ---------------------------------------------------------------------------------------


@app.orchestration_trigger(context_name="context")
def monitor(context: df.DurableOrchestrationContext):
    job = context.get_input() or {}
    interval = timedelta(seconds=job.get("interval", 60))
    expiry = context.current_utc_datetime + timedelta(seconds=job.get("expires_after", 3600))
    checks = 0
    while context.current_utc_datetime < expiry:
        checks += 1
        context.set_custom_status({"checks": checks})
        done = yield context.call_activity("check_job", {"job": job.get("name"), "check": checks})
        if done:
            yield context.call_activity("send_alert", f"{job.get('name')} finished after {checks} checks")
            return checks
        yield context.create_timer(context.current_utc_datetime + interval)
    return "expired"


@app.activity_trigger(input_name="probe")
def check_job(probe: dict) -> bool:
    return probe["check"] >= 3  # a stand-in for asking a real system


@app.activity_trigger(input_name="message")
def send_alert(message: str) -> None:
    logging.info("ALERT: %s", message)


# -- entity counter --------------------------------------------------------------------------------


@app.entity_trigger(context_name="context")
def Counter(context: df.DurableEntityContext):
    value = context.get_state(lambda: 0)
    operation = context.operation_name
    if operation == "add":
        value += context.get_input()
    elif operation == "reset":
        value = 0
    elif operation == "get":
        context.set_result(value)
    context.set_state(value)


@app.route(route="counters/{key}", methods=["GET", "POST"])
@app.durable_client_input(client_name="client")
async def counter_api(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
    entity = df.EntityId("Counter", req.route_params["key"])
    if req.method == "POST":
        await client.signal_entity(entity, req.params.get("op", "add"), req.get_json())
        return func.HttpResponse(status_code=202)
    state = await client.read_entity_state(entity)
    if not state.entity_exists:
        return func.HttpResponse(status_code=404)
    return func.HttpResponse(json.dumps(state.entity_state), mimetype="application/json")


@app.orchestration_trigger(context_name="context")
def counting(context: df.DurableOrchestrationContext):
    entity = df.EntityId("Counter", context.get_input() or "default")
    context.signal_entity(entity, "add", 1)
    value = yield context.call_entity(entity, "get")
    return value
