"""The event stream's rules (on a manual clock) and the dashboard's settings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.dashboard import live
from funchost.dashboard.markup import escape, tag, url
from funchost.dashboard.notifier import Notifier
from funchost.dashboard.options import DEFAULT_HISTORY_AGE, DEFAULT_HISTORY_COUNT, from_settings
from funchost.errors import ConfigError


async def _next(stream, clock: ManualClock, seconds: float) -> bytes:  # type: ignore[no-untyped-def]
    task = asyncio.ensure_future(stream.__anext__())
    for _ in range(int(seconds / live.STEP_SECONDS) + 1):
        if task.done():
            break
        await clock.advance(live.STEP_SECONDS)
        for _ in range(5):
            await asyncio.sleep(0)
    return await asyncio.wait_for(task, 1)


async def test_new_invocations_are_announced_at_once() -> None:
    clock, notifier = ManualClock(), Notifier()
    stream = live.changes(notifier, clock, polled=False, stopping=lambda: False)
    assert await stream.__anext__() == b"retry: 2000\n\n"
    waiting = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0)
    notifier.notify()
    assert await asyncio.wait_for(waiting, 1) == b"event: changed\ndata: invocations\n\n"
    await stream.aclose()


async def test_polled_sections_refresh_every_two_seconds_others_get_heartbeats() -> None:
    clock = ManualClock()
    polled = live.changes(Notifier(), clock, polled=True, stopping=lambda: False)
    await polled.__anext__()
    assert await _next(polled, clock, live.POLL_SECONDS) == b"event: changed\ndata: resources\n\n"
    quiet = live.changes(Notifier(), clock, polled=False, stopping=lambda: False)
    await quiet.__anext__()
    assert await _next(quiet, clock, live.HEARTBEAT_SECONDS) == b": keep-alive\n\n"
    await polled.aclose()
    await quiet.aclose()


async def test_the_stream_ends_when_the_host_stops() -> None:
    clock = ManualClock()
    stopping = False
    stream = live.changes(Notifier(), clock, polled=False, stopping=lambda: stopping)
    await stream.__anext__()
    stopping = True
    with pytest.raises(StopAsyncIteration):
        await _next(stream, clock, 1)


def test_defaults() -> None:
    options = from_settings({})
    assert options.enabled and not options.allow_remote
    assert options.history_count == DEFAULT_HISTORY_COUNT == 10_000
    assert options.history_age == DEFAULT_HISTORY_AGE == 7 * 86400


def test_settings_are_read_and_bad_values_name_the_setting() -> None:
    options = from_settings({"FUNCHOST_DASHBOARD": "0", "FUNCHOST_DASHBOARD_HISTORY_COUNT": "500",
                             "FUNCHOST_DASHBOARD_HISTORY_AGE": "1.00:00:00", "FUNCHOST_DASHBOARD_ALLOW_REMOTE": "true"})
    assert (options.enabled, options.history_count, options.history_age, options.allow_remote) == (
        False, 500, 86400, True)
    for name, value in (("FUNCHOST_DASHBOARD", "yes"), ("FUNCHOST_DASHBOARD_HISTORY_COUNT", "0"),
                        ("FUNCHOST_DASHBOARD_HISTORY_COUNT", "many"), ("FUNCHOST_DASHBOARD_HISTORY_AGE", "-01:00:00"),
                        ("FUNCHOST_DASHBOARD_HISTORY_AGE", "a week"), ("FUNCHOST_DASHBOARD_ALLOW_REMOTE", "sure")):
        with pytest.raises(ConfigError) as error:
            from_settings({name: value})
        assert f"app setting {name}" in str(error.value) and repr(value) in str(error.value)


def test_markup_escapes_text_and_attributes() -> None:
    assert tag("td", "<b>&") == "<td>&lt;b&gt;&amp;</td>"
    assert tag("a", "x", href='"><script>') == '<a href="&quot;&gt;&lt;script&gt;">x</a>'
    assert tag("td", [tag("b", "ok"), "<i>"]) == "<td><b>ok</b>&lt;i&gt;</td>"
    assert escape(None) == "" and url("/p", a=None, b="x y") == "/p?b=x+y"


async def test_a_worker_process_polls_every_section_as_others_write_the_shared_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.dashboard.support import dashboard, dashboard_host

    async with dashboard_host(tmp_path / "one") as host:
        service = dashboard(host)
        invocations = next(p for p in service.pages if p.slug == "invocations")
        assert not service.polled(invocations)  # one process: its own writes announce every change
    monkeypatch.setenv("FUNCHOST_WORKER_INDEX", "1")
    async with dashboard_host(tmp_path / "worker") as host:
        service = dashboard(host)
        assert service.polled(next(p for p in service.pages if p.slug == "invocations"))
