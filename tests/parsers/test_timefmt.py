"""Timestamp and date formats (properties.md §2.4, §14 #6, #7)."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.timefmt import compile_format, format_datetime
from props.errors import MessageError, PropertyError


def us(*parts: int) -> int:
    dt = datetime(*parts, tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


@pytest.mark.parametrize("text", [
    "2024-03-01 10:15:30", "2024-03-01:10:15:30", "2024-03-01T10:15:30", "  2024-03-01 10:15:30 ",
])
def test_default_forms_accept_the_three_separators(text):
    assert compile_format(None).parse(text) == (us(2024, 3, 1, 10, 15, 30), 0)


def test_default_fraction_of_one_to_nine_digits():
    fmt = compile_format(None)
    assert fmt.parse("2024-03-01 10:15:30.5") == (us(2024, 3, 1, 10, 15, 30, 500000), 500_000_000)
    assert fmt.parse("2024-03-01:10:15:30.123456789") == (
        us(2024, 3, 1, 10, 15, 30, 123456), 123_456_789)
    with pytest.raises(MessageError):
        fmt.parse("2024-03-01 10:15:30.1234567891")
    with pytest.raises(MessageError):
        fmt.parse("2024-03-01 10:15:30.")


def test_default_timestamp_needs_a_time_but_datetime_columns_accept_a_date():
    with pytest.raises(MessageError, match="does not match"):
        compile_format(None).parse("2024-03-01")
    assert compile_format(None, date_only=True).column_text("2024-03-01", 19) == (
        "2024-03-01:00:00:00")


def test_day_and_month_are_never_swapped():
    """§14 #6: YYYY-DD-MM is a misprint."""
    with pytest.raises(MessageError):
        compile_format(None).parse("2024-31-01 10:00:00")


@pytest.mark.parametrize("fmt,text,expected", [
    ("YYYY-MM-DD-HH.MI.SS.FFFFFF", "2024-03-01-10.15.30.123456", us(2024, 3, 1, 10, 15, 30, 123456)),
    ("YYYY-MM-DD:HH:MI:SS.FFF", "2024-03-01:10:15:30.123", us(2024, 3, 1, 10, 15, 30, 123000)),
    ("YYYY-MM-DD HH:MM:SS.FFF", "2024-03-01 10:15:30.123", us(2024, 3, 1, 10, 15, 30, 123000)),
    ("HH.MM.SS DD/MM/YYYY", "10.15.30 01/03/2024", us(2024, 3, 1, 10, 15, 30)),
    ("YYYYMMDDHHMISS", "20240301101530", us(2024, 3, 1, 10, 15, 30)),
    ("YYYYMMDDHHMISSF3", "20240301101530007", us(2024, 3, 1, 10, 15, 30, 7000)),
    ("YYMMDD", "240301", us(2024, 3, 1)),
    ("YYMMDD", "490301", us(2049, 3, 1)),
    ("YYMMDD", "500301", us(1950, 3, 1)),
    ("YYMM", "9912", us(1999, 12, 1)),
    ("D.M.YYYY", "1.3.2024", us(2024, 3, 1)),
    ("D.M.YYYY", "01.12.2024", us(2024, 12, 1)),
])
def test_format_tokens(fmt, text, expected):
    assert compile_format(fmt).micros(text) == expected


def test_mm_after_hh_is_minutes_only_with_one_separator():
    """§14 #7: HH:MM means minutes; MM elsewhere is the month."""
    assert compile_format("YYYY-MM-DD HH:MM").micros("2024-03-01 10:15") == us(
        2024, 3, 1, 10, 15)
    # HHMM without a separator: MM is the month (and there is no minute).
    assert compile_format("YYYYDDHHMM").micros("20240110" "03") == us(2024, 3, 1, 10)


def test_literals_must_match_exactly():
    fmt = compile_format("YYYY/MM/DD")
    with pytest.raises(MessageError, match="does not match the date format YYYY/MM/DD"):
        fmt.parse("2024-03-01")
    with pytest.raises(MessageError):
        fmt.parse("2024/3/01")  # MM is exactly two digits


@pytest.mark.parametrize("text", ["2023-02-29 00:00:00", "2024-13-01 00:00:00",
                                  "2024-04-31 00:00:00", "2024-01-01 24:00:00",
                                  "2024-01-01 00:60:00", "0000-01-01 00:00:00",
                                  "２０２４-01-01 00:00:00"])
def test_invalid_dates_are_message_errors(text):
    with pytest.raises(MessageError):
        compile_format(None).parse(text)


def test_leap_day():
    assert compile_format(None).micros("2000-02-29 00:00:00") == us(2000, 2, 29)


@pytest.mark.parametrize("fmt,reason", [
    ("MM-DD", "no year"), ("YYYY-MM-DD YYYY", "twice"), ("YY-YYYY", "twice"),
    ("YYYY FFFFFFFFFF", "more than 9"), ("  ", "empty"),
])
def test_bad_formats_are_property_errors(fmt, reason):
    with pytest.raises(PropertyError, match=reason) as info:
        compile_format(fmt, prop="delim.timestamp.format")
    assert "delim.timestamp.format" in str(info.value)


