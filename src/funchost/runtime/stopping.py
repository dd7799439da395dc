"""The bounded stop: intake ends, in-flight work finishes, then what is left is cancelled.

The Functions host is an ASP.NET Core host: at SIGTERM its hosted services stop, and they get
``HostOptions.ShutdownTimeout`` (30 s since .NET 6; the environment variable
``ASPNETCORE_SHUTDOWNTIMEOUTSECONDS``, whole seconds, changes it) before the host stops
waiting for them. funchost bounds the same stage the same way: every listener, the HTTP server
and every host service that delivers work (`Draining`) stop together, each finishing its work in
flight while the storage, the storage endpoints and the stores are still up. When the timeout
passes first, the invocations still running are cancelled: their messages are neither
completed nor released, so a queue message reappears when its visibility lapses and a Service
Bus message when its lock does, as after a crash; an Event Grid delivery comes back when its
lease does. Only then are the endpoints and the stores closed (`Host.stop`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from funchost.errors import ConfigError

log = logging.getLogger("funchost.host")

SHUTDOWN_TIMEOUT_SETTING = "ASPNETCORE_SHUTDOWNTIMEOUTSECONDS"
DEFAULT_SHUTDOWN_TIMEOUT = 30.0  # .NET's HostOptions.ShutdownTimeout (since .NET 6)
CANCEL_GRACE = 2.0  # seconds cancelled work gets to unwind before the stop moves on without it
CLOSE_TIMEOUT = 5.0  # seconds the endpoints and services get to close once the work is over


async def until_empty(tasks: Collection[asyncio.Future[Any]]) -> None:
    """Wait until `tasks` is empty, for a set its tasks leave in their own done callbacks (the
    queue and Service Bus listeners' messages, the Durable work loop's, Event Grid deliveries').

    Those callbacks run a loop turn after a task ends. From Python 3.12 on, `gather` over tasks
    that have all ended returns without giving the loop that turn, so a loop that only gathered
    until the set was empty would spin forever on a task that had just ended (a host's stop
    hung at full CPU that way): each pass lets the loop run once."""
    while tasks:
        await asyncio.gather(*list(tasks), return_exceptions=True)
        await asyncio.sleep(0)


def shutdown_timeout(settings: Mapping[str, str]) -> float:
    """The stop timeout in seconds; a value that is not whole seconds is a ConfigError."""
    text = (settings.get(SHUTDOWN_TIMEOUT_SETTING) or "").strip()
    if not text:
        return DEFAULT_SHUTDOWN_TIMEOUT
    if not text.isdigit():
        raise ConfigError(f"must be a whole number of seconds, got {text!r}",
                          path=f"app setting {SHUTDOWN_TIMEOUT_SETTING}")
    return float(text)


async def drain_within(work: Sequence[tuple[str, Awaitable[Any]]], timeout: float,
                       cancel_running: Callable[[], int], *, grace: float = CANCEL_GRACE) -> bool:
    """Run every stop in `work` (what it stops, the stop) together for at most `timeout` seconds.

    True when all of them finished in time. Otherwise `cancel_running()` cancels the running
    invocations (it returns how many), the stops get `grace` seconds to unwind, and those still
    going are cancelled too. A stop that fails is logged; it does not hold the others.
    """
    tasks = {asyncio.ensure_future(_logged(stop, what)): what for what, stop in work}
    if not tasks:
        return True
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    if not pending:
        return True
    cancelled = cancel_running()
    waiting = sorted(tasks[task] for task in pending)
    log.warning("The stop timeout of %gs (%s) has passed: cancelling %d running invocation(s); still stopping: "
                "%s. Their queue messages reappear after their visibility timeout, Service Bus messages "
                "after their lock.", timeout, SHUTDOWN_TIMEOUT_SETTING, cancelled, ", ".join(waiting),
                extra={"event": "HostStopTimeout", "cancelled": cancelled, "waiting": waiting})
    _, pending = await asyncio.wait(pending, timeout=grace)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=grace)
    return False


async def close_within(stop: Awaitable[Any], what: str, deadline: float) -> None:
    """One closing step (a service, the executor) bounded by the loop time `deadline`."""
    try:
        async with asyncio.timeout_at(deadline):
            await _logged(stop, what)
    except TimeoutError:
        log.warning("The %s did not close in time; the stop goes on without it.", what)


async def _logged(stop: Awaitable[Any], what: str) -> None:
    try:
        await stop
    except Exception:
        log.exception("error while stopping the %s", what)
