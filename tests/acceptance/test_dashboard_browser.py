"""The dashboard in a real browser: headless Chromium (the system's, driven by Playwright) against
a real `funchost start`.

It opens the dashboard with the master key, sees the functions and the one in error with its
reason, calls an HTTP function and sees the invocation appear without a reload, opens it and
reads its log line, redrives a poison message and sees the queue depth change, raises the event
a Durable orchestration waits for and sees it complete on its timeline; a request without the
key gets 401. Screenshots go to ``test-artifacts/dashboard/`` (``FUNCHOST_TEST_ARTIFACTS``
moves them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import RunningHost, run_cli, start_funchost, stop_funchost

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As the machine notes say: no sandbox as root, and no calls home (the network is closed).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(os.environ.get("FUNCHOST_TEST_ARTIFACTS")
                 or Path(__file__).resolve().parents[2] / "test-artifacts") / "dashboard"

APP = """
import logging
import azure.functions as func
import azure.durable_functions as df
app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.route(route="hello")
def hello(req: func.HttpRequest) -> func.HttpResponse:
    name = req.params.get("name", "world")
    logging.info("Greeting %s from the browser test", name)
    return func.HttpResponse(f"Hello, {name}!")

@app.queue_trigger(arg_name="msg", queue_name="orders", connection="AzureWebJobsStorage")
def orders(msg: func.QueueMessage) -> None:
    logging.info("order %s", msg.get_body().decode())

@app.timer_trigger(arg_name="timer", schedule="0 0 * * * *")
def hourly(timer: func.TimerRequest) -> None:
    pass

@app.route(route="approvals/{id}", methods=["POST"])
@app.durable_client_input(client_name="client")
async def ask(req: func.HttpRequest, client) -> func.HttpResponse:
    await client.start_new("approval", req.route_params["id"], None)
    return func.HttpResponse("started", status_code=202)

@app.orchestration_trigger(context_name="context")
def approval(context):
    answer = yield context.wait_for_external_event("decision")
    return f"decided: {answer}"

@app.generic_trigger(arg_name="x", type="madeUpTrigger")
def madeup(x: str) -> None:
    pass
