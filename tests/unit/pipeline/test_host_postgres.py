"""With `--storage postgres` the reference pipeline keeps its jobs, outbox and ledger book on the
host's PostgreSQL server by default: a second host with a data folder of its own sees the same
jobs and the same ledger."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from tests.support.pipeline import APP_DIR, CSV_OK, Pipeline, settings

from funchost.reliability.store.postgres import PostgresDatabase
from funchost.testing import HostHarness

pytestmark = pytest.mark.postgres

BODY = {"containerName": "imports", "blobName": "tenant-a/in/file.csv"}


async def test_jobs_and_ledger_live_on_the_hosts_server(funchost_app: Callable[..., Awaitable[HostHarness]],
                                                        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    server = settings(FUNCHOST_POSTGRES=postgres_dsn, FUNCHOST_POSTGRES_SCHEMA=postgres_schema)
    first = await Pipeline(await funchost_app(APP_DIR, storage="postgres", data_dir=tmp_path / "a",
                                              settings=server)).start()
    first_app = first.app  # each host loads its own copy of the app module
    try:
        database = first.store.db
        assert isinstance(database, PostgresDatabase) and database.schema == f"{postgres_schema}_imports"
        await first.upload("tenant-a/in/file.csv", CSV_OK)
        accepted = await first.submit(BODY, key="k-1")
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["jobId"]
        await first.settle()
        await first.settle(1)
        assert await first.state(job_id) == "Completed"
        assert not (tmp_path / "a" / "imports.db").exists() and not (tmp_path / "a" / "ledger.db").exists()
        # Another host, its own data folder: the same job and ledger, from the server.
        second = await Pipeline(await funchost_app(APP_DIR, storage="postgres", data_dir=tmp_path / "b",
                                                   settings=server)).start()
        assert (await second.status(job_id)).json()["status"] == "Completed"
        assert [e["idempotencyKey"] for e in await second.ledger()] == [f"{job_id}:ledger-post"]
        assert (await second.submit(BODY, key="k-1")).json()["jobId"] == job_id
        await second.close()
    finally:
        await first_app.aclose()
