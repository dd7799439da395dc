from datetime import datetime

import pytest

from funchost.triggers.timer.ncrontab import CrontabError, CrontabSchedule


def cron(expr: str) -> CrontabSchedule:
    return CrontabSchedule.parse(expr, including_seconds=len(expr.split()) != 5)


def upcoming(expr: str, start: datetime, n: int) -> list[datetime]:
    schedule, result, current = cron(expr), [], start
    for _ in range(n):
        current = schedule.next_occurrence(current)
        result.append(current)
    return result


def test_seconds_field_and_next_is_strictly_after_base() -> None:
    assert upcoming("*/15 * * * * *", datetime(2025, 1, 1, 0, 0, 15), 3) == [
        datetime(2025, 1, 1, 0, 0, 30), datetime(2025, 1, 1, 0, 0, 45), datetime(2025, 1, 1, 0, 1, 0)]


def test_five_fields_mean_no_seconds() -> None:
    assert upcoming("5 4 * * *", datetime(2025, 3, 31, 10), 2) == [
        datetime(2025, 4, 1, 4, 5), datetime(2025, 4, 2, 4, 5)]


def test_ranges_steps_and_lists() -> None:
    # minutes 10-30/10 and 45; hours 9 and 17
    assert upcoming("0 10-30/10,45 9,17 * * *", datetime(2025, 1, 1, 9, 20), 5) == [
        datetime(2025, 1, 1, 9, 30), datetime(2025, 1, 1, 9, 45), datetime(2025, 1, 1, 17, 10),
        datetime(2025, 1, 1, 17, 20), datetime(2025, 1, 1, 17, 30)]


def test_value_with_step_runs_to_the_maximum_and_reversed_ranges_are_swapped() -> None:
    assert cron("0 50/5 * * * *").minutes.sorted() == [50, 55]
    assert cron("0 0 17-9 * * *").hours.sorted() == list(range(9, 18))


def test_month_and_day_names_are_case_insensitive_prefixes() -> None:
    schedule = cron("0 30 9 * jan-MAR Mon-fri")
    assert schedule.months.sorted() == [1, 2, 3]
    assert schedule.days_of_week.sorted() == [1, 2, 3, 4, 5]
    assert cron("0 0 0 * * TUES,thu").days_of_week.sorted() == [2, 4]
    # 2025-03-31 is a Monday but after the last 09:30 in March; next is Thursday 2026-01-01
    assert schedule.next_occurrence(datetime(2025, 3, 31, 10)) == datetime(2026, 1, 1, 9, 30)


def test_day_of_month_and_day_of_week_are_anded_as_ncrontab_does() -> None:
    # Vixie cron would fire on every 13th and every Friday; NCrontab only on Friday the 13th.
    assert upcoming("0 0 0 13 * FRI", datetime(2025, 1, 1), 2) == [datetime(2025, 6, 13), datetime(2026, 2, 13)]


def test_leap_day_schedule_waits_for_the_next_leap_year() -> None:
    assert upcoming("0 0 0 29 2 *", datetime(2024, 2, 29, 0, 0, 0), 2) == [datetime(2028, 2, 29), datetime(2032, 2, 29)]


def test_day_31_skips_short_months() -> None:
    assert upcoming("0 0 0 31 * *", datetime(2025, 1, 31), 3) == [
        datetime(2025, 3, 31), datetime(2025, 5, 31), datetime(2025, 7, 31)]


def test_never_firing_expression_has_no_next_occurrence() -> None:
    assert cron("0 0 0 30 2 *").next_occurrence(datetime(2025, 1, 1)) is None


def test_expanded_form_and_interval_classification() -> None:
    assert str(cron("0 */20 * * * *")) == "0 0,20,40 * * * *"
    assert cron("0 */20 * * * *").is_interval
    assert not cron("0 30 9 * * *").is_interval
    assert cron("0 0,1 9 * * *").is_interval  # expands to 0-1, a range, as in the host
    assert not cron("30 9 * * *").is_interval  # five fields: only minute and hour are checked
    assert cron("30 9-17 * * 1").is_interval


@pytest.mark.parametrize(("expr", "message"), [
    ("0 0 0 32 * *", "32 is higher than the maximum allowable value for the [Day] field"),
    ("0 0 0 * * 7", "7 is higher than the maximum allowable value for the [DayOfWeek] field"),
    ("0 0 0 * FOO *", "'FOO' is not a known value name"),
    ("1 2 3", "It must contain 6 components"),
    ("0 0,,1 * * * *", "A crontab field value cannot be empty."),
    ("0 x * * * *", "'x' is not a valid [Minute] crontab field value"),
])
def test_invalid_expressions_are_rejected_with_ncrontab_messages(expr: str, message: str) -> None:
    with pytest.raises(CrontabError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cron(expr)
