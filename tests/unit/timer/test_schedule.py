from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from funchost.errors import ConfigError
from funchost.triggers.timer.schedule import (
    ConstantSchedule,
    CronSchedule,
    ScheduleError,
    effective_use_monitor,
    next_occurrences,
    parse_schedule,
)
from funchost.triggers.timer.timezones import UTC, resolve_time_zone

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def iso(expr: str, start: datetime, n: int) -> list[str]:
    zone = start.tzinfo
    return [t.isoformat() for t in next_occurrences(parse_schedule(expr, zone), n, start)]  # type: ignore[arg-type]


def test_cron_is_tried_first_then_timespan() -> None:
    assert isinstance(parse_schedule("0 */5 * * * *"), CronSchedule)
    assert isinstance(parse_schedule("*/5 * * * *"), CronSchedule)
    assert parse_schedule("01:00:00") == ConstantSchedule(3600.0)
    assert parse_schedule("1.00:00:00") == ConstantSchedule(86400.0)
    assert parse_schedule("25:00:00:00") == ConstantSchedule(25 * 86400.0)
    assert parse_schedule("24:00:00") == ConstantSchedule(24 * 86400.0)  # .NET reads d:hh:mm


def test_unrecognised_schedule_has_the_host_message() -> None:
    with pytest.raises(ScheduleError, match=r"^The schedule expression 'every hour' was not recognized as a valid "
                                            r"cron expression or timespan string\."):
        parse_schedule("every hour")


def test_timespan_next_is_previous_plus_interval() -> None:
    start = datetime(2025, 1, 1, 10, 0, 7, tzinfo=UTC)
    assert iso("00:10:00", start, 2) == ["2025-01-01T10:10:07+00:00", "2025-01-01T10:20:07+00:00"]


def test_spring_forward_point_in_time_moves_forward_berlin() -> None:
    # 2024-03-31 02:00 CET -> 03:00 CEST: 02:30 does not exist that day.
    assert iso("0 30 2 * * *", datetime(2024, 3, 30, 12, tzinfo=BERLIN), 3) == [
        "2024-03-31T03:30:00+02:00", "2024-04-01T02:30:00+02:00", "2024-04-02T02:30:00+02:00"]


def test_spring_forward_interval_new_york() -> None:
    # 2024-03-10 02:00 EST -> 03:00 EDT
    assert iso("0 */30 * * * *", datetime(2024, 3, 10, 1, 10, tzinfo=NEW_YORK), 4) == [
        "2024-03-10T01:30:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T03:30:00-04:00",
        "2024-03-10T04:00:00-04:00"]


def test_fall_back_point_in_time_runs_once_at_the_dst_occurrence_berlin() -> None:
    # 2024-10-27 03:00 CEST -> 02:00 CET: 02:30 happens twice; the schedule runs at the first one only.
    assert iso("0 30 2 * * *", datetime(2024, 10, 26, 12, tzinfo=BERLIN), 3) == [
        "2024-10-27T02:30:00+02:00", "2024-10-28T02:30:00+01:00", "2024-10-29T02:30:00+01:00"]


def test_fall_back_point_in_time_started_inside_the_repeated_hour_skips_it_new_york() -> None:
    start = datetime(2024, 11, 3, 1, 29, fold=1, tzinfo=NEW_YORK)  # 01:29 EST, after the 01:30 EDT run
    assert iso("0 30 1 * * *", start, 2) == ["2024-11-04T01:30:00-05:00", "2024-11-05T01:30:00-05:00"]


def test_fall_back_interval_keeps_running_through_the_repeated_hour() -> None:
    assert iso("0 */30 * * * *", datetime(2024, 10, 27, 1, 10, tzinfo=BERLIN), 6) == [
        "2024-10-27T01:30:00+02:00", "2024-10-27T02:00:00+02:00", "2024-10-27T02:30:00+02:00",
        "2024-10-27T02:00:00+01:00", "2024-10-27T02:30:00+01:00", "2024-10-27T03:00:00+01:00"]
    assert iso("0 0 * * * *", datetime(2024, 11, 3, 0, 10, tzinfo=NEW_YORK), 3) == [
        "2024-11-03T01:00:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T02:00:00-05:00"]


def test_leap_day_in_a_time_zone() -> None:
    assert iso("0 0 0 29 2 *", datetime(2025, 1, 1, tzinfo=BERLIN), 2) == [
        "2028-02-29T00:00:00+01:00", "2032-02-29T00:00:00+01:00"]


@pytest.mark.parametrize(("schedule", "requested", "expected"), [
    ("*/10 * * * * *", None, False),   # six a minute
    ("*/10 * * * * *", True, False),   # forced off even when asked for
    ("0 * * * * *", None, True),       # once a minute
    ("0 */5 * * * *", False, False),   # the app's choice otherwise
    ("00:00:30", None, False),
    ("00:01:00", None, True),
])
def test_use_monitor_is_switched_off_for_sub_minute_schedules(schedule: str, requested: bool | None,
                                                               expected: bool) -> None:
    now = datetime(2025, 1, 1, 10, 0, 0, 500000, tzinfo=timezone.utc)
    assert effective_use_monitor(parse_schedule(schedule), requested, now) is expected


@pytest.mark.parametrize("schedule", ["0,30 5 * * * *", "*/10 * 10 * * *"])
def test_use_monitor_stays_on_when_a_field_after_seconds_is_restricted(schedule: str) -> None:
    # Twice within the next minute from 10:04:50, but minute/hour are not '*': the host keeps it.
    now = datetime(2025, 1, 1, 10, 4, 50, tzinfo=timezone.utc)
    assert effective_use_monitor(parse_schedule(schedule), None, now) is True


def test_time_zone_from_settings() -> None:
    assert resolve_time_zone({}) is UTC
    assert resolve_time_zone({"WEBSITE_TIME_ZONE": "W. Europe Standard Time"}) == BERLIN
    assert resolve_time_zone({"TZ": ":America/New_York"}) == NEW_YORK
    assert resolve_time_zone({"WEBSITE_TIME_ZONE": "Europe/Berlin", "TZ": "UTC"}) == BERLIN
    with pytest.raises(ConfigError, match="unknown time zone 'Mars Standard Time'"):
        resolve_time_zone({"WEBSITE_TIME_ZONE": "Mars Standard Time"})
