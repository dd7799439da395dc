"""The Table REST API on the wire: payload formats, Prefer, MERGE tunnelling, $batch, bad input."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.unit.storage_endpoints.signing import signed_headers

from funchost.settings.connections import DEVSTORE_ACCOUNT


@pytest.fixture
async def table(served):  # type: ignore[no-untyped-def]
    tables = served.tables(DEVSTORE_ACCOUNT)
    await tables.create_table("People")
    await tables.insert_entity("People", "p", "r", {"n": ("Edm.Int64", 5), "s": ("Edm.String", "x")})
    return tables


async def call(served, method: str, path: str, body: bytes = b"", **headers: str) -> httpx.Response:  # type: ignore[no-untyped-def]
    url = f"{served.url('table')}/{path}"
    extra = {"Accept": "application/json;odata=minimalmetadata", "DataServiceVersion": "3.0",
             **{k.replace("_", "-"): v for k, v in headers.items()}}
    if body:
        extra.setdefault("Content-Type", "application/json")
    async with httpx.AsyncClient() as client:
        return await client.request(method, url, content=body, headers=signed_headers(method, url, body, "table", extra))


async def test_metadata_levels(served, table):
    path = "People(PartitionKey='p',RowKey='r')"
    minimal = (await call(served, "GET", path)).json()
    none = (await call(served, "GET", path, Accept="application/json;odata=nometadata")).json()
    full = (await call(served, "GET", path, Accept="application/json;odata=fullmetadata")).json()
    assert minimal["odata.metadata"].endswith("/$metadata#People/@Element")
    assert (minimal["n"], minimal["n@odata.type"], "s@odata.type" in minimal) == ("5", "Edm.Int64", False)
    assert not any(k.startswith("odata.") or "@odata" in k for k in none) and none["n"] == "5"
    assert full["odata.id"].endswith(f"/{DEVSTORE_ACCOUNT}/People(PartitionKey='p',RowKey='r')")
    assert full["Timestamp@odata.type"] == "Edm.DateTime"
    atom = await call(served, "GET", path, Accept="application/atom+xml")
    assert (atom.status_code, atom.headers["x-ms-error-code"]) == (415, "AtomFormatNotSupported")


async def test_prefer_and_merge_tunnelling(served, table):
    body = json.dumps({"PartitionKey": "p", "RowKey": "new", "v": 1}).encode()
    created = await call(served, "POST", "People", body, Prefer="return-no-content")
    assert (created.status_code, created.headers["preference-applied"]) == (204, "return-no-content")
    assert created.headers["etag"].startswith('W/"datetime')
    merge = json.dumps({"w": 2}).encode()
    tunnelled = await call(served, "POST", "People(PartitionKey='p',RowKey='new')", merge, X_HTTP_Method="MERGE",
                           If_Match="*")
    assert tunnelled.status_code == 204
    got = await table.get_entity("People", "p", "new")
    assert dict(got.properties) == {"v": ("Edm.Int32", 1), "w": ("Edm.Int32", 2)}


async def test_query_pages_with_continuation_headers(served, table):
    for n in range(5):
        await table.insert_entity("People", "q", f"{n}", {})
    first = await call(served, "GET", "People()?$top=3&$filter=PartitionKey%20eq%20%27q%27")
    assert [e["RowKey"] for e in first.json()["value"]] == ["0", "1", "2"]
    pk, rk = first.headers["x-ms-continuation-NextPartitionKey"], first.headers["x-ms-continuation-NextRowKey"]
    rest = await call(served, "GET", f"People()?$top=3&$filter=PartitionKey%20eq%20%27q%27&NextPartitionKey={pk}"
                                     f"&NextRowKey={rk}&$select=RowKey")
    assert rest.json()["value"] == [{"odata.etag": rest.json()["value"][0]["odata.etag"], "RowKey": "3"},
                                    {"odata.etag": rest.json()["value"][1]["odata.etag"], "RowKey": "4"}]
    assert "x-ms-continuation-NextPartitionKey" not in rest.headers


async def test_bad_input(served, table):
    cases = [
        (await call(served, "POST", "People", b"{not json"), 400, "InvalidInput"),
        (await call(served, "POST", "People", b"[1, 2]"), 400, "InvalidInput"),
        (await call(served, "POST", "People", json.dumps({"PartitionKey": "p"}).encode()), 400, "PropertiesNeedValue"),
        (await call(served, "POST", "People", json.dumps({"PartitionKey": "p", "RowKey": "z", "n": "x",
                                                          "n@odata.type": "Edm.Int64"}).encode()), 400, "InvalidInput"),
        (await call(served, "POST", "People", json.dumps({"PartitionKey": "p", "RowKey": "z",
                                                          "nested": {"a": 1}}).encode()), 400, "InvalidInput"),
        (await call(served, "GET", "People()?$filter=n%20eq"), 400, "InvalidInput"),
        (await call(served, "GET", "People()?$top=1001"), 400, "OutOfRangeQueryParameterValue"),
        (await call(served, "GET", "Missing()"), 404, "TableNotFound"),
        (await call(served, "POST", "People", b"x" * (4 * 1024 * 1024 + 1)), 413, "RequestBodyTooLarge"),
        (await call(served, "DELETE", "People(PartitionKey='p',RowKey='r')"), 400, "MissingRequiredHeader"),
    ]
    for response, status, code in cases:
        assert (response.status_code, response.headers["x-ms-error-code"]) == (status, code), response.text
        assert response.json()["odata.error"]["code"] == code
    found, _ = await table.query_entities("People")
    assert [e.row_key for e in found] == ["r"]  # nothing half-written


def batch_body(parts: list[tuple[str, str, dict[str, object] | None]]) -> bytes:
    lines = ["--batch_b1", "Content-Type: multipart/mixed; boundary=changeset_c1", ""]
    for index, (method, url, entity) in enumerate(parts):
        lines += ["--changeset_c1", "Content-Type: application/http", "Content-Transfer-Encoding: binary",
                  f"Content-ID: {index}", "", f"{method} {url} HTTP/1.1", "Content-Type: application/json",
                  "Accept: application/json;odata=minimalmetadata", *(["If-Match: *"] if method == "DELETE" else []),
                  "",
                  json.dumps(entity) if entity is not None else ""]
    lines += ["--changeset_c1--", "--batch_b1--", ""]
    return "\r\n".join(lines).encode()


async def test_batch_on_the_wire(served, table):
    base = served.url("table")
    good = batch_body([("POST", f"{base}/People", {"PartitionKey": "b", "RowKey": "1"}),
                       ("PATCH", f"{base}/People(PartitionKey='b',RowKey='2')", {"x": 1})])
    response = await call(served, "POST", "$batch", good, Content_Type="multipart/mixed; boundary=batch_b1")
    assert response.status_code == 202 and response.headers["content-type"].startswith("multipart/mixed; boundary=batchresponse_")
    assert response.text.count("HTTP/1.1 201 Created") == 1 and response.text.count("HTTP/1.1 204 No Content") == 1
    mixed = batch_body([("POST", f"{base}/People", {"PartitionKey": "m1", "RowKey": "1"}),
                        ("POST", f"{base}/People", {"PartitionKey": "m2", "RowKey": "1"})])
    response = await call(served, "POST", "$batch", mixed, Content_Type="multipart/mixed; boundary=batch_b1")
    assert response.status_code == 202 and "HTTP/1.1 400 Bad Request" in response.text
    assert '"code": "CommandsInBatchActOnDifferentPartitions"' in response.text and '"value": "1:' in response.text
    failing = batch_body([("POST", f"{base}/People", {"PartitionKey": "f", "RowKey": "1"}),
                          ("DELETE", f"{base}/People(PartitionKey='f',RowKey='missing')", None)])
    response = await call(served, "POST", "$batch", failing, Content_Type="multipart/mixed; boundary=batch_b1")
    assert "HTTP/1.1 404 Not Found" in response.text and '"value": "1:' in response.text
    found, _ = await table.query_entities("People", filter="PartitionKey eq 'f' or PartitionKey eq 'm1'")
    assert found == []  # all or nothing
    garbage = await call(served, "POST", "$batch", b"no parts here", Content_Type="multipart/mixed; boundary=batch_b1")
    assert (garbage.status_code, garbage.headers["x-ms-error-code"]) == (400, "InvalidInput")
