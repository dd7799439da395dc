"""A blob uploaded with `funchost blob upload` (another process) triggers the Event Grid function
of a running `funchost start`, through the blob store's change journal."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import copy_example, run_cli, start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eventgrid"


cli = run_cli


def test_blob_upload_from_the_cli_triggers_the_event_grid_function(tmp_path: Path) -> None:
    app = copy_example("eventgrid", tmp_path)
    data = tmp_path / "data"
    host = start_funchost(app, data_dir=data)
    try:
        source = tmp_path / "report.pdf"
        source.write_bytes(b"%PDF-1.4 demo")
        cli("blob", "upload", "uploads", "report.pdf", str(source), "--app", str(app), "--data", str(data))
        cli("blob", "upload", "other", "ignored.txt", str(source), "--app", str(app), "--data", str(data))
        assert host.wait_for_output("Executed 'Functions.on_blob_event' (Succeeded", timeout=20), host.output()
        assert host.wait_for_output("processing blob job for http://127.0.0.1:10000/devstoreaccount1/uploads/"
                                    "report.pdf", timeout=20), host.output()
        assert "ignored.txt" not in host.output()  # filtered by subjectBeginsWith

        key = cli("events", "status", "--app", str(app), "--data", str(data))
        assert "blob-created" in key
        # the custom topic of the same app, published through the running host's endpoint
        out = cli("events", "publish", "--type", "Demo.Happened", "--subject", "demo/1", "--event-data", '{"a": 1}',
                  "--app", str(app), "--data", str(data), "--port", str(host.port))
        assert "through the running host" in out
        assert host.wait_for_output("Demo.Happened subject=demo/1", timeout=20) or \
            host.wait_for_output("Executed 'Functions.on_blob_event' (Succeeded", timeout=1)
        r = httpx.post(f"{host.base_url}/eventgrid/topics/default/api/events", json=[], timeout=10)
        assert r.status_code == 401
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
