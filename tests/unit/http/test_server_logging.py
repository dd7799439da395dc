"""Starting the HTTP server must not reconfigure logging (uvicorn's dictConfig would close
funchost's console handler, stalling start-up and turning buffered output off)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from funchost import logs
from funchost.host import Host, HostConfig
from funchost.testing import write_app

APP = """
import azure.functions as func
app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("hi")
"""


async def test_http_server_start_keeps_the_console_handler(tmp_path: Path) -> None:
    write_app(tmp_path / "app", APP)
    handler = logs.configure("text", stream=io.StringIO())
    host = Host(HostConfig(app_dir=tmp_path / "app", data_dir=tmp_path / "data", port=0, apply_environment=False))
    try:
        await host.start()
        assert handler in logging.getLogger().handlers
        assert not handler._closing  # type: ignore[attr-defined]
    finally:
        await host.stop()
        logging.getLogger().removeHandler(handler)
        handler.close()
