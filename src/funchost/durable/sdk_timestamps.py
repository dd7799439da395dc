"""The Durable SDK's history timestamps read without dateutil's general parser.

`azure.durable_functions` builds a `HistoryEvent` per event of the history it is given and reads
each `Timestamp` with `dateutil.parser.parse` (about 40 µs a call). Every episode replays the whole
history, so a ten-activity chain parses about 250 timestamps: a fifth of the CPU of a Durable
chain on funchost (profiled, benchmarks/README.md). The host writes those timestamps itself in
one format (`history.format_time`: `YYYY-MM-DDTHH:MM:SS[.fffffff]Z`), so `install()` gives the SDK a
reader of that format that answers what dateutil answers (dateutil's own zone object for `Z`,
fractions truncated to microseconds as dateutil does) and hands anything else to dateutil.
The app and the SDK are unchanged; only the SDK module's name for the parser is rebound, in this
process.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any

_HOST_FORMAT = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,7}))?Z")


def fast_parser(general: Callable[..., datetime]) -> Callable[..., datetime]:
    """A parser answering `general(text)` for every text, quickly for the host's format."""
    utc: tzinfo | None = None

    def parse(text: Any, *args: Any, **kwargs: Any) -> datetime:
        nonlocal utc
        match = _HOST_FORMAT.fullmatch(text) if isinstance(text, str) and not args and not kwargs else None
        if match is None:
            return general(text, *args, **kwargs)
        if utc is None:  # the zone dateutil gives `Z` on this machine (tzutc, or tzlocal where local is UTC)
            utc = general("2000-01-01T00:00:00Z").tzinfo
        year, month, day, hour, minute, second, fraction = match.groups()
        micro = int(fraction[:6].ljust(6, "0")) if fraction else 0
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=utc)

    parse.general = general  # type: ignore[attr-defined]
    return parse


def install() -> None:
    """Rebind the SDK's history-event parser (once per process; nothing if the SDK is absent or
    its module no longer reads timestamps this way)."""
    try:  # the module, not the class the package exports under the same name
        module = importlib.import_module("azure.durable_functions.models.history.HistoryEvent")
    except ImportError:
        return
    current = getattr(module, "dt_parse", None)
    if current is None or hasattr(current, "general"):
        return
    setattr(module, "dt_parse", fast_parser(current))  # noqa: B010 - a module the type checker cannot see into
