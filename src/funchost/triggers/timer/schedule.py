"""Timer schedules: NCRONTAB or TimeSpan, evaluated in the app's time zone (azure-semantics 4.1, 4.7).

All times handed in and out are aware datetimes. A cron schedule computes the next wall-clock
occurrence with NCrontab rules and then applies the host's DST corrections (CronSchedule.cs):

- a wall-clock time in the spring-forward gap is read with the standard offset and converted,
  which moves it forward by the DST delta (02:30 -> 03:30 in Europe/Berlin);
- an ambiguous wall-clock time (the repeated fall-back hour) is read as standard time, then:
  point-in-time schedules run once, at the first (DST) occurrence; interval schedules (any of the
  first 3 fields, 2 for five-field expressions, contains ``*``, ``-`` or ``/`` once expanded)
  keep running through the repeated hour with the offset adjusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Protocol

from funchost.settings.timespan import format_timespan, parse_timespan
from funchost.triggers.timer.ncrontab import CrontabError, CrontabSchedule

_UTC = timezone.utc
_ONE_MINUTE = timedelta(minutes=1)


class ScheduleError(ValueError):
    """The schedule string is neither a valid NCRONTAB expression nor a TimeSpan."""

    def __init__(self, expression: str, detail: str | None = None) -> None:
        self.expression = expression
        self.detail = detail
        message = (f"The schedule expression '{expression}' was not recognized as a valid cron "
                   f"expression or timespan string.")
        super().__init__(f"{message} ({detail})" if detail else message)


class TimerSchedule(Protocol):
    adjust_for_dst: bool
    zone: tzinfo

    def next_occurrence(self, now: datetime) -> datetime | None:
        """The first occurrence after `now` (aware), in the schedule's zone; None if it never fires."""

    def describe(self) -> str: ...


# --- wall clock helpers ------------------------------------------------------------------------


def _round_trips(dt: datetime, zone: tzinfo) -> bool:
    return dt.astimezone(_UTC).astimezone(zone).replace(tzinfo=None) == dt.replace(tzinfo=None)


def is_ambiguous(wall: datetime, zone: tzinfo) -> bool:
    """True when the naive wall-clock time occurs twice in `zone` (the fall-back hour)."""
    first, second = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return False
    return _round_trips(first, zone) and _round_trips(second, zone)


def _is_invalid(wall: datetime, zone: tzinfo) -> bool:
    first, second = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
    return first.utcoffset() != second.utcoffset() and not _round_trips(first, zone)


def localize(wall: datetime, zone: tzinfo) -> datetime:
    """A naive local time as .NET's `new DateTimeOffset(local).ToLocalTime()` reads it.

    Ambiguous and invalid times take the zone's standard offset; an invalid (skipped) time is then
    normalised, which moves it forward past the gap.
    """
    wall = wall.replace(tzinfo=None)
    first, second = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
    chosen = first
    if first.utcoffset() != second.utcoffset():
        if first.dst() and not second.dst():
            chosen = second
    return chosen.astimezone(_UTC).astimezone(zone)


def _shift(moment: datetime, delta: timedelta, zone: tzinfo) -> datetime:
    """Absolute-time arithmetic (aware `+` in Python is wall-clock arithmetic)."""
    return (moment.astimezone(_UTC) + delta).astimezone(zone)


# --- schedules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CronSchedule:
    expression: str
    crontab: CrontabSchedule
    zone: tzinfo = _UTC
    adjust_for_dst: bool = field(default=True, init=False)

    @property
    def is_interval(self) -> bool:
        return self.crontab.is_interval

    def describe(self) -> str:
        return f"Cron: '{self.crontab}'"

    def next_occurrence(self, now: datetime) -> datetime | None:
        now = now.astimezone(self.zone)
        wall = self.crontab.next_occurrence(now.replace(tzinfo=None))
        if wall is None:
            return None
        nxt = localize(wall, self.zone)
        adjusted = self._adjust_ambiguous(now, nxt)
        return adjusted if adjusted is not None else nxt

    def _adjust_ambiguous(self, now: datetime, nxt: datetime) -> datetime | None:
        zone = self.zone
        now_ambiguous = is_ambiguous(now.replace(tzinfo=None), zone)
        next_ambiguous = is_ambiguous(nxt.replace(tzinfo=None), zone)
        if not now_ambiguous and not next_ambiguous:
            return None
        offset_diff = nxt.utcoffset() - now.utcoffset()  # type: ignore[operator]
        if not self.is_interval and next_ambiguous:
            if offset_diff:
                # "now" is in DST and "next" was read as standard time: run at the DST occurrence.
                return _shift(nxt, offset_diff, zone)
            # Both standard: the DST occurrence of this wall time has already passed; skip it.
            wall: datetime | None = nxt.replace(tzinfo=None)
            while wall is not None and is_ambiguous(wall, zone):
                wall = self.crontab.next_occurrence(wall)
            return None if wall is None else localize(wall, zone)
        if self.is_interval and offset_diff:
            # Crossing the fall-back boundary: keep the interval in absolute time.
            return _shift(nxt, offset_diff, zone)
        return None


