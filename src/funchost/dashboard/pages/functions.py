"""Functions: each function's trigger, bindings and status, and why each function in error is.

The reasons are the host's own (`runtime.function_errors`, docs/isolation.md): what
``funchost start`` lists and ``GET /admin/functions/{name}/status`` answers.
"""

from __future__ import annotations

from funchost.dashboard.markup import Markup, join, table, tag, when
from funchost.dashboard.page import Page, View
from funchost.indexing.spec import FunctionSpec
from funchost.runtime import registry
from funchost.storage.invocations import FunctionActivity


def _trigger(function: FunctionSpec, view: View) -> str:
    support = registry.trigger_support(function.trigger_type)
    if support is None:
        return function.trigger_type
    try:
        return support.describe(function, view.runtime)
    except Exception:  # noqa: BLE001 - a description is not worth a broken page
        return function.trigger_type


def _bindings(function: FunctionSpec) -> Markup:
    items = [tag("li", f"{b.direction} {b.name}: {b.type}") for b in function.bindings if not b.is_trigger]
    if function.return_binding is not None and function.return_binding not in function.bindings:
        items.append(tag("li", f"out $return: {function.return_binding.type}"))
    return tag("ul", items, class_="plain") if items else Markup("-")


def _status(name: str, view: View) -> Markup:
    runtime = view.runtime
    if runtime.function_errors.of(name):
        return tag("span", "In error", class_="badge failed")
    if runtime.settings.is_function_disabled(name):
        return tag("span", "Disabled", class_="badge muted")
    return tag("span", "Running", class_="badge ok")


def _activity(activity: FunctionActivity | None, name: str, view: View) -> list[Markup | str]:
    if activity is None:
        return ["0", "-"]
    counts = f"{activity.total}" + (f" ({activity.failed} failed)" if activity.failed else "")
    last = join(when(activity.last_started), " ", tag("span", activity.last_outcome or "", class_="muted"))
    return [tag("a", counts, href=view.href(slug="invocations", function=name),
                aria_label=f"{counts} invocations of {name}"), last]


async def render(view: View) -> Markup:
    runtime = view.runtime
    activity = {a.function.lower(): a for a in await view.dashboard.history.activity()}
    running = sorted(runtime.functions.values(), key=lambda f: f.name.lower())
    rows = [[tag("a", f.name, href=view.href(slug="invocations", function=f.name)), _trigger(f, view),
             _bindings(f), _status(f.name, view), *_activity(activity.get(f.name.lower()), f.name, view)]
            for f in running]
    errors = sorted(runtime.function_errors.items(), key=lambda item: item[0].lower())
    rows += [[name, "-", "-", _status(name, view), "0", "-"] for name, _ in errors
             if name not in runtime.functions]
    error_list = tag("ul", [tag("li", tag("strong", name), ": ", tag("ul", [tag("li", r) for r in reasons]))
                            for name, reasons in errors], class_="errors")
    return join(
        tag("h1", "Functions"),
        table("Functions of this app", ["Function", "Trigger", "Bindings", "Status", "Invocations", "Last run"],
              rows, empty="This app has no functions.", live="functions"),
        tag("section",
            tag("h2", "Functions in error", id="errors-heading"),
            tag("div", error_list if errors else tag("p", "No function is in error."),
                data_live="function-errors", id="live-function-errors"),
            aria_labelledby="errors-heading"),
    )


PAGE = Page("functions", "Functions", render)
