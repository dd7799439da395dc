"""The Durable SDK's history timestamps: the host's reader answers exactly what dateutil answers
(value, zone object type, truncation of a seventh fraction digit) for every timestamp the host
writes, and hands every other text to dateutil."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta

from dateutil.parser import parse as dateutil_parse
from hypothesis import given, settings
from hypothesis import strategies as st

from funchost.durable.history import format_time
from funchost.durable.sdk_timestamps import fast_parser, install

parse = fast_parser(dateutil_parse)


def same(a: datetime, b: datetime) -> bool:
    return a == b and type(a.tzinfo) is type(b.tzinfo) and a.utcoffset() == b.utcoffset() and a.microsecond == b.microsecond


@settings(max_examples=500, deadline=None)
@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)))
def test_every_timestamp_the_host_writes_reads_as_dateutil_reads_it(when: datetime) -> None:
    text = format_time(when)
    assert same(parse(text), dateutil_parse(text))


def test_seven_fraction_digits_are_truncated_as_dateutil_truncates_them() -> None:
    for text in ["2026-12-04T06:49:13.9999999Z", "2026-12-04T06:49:13.1234567Z", "2026-12-04T06:49:13.5Z",
                 "2026-12-04T06:49:13Z", "2026-12-04T06:49:13.0000001Z"]:
        assert same(parse(text), dateutil_parse(text)), text


def test_other_texts_are_dateutils_to_read() -> None:
    for text in ["2026-12-04T06:49:13+02:00", "2026-12-04 06:49:13", "Dec 4 2026", "2026-12-04T06:49:13.123z",
                 "2026-12-04T06:49:13.12345678Z"]:
        assert same(parse(text), dateutil_parse(text)), text
    assert parse("2026-12-04T06:49:13Z", fuzzy=True) == dateutil_parse("2026-12-04T06:49:13Z", fuzzy=True)


def test_install_rebinds_the_sdks_parser_once_and_events_keep_their_times() -> None:
    module = importlib.import_module("azure.durable_functions.models.history.HistoryEvent")
    before = module.dt_parse  # a host started earlier in this process may have installed it
    original = getattr(before, "general", before)
    module.dt_parse = original
    try:
        install()
        install()
        assert module.dt_parse is not original and module.dt_parse.general is original  # type: ignore[attr-defined]
        stamp = format_time(datetime(2026, 12, 4, 6, 49, 13, 250000, tzinfo=UTC) + timedelta(microseconds=7))
        event = module.HistoryEvent(EventType=0, EventId=-1, IsPlayed=False, Timestamp=stamp)
        assert same(event.timestamp, original(stamp))
    finally:
        module.dt_parse = before
