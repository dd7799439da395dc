"""`examples/asgi`: a FastAPI app behind func.AsgiFunctionApp, served by `funchost start`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance
APP = Path(__file__).resolve().parents[2] / "examples" / "asgi"


def test_fastapi_app_through_the_asgi_function_app_and_its_shutdown(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    host = start_funchost(APP, data_dir=tmp_path / "data")
    try:
        with httpx.Client(base_url=host.base_url, timeout=10) as client:
            assert client.get("/api/health").json() == {"status": "ok"}
            assert client.get("/api/items/1").json() == {"id": 1, "name": "first"}
            missing = client.get("/api/items/99")
            assert missing.status_code == 404 and missing.json() == {"detail": "no such item"}
            created = client.post("/api/items", json={"name": "second"})
            assert created.status_code == 201 and created.json()["name"] == "second"
            assert client.post("/api/items", json={}).status_code == 422
            # Not UTF-8: FastAPI's default handler fails echoing the input back (a 500); the app's answers 422.
            invalid = client.post("/api/items", content=b"\xf2", headers={"Content-Type": "text/plain"})
            assert invalid.status_code == 422 and invalid.json()["detail"][0]["input"] == "\ufffd"
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    stopped = output.index("Stopping host")
    assert "FastAPI app started" in output[:stopped]
    assert "FastAPI app stopped" in output[stopped:output.index("Host stopped.")], output
    for noise in ("Traceback", "CancelledError", "was never awaited", "Exception ignored"):
        assert noise not in output, output
