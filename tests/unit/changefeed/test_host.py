"""The Cosmos DB trigger and bindings through the real host (in-process harness, ManualClock)."""

from __future__ import annotations

from pathlib import Path

from funchost.documents import connect
from funchost.testing import HostHarness
from funchost.testing.harness import write_app

APP = """
import azure.functions as func

app = func.FunctionApp()
CALLS = []

@app.cosmos_db_trigger(arg_name="docs", connection="CosmosDB", database_name="db", container_name="items",
                       lease_container_name="leases", create_lease_container_if_not_exists=True)
@app.cosmos_db_output(arg_name="out", connection="CosmosDB", database_name="db", container_name="copies",
                      create_if_not_exists=True, partition_key="/id")
def copy(docs: func.DocumentList, out: func.Out[func.DocumentList]) -> None:
    CALLS.append([d["id"] for d in docs])
    if any(d.get("poison") for d in docs) and len(CALLS) < 3:
        raise ValueError("not yet")
    out.set(func.DocumentList([func.Document.from_dict({"id": d["id"], "seen": True}) for d in docs]))

@app.function_name("lookup")
@app.queue_trigger(arg_name="msg", queue_name="lookups", connection="AzureWebJobsStorage")
@app.cosmos_db_input(arg_name="found", connection="CosmosDB", database_name="db", container_name="copies",
                     id="{queueTrigger}", partition_key="{queueTrigger}")
def lookup(msg: func.QueueMessage, found: func.DocumentList) -> None:
    CALLS.append(["lookup", found[0]["id"] if found else None])
"""


def prepare(data: Path) -> None:
    db = connect("CosmosDB", data_dir=data).create_database_if_not_exists("db")
    db.create_container_if_not_exists("items", "/pk", partitions=2)


async def test_changes_reach_the_function_as_a_document_list_and_the_output_upserts(tmp_path: Path,
                                                                                  funchost_app) -> None:  # type: ignore[no-untyped-def]
    app = write_app(tmp_path / "app", APP)
    prepare(tmp_path / "data0")
    host = await funchost_app(app)
    items = connect("CosmosDB", data_dir=tmp_path / "data0").get_database_client("db").get_container_client("items")
    items.upsert_item({"id": "a", "pk": "x"})
    await host.advance(5)
    copied = connect(data_dir=tmp_path / "data0").get_database_client("db").get_container_client("copies")
    assert copied.read_item("a", "a")["seen"] is True
    # the input binding reads by id + partition key from binding data
    module = host.runtime.functions["copy"].func.__globals__
    assert (await host.invoke("lookup", "a")).succeeded
    assert (await host.invoke("lookup", "zz")).succeeded
    assert module["CALLS"][-2:] == [["lookup", "a"], ["lookup", None]]


async def test_a_failing_function_gets_the_same_batch_at_the_next_poll(tmp_path: Path, funchost_app) -> None:  # type: ignore[no-untyped-def]
    app = write_app(tmp_path / "app", APP)
    prepare(tmp_path / "data0")
    host = await funchost_app(app)
    module = host.runtime.functions["copy"].func.__globals__
    items = connect("CosmosDB", data_dir=tmp_path / "data0").get_database_client("db").get_container_client("items")
    items.upsert_item({"id": "p", "pk": "x", "poison": True})
    for _ in range(3):
        await host.advance(5)
    assert module["CALLS"] == [["p"], ["p"], ["p"]]  # failed twice, delivered again each poll
    copied = connect(data_dir=tmp_path / "data0").get_database_client("db").get_container_client("copies")
    assert copied.read_item("p", "p")["seen"] is True
    await host.advance(10)
    assert len(module["CALLS"]) == 3


async def test_admin_invoke_builds_a_document_list(tmp_path: Path, funchost_app) -> None:  # type: ignore[no-untyped-def]
    app = write_app(tmp_path / "app", APP)
    prepare(tmp_path / "data0")
    host = await funchost_app(app)
    result = await host.invoke("copy", [{"id": "m"}])
    assert result.succeeded
    copied = connect(data_dir=tmp_path / "data0").get_database_client("db").get_container_client("copies")
    assert copied.read_item("m", "m")["seen"] is True


