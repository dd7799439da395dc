"""The timer listener (TimerListener.cs, azure-semantics 4.4 and 4.5).

Start: read the stored status and check whether an occurrence was missed while no host ran
(past due), then arm one timer: an immediate (1 ms) past-due or run-on-startup invocation, or
the next occurrence. Each firing runs the function once (one invocation at a time), records
``{Last, Next, LastUpdated}`` and re-arms for ``Next - now``; an invocation that overruns one or
more occurrences therefore gets exactly one immediate catch-up run, and the skipped occurrences
are not replayed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from azure.functions.meta import Datum

from funchost.clock import Clock
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.triggers.timer.monitor import ScheduleMonitor, ScheduleStatus, format_datetime, format_dotnet_o
from funchost.triggers.timer.schedule import Schedule, next_occurrences

log = logging.getLogger("funchost.timer")

# System.Timers.Timer cannot wait longer than ~24.8 days; the host chains 24-day chunks.
MAX_TIMER_INTERVAL = 24 * 86400.0
STARTUP_DELAY = 0.001
MIN_INTERVAL = 1e-7  # one tick


@dataclass(frozen=True)
class TimerConfig:
    schedule: Schedule
    run_on_startup: bool
    use_monitor: bool


@dataclass(frozen=True)
class _Startup:
    past_due: bool
    original_schedule: datetime | None = None


def timer_info(schedule: Schedule, status: ScheduleStatus | None, past_due: bool) -> dict[str, Any]:
    """TimerInfo as the host serialises it for the worker (TimerRequestConverter reads it)."""
    return {
        "Schedule": {"AdjustForDST": schedule.adjust_for_dst},
        "ScheduleStatus": status.to_json() if status is not None else None,
        "IsPastDue": past_due,
    }


def build_request(function: FunctionSpec, info: dict[str, Any], now: datetime,
                  details: dict[str, str] | None = None) -> InvocationRequest:
    fired = now.strftime("%m/%d/%Y %H:%M:%S")
    return InvocationRequest(
        function=function,
        trigger_value=Datum(json.dumps(info), "json"),
        trigger_metadata={"TimerTrigger": Datum(fired, "string")},
        binding_data={"TimerTrigger": fired},
        reason=f"Timer fired at {format_dotnet_o(now)}",
        details=dict(details or {}),
    )


class TimerListener:
    def __init__(
        self,
        function: FunctionSpec,
        config: TimerConfig,
        invoker: FunctionInvoker,
        clock: Clock,
        monitor: ScheduleMonitor | None,
    ) -> None:
        self.function = function
        self.config = config
        self._invoker = invoker
        self._clock = clock
        self._monitor = monitor if config.use_monitor else None
        self._zone = config.schedule.zone
        self.status: ScheduleStatus | None = None
        self._startup: _Startup | None = None
        self._stopping = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.invocations = 0

    def _now(self) -> datetime:
        return self._clock.now().astimezone(self._zone)

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("the listener has already been started")
        schedule = self.config.schedule
        now = self._now()
        past_due = False
        if self._monitor is not None:
            stored = await self._monitor.get_status(self.function.name)
            log.debug("Function '%s' initial status: %s", self.function.name, stored.to_json() if stored else None)
            self.status, overdue = await self._monitor.check_past_due(self.function.name, now, schedule, stored)
            past_due = overdue > 0
        if self.status is None:
            self.status = ScheduleStatus(None, schedule.next_occurrence(now), None)
        upcoming = ", ".join(format_datetime(t) for t in next_occurrences(schedule, 5, now))
        log.info("The next 5 occurrences of the '%s' schedule (%s) will be: %s",
                 self.function.name, schedule.describe(), upcoming)
        if past_due:
            self._startup = _Startup(True, self.status.next)
        elif self.config.run_on_startup:
            self._startup = _Startup(False)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"timer:{self.function.name}")

    async def stop(self) -> None:
        """Stop arming the timer and wait for an invocation in flight to finish."""
        self._stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        async with self._lock:
            pass

    async def _run(self) -> None:
        if self._startup is not None:
            if await self._clock.wait(self._stopping, STARTUP_DELAY):
                return
            startup, self._startup = self._startup, None
            await self._guarded(self._now(), past_due=startup.past_due, run_on_startup=not startup.past_due,
                                original_schedule=startup.original_schedule)
        while not self._stopping.is_set():
            assert self.status is not None
            if self.status.next is None:
                await self._stopping.wait()  # the schedule never fires again
                return
            if not await self._wait_until(self.status.next):
                return
            await self._guarded(self._now())

    async def _wait_until(self, when: datetime) -> bool:
        """Sleep until `when` in chunks of at most 24 days; False when the listener is stopping."""
        while True:
            remaining = (when - self._clock.now()).total_seconds()
            if remaining <= 0:
                remaining = MIN_INTERVAL
            chunk = min(remaining, MAX_TIMER_INTERVAL)
            if await self._clock.wait(self._stopping, chunk):
                return False
            if chunk >= remaining:
                return True

    async def _guarded(self, now: datetime, **kwargs: Any) -> None:
        try:
            await self.invoke(now, **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception:  # background errors never stop the schedule
            log.exception("Error occurred during scheduled invocation for '%s'.", self.function.name)

    async def invoke(self, invocation_time: datetime, *, past_due: bool = False, run_on_startup: bool = False,
                     original_schedule: datetime | None = None) -> None:
        """InvokeJobFunction: one invocation at a time; then the new status is recorded."""
        async with self._lock:
            if self._stopping.is_set():
                return
            status = self.status
            info = timer_info(self.config.schedule, status if self._monitor is not None else None, past_due)
            details: dict[str, str] = {}
            if past_due:
                details["UnscheduledInvocationReason"] = "IsPastDue"
            elif run_on_startup:
                details["UnscheduledInvocationReason"] = "RunOnStartup"
            if original_schedule is not None:
                details["OriginalSchedule"] = format_dotnet_o(original_schedule)
            if info["ScheduleStatus"] is not None:
                details["ScheduleStatus"] = json.dumps(info["ScheduleStatus"])
            request = build_request(self.function, info, invocation_time, details)
            self.invocations += 1
            await self._invoker.invoke(request)  # never raises; failures are logged by the executor

            # A regular tick that fired early (clock skew) counts as the scheduled time, so the same
            # Next is never recorded twice.
            adjusted = invocation_time
            if not past_due and not run_on_startup and status is not None and status.next is not None \
                    and status.next > invocation_time:
                adjusted = status.next
            self.status = ScheduleStatus(adjusted, self.config.schedule.next_occurrence(adjusted), adjusted)
            if self._monitor is not None:
                await self._monitor.update_status(self.function.name, self.status)

