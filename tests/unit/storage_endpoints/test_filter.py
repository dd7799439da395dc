"""The OData $filter language of Table storage (storage/table_filter.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from funchost.errors import InvalidInput
from funchost.storage.table_filter import parse_filter
from funchost.storage.tables import Entity

ENTITY = Entity("p1", "r1", datetime(2024, 1, 1, tzinfo=UTC), "", {
    "name": ("Edm.String", "O'Brien"), "age": ("Edm.Int32", 40), "big": ("Edm.Int64", 2**40),
    "score": ("Edm.Double", 1.5), "ok": ("Edm.Boolean", True), "id": ("Edm.Guid", "0f8fad5b-d9cb-469f-a165-70867728950e"),
    "raw": ("Edm.Binary", b"\x0a\xff"), "when": ("Edm.DateTime", datetime(2024, 5, 1, tzinfo=UTC)),
})


@pytest.mark.parametrize(("text", "expected"), [
    ("PartitionKey eq 'p1'", True),
    ("name eq 'O''Brien'", True),
    ("age gt 39 and age lt 41", True),
    ("age GE 41 OR score le 1.5", True),
    ("not (age eq 40)", False),
    ("big eq 1099511627776L", True),
    ("big gt 5", True),  # numbers of different Edm types compare numerically
    ("ok", True),
    ("ok eq false", False),
    ("id eq guid'0F8FAD5B-D9CB-469F-A165-70867728950E'", True),
    ("raw eq X'0aff'", True),
    ("raw eq binary'0aff'", True),
    ("when ge datetime'2024-05-01T00:00:00Z' and Timestamp lt datetime'2024-02-01T00:00:00.0000000Z'", True),
    ("missing eq 1", False),
    ("missing ne 1", False),  # a missing property never matches
    ("name eq 5", False),  # different kinds never match
    ("(age eq 1 or age eq 40) and (RowKey eq 'r1')", True),
    ("score eq -1.5e0", False),
])
def test_filters(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(ENTITY) is expected


@pytest.mark.parametrize("text", ["", "age eq", "age eq 1 and", "(age eq 1", "age eq 1)", "age == 1",
                                  "name eq 'unterminated", "when eq datetime'yesterday'", "id eq guid'nope'",
                                  "age eq 1 age eq 2"])
def test_malformed_filters_are_invalid_input(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_filter(text)


def test_key_bounds_from_top_level_terms() -> None:
    parsed = parse_filter("PartitionKey eq 'a' and RowKey ge '5' and RowKey lt '9'")
    assert parsed.bounds("PartitionKey") == ("a", "a", True)
    assert parsed.bounds("RowKey") == ("5", "9", False)
    assert parse_filter("PartitionKey eq 'a' or PartitionKey eq 'b'").bounds("PartitionKey") == (None, None, False)
