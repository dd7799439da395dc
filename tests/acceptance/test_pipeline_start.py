"""The reference pipeline as a user starts it: the published demo secret stops the start
outside the demo, and everything the running pipeline writes to its data folder is private."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import httpx
import jwt
import pytest
from tests.acceptance.support import (
    HostDidNotStart,
    copy_example,
    run_cli,
    start_funchost,
    stop_funchost,
    wait_until,
)
from tests.support.pipeline import CSV_OK

pytestmark = pytest.mark.acceptance

DEMO_SECRET = json.loads((Path(__file__).resolve().parents[2] / "examples" / "imports" /
                          "local.settings.json").read_text())["Values"]["IMPORTS_JWT_SECRET"]


def test_the_published_demo_secret_stops_the_start_outside_the_demo(tmp_path: Path) -> None:
    app = copy_example("imports", tmp_path)
    with pytest.raises(HostDidNotStart) as failed:
        start_funchost(app, data_dir=tmp_path / "data")
    assert "exited with 1" in str(failed.value)
    assert "IMPORTS_JWT_SECRET is the demo secret published with this app" in str(failed.value)
    assert "Traceback" not in str(failed.value)


def test_in_the_demo_it_starts_and_the_data_folder_stays_private(tmp_path: Path) -> None:
    app = copy_example("imports", tmp_path)
    data = tmp_path / "data"
    csv = tmp_path / "orders.csv"
    csv.write_bytes(CSV_OK)
    previous = os.umask(0o022)  # the usual default: without explicit modes files would be 0644
    try:
        run_cli("blob", "upload", "imports", "tenant-a/orders.csv", str(csv), "--app", str(app), "--data", str(data),
                "--connection", "ImportsStorage")
        host = start_funchost(app, data_dir=data, env={"IMPORTS_DEMO": "true"})
    finally:
        os.umask(previous)
    try:
        assert "published demo secret are accepted" in host.output()
        claims = {"tid": "tenant-a", "oid": "alice", "exp": int(time.time()) + 600}
        headers = {**host.admin_headers, "Authorization": f"Bearer {jwt.encode(claims, DEMO_SECRET, 'HS256')}"}
        response = httpx.post(f"{host.base_url}/api/imports", headers={**headers, "Idempotency-Key": "p-1"},
                              json={"containerName": "imports", "blobName": "tenant-a/orders.csv"}, timeout=10)
        assert response.status_code == 202, response.text
        status_url = f"{host.base_url}{response.json()['statusUrl']}"
        wait_until(lambda: httpx.get(status_url, headers=headers, timeout=5).json()["status"] == "Completed",
                   "the job to complete", 60, [host])
        files = {p.relative_to(data).as_posix(): p for p in [data, *data.rglob("*")]}
        for expected in ("imports.db", "imports.db-wal", "ledger.db", "ledger.db-wal", "keys/host.json"):
            assert expected in files  # the pipeline's own stores are there, open
        wrong = {name: oct(stat.S_IMODE(path.stat().st_mode)) for name, path in files.items()
                 if stat.S_IMODE(path.stat().st_mode) != (0o700 if path.is_dir() else 0o600)}
        assert wrong == {}
    finally:
        stop_funchost(host)
