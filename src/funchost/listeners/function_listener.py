"""Starting a function's listener, as WebJobs' FunctionListener does in a Functions host.

The Functions host allows a partial start (``allowPartialHostStartup``): a listener that throws
on start (a container or queue the trigger does not create is missing, storage is unreachable)
does not stop the host. The failure is logged ("The listener for function 'Functions.X' was
unable to start."), the function is listed in error, and the start is retried in the background
with a randomized exponential back-off, 2 seconds up to 2 minutes, until it succeeds or the host
stops. The app setting ``FUNCHOST_LISTENER_RETRY_MAX_INTERVAL`` (funchost's) lowers the cap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from funchost.clock import Clock
from funchost.listeners.delays import RandomizedExponentialBackoff
from funchost.runtime.contracts import Listener
from funchost.runtime.function_errors import FunctionErrors

log = logging.getLogger("funchost.startup")  # category Host.Startup, as the host's

MIN_RETRY_INTERVAL = 2.0
MAX_RETRY_INTERVAL = 120.0


def unable_to_start(function: str, error: BaseException) -> str:
    """FunctionListenerException, flattened as the host reports it."""
    detail = str(error).strip()
    if detail and not detail.endswith("."):
        detail += "."
    return f"The listener for function 'Functions.{function}' was unable to start. {detail}".rstrip()


class FunctionListener:
    """`create` makes the trigger's listener (None when the trigger has none to run); it is
    called again for every retry, so each attempt starts from a fresh listener."""

    def __init__(self, function: str, create: Callable[[], Listener | None], errors: FunctionErrors, clock: Clock,
                 *, max_retry_interval: float = MAX_RETRY_INTERVAL) -> None:
        self.function = function
        self._create = create
        self._errors = errors
        self._clock = clock
        self._max = max_retry_interval
        self.listener: Listener | None = None  # the inner listener once it has started
        self.started = False
        self._stopping = asyncio.Event()
        self._retrying: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the listener, or schedule retries; never raises."""
        if not await self._try_start():
            self._retrying = asyncio.get_running_loop().create_task(
                self._retry(), name=f"listener-retry:{self.function}")

    async def _try_start(self) -> bool:
        try:
            listener = self._create()
            if listener is not None:
                await listener.start()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # any failure: the function is in error, the host runs
            reason = unable_to_start(self.function, exc)
            log.error(reason, extra={"event": "ListenerStartFailed", "function": self.function})
            self._errors.add(self.function, reason)
            return False
        self.listener = listener
        self.started = True
        return True

    async def _retry(self) -> None:
        minimum = min(MIN_RETRY_INTERVAL, self._max)
        backoff = RandomizedExponentialBackoff(minimum, self._max)
        attempt = 0
        while not self._stopping.is_set():
            if await self._clock.wait(self._stopping, backoff.next_delay(False)):
                return
            attempt += 1
            log.info("Retrying to start listener for function 'Functions.%s' (Attempt %d)", self.function, attempt)
            if await self._try_start():
                log.info("Listener successfully started for function 'Functions.%s' after %d retries.",
                         self.function, attempt)
                self._errors.clear(self.function)
                return

    async def stop(self) -> None:
        self._stopping.set()
        if self._retrying is not None:
            await asyncio.gather(self._retrying, return_exceptions=True)
        if self.listener is not None:
            await self.listener.stop()
