"""The live view's server-sent events: ``GET /_funchost/events?page=<section>``.

The stream says *that* something changed, never what: ``event: changed`` with ``data:
invocations`` when this host wrote new invocations to the history, or ``data: resources`` every
`POLL_SECONDS` on sections whose resources other processes change too (queues, blobs, ...). The
script then fetches the page again and swaps the regions marked ``data-live`` whose HTML
differs, so every update goes through the same authorization and rendering as a page load. A
comment every `HEARTBEAT_SECONDS` keeps proxies from closing an idle stream; ``retry`` tells
the browser how soon to reconnect. The stream ends when the host stops serving HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from funchost.clock import Clock
from funchost.dashboard.notifier import Notifier

POLL_SECONDS = 2.0
HEARTBEAT_SECONDS = 15.0
STEP_SECONDS = 0.5  # how often the stream checks whether the host is stopping
RETRY_MS = 2000


def event(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


async def changes(notifier: Notifier | None, clock: Clock, *, polled: bool, stopping: Callable[[], bool]
                  ) -> AsyncIterator[bytes]:
    """The stream's chunks, until `stopping()` is true."""
    yield f"retry: {RETRY_MS}\n\n".encode()
    seen = notifier.version if notifier is not None else 0
    started = clock.monotonic()
    last_poll = last_beat = started
    while not stopping():
        if notifier is not None:
            version = await notifier.wait(seen, clock, STEP_SECONDS)
        else:
            await clock.sleep(STEP_SECONDS)
            version = seen
        now = clock.monotonic()
        if version != seen:
            seen = version
            last_beat = now
            yield event("changed", "invocations")
        elif polled and now - last_poll >= POLL_SECONDS:
            last_poll = last_beat = now
            yield event("changed", "resources")
        elif now - last_beat >= HEARTBEAT_SECONDS:
            last_beat = now
            yield b": keep-alive\n\n"