"""


@pytest.fixture
def host(tmp_path: Path) -> Iterator[RunningHost]:
    app = write_app(tmp_path / "app", APP)
    running = start_funchost(app, data_dir=tmp_path / "data")
    yield running
    stop_funchost(running)


def test_the_dashboard_in_headless_chromium(host: RunningHost, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is installed by scripts/setup")
    assert Path(CHROMIUM).exists(), "Chromium is installed by scripts/setup (Debian package chromium)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dashboard = f"{host.base_url}/_funchost"

    # Without the key: 401 and no data.
    anonymous = httpx.get(f"{dashboard}/functions", timeout=10)
    assert anonymous.status_code == 401 and "madeup" not in anonymous.text and "hello" not in anonymous.text

    # A poison message in a queue no function reads, as `funchost queue send` puts it there.
    data = tmp_path / "data"
    run_cli("queue", "send", "parked", "first", "--app", str(tmp_path / "app"), "--data", str(data))
    run_cli("queue", "send", "parked-poison", "could not be processed", "--app", str(tmp_path / "app"),
            "--data", str(data))

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            expect = sync_api.expect

            # Sign in with the key: the page reloads without it.
            page.goto(f"{dashboard}/functions?code={host.master_key}")
            page.wait_for_url(f"{dashboard}/functions")
            assert host.master_key not in page.url
            expect(page.get_by_role("heading", name="Functions", exact=True)).to_be_visible()
            table = page.get_by_role("table", name="Functions of this app")
            for name in ("hello", "orders", "hourly", "madeup"):
                expect(table.get_by_role("cell", name=name, exact=True)).to_be_visible()
            expect(page.get_by_text("The binding type(s) 'madeUpTrigger' are not registered.")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "functions.png"), full_page=True)

            # The invocations page updates live: the row appears without a reload.
            page.get_by_role("navigation", name="Sections").get_by_role("link", name="Invocations").click()
            page.wait_for_url(f"{dashboard}/invocations")
            page.evaluate("window.__notReloaded = true")
            expect(page.locator("#live-state")).to_have_text("Live updates are on.")
            assert httpx.get(f"{host.base_url}/api/hello?name=Ada", timeout=10).text == "Hello, Ada!"
            row = page.get_by_role("row").filter(has_text="GET /api/hello")
            expect(row).to_be_visible(timeout=15_000)
            assert page.evaluate("window.__notReloaded") is True
            page.screenshot(path=str(ARTIFACTS / "invocations.png"), full_page=True)

            # Its details, with the log line it wrote.
            row.get_by_role("link").click()
            expect(page.get_by_role("heading", name="Invocation of hello")).to_be_visible()
            expect(page.get_by_text("Greeting Ada from the browser test")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "invocation.png"), full_page=True)

            # Redrive the poison message: the queue's depth goes from 1 to 2.
            page.goto(f"{dashboard}/queues/parked")
            summary = page.locator("#queue-depth")
            expect(summary).to_have_text("1 message(s); poison queue: 1 message(s)")
            page.get_by_role("button", name="Move the messages of parked-poison back to parked").click()
            expect(page.get_by_text("Moved 1 message(s) from 'parked-poison' to 'parked'.")).to_be_visible()
            expect(summary).to_have_text("2 message(s); poison queue: 0 message(s)")
            page.screenshot(path=str(ARTIFACTS / "queue.png"), full_page=True)

            # A Durable orchestration waits for an event: raise it from its page, see it complete.
            assert httpx.post(f"{host.base_url}/api/approvals/order-7", timeout=10).status_code == 202
            page.goto(f"{dashboard}/durable")
            page.get_by_role("table", name="Orchestration instances, newest first").get_by_role(
                "link", name="order-7").click()
            expect(page.get_by_role("heading", name="Instance order-7")).to_be_visible()
            history = page.get_by_role("list", name="History")
            expect(history.get_by_text("ExecutionStarted")).to_be_visible(timeout=15_000)
            page.get_by_label("Event name").fill("decision")
            page.get_by_label("Data (JSON)").fill('"yes"')
            page.get_by_role("button", name="Raise event").click()
            expect(page.get_by_text("Raised 'decision' for 'order-7'.")).to_be_visible()
            expect(history.get_by_text("EventRaised")).to_be_visible(timeout=15_000)
            expect(page.locator("#live-instance")).to_contain_text("decided: yes", timeout=15_000)
            expect(page.get_by_role("button", name="Raise event")).to_have_count(0)  # finished: no more events
            page.screenshot(path=str(ARTIFACTS / "durable.png"), full_page=True)

            # Keyboard: the skip link is the first stop and leads to the content.
            page.goto(f"{dashboard}/functions")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.textContent") == "Skip to content"
            page.keyboard.press("Enter")
            assert page.evaluate("document.activeElement.id") == "main"
        finally:
            browser.close()

    # The cookie is the browser's only: the same page without it is still 401.
    assert httpx.get(f"{dashboard}/invocations", timeout=10).status_code == 401


def test_an_open_event_stream_does_not_hold_up_the_stop(host: RunningHost) -> None:
    """Live streams end when the host stops, instead of waiting out the 30 s shutdown timeout."""
    import threading
    import time

    chunks: list[bytes] = []
    opened = threading.Event()

    def listen() -> None:
        headers = {"x-functions-key": host.master_key}
        with httpx.stream("GET", f"{host.base_url}/_funchost/events?page=queues", headers=headers,
                          timeout=60) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                opened.set()

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    assert opened.wait(10), "the event stream sent nothing"
    time.sleep(2.5)  # a queues page is refreshed every 2 s
    assert b"event: changed\ndata: resources" in b"".join(chunks)
    started = time.monotonic()
    code, output = stop_funchost(host)
    assert code == 0, output
    assert time.monotonic() - started < 10
    reader.join(5)
    assert not reader.is_alive()


def test_the_start_banner_names_the_dashboard_and_no_dashboard_turns_it_off(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    running = start_funchost(app, data_dir=tmp_path / "data")
    try:
        assert running.wait_for_output(f"Dashboard: http://localhost:{running.port}/_funchost/ "
                                       "(open it once with ?code=<master key>)")
    finally:
        stop_funchost(running)
    quiet = start_funchost(app, "--no-dashboard", data_dir=tmp_path / "data-off")
    try:
        response = httpx.get(f"{quiet.base_url}/_funchost/", headers=quiet.admin_headers, timeout=10)
        assert response.status_code == 404
        assert "Dashboard:" not in quiet.output()
        assert not (tmp_path / "data-off" / "dashboard").exists()
    finally:
        stop_funchost(quiet)
