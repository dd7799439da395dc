"""Every inline route constraint: values that pass and values that do not."""

from __future__ import annotations

import pytest

from funchost.errors import ConfigError
from funchost.triggers.http.constraints import resolve

CASES = [
    ("int", ["0", "-12", "2147483647", "+5"], ["2147483648", "1.5", "abc", "", "\u0663", "1\u0661"]),  # ASCII digits only
    ("long", ["9223372036854775807", "-1"], ["9223372036854775808", "1e3"]),
    ("bool", ["true", "FALSE", "True"], ["yes", "1", "t"]),
    ("datetime", ["2024-05-01", "2024-05-01T10:00:00", "2024-05-01T10:00:00Z"], ["yesterday", "2024-13-01"]),
    ("decimal", ["1.5", "-3", "1,000.25", ".5"], ["1e5", "abc", "NaN", "\u0661.5"]),
    ("double", ["1.5", "1e5", "-2.5E-3", "NaN", "Infinity"], ["abc", "1.2.3", "\u0661e5"]),
    ("float", ["3.25", "7"], ["x1"]),
    ("guid", ["2f1b1c6e-3c5d-4b7a-9e4f-0a1b2c3d4e5f", "2f1b1c6e3c5d4b7a9e4f0a1b2c3d4e5f",
              "{2f1b1c6e-3c5d-4b7a-9e4f-0a1b2c3d4e5f}", "(2f1b1c6e-3c5d-4b7a-9e4f-0a1b2c3d4e5f)"],
     ["2f1b1c6e-3c5d-4b7a-9e4f", "zz1b1c6e-3c5d-4b7a-9e4f-0a1b2c3d4e5f"]),
    ("alpha", ["abc", "ABCdef"], ["abc1", "a-b"]),
    ("minlength(3)", ["abc", "abcd"], ["ab"]),
    ("maxlength(3)", ["abc", "a"], ["abcd"]),
    ("length(3)", ["abc"], ["ab", "abcd"]),
    ("length(2,4)", ["ab", "abcd"], ["a", "abcde"]),
    ("min(10)", ["10", "99"], ["9", "x"]),
    ("max(10)", ["10", "-5"], ["11", "x"]),
    ("range(1,5)", ["1", "5"], ["0", "6", "x", "\u0663"]),
    (r"regex(^\d+$)", ["123"], ["12a"]),
    ("regex(ab)", ["xxABxx"], ["ba"]),  # unanchored and case-insensitive, like .NET's IsMatch
]


@pytest.mark.parametrize(("text", "good", "bad"), CASES, ids=[c[0] for c in CASES])
def test_constraint(text: str, good: list[str], bad: list[str]) -> None:
    constraint = resolve(text, "test")
    for value in good:
        assert constraint(value), f"{text} should accept {value!r}"
    for value in bad:
        assert not constraint(value), f"{text} should reject {value!r}"


def test_length_counts_utf16_code_units_like_dotnet() -> None:
    assert not resolve("maxlength(1)", "t")("\U0001F600")


@pytest.mark.parametrize("text", ["nope", "min(a)", "range(1)", "regex([)"])
def test_invalid_constraints_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        resolve(text, "route 'x'")


@pytest.mark.parametrize("text", ["int", "long", "min(1)", "max(10)", "range(1,10)", "decimal"])
def test_a_huge_number_is_out_of_range_not_an_error(text: str) -> None:
    """5,000 digits: .NET's TryParse fails (overflow); Python's int() would raise on them."""
    constraint = resolve(text, "test")
    assert not constraint("1" * 5000)
    assert not constraint("-" + "9" * 5000)


def test_leading_zeros_do_not_count_as_digits() -> None:
    assert resolve("int", "test")("0" * 5000 + "7")
    assert resolve("range(1,10)", "test")("  +0000000000000000000000009 ")
    assert not resolve("long", "test")("0" * 100 + "9223372036854775808")


def test_decimal_range_is_system_decimals() -> None:
    decimal = resolve("decimal", "test")
    assert decimal("79228162514264337593543950335") and decimal("-79228162514264337593543950335")
    assert not decimal("79228162514264337593543950336")
