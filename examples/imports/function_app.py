"""Reference import/OCR pipeline: "HTTP is intake, Queue is work, Event Grid is notification".

An unmodified Azure Functions Python v2 app built on `funchost.reliability`. See README.md and
docs/pipeline.md for the architecture, the rules and the tests that prove each of them.

    client --POST /api/imports--> submit_import --(Job + Outbox, one transaction)--> jobs DB
    blob store --BlobCreated--> Event Grid --> blob_created_bridge --(Job + Outbox)--> jobs DB
    dispatch_outbox (timer + wake-up) --> queues import-jobs / ocr-jobs
    process_import / process_ocr --atomic acquire--> idempotent side effects --> Completed
    import-jobs-poison / ocr-jobs-poison --> quarantine + alert;  watchdog --> re-enqueue stuck jobs
"""

from __future__ import annotations

import logging

import azure.functions as func
from importjobs import api, bridge, ledgerapi, poison, workers
from importjobs.context import PipelineHolder
from importjobs.settings import IMPORT_QUEUE, OCR_QUEUE, STORAGE_CONNECTION, PipelineSettings

from funchost.reliability import Watchdog, WatchdogOptions
from funchost.reliability.metrics import refresh_store_gauges

app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)
# Settings are checked when the app loads: a published demo secret or a malformed number stops
# the start with a message naming the setting, instead of surfacing on the first request.
pipeline = PipelineHolder(PipelineSettings.from_environment())
log = logging.getLogger("importjobs")


# -- HTTP intake and status ------------------------------------------------------------------------

@app.route(route="imports", methods=["POST"], auth_level=func.AuthLevel.FUNCTION)
async def submit_import(req: func.HttpRequest) -> func.HttpResponse:
    return await api.submit_import(req, pipeline.get())


@app.route(route="imports/{jobId}", methods=["GET"], auth_level=func.AuthLevel.FUNCTION)
async def get_import(req: func.HttpRequest) -> func.HttpResponse:
    return await api.get_import(req, pipeline.get())


@app.route(route="ping", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def ping(req: func.HttpRequest) -> func.HttpResponse:
    """Liveness probe (and the bare baseline of benchmarks/pipeline_bench.py)."""
    return func.HttpResponse("ok")


# -- outbox dispatch and watchdog ------------------------------------------------------------------

@app.timer_trigger(schedule="*/10 * * * * *", arg_name="timer", run_on_startup=False)
async def dispatch_outbox(timer: func.TimerRequest) -> None:
    current = pipeline.get()
    while True:
        result = await current.dispatcher.dispatch_once()
        if result.leased < current.dispatcher.options.batch_size:
            break
    await current.db(refresh_store_gauges, current.metrics, current.store)


@app.timer_trigger(schedule="0 */1 * * * *", arg_name="timer", run_on_startup=False)
async def watchdog(timer: func.TimerRequest) -> None:
    current = pipeline.get()
    options = WatchdogOptions(stuck_after_seconds=current.settings.watchdog_stuck_seconds)
    report = await current.db(Watchdog(current.store, options, current.metrics).scan)
    if report.requeued_jobs or report.rescheduled_outbox:
        current.dispatcher.notify()


# -- queue workers ---------------------------------------------------------------------------------

@app.queue_trigger(arg_name="msg", queue_name=IMPORT_QUEUE, connection=STORAGE_CONNECTION)
async def process_import(msg: func.QueueMessage) -> None:
    await workers.handle(msg, pipeline.get(), workers.import_csv)


@app.queue_trigger(arg_name="msg", queue_name=OCR_QUEUE, connection=STORAGE_CONNECTION)
async def process_ocr(msg: func.QueueMessage) -> None:
    await workers.handle(msg, pipeline.get(), workers.ocr)


@app.queue_trigger(arg_name="msg", queue_name=IMPORT_QUEUE + "-poison", connection=STORAGE_CONNECTION)
async def import_poison(msg: func.QueueMessage) -> None:
    await poison.quarantine(msg, IMPORT_QUEUE + "-poison", pipeline.get())


@app.queue_trigger(arg_name="msg", queue_name=OCR_QUEUE + "-poison", connection=STORAGE_CONNECTION)
async def ocr_poison(msg: func.QueueMessage) -> None:
    await poison.quarantine(msg, OCR_QUEUE + "-poison", pipeline.get())


@app.route(route="quarantine", methods=["GET"], auth_level=func.AuthLevel.ADMIN)
async def list_quarantine(req: func.HttpRequest) -> func.HttpResponse:
    current = pipeline.get()
    rows = await current.intake(current.quarantine.pending)
    return api.json_response(200, {"items": [{k: str(v) if v is not None else None for k, v in r.items()}
                                             for r in rows]})


@app.route(route="quarantine/{quarantineId}/redrive", methods=["POST"], auth_level=func.AuthLevel.ADMIN)
async def redrive_quarantine(req: func.HttpRequest) -> func.HttpResponse:
    """Send a quarantined message again (through the outbox) once its cause is fixed."""
    current = pipeline.get()

    async def reader(container: str, name: str) -> bytes:
        data, _ = await current.blobs.read(container, name)
        return data

    try:
        outbox_id = await current.quarantine.redrive(req.route_params["quarantineId"], reader)
    except KeyError:
        return api.json_response(404, {"error": "no such quarantined message"})
    return api.json_response(202, {"outboxId": outbox_id})


# -- Event Grid ------------------------------------------------------------------------------------

@app.event_grid_trigger(arg_name="event")
async def blob_created_bridge(event: func.EventGridEvent) -> None:
    await bridge.on_event(event, pipeline.get())


# The same bridge as a blob trigger with the Event Grid source: both run for each upload, and
# whichever comes second finds the job of that blob version already accepted.
@app.blob_trigger(arg_name="blob", path="imports/{name}", connection=STORAGE_CONNECTION,
                  source=func.BlobSource.EVENT_GRID)
async def blob_trigger_bridge(blob: func.InputStream) -> None:
    await bridge.on_blob(blob, pipeline.get())


# -- the downstream ledger (a stand-in for the external system) -------------------------------------

@app.route(route="ledger/entries", methods=["POST"], auth_level=func.AuthLevel.FUNCTION)
async def ledger_post(req: func.HttpRequest) -> func.HttpResponse:
    return await ledgerapi.post_entry(req, pipeline.get())


@app.route(route="ledger/entries", methods=["GET"], auth_level=func.AuthLevel.FUNCTION)
async def ledger_list(req: func.HttpRequest) -> func.HttpResponse:
    return await ledgerapi.list_entries(req, pipeline.get())
