"""The change feed and tables across machines: two `funchost start --storage postgres` processes
with separate data folders on one PostgreSQL schema (they share nothing but the server) run a
Cosmos DB trigger on a four-partition container. The leases spread two and two over the hosts
and stay so; 200 documents written by a third party are each handled once, by both hosts, and
`funchost docs status` on a third, empty data folder shows both owners with nothing left. A
table entity written through one host's table output binding is read through the other's input
binding. A host killed with SIGKILL leaves its leases to the other once they expire, and nothing
written meanwhile is lost."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import RunningHost, run_cli, start_funchost, stop_funchost, wait_until
from tests.support.postgres_hosts import record_table

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.documents import DocumentStore
from funchost.storage.postgres.backend import open_backend

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]
# The table the functions record into (`record_table`), and its columns.
RECORDS = ("handled", "doc text, pid int")

DOCUMENTS = 200
PARTITIONS = 4
APP = '''
import json
import os
import threading

import azure.functions as func
import psycopg

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
_lock = threading.Lock()
_conn = None


def _record(ids):
    global _conn
    with _lock:
        if _conn is None or _conn.closed or _conn.broken:
            _conn = psycopg.connect(os.environ["FUNCHOST_POSTGRES"], autocommit=True)
        with _conn.cursor() as cursor:
            cursor.executemany("INSERT INTO " + os.environ["RECORD_TABLE"] + "(doc, pid) VALUES (%s, %s)",
                               [(doc_id, os.getpid()) for doc_id in ids])


@app.cosmos_db_trigger(arg_name="docs", connection="CosmosDB", database_name="db", container_name="items",
                       lease_container_name="leases", create_lease_container_if_not_exists=True,
                       start_from_beginning=True, feed_poll_delay=500, lease_acquire_interval=1000,
                       lease_expiration_interval=4000, lease_renew_interval=1000)
def on_change(docs: func.DocumentList) -> None:
    _record([doc["id"] for doc in docs])


@app.route(route="put/{key}", methods=["POST"])
@app.table_output(arg_name="note", connection="AzureWebJobsStorage", table_name="Notes")
def put_note(req: func.HttpRequest, note: func.Out[str]) -> func.HttpResponse:
    note.set(json.dumps({"PartitionKey": "notes", "RowKey": req.route_params["key"],
                         "Text": req.get_body().decode(), "Pid": os.getpid()}))
    return func.HttpResponse(status_code=201)


@app.route(route="get/{key}", methods=["GET"])
@app.table_input(arg_name="note", connection="AzureWebJobsStorage", table_name="Notes", partition_key="notes",
                 row_key="{key}")
def get_note(req: func.HttpRequest, note: str) -> func.HttpResponse:
    return func.HttpResponse(note, mimetype="application/json")
'''
HOST_JSON = '{"version": "2.0", "logging": {"logLevel": {"Host.Triggers.CosmosDB": "Information"}}}'


def make_app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "function_app.py").write_text(APP)
    (app / "host.json").write_text(HOST_JSON)
    return app


def handled(dsn: str, table: str) -> list[tuple[str, int]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return [(r[0], r[1]) for r in conn.execute(f"SELECT doc, pid FROM {table}")]


class Writer:
    """Another machine: a backend of its own on the same server, for the documents and leases."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.storage = open_backend(tmp_path / "writer", AppSettings(env, environ={}), SystemClock())
        self.loop = asyncio.new_event_loop()

    def run(self, coro):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(coro)

    def owners(self) -> list[str | None]:
        try:
            leases = self.run(self.storage.documents().query_items("db", "leases"))
        except Exception:  # the lease container is not there yet
            return []
        return [d.get("Owner") for d in leases if ".." in d["id"]]

    def spread(self) -> list[int]:
        owners = self.owners()
        return sorted(Counter(owners).values()) if len(owners) == PARTITIONS and all(owners) else []

    def close(self) -> None:
        self.run(self.storage.aclose())
        self.loop.close()


async def write_documents(docs: DocumentStore, prefix: str = "d") -> None:
    await asyncio.gather(*(docs.create_item("db", "items", {"id": f"{prefix}{i:03d}", "pk": f"k{i}"})
                           for i in range(DOCUMENTS)))


def start_hosts(tmp_path: Path, env: dict[str, str], writer: Writer) -> list[RunningHost]:
    docs = writer.storage.documents()
    writer.run(docs.create_database("db"))
    writer.run(docs.create_container("db", "items", partition_key_path="/pk", partitions=PARTITIONS))
    args = ("--storage", "postgres", "--no-storage-endpoints", "--no-amqp")
    app = make_app(tmp_path)
    return [start_funchost(app, *args, data_dir=tmp_path / name, env=env) for name in ("data-a", "data-b")]


