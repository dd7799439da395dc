"""Change feed example: every change to db/items is appended to a log file and copied.

Run several `funchost start` processes on one data folder to watch the leases spread over the
instances (`funchost docs status -d db -c items`). Short lease intervals keep take-over after a
crash to a few seconds; remove them to get Azure's defaults (17 s / 13 s / 60 s).
"""

import json
import os

import azure.functions as func

app = func.FunctionApp()


@app.cosmos_db_trigger(
    arg_name="docs",
    connection="CosmosDB",
    database_name="db",
    container_name="items",
    lease_container_name="leases",
    create_lease_container_if_not_exists=True,
    start_from_beginning=True,
    feed_poll_delay=500,
    lease_acquire_interval=1000,
    lease_expiration_interval=4000,
    lease_renew_interval=1000,
)
@app.cosmos_db_output(arg_name="copies", connection="CosmosDB", database_name="db", container_name="copies",
                      create_if_not_exists=True, partition_key="/id")
def on_change(docs: func.DocumentList, copies: func.Out[func.DocumentList]) -> None:
    log_path = os.environ.get("CHANGEFEED_LOG", "changes.log")
    with open(log_path, "a", encoding="utf-8") as log:
        for doc in docs:
            log.write(json.dumps({"pid": os.getpid(), "id": doc["id"], "pk": doc.get("pk")}) + "\n")
    copies.set(func.DocumentList(func.Document.from_dict({"id": doc["id"], "pid": os.getpid()}) for doc in docs))
