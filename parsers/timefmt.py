"""Timestamp and date formats (properties.md §2.4), compiled once and applied per value.

A format such as ``YYYY-MM-DD HH:MI:SS.FFFFFF`` becomes one anchored regular expression plus the
group positions of its parts, so a value costs one match and a few ``int`` calls. Times are UTC;
fractions keep up to 9 digits (nanoseconds) for DATETIME columns and are truncated to
microseconds for record timestamps.
"""

from __future__ import annotations

import re
from datetime import date

from props.errors import MessageError, PropertyError

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_US_PER_DAY = 86_400_000_000
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# Part kinds, in the order of the tuple ``TimeFormat.fields`` returns.
_YEAR, _MONTH, _DAY, _HOUR, _MINUTE, _SECOND, _FRACTION = range(7)
_YY = 7  # a two-digit year, pivoted to 1950–2049

_DEFAULT_TIME = (r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
                 r"(?:[ :T]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?)")
DEFAULT_FORMAT_TEXT = "YYYY-MM-DD[ |:|T]HH:MI:SS[.F…]"


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _tokenize(fmt: str, prop: str | None) -> list[tuple[int | None, str]]:
    """Split a format into (kind, regex) pieces; kind None is a literal."""
    pieces: list[tuple[int | None, str]] = []
    i, n = 0, len(fmt)
    while i < n:
        rest = fmt[i:]
        if rest.startswith("YYYY"):
            pieces.append((_YEAR, "([0-9]{4})"))
            i += 4
        elif rest.startswith("YY"):
            pieces.append((_YY, "([0-9]{2})"))
            i += 2
        elif rest.startswith("MM"):
            # MM right after HH and one separator means minutes (§2.4, §14 #7).
            after_hh = len(pieces) >= 2 and pieces[-2][0] == _HOUR and pieces[-1][0] is None
            pieces.append((_MINUTE if after_hh else _MONTH, "([0-9]{2})"))
            i += 2
        elif rest.startswith("MI"):
            pieces.append((_MINUTE, "([0-9]{2})"))
            i += 2
        elif rest.startswith("M"):
            pieces.append((_MONTH, "([0-9]{1,2})"))
            i += 1
        elif rest.startswith("DD"):
            pieces.append((_DAY, "([0-9]{2})"))
            i += 2
        elif rest.startswith("D"):
            pieces.append((_DAY, "([0-9]{1,2})"))
            i += 1
        elif rest.startswith("HH"):
            pieces.append((_HOUR, "([0-9]{2})"))
            i += 2
        elif rest.startswith("SS"):
            pieces.append((_SECOND, "([0-9]{2})"))
            i += 2
        elif rest.startswith("F"):
            if len(rest) > 1 and rest[1] in "123456789":
                digits, i = int(rest[1]), i + 2
            else:
                run = len(rest) - len(rest.lstrip("F"))
                digits, i = run, i + run
            if digits > 9:
                raise PropertyError(f"date format {fmt!r}: more than 9 fraction digits", prop=prop)
            pieces.append((_FRACTION, f"([0-9]{{{digits}}})"))
        else:
            pieces.append((None, re.escape(fmt[i])))
            i += 1
    return pieces


