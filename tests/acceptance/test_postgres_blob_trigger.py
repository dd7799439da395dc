"""Blob triggers across machines: two `funchost start --storage postgres` processes with separate
data folders on one PostgreSQL schema (they share nothing but the server). 40 blobs written by a
third process each run `make_thumbnail` once: discovery follows the server's change journal and
the receipts (`blobreceipts/...`, blob leases) that make a blob version run once are blobs on the
server, so the host that queues a blob is the only one that runs it."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import pytest
from tests.acceptance.support import copy_example, free_port, start_funchost, stop_funchost, wait_until

from funchost.clock import SystemClock
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.storage.postgres.backend import open_backend

pytestmark = [pytest.mark.acceptance, pytest.mark.postgres]

BLOBS = 40
RAN = re.compile(r"thumbnail for images/(\S+) ")


async def upload(tmp_path: Path, env: dict[str, str]) -> None:
    """Another machine writing the blobs: a backend of its own on the same server."""
    storage = open_backend(tmp_path / "writer", AppSettings(env, environ={}), SystemClock())
    try:
        blobs = storage.blobs()
        await blobs.create_container("images", exist_ok=True)
        await asyncio.gather(*(blobs.upload_blob("images", f"b{i:02d}.png", b"\x89PNG" + bytes([i]) * 100)
                               for i in range(BLOBS)))
    finally:
        await storage.aclose()


def test_forty_blobs_each_trigger_once_across_two_hosts(tmp_path: Path, postgres_dsn: str,
                                                        postgres_schema: str) -> None:
    app = copy_example("blobs", tmp_path)  # one app: both hosts have its host id
    env = {"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    args = ("--storage", "postgres", "--no-storage-endpoints")
    hosts = [start_funchost(app, *args, data_dir=tmp_path / name, env=env) for name in ("data-a", "data-b")]
    try:
        asyncio.run(upload(tmp_path, env))

        def ran() -> Counter[str]:
            return Counter(name for host in hosts for name in RAN.findall(host.output()))

        wait_until(lambda: len(ran()) == BLOBS, "every blob's thumbnail", 60, hosts)
        wait_until(lambda: all(host.output().count("Executed 'Functions.make_thumbnail' (Succeeded") ==
                               len(RAN.findall(host.output())) for host in hosts), "the runs to finish", 20, hosts)
        for host in hosts:  # a second look after both hosts have scanned again: nothing reruns
            host.wait_for_output("no such line", timeout=3)
        counts = ran()
        assert sorted(counts) == [f"b{i:02d}.png" for i in range(BLOBS)]
        assert set(counts.values()) == {1}, {name: n for name, n in counts.items() if n > 1}
    finally:
        outputs = [stop_funchost(host) for host in hosts]
    for code, output in outputs:
        assert code == 0, output


def test_the_storage_endpoints_of_a_postgres_host_serve_the_accounts_on_the_server(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    """The Azure Storage Blob SDK against `funchost start --storage postgres`'s Blob endpoint: what
    it writes is on the server (read here by another backend) and triggers the app."""
    from azure.storage.blob import BlobServiceClient

    app = copy_example("blobs", tmp_path)
    env = {"FUNCHOST_POSTGRES": postgres_dsn, "FUNCHOST_POSTGRES_SCHEMA": postgres_schema}
    ports = [free_port() for _ in range(3)]
    host = start_funchost(app, "--storage", "postgres", "--storage-ports", ",".join(map(str, ports)),
                          data_dir=tmp_path / "data", env=env)
    try:
        client = BlobServiceClient.from_connection_string(
            f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{ports[0]}/{DEVSTORE_ACCOUNT};")
        container = client.get_container_client("images")
        container.create_container(metadata={"team": "a"})
        container.upload_blob("sdk/cat.png", b"\x89PNG" + b"y" * 5000)
        blob = container.get_blob_client("sdk/cat.png")
        assert blob.download_blob(offset=1, length=3).readall() == b"PNG"
        assert [p.name for p in container.walk_blobs(delimiter="/")] == ["sdk/"]
        assert host.wait_for_output("thumbnail for images/sdk/cat.png", timeout=20), host.output()

        async def read_from_the_server() -> bytes:
            storage = open_backend(tmp_path / "reader", AppSettings(env, environ={}), SystemClock())
            try:
                return (await storage.blobs().download_blob("images", "sdk/cat.png"))[0]
            finally:
                await storage.aclose()

        assert asyncio.run(read_from_the_server()) == b"\x89PNG" + b"y" * 5000
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