@pytest.mark.parametrize("length,expected", [
    (10, "2024-03-01"), (19, "2024-03-01:10:15:30"), (21, "2024-03-01:10:15:30.1"),
    (26, "2024-03-01:10:15:30.123456"), (29, "2024-03-01:10:15:30.123456789"),
])
def test_column_text_is_cut_to_the_column_length(length, expected):
    fmt = compile_format(None)
    assert fmt.column_text("2024-03-01 10:15:30.123456789", length) == expected
    us_, ns = fmt.parse("2024-03-01 10:15:30.123456789")
    assert format_datetime(us_, ns, length) == expected


def test_column_text_pads_missing_fraction_digits():
    assert compile_format(None).column_text("2024-03-01 10:15:30.5", 29) == (
        "2024-03-01:10:15:30.500000000")
    assert compile_format("YYMMDD").column_text("240301", 26) == "2024-03-01:00:00:00.000000"


def test_before_the_epoch():
    fmt = compile_format(None)
    value = fmt.micros("1969-12-31 23:59:59.5")
    assert value == -500_000
    assert format_datetime(value, length=21) == "1969-12-31:23:59:59.5"


def test_formats_pickle():
    import pickle

    fmt = pickle.loads(pickle.dumps(compile_format("YYMMDD")))
    assert fmt.micros("240301") == us(2024, 3, 1)
    default = pickle.loads(pickle.dumps(compile_format(None, date_only=True)))
    assert default.column_text("2024-03-01", 10) == "2024-03-01"


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
       st.integers(0, 999))
def test_parse_and_format_round_trip(dt, extra_ns):
    text = (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d} {dt.hour:02d}:{dt.minute:02d}:"
            f"{dt.second:02d}.{dt.microsecond:06d}{extra_ns:03d}")
    value, ns = compile_format(None).parse(text)
    assert value == (dt - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    assert ns == dt.microsecond * 1000 + extra_ns
    assert format_datetime(value, ns, 29) == text.replace(" ", ":")


_FIXED_FORMATS = ("YYYYMMDDHHMISS", "YYYY-MM-DD-HH.MI.SS.FFFFFF", "YYMMDD", "YYYY-MM-DD HH:MI",
                  "DD/MM/YYYY HH:MI:SS.FFF", "YYYYMMDDHHMISSFFFFFFFFF", "YYYYMMDD.FF", "HHMISSYYYYMMDD",
                  "YYYY-M-D HH:MI:SS", "YYYYMMDDTHHMISSZ", "MMDDYY")


def _digit_text(draw, length):
    chars = st.sampled_from("0123456789012345678901234567890123456789 -.:/TZ٣x")
    return "".join(draw(st.lists(chars, min_size=length, max_size=length)))


def _value_of(fmt_text, dt, draw):
    text = (fmt_text.replace("YYYY", f"{dt.year:04d}").replace("YY", f"{dt.year % 100:02d}")
            .replace("MI", f"{dt.minute:02d}").replace("MM", f"{dt.month:02d}")
            .replace("DD", f"{dt.day:02d}").replace("HH", f"{dt.hour:02d}")
            .replace("SS", f"{dt.second:02d}").replace("M", str(dt.month))
            .replace("D", str(dt.day)))
    return "".join(str(draw(st.integers(0, 9))) if c == "F" else c for c in text)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fixed_width_formats_cache_their_runs_like_the_general_path(data):
    """``micros`` of a fixed-width format (date and time runs cached apart by their text) gives
    what a fresh format's general path gives, or the same error, value after value: values,
    then values mixing the runs of earlier ones, or one of them with a character changed."""
    draw = data.draw
    fmt_text = draw(st.sampled_from(_FIXED_FORMATS))
    fmt = compile_format(fmt_text)
    dates = st.datetimes(min_value=datetime(1950, 1, 1),
                         max_value=datetime(2049, 12, 31, 23, 59, 59))
    seen = [_value_of(fmt_text, draw(dates), draw) for _ in range(draw(st.integers(1, 3)))]
    texts = list(seen)
    for _ in range(draw(st.integers(1, 12))):
        a, b = draw(st.sampled_from(seen)), draw(st.sampled_from(seen))
        how = draw(st.sampled_from(("mix", "change", "any")))
        if how == "mix":
            cut = draw(st.integers(0, len(a)))
            texts.append(a[:cut] + b[cut:])
        elif how == "change":
            at = draw(st.integers(0, len(a) - 1))
            char = draw(st.sampled_from("0123456789") | st.text(min_size=1, max_size=1))
            texts.append(a[:at] + char + a[at + 1:])
        else:
            texts.append(_digit_text(draw, draw(st.integers(0, 24))))
    for text in texts:
        try:
            expected = compile_format(fmt_text).micros(text)
        except MessageError as error:
            with pytest.raises(MessageError) as raised:
                fmt.micros(text)
            assert raised.value.reason == error.reason
            continue
        assert fmt.micros(text) == expected
        assert fmt.micros(text) == expected  # from the caches