class TimeFormat:
    """A compiled date/time format; ``None`` as text means the default forms of §2.4."""

    __slots__ = ("_date_only", "_index", "_match", "text")

    def __init__(self, fmt: str | None = None, *, date_only: bool = False,
                 prop: str | None = None) -> None:
        """``date_only``: the default form also accepts a bare date (DATETIME columns)."""
        self._date_only = date_only
        if fmt is None:
            self.text = DEFAULT_FORMAT_TEXT
            pattern = _DEFAULT_TIME + ("?" if date_only else "")
            index: list[int | None] = [0, 1, 2, 3, 4, 5, 6, None]
        else:
            if not fmt.strip():
                raise PropertyError("empty date format", prop=prop)
            self.text = fmt
            pieces = _tokenize(fmt, prop)
            index = [None] * 8
            group = 0
            for kind, _ in pieces:
                if kind is None:
                    continue
                if index[kind] is not None or (kind in (_YEAR, _YY) and (
                        index[_YEAR] is not None or index[_YY] is not None)):
                    raise PropertyError(f"date format {fmt!r}: a part appears twice", prop=prop)
                index[kind] = group
                group += 1
            if index[_YEAR] is None and index[_YY] is None:
                raise PropertyError(f"date format {fmt!r}: no year (YYYY or YY)", prop=prop)
            pattern = "".join(regex for _, regex in pieces)
        self._match = re.compile(pattern, re.ASCII).fullmatch
        self._index = tuple(index)

    def __repr__(self) -> str:
        return f"TimeFormat({self.text!r})"

    def __reduce__(self):
        text = None if self.text == DEFAULT_FORMAT_TEXT else self.text
        return (_rebuild, (text, self._date_only))

    def fields(self, text: str) -> tuple[int, int, int, int, int, int, str]:
        """(year, month, day, hour, minute, second, fraction digits) of a value, validated."""
        m = self._match(text.strip())
        if m is None:
            raise MessageError(f"value {text!r} does not match the date format {self.text}")
        g = m.groups()
        iy, imo, idd, ih, imi, isec, ifr, iyy = self._index
        if iy is not None:
            year = int(g[iy])
        else:
            yy = int(g[iyy])
            year = 2000 + yy if yy < 50 else 1900 + yy
        month = int(g[imo]) if imo is not None else 1
        day = int(g[idd]) if idd is not None else 1
        hour = int(g[ih] or 0) if ih is not None else 0
        minute = int(g[imi] or 0) if imi is not None else 0
        second = int(g[isec] or 0) if isec is not None else 0
        frac = (g[ifr] or "") if ifr is not None else ""
        if not (year >= 1 and 1 <= month <= 12 and hour < 24 and minute < 60 and second < 60
                and 1 <= day <= (29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month])):
            raise MessageError(f"value {text!r} is not a valid date/time ({self.text})")
        return year, month, day, hour, minute, second, frac

    def parse(self, text: str) -> tuple[int, int]:
        """(microseconds since 1970-01-01 UTC, fraction of the second in nanoseconds)."""
        year, month, day, hour, minute, second, frac = self.fields(text)
        ns = int(frac.ljust(9, "0")) if frac else 0
        us = ((date(year, month, day).toordinal() - _EPOCH_ORDINAL) * _US_PER_DAY
              + (hour * 3600 + minute * 60 + second) * 1_000_000 + ns // 1000)
        return us, ns

    def micros(self, text: str) -> int:
        """Microseconds since the epoch (extra fraction digits truncated)."""
        return self.parse(text)[0]

    def column_text(self, text: str, length: int) -> str:
        """The trail form ``YYYY-MM-DD:HH:MI:SS[.f…]`` of a value, cut to ``length``."""
        year, month, day, hour, minute, second, frac = self.fields(text)
        if length <= 10:
            return f"{year:04d}-{month:02d}-{day:02d}"[:length]
        out = f"{year:04d}-{month:02d}-{day:02d}:{hour:02d}:{minute:02d}:{second:02d}"
        if length <= 20:
            return out[:min(length, 19)]
        return (out + "." + frac.ljust(9, "0"))[:length]


def _rebuild(text: str | None, date_only: bool) -> TimeFormat:
    return TimeFormat(text, date_only=date_only)


def compile_format(fmt: str | None, *, date_only: bool = False,
                   prop: str | None = None) -> TimeFormat:
    """Compile a format once (errors name ``prop``); ``None`` selects the default forms."""
    return TimeFormat(fmt, date_only=date_only, prop=prop)


def format_datetime(us: int, ns: int | None = None, length: int = 26) -> str:
    """``YYYY-MM-DD:HH:MI:SS.fffffffff`` of a time, cut to ``length``.

    ``ns`` is the fraction of the second in nanoseconds when more precise than ``us``.
    """
    days, rest = divmod(us, _US_PER_DAY)
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    seconds, micro = divmod(rest, 1_000_000)
    hour, rem = divmod(seconds, 3600)
    minute, second = divmod(rem, 60)
    frac = ns if ns is not None else micro * 1000
    text = (f"{d.year:04d}-{d.month:02d}-{d.day:02d}:{hour:02d}:{minute:02d}:{second:02d}"
            f".{frac:09d}")
    return text[:length] if length != 20 else text[:19]
