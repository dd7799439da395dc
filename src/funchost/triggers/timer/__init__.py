"""Timer trigger (``timerTrigger``): NCRONTAB / TimeSpan schedules, schedule monitor, singleton lock.

- `ncrontab` parses and evaluates expressions as NCrontab does;
- `schedule` picks cron or TimeSpan, applies the time zone and DST rules, decides `useMonitor`;
- `monitor` persists ``{Last, Next, LastUpdated}`` and detects past-due occurrences;
- `listener` arms the timer and invokes the function (one at a time, one catch-up after overruns);
- `singleton` makes sure only one host on a storage account runs each timer.
"""

from __future__ import annotations

import re
from datetime import tzinfo
from typing import Any

from funchost.errors import AppLoadError, ConfigError
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport
from funchost.triggers.timer.listener import TimerConfig, TimerListener, build_request, timer_info
from funchost.triggers.timer.monitor import ScheduleMonitor
from funchost.triggers.timer.schedule import Schedule, ScheduleError, effective_use_monitor, parse_schedule
from funchost.triggers.timer.singleton import SingletonListener, SingletonOptions, parse_singleton_options
from funchost.triggers.timer.timezones import resolve_time_zone

HOST_CALL_REASON = "This function was programmatically called via the host APIs."
_UNRESOLVED = re.compile(r"%[^%]+%")


def _error(function: FunctionSpec, message: str) -> AppLoadError:
    return AppLoadError(message, file=function.script_file, line=function.source_line, function=function.name)


def _flag(function: FunctionSpec, key: str) -> bool | None:
    value = function.trigger.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise _error(function, f"timerTrigger '{key}' must be true or false, got {value!r}")
    return value


def time_zone(runtime: Runtime) -> tzinfo:
    return resolve_time_zone(runtime.settings)


def function_schedule(function: FunctionSpec, zone: tzinfo) -> Schedule:
    expression = function.trigger.get("schedule")
    if not isinstance(expression, str) or not expression.strip():
        raise _error(function, "timerTrigger needs a 'schedule' (an NCRONTAB expression or a TimeSpan)")
    unresolved = _UNRESOLVED.search(expression)
    if unresolved:
        raise _error(function, f"the schedule refers to app setting {unresolved.group(0)}, which is not defined")
    try:
        return parse_schedule(expression, zone)
    except ScheduleError as exc:
        raise _error(function, str(exc)) from None


def timer_config(function: FunctionSpec, runtime: Runtime) -> TimerConfig:
    schedule = function_schedule(function, time_zone(runtime))
    use_monitor = effective_use_monitor(schedule, _flag(function, "useMonitor"), runtime.clock.now())
    return TimerConfig(schedule, bool(_flag(function, "runOnStartup")), use_monitor)


def singleton_options(runtime: Runtime) -> SingletonOptions:
    return parse_singleton_options(runtime.options.singleton)


class TimerSupport:
    trigger_type = "timerTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        try:
            time_zone(runtime)
        except ConfigError as exc:
            raise _error(function, str(exc)) from None
        timer_config(function, runtime)
        singleton_options(runtime)  # host.json typos are load errors

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        config = timer_config(function, runtime)
        blobs = runtime.storage.blobs()
        monitor = ScheduleMonitor(blobs, runtime.host_id, config.schedule.zone)

        def factory() -> Listener:
            return TimerListener(function, config, runtime.invoker, runtime.clock, monitor)

        return SingletonListener(factory, blobs, runtime.host_id, function.name, singleton_options(runtime),
                                 runtime.clock)

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        return "timerTrigger"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        """Run now (TimerTriggerBinding.BindAsync with no TimerInfo): stored status, not past due."""
        config = timer_config(function, runtime)
        status = None
        if config.use_monitor:
            monitor = ScheduleMonitor(runtime.storage.blobs(), runtime.host_id, config.schedule.zone)
            status = await monitor.get_status(function.name)
        now = runtime.clock.now().astimezone(config.schedule.zone)
        request = build_request(function, timer_info(config.schedule, status, False), now)
        request.reason = HOST_CALL_REASON
        return request


SUPPORT: TriggerSupport = TimerSupport()