@dataclass(frozen=True)
class ConstantSchedule:
    """A TimeSpan schedule: next = previous + interval."""

    interval: float  # seconds
    zone: tzinfo = _UTC
    adjust_for_dst: bool = field(default=False, init=False)

    def describe(self) -> str:
        return f"Constant: {format_timespan(self.interval)}"

    def next_occurrence(self, now: datetime) -> datetime | None:
        return _shift(now, timedelta(seconds=self.interval), self.zone)


Schedule = CronSchedule | ConstantSchedule

_DAYS_HOURS_MINUTES = re.compile(r"^\s*(\d+):(\d{1,2}):(\d{1,2})\s*$")


def parse_dotnet_timespan(text: str) -> float:
    """`TimeSpan.TryParse`: like `parse_timespan`, plus .NET's reading of ``hh:mm:ss`` with hh > 23
    as ``d:hh:mm`` (``"24:00:00"`` is 24 days)."""
    try:
        return parse_timespan(text)
    except ValueError:
        match = _DAYS_HOURS_MINUTES.match(text)
        if match and int(match[1]) > 23 and int(match[2]) <= 23 and int(match[3]) <= 59:
            return int(match[1]) * 86400.0 + int(match[2]) * 3600 + int(match[3]) * 60
        raise


def parse_schedule(expression: str, zone: tzinfo = _UTC) -> Schedule:
    """NCRONTAB first (5 fields: no seconds; any other count: with seconds), then TimeSpan."""
    if not isinstance(expression, str) or not expression.strip():
        raise ScheduleError(str(expression or ""), "the schedule is empty")
    including_seconds = len([t for t in expression.split(" ") if t]) != 5
    try:
        crontab = CrontabSchedule.parse(expression, including_seconds=including_seconds)
    except CrontabError as cron_error:
        try:
            seconds = parse_dotnet_timespan(expression)
        except ValueError:
            raise ScheduleError(expression, str(cron_error)) from None
        if seconds <= 0:
            raise ScheduleError(expression, "a TimeSpan schedule must be positive") from None
        return ConstantSchedule(seconds, zone)
    if not crontab.is_satisfiable():
        raise ScheduleError(expression, "the expression never fires (no month has such a day)")
    return CronSchedule(expression, crontab, zone)


def effective_use_monitor(schedule: Schedule, requested: bool | None, now: datetime) -> bool:
    """`useMonitor`, forced off for schedules firing more than once a minute (TimerSchedule.Create).

    A cron schedule is only checked when every field after the first of its expanded form is ``*``
    (ShouldDisableScheduleMonitor): ``*/10 * 10 * * *`` keeps the monitor on.
    """
    if isinstance(schedule, CronSchedule):
        if any(part != "*" for part in str(schedule.crontab).split(" ")[1:]):
            return True if requested is None else bool(requested)
        wall = now.astimezone(schedule.zone).replace(tzinfo=None)
        upcoming = schedule.crontab.occurrences(wall, wall + _ONE_MINUTE)
        if next(upcoming, None) is not None and next(upcoming, None) is not None:
            return False
    elif schedule.interval < 60:
        return False
    return True if requested is None else bool(requested)


def next_occurrences(schedule: Schedule, count: int, now: datetime) -> list[datetime]:
    result: list[datetime] = []
    current: datetime | None = now
    for _ in range(count):
        current = schedule.next_occurrence(current)  # type: ignore[arg-type]
        if current is None:
            break
        result.append(current)
    return result
