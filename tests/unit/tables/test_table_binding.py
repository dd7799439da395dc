"""The table input and output bindings as the Tables extension binds them for Python apps
(docs in `funchost.bindings.table`), on the embedded table store, driven over HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from funchost.testing import HostHarness, write_app

# The Python worker's tests/endtoend/table_functions/table_functions_stein app (its vendored, unmodified copy),
# followed by functions for the other shapes the extension supports.
WORKER_APP = (Path(__file__).parents[2] / "acceptance" / "worker_apps" / "table_functions" / "table_functions_stein"
              / "function_app.py").read_text(encoding="utf-8")

MORE = '''

@app.route(route="people/{part}", methods=["POST"])
@app.table_output(arg_name="rows", connection="AzureWebJobsStorage", table_name="People", partition_key="{part}")
def add_people(req: func.HttpRequest, rows: func.Out[str]) -> str:
    rows.set(req.get_body().decode())
    return "added"


@app.route(route="people/{part}", methods=["GET"])
@app.table_input(arg_name="rows", connection="AzureWebJobsStorage", table_name="People", partition_key="{part}",
                 filter="Age gt 30", take=2)
def list_people(req: func.HttpRequest, rows: str) -> str:
    return rows


@app.route(route="everyone", methods=["GET"])
@app.table_input(arg_name="rows", connection="AzureWebJobsStorage", table_name="People")
def everyone(req: func.HttpRequest, rows: str) -> str:
    return rows
'''


@pytest.fixture
async def host(tmp_path: Path):
    write_app(tmp_path / "app", WORKER_APP + MORE)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as running:
        yield running


async def test_the_worker_app_writes_an_entity_and_finds_it_in_the_partition(host: HostHarness) -> None:
    # The worker's test_table_functions.py (TestTableFunctionsStein), as it asserts: the input
    # with partition and row key is the partition's entities, and the new row is among them.
    written = await host.http("POST", "/api/table_out_binding")
    assert written.status_code == 200, written.text
    row_key = json.loads(written.text)["RowKey"]
    other = await host.http("POST", "/api/table_out_binding")
    read = await host.http("GET", f"/api/table_in_binding/{row_key}")
    assert read.status_code == 200, read.text
    rows = json.loads(read.text)
    assert any(row["RowKey"] == row_key for row in rows)
    # rowKey does not narrow the query for out-of-process workers (the JArray converter)
    assert sorted(row["RowKey"] for row in rows) == sorted([row_key, json.loads(other.text)["RowKey"]])
    assert rows[0] == {"PartitionKey": "test", "RowKey": min(row_key, json.loads(other.text)["RowKey"])}


async def test_a_missing_table_fails_the_invocation_and_an_empty_partition_is_an_empty_array(
        host: HostHarness) -> None:
    assert (await host.http("GET", "/api/table_in_binding/x")).status_code == 500  # the query's 404
    await host.runtime.storage.tables().create_table("BindingTestTable")
    response = await host.http("GET", "/api/table_in_binding/nothing")
    assert (response.status_code, response.json()) == (200, [])


async def test_output_types_keys_from_the_binding_and_queries_with_filter_and_take(host: HostHarness) -> None:
    people = [{"RowKey": "ann", "Age": 41, "Score": 1.5, "Member": True, "Born": "1984-03-01T00:00:00Z",
               "Note": "x", "Gone": None},
              {"rowKey": "bob", "Age": 25}, {"RowKey": "cy", "Age": 35}, {"RowKey": "dee", "Age": 52},
              {"RowKey": "eve", "PartitionKey": "other", "Age": 60}]
    assert (await host.http("POST", "/api/people/staff", content=json.dumps(people))).text == "added"
    tables = host.runtime.storage.tables()
    ann = await tables.get_entity("People", "staff", "ann")
    assert ann.properties == {"Age": ("Edm.Int64", 41), "Score": ("Edm.Double", 1.5),
                              "Member": ("Edm.Boolean", True), "Note": ("Edm.String", "x"),
                              "Born": ("Edm.DateTime", datetime(1984, 3, 1, tzinfo=UTC))}
    assert (await tables.get_entity("People", "other", "eve")).properties["Age"] == ("Edm.Int64", 60)
    listed = (await host.http("GET", "/api/people/staff")).json()
    # PartitionKey eq 'staff' and Age gt 30, take 2, in key order
    assert [row["RowKey"] for row in listed] == ["ann", "cy"]
    assert listed[0] == {"PartitionKey": "staff", "RowKey": "ann", "Age": 41, "Score": 1.5, "Member": True,
                         "Note": "x", "Born": "1984-03-01T00:00:00.0000000+00:00"}
    everyone = (await host.http("GET", "/api/everyone")).json()
    assert [row["RowKey"] for row in everyone] == ["eve", "ann", "bob", "cy", "dee"]


async def test_an_existing_entity_is_not_replaced_and_fails_the_invocation(host: HostHarness) -> None:
    assert (await host.http("POST", "/api/people/staff", content='{"RowKey": "ann", "Age": 1}')).status_code == 200
    again = await host.http("POST", "/api/people/staff", content='{"RowKey": "ann", "Age": 2}')
    assert again.status_code == 500
    ann = await host.runtime.storage.tables().get_entity("People", "staff", "ann")
    assert ann.properties["Age"] == ("Edm.Int64", 1)


@pytest.mark.parametrize("body", ['{"RowKey": "a/b"}', '{"Age": 3}', '[1, 2]', '{"RowKey": "x", "Tags": [1]}',
                                  "not json"])
async def test_bad_output_values_fail_with_nothing_written(host: HostHarness, body: str) -> None:
    response = await host.http("POST", "/api/people/staff", content=body)
    assert response.status_code == 500
    rows = (await host.http("GET", "/api/everyone")).json() if await _has_table(host) else []
    assert rows == []


async def _has_table(host: HostHarness) -> bool:
    names, _ = await host.runtime.storage.tables().list_tables()
    return "People" in names


async def test_a_literal_invalid_table_name_stops_only_that_function(tmp_path: Path) -> None:
    write_app(tmp_path / "app", WORKER_APP.replace('table_name="BindingTestTable",\n                 row_key',
                                                   'table_name="bad-name",\n                 row_key'))
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        [error] = host.runtime.function_errors.of("table_in_binding")
        assert "'bad-name' is not a valid name for an Azure table" in error
        assert host.runtime.function_errors.of("table_out_binding") == []


UPDATE_APP = WORKER_APP + '''

@app.route(route="bump/{id}", methods=["POST"])
@app.table_input(arg_name="current", connection="AzureWebJobsStorage", table_name="BindingTestTable",
                 partition_key="test")
@app.table_output(arg_name="updated", connection="AzureWebJobsStorage", table_name="BindingTestTable")
def bump(req: func.HttpRequest, current: str, updated: func.Out[str]) -> str:
    entity = next(row for row in json.loads(current) if row["RowKey"] == req.route_params["id"])
    entity["Count"] = entity.get("Count", 0) + 1
    etag = req.params.get("etag")
    if etag:
        entity["odata.etag"] = etag
    updated.set(json.dumps(entity))
    return "ok"
'''


async def test_writing_back_needs_an_etag_star_replaces_and_a_stale_one_fails(tmp_path: Path) -> None:
    write_app(tmp_path / "app", UPDATE_APP)
    async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
        tables = host.runtime.storage.tables()
        await tables.create_table("BindingTestTable")
        stored = await tables.insert_entity("BindingTestTable", "test", "a", {"Count": ("Edm.Int32", 1)})
        assert (await host.http("POST", "/api/bump/a")).status_code == 500  # an insert: EntityAlreadyExists
        assert (await host.http("POST", "/api/bump/a", params={"etag": "*"})).text == "ok"
        assert (await tables.get_entity("BindingTestTable", "test", "a")).properties["Count"] == ("Edm.Int64", 2)
        stale = await host.http("POST", "/api/bump/a", params={"etag": stored.etag})  # changed since: 412
        assert stale.status_code == 500
        current = await tables.get_entity("BindingTestTable", "test", "a")
        assert current.properties["Count"] == ("Edm.Int64", 2)
        assert (await host.http("POST", "/api/bump/a", params={"etag": current.etag})).text == "ok"
        assert (await tables.get_entity("BindingTestTable", "test", "a")).properties["Count"] == ("Edm.Int64", 3)
