"""The Durable section: instances newest first with filters, an instance's history as a timeline,
and raise / terminate / purge through the management API's rules."""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.dashboard.support import cookie_of, csrf_of, dashboard_host, flushed, page, sign_in

from funchost.testing import HostHarness

APP = """
import azure.functions as func
import azure.durable_functions as df

app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

@app.orchestration_trigger(context_name="context")
def waiter(context):
    value = yield context.wait_for_external_event("approval")
    return value

@app.orchestration_trigger(context_name="context")
def hello(context):
    greeting = yield context.call_activity("greet", context.get_input())
    return greeting

@app.orchestration_trigger(context_name="context")
def failing(context):
    yield context.call_activity("explode", None)

@app.activity_trigger(input_name="name")
def greet(name):
    return f"Hello {name}!"

@app.activity_trigger(input_name="value")
def explode(value):
    raise RuntimeError("exploded <script>")

@app.entity_trigger(context_name="context")
def Counter(context):
    value = context.get_state(lambda: 0)
    if context.operation_name == "add":
        value += context.get_input()
    context.set_state(value)
"""


async def post(host: HostHarness, action: str, **form: str) -> str:
    """Run a Durable action with the master key; the text of the notice shown after it."""
    response = await host.http("POST", f"/_funchost/durable/{action}", key="master", data=form)
    assert response.status_code == 303
    await host.wait_until_idle()
    notice = (await host.http("GET", response.headers["location"], key="master")).text
    found = re.search(r'<p class="notice (ok|error)"[^>]*>(.*?)</p>', notice, re.S)
    assert found, notice
    return f"{found.group(1)}: {found.group(2)}"


async def test_the_section_is_listed_only_for_apps_with_durable_functions(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path / "plain") as host:
        html = (await page(host, "functions")).text
        assert 'href="/_funchost/durable"' not in html
        assert (await page(host, "durable")).status_code == 404
    async with dashboard_host(tmp_path / "durable", APP) as host:
        html = (await page(host, "functions")).text
        assert 'href="/_funchost/durable"' in html


async def test_instances_newest_first_filtered_and_entities(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        await host.durable.start("hello", "<b>Tokyo</b>", instance_id="first")
        await host.clock.advance(5)
        await host.durable.start("waiter", instance_id="second")
        await host.durable.signal_entity("Counter", "c1", "add", 3)
        html = (await page(host, "durable")).text
        assert "Task hub &#x27;TestHubName&#x27;" in html
        assert html.index(">second</a>") < html.index(">first</a>")  # newest first
        assert "Hello &lt;b&gt;Tokyo&lt;/b&gt;!" in html and "<b>Tokyo" not in html  # output, escaped
        assert re.search(r"<td>@counter@c1</td><td>counter</td><td>yes</td><td><code>3</code>", html, re.I)
        running = (await page(host, "durable?status=Running")).text
        assert ">second</a>" in running and ">first</a>" not in running
        prefixed = (await page(host, "durable?prefix=fir")).text
        assert ">first</a>" in prefixed and ">second</a>" not in prefixed
        assert "No instances for this filter." in (await page(host, "durable?prefix=zzz")).text
        unknown = await page(host, "durable?status=Sleeping")
        assert unknown.status_code == 200 and "Unknown runtime status &#x27;Sleeping&#x27;" in unknown.text


async def test_an_instance_shows_its_status_and_history_as_a_timeline(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        await host.durable.start("hello", "Tokyo", instance_id="greeting")
        await host.durable.start("failing", instance_id="broken")
        html = (await page(host, "durable/greeting")).text
        assert "<h1>Instance greeting</h1>" in html and "<dd>Completed</dd>" in html
        timeline = html[html.index('<ol class="timeline"'):]
        kinds = re.findall(r"<strong>(\w+)</strong>", timeline)
        assert kinds == ["ExecutionStarted", "TaskCompleted", "ExecutionCompleted"]
        assert "<strong>TaskCompleted</strong> greet" in timeline and "Took" in timeline
        assert "Hello Tokyo!" in timeline
        assert "Raise event" not in html and "Terminate" not in html and "Purge" in html  # finished
        failed = (await page(host, "durable/broken")).text
        assert '<li class="event failed">' in failed and "exploded &lt;script&gt;" in failed
        assert "<script>" not in failed.replace('<script src="/_funchost/static/dashboard.js" defer></script>', "")
        await flushed(host)  # orchestrator and activity runs are invocations like any other
        invocations = (await page(host, "invocations")).text
        for name in ("hello", "greet", "failing", "explode"):
            assert f'aria-label="Invocation of {name} at' in invocations, name
        missing = await page(host, "durable/nope")
        assert missing.status_code == 404 and "no orchestration instance &#x27;nope&#x27;" in missing.text


async def test_raise_terminate_and_purge(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        await host.durable.start("waiter", instance_id="w1")
        form = (await page(host, "durable/w1")).text
        assert '<label for="raise-name">Event name</label>' in form and "Terminate" in form
        assert (await post(host, "raise", instance="w1", event="approval", data="{nope")).startswith(
            "error: the event data must be JSON")
        assert await post(host, "raise", instance="w1", event="", data="1") == "error: an event needs a name"
        assert await post(host, "raise", instance="w1", event="approval", data='{"ok": true}') == (
            "ok: Raised &#x27;approval&#x27; for &#x27;w1&#x27;.")
        status = await host.durable.wait("w1")
        assert status["runtimeStatus"] == "Completed" and status["output"] == {"ok": True}
        assert (await post(host, "raise", instance="w1", event="approval", data="1")) == (
            "error: Instance with ID w1 is gone: either completed or failed")

        await host.durable.start("waiter", instance_id="w2")
        assert await post(host, "terminate", instance="w2") == "ok: Termination of &#x27;w2&#x27; requested."
        assert (await host.durable.wait("w2"))["runtimeStatus"] == "Terminated"
        assert (await post(host, "terminate", instance="w2")).startswith("error: Cannot terminate")
        assert (await post(host, "terminate", instance="nope")) == "error: No instance with ID &#x27;nope&#x27; was found."

        assert await post(host, "purge", instance="w1") == "ok: Purged &#x27;w1&#x27; (1 instance deleted)."
        assert await host.durable.status("w1") is None
        assert (await page(host, "durable/w1")).status_code == 404
        assert (await post(host, "purge", instance="w1")).startswith("error: No instance")
        assert await post(host, "purge") == "error: no instance named in the request"


async def test_actions_from_another_origin_or_without_the_token_are_refused(tmp_path: Path) -> None:
    async with dashboard_host(tmp_path, APP) as host:
        await host.durable.start("waiter", instance_id="w1")
        signed_in = await sign_in(host, "durable/w1")
        cookie = cookie_of(signed_in)
        html = (await host.http("GET", "/_funchost/durable/w1", headers={"cookie": cookie})).text
        form = {"instance": "w1", "csrf": csrf_of(html)}
        for headers, data in (({"cookie": cookie, "origin": "http://evil.test"}, form),
                              ({"cookie": cookie}, {"instance": "w1"}),
                              ({}, form)):
            response = await host.http("POST", "/_funchost/durable/terminate", headers=headers, data=data)
            assert response.status_code in (401, 403)
        assert (await host.durable.status("w1"))["runtimeStatus"] == "Running"  # type: ignore[index]
        allowed = await host.http("POST", "/_funchost/durable/terminate", data=form,
                                  headers={"cookie": cookie, "origin": "http://localhost:7071"})
        assert allowed.status_code == 303
        assert (await host.durable.wait("w1"))["runtimeStatus"] == "Terminated"
