"""NCRONTAB expressions, as the NCrontab library parses and evaluates them.

Six fields ``{second} {minute} {hour} {day} {month} {day-of-week}`` or five (no seconds). Each
field accepts ``*``, numbers, ranges ``a-b`` (reversed ranges are swapped), steps ``*/n``,
``a-b/n`` and ``a/n`` (a to the maximum), comma lists of all of these, and for months and days
of the week case-insensitive prefixes of the English names (``JAN``, ``Mon``, ``tues``).

Day-of-month and day-of-week are ANDed, as NCrontab does (unlike Vixie cron, which ORs them when
both are restricted): ``0 0 0 13 * FRI`` fires only on a Friday the 13th.

Evaluation works on naive wall-clock datetimes; time zones and DST are the caller's concern
(`schedule.CronSchedule`).
"""

from __future__ import annotations

import bisect
import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from funchost.errors import FunchostError


class CrontabError(FunchostError, ValueError):
    """The expression is not a valid NCRONTAB expression (NCrontab's CrontabException text)."""


@dataclass(frozen=True)
class _Kind:
    name: str
    minimum: int
    maximum: int
    names: tuple[str, ...] = ()


SECOND = _Kind("Second", 0, 59)
MINUTE = _Kind("Minute", 0, 59)
HOUR = _Kind("Hour", 0, 23)
DAY = _Kind("Day", 1, 31)
MONTH = _Kind("Month", 1, 12, ("January", "February", "March", "April", "May", "June", "July",
                                "August", "September", "October", "November", "December"))
DAY_OF_WEEK = _Kind("DayOfWeek", 0, 6, ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday",
                                        "Friday", "Saturday"))
_KINDS = (SECOND, MINUTE, HOUR, DAY, MONTH, DAY_OF_WEEK)


@dataclass(frozen=True)
class Field:
    kind: _Kind
    values: frozenset[int]

    def __contains__(self, value: int) -> bool:
        return value in self.values

    def sorted(self) -> list[int]:
        return sorted(self.values)

    def format(self) -> str:
        """NCrontab's expanded form: '*' for the full range, runs as 'a-b', else comma lists."""
        ordered = self.sorted()
        if ordered == list(range(self.kind.minimum, self.kind.maximum + 1)):
            return "*"
        parts: list[str] = []
        start = prev = ordered[0]
        for value in ordered[1:] + [None]:
            if value is not None and value == prev + 1:
                prev = value
                continue
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            if value is not None:
                start = prev = value
        return ",".join(parts)


def parse_field(kind: _Kind, text: str) -> Field:
    values: set[int] = set()
    try:
        _parse_into(kind, text, values)
    except CrontabError as exc:
        raise CrontabError(f"'{text}' is not a valid [{kind.name}] crontab field expression. {exc}") from None
    return Field(kind, frozenset(values))


def _parse_into(kind: _Kind, text: str, values: set[int]) -> None:
    if text == "":
        raise CrontabError("A crontab field value cannot be empty.")
    if text.find(",") > 0:
        for item in text.split(","):
            _parse_into(kind, item, values)
        return
    step: int | None = None
    slash = text.find("/")
    if slash > 0:
        step_text = text[slash + 1:]
        if not step_text.strip().isdigit():
            raise CrontabError(f"'{step_text}' is not a valid step.")
        step = int(step_text)
        text = text[:slash]
    if text == "*":
        _accumulate(kind, kind.minimum, kind.maximum, step or 1, values)
        return
    dash = text.find("-")
    if dash > 0:
        first, last = _value(kind, text[:dash]), _value(kind, text[dash + 1:])
        if first > last:
            first, last = last, first
        _accumulate(kind, first, last, step or 1, values)
        return
    value = _value(kind, text)
    _accumulate(kind, value, value if step is None else kind.maximum, step or 1, values)


def _value(kind: _Kind, text: str) -> int:
    if text == "":
        raise CrontabError("A crontab field value cannot be empty.")
    if text[0].isdigit():
        if not text.isdigit():
            raise CrontabError(f"'{text}' is not a number.")
        return int(text)
    if not kind.names:
        raise CrontabError(
            f"'{text}' is not a valid [{kind.name}] crontab field value. It must be a numeric value "
            f"between {kind.minimum} and {kind.maximum} (all inclusive).")
    lowered = text.lower()
    for index, name in enumerate(kind.names):
        if name.lower().startswith(lowered):
            return index + kind.minimum
    raise CrontabError(f"'{text}' is not a known value name. Use one of the following: {', '.join(kind.names)}.")