def test_two_hosts_share_the_change_feed_leases_and_a_table(tmp_path: Path, postgres_dsn: str,
                                                            postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    writer = Writer(tmp_path, env)
    docs = writer.storage.documents()
    hosts: list[RunningHost] = []
    try:
        hosts = start_hosts(tmp_path, env, writer)
        wait_until(lambda: writer.spread() == [2, 2], "the four leases spread 2/2 over the hosts", 45, hosts)
        time.sleep(3)  # several acquire intervals: it stays balanced
        assert writer.spread() == [2, 2] and len(set(writer.owners())) == 2
        writer.run(write_documents(docs))
        wait_until(lambda: len({doc for doc, _ in handled(postgres_dsn, table)}) >= DOCUMENTS,
                   "every document handled", 45, hosts)
        time.sleep(2)  # a second look: nothing is handled again
        found = handled(postgres_dsn, table)
        counts = Counter(doc for doc, _ in found)
        assert sorted(counts) == [f"d{i:03d}" for i in range(DOCUMENTS)]
        assert set(counts.values()) == {1}, {doc: n for doc, n in counts.items() if n > 1}
        by_host = Counter(pid for _, pid in found)
        assert set(by_host) == {host.process.pid for host in hosts}, by_host  # both hosts handled their share
        print(f"documents per host: {sorted(by_host.values())}")

        # a third machine's `funchost docs status` (an empty data folder) sees both owners and no lag
        status = run_cli("docs", "status", "-d", "db", "-c", "items", "--storage", "postgres", "--postgres",
                         postgres_dsn, "--data", str(tmp_path / "third"), env={"FUNCHOST_POSTGRES_SCHEMA": postgres_schema})
        rows = [line.split("\t") for line in status.splitlines()[1:-1]]
        assert len(rows) == PARTITIONS and len({row[1] for row in rows}) == 2, status
        assert {row[3] for row in rows} == {"0"} and status.splitlines()[-1].endswith("\t0"), status

        a, b = hosts
        assert httpx.post(f"{a.base_url}/api/put/n1", content=b"written on a", timeout=10).status_code == 201
        read = httpx.get(f"{b.base_url}/api/get/n1", timeout=10)
        assert read.status_code == 200, read.text
        # the partition as a JSON array, as the Tables extension binds it for Python (bindings/table.py)
        assert [(e["RowKey"], e["Text"], e["Pid"]) for e in read.json()] == [("n1", "written on a", a.process.pid)]
        for name in ("data-a", "data-b"):  # nothing of the tables or documents in a data folder
            assert not list((tmp_path / name).rglob("tables.db"))
            assert not list((tmp_path / name).rglob("documents.sqlite3"))
    finally:
        outputs = [stop_funchost(host) for host in hosts]
        writer.close()
    for code, output in outputs:
        assert code == 0, output


def test_the_leases_of_a_killed_host_are_taken_over_on_the_other_machine(tmp_path: Path, postgres_dsn: str,
                                                                       postgres_schema: str) -> None:
    table, env = record_table(postgres_dsn, postgres_schema, *RECORDS)
    writer = Writer(tmp_path, env)
    hosts: list[RunningHost] = []
    try:
        hosts = start_hosts(tmp_path, env, writer)
        doomed, survivor = hosts
        wait_until(lambda: writer.spread() == [2, 2], "the four leases spread 2/2 over the hosts", 45, hosts)
        doomed.process.kill()  # SIGKILL: its leases are not released, they expire (4 s here)
        doomed.process.wait(timeout=10)
        writer.run(write_documents(writer.storage.documents(), "late"))
        wait_until(lambda: writer.spread() == [4], "the survivor to hold all four leases", 30, [survivor])
        wait_until(lambda: len({doc for doc, _ in handled(postgres_dsn, table)}) >= DOCUMENTS,
                   "every document written after the kill handled", 45, [survivor])
        found = handled(postgres_dsn, table)
        assert sorted({doc for doc, _ in found}) == [f"late{i:03d}" for i in range(DOCUMENTS)]
        assert {pid for _, pid in found} == {survivor.process.pid}
    finally:
        if hosts and hosts[0].process.poll() is None:
            hosts[0].process.kill()
        outputs = [stop_funchost(host) for host in hosts[1:]]
        writer.close()
    for code, output in outputs:
        assert code == 0, output
