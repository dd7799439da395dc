"""The Python worker's blob and table end-to-end apps on `funchost start`, with the flows of its tests.

Ported from Azure/azure-functions-python-worker `tests/endtoend/test_blob_functions.py`
(`TestBlobFunctionsStein`, `TestBlobFunctionsSteinGeneric`) and `test_table_functions.py`
(`TestTableFunctionsStein`, `TestTableFunctionsGeneric`); sources in `worker_apps/SOURCE.md`.
The 27 MB variants of the blob flows are left out to keep the suite short (the same functions
with small bodies; large bodies are covered by the blob tests of their own). Where the worker's
test sleeps and retries, the port polls with a deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from tests.acceptance.worker_apps_support import WorkerAppHost, poll, start_apps, stop_all

pytestmark = pytest.mark.acceptance

BLOB_APPS = ["blob_functions/blob_functions_stein", "blob_functions/blob_functions_stein/generic"]
TABLE_APPS = ["table_functions/table_functions_stein", "table_functions/table_functions_stein/generic"]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, WorkerAppHost]]:
    started = start_apps([*BLOB_APPS, *TABLE_APPS], tmp_path_factory.mktemp("storage"))
    yield started
    stop_all(started.values())


@pytest.mark.parametrize("app", BLOB_APPS)
def test_blob_io_str_bytes_filelike_and_return(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    r = host.request("POST", "put_blob_str", content="test-data")
    assert (r.status_code, r.text) == (200, "OK")
    assert host.request("GET", "get_blob_str").text == "test-data"
    assert host.request("GET", "get_blob_as_str").text == "test-data"

    r = host.request("POST", "put_blob_bytes", content="test-dată".encode())
    assert (r.status_code, r.text) == (200, "OK")
    for path in ("get_blob_bytes", "get_blob_as_bytes"):
        r = host.request("POST", path)
        assert (r.status_code, r.text) == (200, "test-dată")

    assert host.request("POST", "put_blob_filelike").text == "OK"
    assert host.request("POST", "get_blob_filelike").text == "filelike"

    assert host.request("POST", "put_blob_return").status_code == 200
    r = host.request("POST", "get_blob_return")
    assert (r.status_code, r.text) == (200, "FROM RETURN")


@pytest.mark.parametrize("app", BLOB_APPS)
def test_blob_trigger(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    data = f"DummyData-{time.time_ns()}"
    r = host.request("POST", "put_blob_trigger", content=data.encode())
    assert (r.status_code, r.text) == (200, "OK")

    def fired(response: httpx.Response) -> bool:
        try:  # the worker's test: empty (not JSON) until the trigger has run
            return response.status_code == 200 and response.json()["content"] == data
        except ValueError:
            return False

    response = poll(lambda: host.request("GET", "get_blob_triggered"), fired, "the blob trigger to run")
    assert response.json()["name"] == "python-worker-tests/test-blob-trigger.txt"


@pytest.mark.parametrize("app", TABLE_APPS)
def test_table_bindings(hosts: dict[str, WorkerAppHost], app: str) -> None:
    host = hosts[app]
    out_resp = host.request("POST", "table_out_binding")
    assert out_resp.status_code == 200, out_resp.text
    row_key = json.loads(out_resp.text)["RowKey"]
    in_resp = host.request("GET", f"table_in_binding/{row_key}")
    assert in_resp.status_code == 200, in_resp.text
    assert any(row["RowKey"] == row_key for row in json.loads(in_resp.text))
