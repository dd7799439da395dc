"""Each section shows what exists on the host's own data, escaped, and its actions work."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from tests.unit.dashboard.support import dashboard, dashboard_host, flushed, page

from funchost.documents import connect


async def test_functions_lists_each_function_and_the_reason_of_the_one_in_error(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        await host.http("GET", "/api/hello")
        await flushed(host)
        html = (await page(host, "functions")).text
        for name in ("hello", "boom", "orders", "tick", "broken"):
            assert f">{name}<" in html
        assert "In error" in html
        assert "The binding type(s) &#x27;nopeTrigger&#x27; are not registered." in html
        assert 'aria-label="1 invocations of hello"' in html
        assert "out $return: http" in html


async def test_invocations_newest_first_filtered_with_details_and_log_lines(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        assert (await host.http("GET", "/api/hello")).status_code == 201
        assert (await host.http("GET", "/api/boom")).status_code == 500
        await flushed(host)
        html = (await page(host, "invocations")).text
        assert html.index("GET /api/boom") < html.index("GET /api/hello")  # newest first
        assert "HTTP 201" in html and "ValueError: boom &lt;b&gt;bad&lt;/b&gt;" in html
        failed = (await page(host, "invocations?outcome=failed")).text
        assert "GET /api/boom" in failed and "GET /api/hello" not in failed
        only_hello = (await page(host, "invocations?function=HELLO")).text
        assert "GET /api/hello" in only_hello and "GET /api/boom" not in only_hello

        links = re.findall(r'href="(/_funchost/invocations/[0-9a-f-]{36})"', html)
        details = [(await host.http("GET", link, key="master")).text for link in links]
        boom = next(d for d in details if "Invocation of boom" in d)
        assert "about to fail" in boom and "Traceback" in boom and "raise ValueError" in boom
        hello = next(d for d in details if "Invocation of hello" in d)
        # the user's log line, escaped: no script can come from a log line
        assert "hello from &lt;script&gt;alert(1)&lt;/script&gt;" in hello and "<script>alert" not in hello
        assert "&quot;Method&quot;: &quot;GET&quot;" in hello  # trigger details
        assert (await page(host, "invocations/not-an-id")).status_code == 404


async def test_queue_redrive_moves_the_poison_messages_and_the_depth_changes(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        service = host.queues.service()
        await service.create_queue("parked")
        await service.create_queue("parked-poison")
        for body in ("<img src=x onerror=alert(1)>", "two"):
            await service.put_message("parked-poison", base64.b64encode(body.encode()).decode())
        listing = (await page(host, "queues")).text
        assert re.search(r">parked</a></td><td>0</td><td>-</td><td>2</td>", listing)
        detail = (await page(host, "queues/parked")).text
        assert "&lt;img src=x onerror=alert(1)&gt;" in detail and "<img src=x" not in detail
        response = await host.http("POST", "/_funchost/queues/redrive", key="master",
                                   data={"queue": "parked", "back": "/_funchost/queues/parked"})
        assert response.status_code == 303
        after = await host.http("GET", response.headers["location"], key="master")
        assert "Moved 2 message(s) from &#x27;parked-poison&#x27; to &#x27;parked&#x27;." in after.text
        assert "2 message(s); poison queue: 0 message(s)" in after.text
        assert await host.queues.count("parked") == 2


async def test_clearing_an_unknown_queue_is_a_notice_not_a_crash(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        response = await host.http("POST", "/_funchost/queues/clear", key="master", data={"queue": "Bad_Name"})
        notice = await host.http("GET", response.headers["location"], key="master")
        assert 'class="notice error"' in notice.text
        assert (await page(host, "queues/nosuchqueue")).status_code == 404


async def test_blobs_list_and_download_as_an_attachment(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        blobs = host.runtime.storage.blobs()
        await blobs.create_container("reports")
        await blobs.upload_blob("reports", "2024/<b>x</b>.html", b"<script>alert(1)</script>", content_type="text/html")
        assert ">reports</a>" in (await page(host, "blobs")).text
        listing = (await page(host, "blobs/reports")).text
        assert "2024/&lt;b&gt;x&lt;/b&gt;.html" in listing
        link = re.search(r'href="(/_funchost/blobs/reports/download\?[^"]+)"', listing)
        assert link is not None
        download = await host.http("GET", link.group(1).replace("&amp;", "&"), key="master")
        assert download.status_code == 200 and download.content == b"<script>alert(1)</script>"
        assert download.headers["content-type"] == "application/octet-stream"
        assert download.headers["content-disposition"].startswith("attachment;")
        assert download.headers["x-content-type-options"] == "nosniff"
        missing = await page(host, "blobs/reports/download?name=nope")
        assert missing.status_code == 404


async def test_timers_show_the_next_occurrences_and_run_now(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        html = (await page(host, "timers")).text
        assert "0 */5 * * * *" in html and "never" in html
        assert len(re.findall(r"<li><time", html)) == 5
        response = await host.http("POST", "/_funchost/timers/run", key="master", data={"function": "tick"})
        assert response.status_code == 303
        await flushed(host)
        assert "tick" in (await page(host, "invocations?function=tick")).text.split("<tbody>", 1)[1]
        unknown = await host.http("POST", "/_funchost/timers/run", key="master", data={"function": "hello"})
        assert "no timer function named" in (await host.http("GET", unknown.headers["location"], key="master")).text


async def test_sections_that_do_not_apply_are_left_out_of_the_navigation(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        html = (await page(host, "functions")).text
        nav = html.split("<nav", 1)[1].split("</nav>", 1)[0]
        assert "Timers" in nav and "Queues" in nav
        for absent in ("Service Bus", "Event Hubs", "Change feed", "Event Grid"):
            assert absent not in nav
        assert (await page(host, "changefeed")).status_code == 200  # the URL still answers
        assert (await page(host, "nosuchsection")).status_code == 404


MESSAGING_APP = """
import azure.functions as func
app = func.FunctionApp()

