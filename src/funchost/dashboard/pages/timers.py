"""Timers: each timer function's schedule, its next occurrences, the status the schedule monitor
recorded (last run, next, past due), and "run now".

"Run now" is the admin API's ``POST /admin/functions/{name}`` (what ``funchost timer run`` calls):
the trigger builds the invocation as the host does for a manual call and it runs in the
background; the invocation then appears in the history.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from funchost.dashboard.markup import Markup, join, moment, table, tag
from funchost.dashboard.page import ActionFailed, Page, View
from funchost.errors import FunchostError
from funchost.indexing.spec import FunctionSpec
from funchost.runtime import registry
from funchost.runtime.contracts import Runtime
from funchost.triggers.timer import function_schedule, time_zone
from funchost.triggers.timer.monitor import ScheduleMonitor
from funchost.triggers.timer.schedule import effective_use_monitor, next_occurrences
from funchost.triggers.timer.timezones import zone_name

OCCURRENCES = 5


def timer_functions(runtime: Runtime) -> list[FunctionSpec]:
    return sorted((f for f in runtime.functions.values() if f.trigger_type == "timerTrigger"),
                  key=lambda f: f.name.lower())


async def _row(view: View, function: FunctionSpec, monitor: ScheduleMonitor) -> list[object]:
    runtime = view.runtime
    zone = time_zone(runtime)
    schedule = function_schedule(function, zone)
    now = runtime.clock.now().astimezone(zone)
    requested = function.trigger.get("useMonitor")
    use_monitor = effective_use_monitor(schedule, None if requested is None else bool(requested), now)
    status = await monitor.get_status(function.name) if use_monitor else None
    past_due = bool(status and status.next and now > status.next)
    last: object = "never" if status is None or status.last is None else moment(status.last)
    recorded: object = "-" if status is None or status.next is None else moment(status.next)
    nexts = tag("ul", [tag("li", moment(t)) for t in next_occurrences(schedule, OCCURRENCES, now)], class_="plain")
    return [function.name, join(tag("code", str(function.trigger.get("schedule"))), tag("br"), schedule.describe()),
            zone_name(zone), last, join(recorded, tag("strong", " past due") if past_due else None), nexts,
            view.form("run", "Run now", fields={"function": function.name}, describe=f"Run {function.name} now")]


async def render(view: View) -> Markup:
    runtime = view.runtime
    monitor = ScheduleMonitor(runtime.storage.blobs(), runtime.host_id, time_zone(runtime))
    rows = [await _row(view, f, monitor) for f in timer_functions(runtime)]
    return join(tag("h1", "Timers"),
                table("Timer functions", ["Function", "Schedule", "Time zone", "Last run", "Recorded next",
                                          f"Next {OCCURRENCES} occurrences", "Action"],
                      rows, empty="This app has no timer functions.", live="timers"))


async def run_now(view: View, form: Mapping[str, str]) -> str:
    runtime = view.runtime
    name = form.get("function", "")
    function = next((f for f in timer_functions(runtime) if f.name.lower() == name.lower()), None)
    if function is None:
        raise ActionFailed(f"this app has no timer function named '{name}'")
    support = registry.require_trigger(function.trigger_type)
    try:
        request = await support.admin_request(function, runtime, {"input": ""})
    except FunchostError as exc:
        raise ActionFailed(f"'{function.name}' could not be started: {exc}") from None
    view.dashboard.run_in_background(runtime.invoker.invoke(request))
    return f"'{function.name}' started at {datetime.now().astimezone():%H:%M:%S}; see Invocations."


PAGE = Page("timers", "Timers", render, actions={"run": run_now}, applies=lambda r: bool(timer_functions(r)))