RETRY_APP = """
import azure.functions as func

app = func.FunctionApp()
CALLS = []

@app.cosmos_db_trigger(arg_name="docs", connection="CosmosDB", database_name="db", container_name="items",
                       lease_container_name="leases", create_lease_container_if_not_exists=True)
@app.retry(strategy="fixed_delay", max_retry_count="2", delay_interval="00:00:03")
def flaky(docs: func.DocumentList, context: func.Context) -> None:
    CALLS.append((context.retry_context.retry_count, [d["id"] for d in docs]))
    if len(CALLS) < 5:
        raise ValueError("downstream unavailable")
"""


async def test_retry_policy_runs_then_the_same_batch_is_delivered_again(tmp_path: Path, funchost_app) -> None:  # type: ignore[no-untyped-def]
    """Seed 004: on failure the function-level retry policy runs first (1 + 2 attempts, 3 s apart);
    when it gives up the checkpoint does not move and the next poll delivers the same batch."""
    app = write_app(tmp_path / "app", RETRY_APP)
    prepare(tmp_path / "data0")
    host = await funchost_app(app)
    module = host.runtime.functions["flaky"].func.__globals__
    items = connect("CosmosDB", data_dir=tmp_path / "data0").get_database_client("db").get_container_client("items")
    items.upsert_item({"id": "r", "pk": "x"})
    await host.advance(5)  # first poll: attempt 0, then retries at +3 s and +6 s
    await host.advance(6)
    assert module["CALLS"][:3] == [(0, ["r"]), (1, ["r"]), (2, ["r"])]
    await host.advance(20)  # the next poll redelivers the same batch with a fresh retry context
    assert module["CALLS"][3:5] == [(0, ["r"]), (1, ["r"])]
    calls = len(module["CALLS"])
    await host.advance(30)
    assert len(module["CALLS"]) == calls  # succeeded: checkpointed, not delivered again


async def test_a_v3_cosmos_input_binding_puts_the_function_in_error_with_its_v4_names(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", """
        import azure.functions as func
        app = func.FunctionApp()

        @app.queue_trigger(arg_name="msg", queue_name="lookups", connection="AzureWebJobsStorage")
        @app.cosmos_db_input_v3(arg_name="found", connection_string_setting="CosmosDB", database_name="db",
                                collection_name="copies", id="{queueTrigger}")
        def lookup(msg: func.QueueMessage, found: func.DocumentList) -> None:
            pass
    """)
    async with HostHarness(app, data_dir=tmp_path / "data") as host:
        [reason] = host.runtime.function_errors.of("lookup")
    assert "'collectionName' (now 'containerName')" in reason


async def test_3x_names_beside_the_4x_ones_are_ignored_with_one_warning(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """A public app's output passes container_name/connection and the 3.x collection_name /
    connection_string_setting too: the 4.x extension reads its own properties and ignores the
    others, so the function runs (only a 3.x-only binding is refused)."""
    app = write_app(tmp_path / "app", """
        import azure.functions as func
        app = func.FunctionApp()

        @app.queue_trigger(arg_name="msg", queue_name="orders", connection="AzureWebJobsStorage")
        @app.cosmos_db_output(arg_name="doc", database_name="db", container_name="orders", connection="CosmosDB",
                              collection_name="orders", connection_string_setting="CosmosDB",
                              create_if_not_exists=True)
        def save(msg: func.QueueMessage, doc: func.Out[func.Document]) -> None:
            doc.set(func.Document.from_dict({"id": msg.get_body().decode(), "pk": "a"}))
    """)
    prepare(tmp_path / "data")
    with caplog.at_level("WARNING", logger="funchost.bindings.cosmosdb"):
        async with HostHarness(app, data_dir=tmp_path / "data") as host:
            assert host.runtime.function_errors.of("save") == []
            await host.queues.send("orders", "o-1")
            await host.advance(1)
            container = connect("CosmosDB", data_dir=tmp_path / "data").get_database_client("db") \
                .get_container_client("orders")
            assert [item["id"] for item in container.query_items("SELECT * FROM c",
                                                                  enable_cross_partition_query=True)] == ["o-1"]
    warnings = [r.getMessage() for r in caplog.records if "3.x properties" in r.getMessage()]
    assert len(warnings) == 1 and "'collectionName', 'connectionStringSetting'" in warnings[0], warnings