@app.service_bus_queue_trigger(arg_name="msg", queue_name="jobs", connection="ServiceBusConnection")
def jobs(msg: func.ServiceBusMessage) -> None:
    raise RuntimeError("always fails")

@app.event_hub_message_trigger(arg_name="event", event_hub_name="telemetry", connection="EventHubConnection")
def telemetry(event: func.EventHubEvent) -> None:
    pass

@app.event_grid_trigger(arg_name="event")
def grid(event: func.EventGridEvent) -> None:
    pass

@app.cosmos_db_trigger(arg_name="docs", connection="CosmosDB", database_name="db", container_name="items",
                       lease_container_name="leases", create_lease_container_if_not_exists=True)
def changes(docs: func.DocumentList) -> None:
    pass
"""


async def test_service_bus_event_hubs_event_grid_and_change_feed(tmp_path: Path) -> None:
    db = connect("CosmosDB", data_dir=tmp_path / "data").create_database_if_not_exists("db")
    db.create_container_if_not_exists("items", "/pk", partitions=2)
    async with dashboard_host(tmp_path, MESSAGING_APP) as host:
        await host.servicebus.send("jobs", "<job>")
        for _ in range(12):  # ten deliveries, then the dead-letter queue
            await host.advance(1)
        await host.eventhubs.send("telemetry", ["a", "b"], partition_key="k")
        await host.advance(2)

        nav = (await page(host, "functions")).text.split("<nav", 1)[1].split("</nav>", 1)[0]
        for section in ("Service Bus", "Event Hubs", "Event Grid", "Change feed"):
            assert section in nav

        entities = (await page(host, "servicebus")).text
        assert ">jobs</a>" in entities
        jobs = (await page(host, "servicebus/entity?path=jobs")).text
        assert "&lt;job&gt;" in jobs and "MaxDeliveryCountExceeded" in jobs
        response = await host.http("POST", "/_funchost/servicebus/redrive", key="master", data={"path": "jobs"})
        notice = (await host.http("GET", response.headers["location"], key="master")).text
        assert "Moved 1 message(s) from &#x27;jobs/$deadletterqueue&#x27; to &#x27;jobs&#x27;." in notice

        hubs = (await page(host, "eventhubs")).text
        assert ">telemetry</a>" in hubs
        partitions = (await page(host, "eventhubs/telemetry")).text
        assert "Partitions of telemetry for consumer group $Default" in partitions

        grid = (await page(host, "eventgrid")).text
        assert "Subscriptions and their deliveries" in grid and "function grid" in grid

        leases = (await page(host, "changefeed")).text
        assert "monitors db/items; leases in db/leases" in leases and "Leases of changes" in leases
        assert dashboard(host).history is not None


async def test_the_invocations_page_says_its_history_is_this_hosts_when_storage_is_shared(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path) as host:
        assert "invocations only" not in (await page(host, "invocations")).text  # one data folder
        host.runtime.storage.kind = "postgres"  # as `--storage postgres` opens it
        shared = (await page(host, "invocations")).text
        assert "invocations only: the invocation history stays in each host" in shared and "same PostgreSQL server" in shared
