"""What the Event Grid service prints at start: topic endpoints only for apps that use Event Grid."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from funchost.eventgrid.service import EventGridService
from funchost.testing import HostHarness, write_app

NO_EVENT_GRID = """
import azure.functions as func
app = func.FunctionApp()

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("hi")
"""

WITH_EVENT_GRID = """
import azure.functions as func
app = func.FunctionApp()

@app.event_grid_trigger(arg_name="event")
def on_event(event: func.EventGridEvent) -> None:
    pass
"""


def _topic_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records
            if r.name == "funchost.eventgrid" and r.getMessage().startswith("Event Grid topic")]


async def test_an_app_without_event_grid_gets_the_topic_lines_at_debug_only(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_app(tmp_path / "app", NO_EVENT_GRID)
    with caplog.at_level(logging.DEBUG, logger="funchost.eventgrid"):
        async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data") as host:
            await eventgrid_service(host).publish("default", [{
                "id": "1", "subject": "s", "eventType": "t", "eventTime": "2024-01-01T00:00:00Z",
                "data": {}, "dataVersion": "1"}])
    lines = _topic_lines(caplog)
    assert len(lines) == 3 and {level for level, _ in lines} == {logging.DEBUG}
    published = [r for r in caplog.records if r.getMessage().startswith("Published 1 event(s)")]
    assert [(r.levelno, r.getMessage()) for r in published] == [
        (logging.DEBUG, "Published 1 event(s) to Event Grid topic 'default' (0 deliveries)")]


async def test_an_app_with_an_event_grid_function_gets_the_topic_lines(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_app(tmp_path / "app", WITH_EVENT_GRID)
    with caplog.at_level(logging.DEBUG, logger="funchost.eventgrid"):
        async with HostHarness(tmp_path / "app", data_dir=tmp_path / "data"):
            pass
    assert {level for level, _ in _topic_lines(caplog)} == {logging.INFO}


def eventgrid_service(host: HostHarness) -> EventGridService:
    service = host.runtime.services.find(EventGridService)
    assert service is not None
    return service
