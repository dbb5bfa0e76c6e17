"""Column text → trail-typed values (properties.md §2.5)."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gendef.model import (
    INT16,
    UINT32,
    Column,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
    varchar_column,
)
from parsers.convert import build_converter, canonical_number
from parsers.timefmt import compile_format
from props.errors import DefinitionError, MessageError


def test_char_is_padded_and_checked():
    conv = build_converter(char_column("STATE", 4))
    assert conv("WA") == "WA  "
    assert conv("") == "    "
    assert conv("ABCD") == "ABCD"
    assert conv("AB    ") == "AB  "  # trailing blanks beyond n are padding
    with pytest.raises(MessageError, match=r"longer than CHAR\(4\)"):
        conv("ABCDE")


def test_varchar_is_kept_and_checked_in_characters():
    conv = build_converter(varchar_column("NAME", 5))
    assert conv(" a b ") == " a b "
    assert conv("ÄÖÜßé") == "ÄÖÜßé"
    with pytest.raises(MessageError, match=r"longer than VARCHAR\(5\)"):
        conv("abcdef")


@pytest.mark.parametrize("scale,text,expected", [
    (0, "1001", 1001), (0, " 42 ", 42), (0, "+7", 7), (0, "-7", -7), (0, "007", 7),
    (2, "1250.00", 125000), (2, "1250", 125000), (2, "1250.5", 125050), (2, "-0.01", -1),
    (2, "0.10", 10), (2, "12.3400000", 1234), (0, "9223372036854775807", 2**63 - 1),
    (0, "-9223372036854775808", -(2**63)), (4, "922337203685477.5807", 2**63 - 1),
])
def test_number_is_scaled_exactly(scale, text, expected):
    assert build_converter(number_column("N", 18, scale))(text) == expected


@pytest.mark.parametrize("scale,text,reason", [
    (2, "1.234", "more than 2 fraction digits"), (0, "1.5", "more than 0 fraction digits"),
    (0, "9223372036854775808", "out of range"), (4, "922337203685477.5808", "out of range"),
    (0, "12a", "not a number"), (0, "", "not a number"), (0, "1e5", "not a number"),
    (0, ".5", "not a number"), (0, "5.", "not a number"), (0, "--1", "not a number"),
    (0, "1_000", "not a number"), (0, "١٢", "not a number"), (0, "1,5", "not a number"),
])
def test_number_errors_are_never_rounded(scale, text, reason):
    with pytest.raises(MessageError, match=reason):
        build_converter(number_column("N", 18, scale))(text)


def test_integer_types_have_their_ranges():
    conv = build_converter(Column("I", INT16, 6))
    assert conv("-32768") == -32768
    with pytest.raises(MessageError, match="out of range"):
        conv("32768")
    with pytest.raises(MessageError, match="out of range"):
        build_converter(Column("U", UINT32, 10))("-1")


@pytest.mark.parametrize("text,expected", [
    ("+0012.5000", "12.5"), ("-0.0", "0"), ("000", "0"), ("-001.10", "-1.1"), (" 3 ", "3"),
    ("0.05", "0.05"), ("12345678901234567890123", "12345678901234567890123"),
])
def test_number_text_is_canonical(text, expected):
    assert canonical_number(text) == expected
    assert build_converter(number_text_column("N", 30))(text) == expected


def test_number_text_length_and_syntax():
    conv = build_converter(number_text_column("N", 4))
    assert conv("-123") == "-123"
    with pytest.raises(MessageError, match="longer than 4"):
        conv("12345")
    with pytest.raises(MessageError, match="not a number"):
        conv("1.2.3")


def test_datetime_default_and_format():
    conv = build_converter(datetime_column("D", 19))
    assert conv("2024-03-01 10:15:30") == "2024-03-01:10:15:30"
    assert conv("2024-03-01") == "2024-03-01:00:00:00"
    assert build_converter(datetime_column("D", 10), "YYMMDD")("240301") == "2024-03-01"
    ts = build_converter(datetime_column("D", 26), compile_format("YYYY-MM-DD HH:MI:SS.FFFFFF"))
    assert ts("2024-03-01 10:15:30.000001") == "2024-03-01:10:15:30.000001"
    with pytest.raises(MessageError, match="does not match the date format YYMMDD"):
        build_converter(datetime_column("D", 10), "YYMMDD")("2024-03-01")


def test_unsupported_type_fails_at_build_time():
    with pytest.raises(DefinitionError, match="table T.X column F: type 70 not supported"):
        build_converter(Column("F", 70, 8), table="T.X")


@given(st.decimals(min_value=Decimal("-92233720368547.7580"),
                   max_value=Decimal("92233720368547.7580"), places=4, allow_nan=False))
def test_number_matches_decimal(value):
    text = format(value, "f")
    assert build_converter(number_column("N", 18, 4))(text) == int(value.scaleb(4))
    assert Decimal(canonical_number(text)) == value
