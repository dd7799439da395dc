"""Invocations: the history, newest first, filtered by function and outcome; one invocation with
its trigger details, duration, result or exception, and the log lines it wrote.

Attempts running right now come from the recorder (in memory); finished ones from the history
store, where the recorder writes them in batches (within a second of finishing).
"""

from __future__ import annotations

import time

from funchost.dashboard.markup import Markup, definitions, join, pretty, table, tag, when
from funchost.dashboard.page import NotFound, Page, View
from funchost.storage.invocations import FAILED, OUTCOMES, SUCCEEDED, InvocationRecord, StoredInvocation

PAGE_SIZE = 50


def _summary(record: InvocationRecord) -> str:
    details = record.details
    if "Method" in details and "Path" in details:
        return f"{details['Method']} {details['Path']}"
    shown = [f"{k}={v}" for k, v in details.items() if not isinstance(v, list | dict)][:3]
    return ", ".join(shown) or record.reason


def _outcome(outcome: str) -> Markup:
    return tag("span", "Succeeded" if outcome == SUCCEEDED else "Failed",
               class_="badge ok" if outcome == SUCCEEDED else "badge failed")


def _row(view: View, stored: StoredInvocation) -> list[object]:
    r = stored.record
    return [tag("a", when(r.started), href=view.href(r.id), aria_label=f"Invocation of {r.function} at "
                f"{time.strftime('%H:%M:%S', time.gmtime(r.started))}, {r.outcome}"),
            r.function, _outcome(r.outcome), f"{r.duration_ms:.1f} ms", _summary(r), r.error or r.result or ""]


def _filters(view: View, functions: list[str]) -> Markup:
    chosen_function = view.query.get("function", "")
    chosen_outcome = view.query.get("outcome", "")
    function_options = [tag("option", "All functions", value="")] + [
        tag("option", name, value=name, selected=name.lower() == chosen_function.lower()) for name in functions]
    outcome_options = [tag("option", "Any outcome", value="")] + [
        tag("option", o.capitalize(), value=o, selected=o == chosen_outcome) for o in OUTCOMES]
    return tag("form",
               tag("div", tag("label", "Function", for_="filter-function"),
                   tag("select", function_options, id="filter-function", name="function")),
               tag("div", tag("label", "Outcome", for_="filter-outcome"),
                   tag("select", outcome_options, id="filter-outcome", name="outcome")),
               tag("button", "Filter", type="submit"),
               method="get", action=view.href(), class_="filters", role="search",
               aria_label="Filter invocations")


def _running(view: View) -> Markup:
    recorder = view.dashboard.recorder
    now = view.runtime.clock.now().timestamp()
    rows = sorted(recorder.running_now() if recorder else [], reverse=True)[:PAGE_SIZE]
    return table("Invocations running now", ["Started", "Function", "Running for", "Id"],
                 [[when(started), function, f"{max(0.0, now - started):.1f} s", iid] for started, function, iid in rows],
                 empty="Nothing is running.", live="running")


async def _list(view: View) -> Markup:
    function = view.query.get("function") or None
    outcome = view.query.get("outcome") if view.query.get("outcome") in OUTCOMES else None
    before = view.query.get("before")
    before_seq = int(before) if before and before.isdigit() else None
    found = await view.dashboard.history.recent(function=function, outcome=outcome, limit=PAGE_SIZE,
                                                before_seq=before_seq)
    names = sorted(view.runtime.functions, key=str.lower)
    older = None
    if len(found) == PAGE_SIZE:
        older = tag("a", "Older invocations", href=view.href(function=function, outcome=outcome,
                                                             before=found[-1].seq), rel="next")
    recorder = view.dashboard.recorder
    note = None
    if recorder is not None and recorder.dropped:
        note = tag("p", f"{recorder.dropped} invocation(s) were not recorded: the history could not keep up.",
                   class_="notice error")
    return join(
        tag("h1", "Invocations"),
        _per_host_note(view),
        _filters(view, names),
        note,
        tag("section", tag("h2", "Running", id="running-heading"), _running(view), aria_labelledby="running-heading"),
        tag("section", tag("h2", "Recent", id="recent-heading"),
            table("Recent invocations, newest first", ["Started (UTC)", "Function", "Outcome", "Duration", "Trigger",
                                                       "Result or error"],
                  [_row(view, s) for s in found], empty="No invocations recorded yet" + (
                      " for this filter." if function or outcome else "."), live="invocations"),
            tag("p", older) if older else None, aria_labelledby="recent-heading"),
    )


_SHARED = {
    "postgres": "the queues, Durable instances, messages, partitions and dead letters on the other pages are "
                "shared by every host on the same PostgreSQL server",
    "azure": "the queues and blobs on the other pages are in Azure Storage, seen alike by every host of the account",
}


def _per_host_note(view: View) -> Markup | None:
    """With storage other hosts share, the other pages show the shared state; this one does not."""
    shared = _SHARED.get(view.runtime.storage.kind)
    if shared is None:
        return None
    return tag("p", f"These are this host's invocations only: the invocation history stays in each host's data "
                    f"folder, while {shared}.", class_="notice")


async def _detail(view: View, invocation_id: str) -> Markup:
    stored = await view.dashboard.history.get(invocation_id)
    if stored is None:
        raise NotFound(f"No invocation with id '{invocation_id}' is in the history (it may have been pruned, or it "
                       "finished less than a second ago).")
    r = stored.record
    lines = table("Log lines written during the invocation", ["Time (UTC)", "Level", "Category", "Message"],
                  [[when(line.time), line.level, line.category, tag("pre", line.message)] for line in r.logs],
                  empty="The invocation wrote no log lines.", class_="logs")
    return join(
        tag("h1", f"Invocation of {r.function}"),
        tag("p", tag("a", "All invocations of this function", href=view.href(function=r.function))),
        definitions([("Id", tag("code", r.id)), ("Function", r.function), ("Trigger", r.trigger),
                     ("Reason", r.reason), ("Started (UTC)", when(r.started)), ("Duration", f"{r.duration_ms:.3f} ms"),
                     ("Outcome", _outcome(r.outcome)), ("Retry count", str(r.retry_count)),
                     ("Result", r.result or "-")]),
        tag("section", tag("h2", "Trigger details", id="details-heading"), tag("pre", pretty(dict(r.details))),
            aria_labelledby="details-heading"),
        tag("section", tag("h2", "Exception", id="error-heading"), tag("p", r.error),
            tag("pre", r.stack) if r.stack else None, aria_labelledby="error-heading") if r.outcome == FAILED else None,
        tag("section", tag("h2", "Log", id="log-heading"), lines,
            tag("p", f"{r.dropped_logs} more line(s) were not kept.") if r.dropped_logs else None,
            aria_labelledby="log-heading"),
    )


async def render(view: View) -> Markup:
    if view.path:
        return await _detail(view, view.path[0])
    return await _list(view)


PAGE = Page("invocations", "Invocations", render, polled=False)
