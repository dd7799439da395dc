""".NET TimeSpan strings, as host.json and timer schedules use them.

Accepted like `TimeSpan.TryParse` (invariant culture): ``[-][d.]hh:mm[:ss[.fffffff]]`` and a plain
integer number of days (``"5"``). Returns seconds as a float.
"""

from __future__ import annotations

import re

_PATTERN = re.compile(
    r"^\s*(?P<sign>-)?(?:(?P<days>\d+)\.)?(?P<h>\d{1,2}):(?P<m>\d{1,2})(?::(?P<s>\d{1,2})(?:\.(?P<f>\d{1,7}))?)?\s*$"
)
_DAYS_ONLY = re.compile(r"^\s*(?P<sign>-)?(?P<days>\d+)\s*$")
_DAYS_COLON = re.compile(r"^\s*(?P<sign>-)?(?P<days>\d+):(?P<h>\d{1,2}):(?P<m>\d{1,2}):(?P<s>\d{1,2})\s*$")


def parse_timespan(text: str) -> float:
    """Seconds for a TimeSpan string; ValueError with the offending text otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"'{text}' is not a TimeSpan string")
    m = _DAYS_ONLY.match(text)
    if m:
        seconds = int(m["days"]) * 86400.0
        return -seconds if m["sign"] else seconds
    m = _DAYS_COLON.match(text)  # "25:00:00:00" = 25 days (TimeSpan d:hh:mm:ss)
    if m:
        h, mi, s = int(m["h"]), int(m["m"]), int(m["s"])
        _check(text, h, mi, s)
        seconds = int(m["days"]) * 86400.0 + h * 3600 + mi * 60 + s
        return -seconds if m["sign"] else seconds
    m = _PATTERN.match(text)
    if not m:
        raise ValueError(f"'{text}' is not a valid TimeSpan (expected [d.]hh:mm[:ss[.fffffff]])")
    h, mi, s = int(m["h"]), int(m["m"]), int(m["s"] or 0)
    _check(text, h, mi, s)
    seconds = int(m["days"] or 0) * 86400.0 + h * 3600 + mi * 60 + s
    if m["f"]:
        seconds += int(m["f"].ljust(7, "0")) / 10_000_000
    return -seconds if m["sign"] else seconds


def _check(text: str, h: int, m: int, s: int) -> None:
    if h > 23 or m > 59 or s > 59:
        raise ValueError(f"'{text}' is not a valid TimeSpan (hours <= 23, minutes and seconds <= 59)")


def format_timespan(seconds: float) -> str:
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rem = divmod(int(seconds), 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    frac = seconds - int(seconds)
    base = f"{h:02d}:{m:02d}:{s:02d}"
    if frac:
        base += f".{int(round(frac * 10_000_000)):07d}"
    return f"{sign}{days}.{base}" if days else f"{sign}{base}"