def _accumulate(kind: _Kind, first: int, last: int, step: int, values: set[int]) -> None:
    for bound in (first, last):
        if bound < kind.minimum:
            raise CrontabError(f"{bound} is lower than the minimum allowable value for the [{kind.name}] field. "
                               f"Value must be between {kind.minimum} and {kind.maximum} (all inclusive).")
        if bound > kind.maximum:
            raise CrontabError(f"{bound} is higher than the maximum allowable value for the [{kind.name}] field. "
                               f"Value must be between {kind.minimum} and {kind.maximum} (all inclusive).")
    values.update(range(first, last + 1, max(1, step)))


@dataclass(frozen=True)
class CrontabSchedule:
    seconds: Field | None  # None for five-field expressions (second 0)
    minutes: Field
    hours: Field
    days: Field
    months: Field
    days_of_week: Field

    @classmethod
    def parse(cls, expression: str, *, including_seconds: bool) -> CrontabSchedule:
        tokens = [t for t in expression.split(" ") if t]
        expected = 6 if including_seconds else 5
        if len(tokens) != expected:
            components = (
                "6 components of a schedule in the sequence of seconds, minutes, hours, days, months, and days of week"
                if including_seconds else
                "5 components of a schedule in the sequence of minutes, hours, days, months, and days of week")
            raise CrontabError(f"'{expression}' is an invalid crontab expression. It must contain {components}.")
        kinds = _KINDS if including_seconds else _KINDS[1:]
        fields = [parse_field(kind, token) for kind, token in zip(kinds, tokens, strict=True)]
        if not including_seconds:
            fields.insert(0, None)  # type: ignore[arg-type]
        return cls(*fields)

    def __str__(self) -> str:
        parts = [self.minutes, self.hours, self.days, self.months, self.days_of_week]
        if self.seconds is not None:
            parts.insert(0, self.seconds)
        return " ".join(p.format() for p in parts)

    @property
    def is_interval(self) -> bool:
        """The host's classification for DST: any of the time fields (as expanded) has *, - or /."""
        parts = str(self).split(" ")
        check = 3 if len(parts) == 6 else 2
        return any(ch in part for part in parts[:check] for ch in "*-/")

    def _seconds(self) -> list[int]:
        return self.seconds.sorted() if self.seconds is not None else [0]

    def is_satisfiable(self) -> bool:
        """False for expressions that can never fire (e.g. ``0 0 0 30 2 *``)."""
        for month in self.months.values:
            longest = 29 if month == 2 else calendar.monthrange(2001, month)[1]
            if any(d <= longest for d in self.days.values):
                return True
        return False

    def next_occurrence(self, base: datetime) -> datetime | None:
        """The first occurrence strictly after `base` (naive wall clock, whole seconds), or None."""
        if not self.is_satisfiable():
            return None
        start = base.replace(microsecond=0) + timedelta(seconds=1)
        times = self._times()
        day: date | None = start.date()
        floor = start.time()
        while day is not None:
            if self._day_matches(day):
                index = bisect.bisect_left(times, floor)
                if index < len(times):
                    return datetime.combine(day, times[index])
            day = self._next_candidate_day(day)
            floor = time(0)
        return None

    def occurrences(self, base: datetime, end: datetime) -> Iterator[datetime]:
        """Occurrences after `base` and before `end` (exclusive), like GetNextOccurrences."""
        current = self.next_occurrence(base)
        while current is not None and current < end:
            yield current
            current = self.next_occurrence(current)

    def _times(self) -> list[time]:
        cached = self.__dict__.get("_cached_times")
        if cached is None:
            cached = [time(h, m, s) for h in self.hours.sorted() for m in self.minutes.sorted()
                      for s in self._seconds()]
            object.__setattr__(self, "_cached_times", cached)
        return cached

    def _day_matches(self, day: date) -> bool:
        # .NET DayOfWeek: Sunday = 0; Python weekday(): Monday = 0.
        return (day.month in self.months and day.day in self.days
                and (day.weekday() + 1) % 7 in self.days_of_week)

    def _next_candidate_day(self, day: date) -> date | None:
        if day.month in self.months:
            return day + timedelta(days=1) if day < date.max else None
        # Skip to the first day of the next month in the set.
        year, month = day.year, day.month
        while True:
            month += 1
            if month > 12:
                month, year = 1, year + 1
            if year > 9999:
                return None
            if month in self.months:
                return date(year, month, 1)
