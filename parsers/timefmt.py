"""Timestamp and date formats (properties.md §2.4), compiled once and applied per value.

A format such as ``YYYY-MM-DD HH:MI:SS.FFFFFF`` becomes one anchored regular expression plus the
group positions of its parts, so a value costs one match and a few ``int`` calls. Times are UTC;
fractions keep up to 9 digits (nanoseconds) for DATETIME columns and are truncated to
microseconds for record timestamps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date
from operator import itemgetter
from typing import Any

from props.errors import MessageError, PropertyError
from props.text import quoted

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_US_PER_DAY = 86_400_000_000
_CACHE_SIZE = 65536  # distinct dates kept per format; times of day are at most 86400
_VALUE_CACHE_SIZE = 4096  # whole timestamp texts kept per format
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# Part kinds, in the order of the tuple ``TimeFormat.fields`` returns.
_YEAR, _MONTH, _DAY, _HOUR, _MINUTE, _SECOND, _FRACTION = range(7)
_YY = 7  # a two-digit year, pivoted to 1950–2049

_DEFAULT_TIME = (r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
                 r"(?:[ :T]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?)")
DEFAULT_FORMAT_TEXT = "YYYY-MM-DD[ |:|T]HH:MI:SS[.F…]"


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


# Fixed-width tokens, longest first where one is a prefix of another (YYYY before YY, MI and MM
# before M, DD before D); F runs and MM-as-minutes are handled in ``_tokenize``.
_TOKENS = (
    ("YYYY", _YEAR, "([0-9]{4})"),
    ("YY", _YY, "([0-9]{2})"),
    ("MI", _MINUTE, "([0-9]{2})"),
    ("MM", _MONTH, "([0-9]{2})"),
    ("M", _MONTH, "([0-9]{1,2})"),
    ("DD", _DAY, "([0-9]{2})"),
    ("D", _DAY, "([0-9]{1,2})"),
    ("HH", _HOUR, "([0-9]{2})"),
    ("SS", _SECOND, "([0-9]{2})"),
)


def _tokenize(fmt: str, prop: str | None) -> list[tuple[int | None, str]]:
    """Split a format into (kind, regex) pieces; kind None is a literal."""
    pieces: list[tuple[int | None, str]] = []
    i, n = 0, len(fmt)
    while i < n:
        rest = fmt[i:]
        token = next((t for t in _TOKENS if rest.startswith(t[0])), None)
        if token is not None:
            text, kind, regex = token
            if text == "MM" and len(pieces) >= 2 and pieces[-2][0] == _HOUR \
                    and pieces[-1][0] is None:
                kind = _MINUTE  # MM right after HH and one separator means minutes (§2.4, §14 #7)
            pieces.append((kind, regex))
            i += len(text)
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
    """A compiled date/time format; ``None`` as text means the default forms of §2.4.

    Values are decoded as a date part and a time-of-day part, each cached by its digit groups
    (bounded), so a stream of timestamps costs one regex match, two dict hits and the
    fraction per value.
    """

    __slots__ = ("_date_key", "_date_only", "_dates", "_fmt", "_frac", "_index", "_match",
                 "_run_days", "_run_times", "_runs", "_time_key", "_times", "_values", "text")

    def __init__(self, fmt: str | None = None, *, date_only: bool = False,
                 prop: str | None = None) -> None:
        """``date_only``: the default form also accepts a bare date (DATETIME columns)."""
        self._fmt, self._date_only = fmt, date_only
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
        # a format of fixed widths: see ``_fixed_runs`` and ``micros``
        self._runs = _fixed_runs(pieces) if fmt is not None else None
        self._run_days: dict[str, int] = {}
        self._run_times: dict[str, int] = {}
        self._index = tuple(index)
        self._date_key = _key(index[i] for i in (_YEAR, _YY, _MONTH, _DAY))
        self._time_key = _key(index[i] for i in (_HOUR, _MINUTE, _SECOND))
        self._frac = index[_FRACTION]
        self._dates: dict[object, tuple[int, str]] = {}
        self._times: dict[object, tuple[int, str]] = {}
        self._values: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"TimeFormat({self.text!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self._fmt, self._date_only))

    def _groups(self, text: str) -> tuple[Any, ...]:  # Match.groups(): the form says which
        m = self._match(text)
        if m is None:
            m = self._match(text.strip())
            if m is None:
                raise MessageError(f"value {quoted(text)} does not match the date format {self.text}")
        return m.groups()

    def _date(self, g: tuple[Any, ...], text: str) -> tuple[int, str]:
        """(µs of 00:00 of the day since the epoch, ``YYYY-MM-DD``), validated and cached."""
        key = self._date_key(g)
        found = self._dates.get(key)
        if found is None:
            iy, imo, idd, iyy = (self._index[i] for i in (_YEAR, _MONTH, _DAY, _YY))
            if iy is not None:
                year = int(g[iy])
            else:  # a form without the year has yy
                assert iyy is not None
                yy = int(g[iyy])
                year = 2000 + yy if yy < 50 else 1900 + yy
            month = int(g[imo]) if imo is not None else 1
            day = int(g[idd]) if idd is not None else 1
            if not (year >= 1 and 1 <= month <= 12 and 1 <= day <= (
                    29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month])):
                raise MessageError(f"value {quoted(text)} is not a valid date ({self.text})")
            if len(self._dates) >= _CACHE_SIZE:
                self._dates.clear()
            found = self._dates[key] = (
                (date(year, month, day).toordinal() - _EPOCH_ORDINAL) * _US_PER_DAY,
                f"{year:04d}-{month:02d}-{day:02d}")
        return found

    def _time(self, g: tuple[str | None, ...], text: str) -> tuple[int, str]:
        """(µs since midnight, ``:HH:MI:SS``), validated and cached."""
        key = self._time_key(g)
        found = self._times.get(key)
        if found is None:
            ih, imi, isec = (self._index[i] for i in (_HOUR, _MINUTE, _SECOND))
            hour = int(g[ih] or 0) if ih is not None else 0
            minute = int(g[imi] or 0) if imi is not None else 0
            second = int(g[isec] or 0) if isec is not None else 0
            if not (hour < 24 and minute < 60 and second < 60):
                raise MessageError(f"value {quoted(text)} is not a valid time ({self.text})")
            found = self._times[key] = ((hour * 3600 + minute * 60 + second) * 1_000_000,
                                        f":{hour:02d}:{minute:02d}:{second:02d}")
        return found

    def parse(self, text: str) -> tuple[int, int]:
        """(microseconds since 1970-01-01 UTC, fraction of the second in nanoseconds)."""
        g = self._groups(text)
        us = self._date(g, text)[0] + self._time(g, text)[0]
        frac = g[self._frac] if self._frac is not None else None
        if not frac:
            return us, 0
        ns = int(frac.ljust(9, "0"))
        return us + ns // 1000, ns

    def micros(self, text: str) -> int:
        """Microseconds since the epoch (extra fraction digits truncated).

        The operations of a transaction usually share their timestamp: the last values are
        cached by text. A format of fixed widths (``_fixed_runs``) caches its date run and its
        time run apart, by their text, once a whole value holding them has been parsed: a
        value of the format's length whose two runs were seen before (and whose fraction is
        ASCII digits) is then two dict hits, whatever the combination.
        """
        runs = self._runs
        if runs is not None and len(text) == runs[2]:
            t0, f0 = runs[0], runs[1]
            day = self._run_days.get(text[:t0])
            if day is not None:
                tod = self._run_times.get(text[t0:f0])
                if tod is not None:
                    if f0 == runs[2]:
                        return day + tod
                    frac = text[f0:]
                    if frac.isdigit() and frac.isascii():
                        return day + tod + int(frac[:6].ljust(6, "0"))
            g = self._groups(text)
            day, tod = self._date(g, text)[0], self._time(g, text)[0]
            # the text matched as it is (of the format's length, a stripped one cannot): its
            # runs hold exactly the groups and literals that make ``day`` and ``tod``
            for cache, key, value in ((self._run_days, text[:t0], day),
                                      (self._run_times, text[t0:f0], tod)):
                if len(cache) >= _CACHE_SIZE:
                    cache.clear()
                cache[key] = value
            group = g[self._frac] if self._frac is not None else None
            return day + tod + int(group[:6].ljust(6, "0")) if group else day + tod
        found = self._values.get(text)
        if found is None:
            if (self._fmt is None and text[19:20] == "." and text[:1].isdigit()
                    and text[18:19].isdigit()):
                # the default form with a fraction: the seconds are cached, the fraction added
                # (a text of its own per operation would only churn the cache)
                frac = text[20:]
                if 0 < len(frac) <= 9 and frac.isdigit() and frac.isascii():
                    try:
                        return self.micros(text[:19]) + int(frac[:6].ljust(6, "0"))
                    except MessageError:
                        pass  # the error names the whole text: the general path reports it
            g = self._groups(text)
            found = self._date(g, text)[0] + self._time(g, text)[0]
            fraction = g[self._frac] if self._frac is not None else None
            if fraction:
                found += int(fraction[:6].ljust(6, "0"))
            if len(self._values) >= _VALUE_CACHE_SIZE:
                self._values.clear()
            self._values[text] = found
        return found

    def column_text(self, text: str, length: int) -> str:
        """The trail form ``YYYY-MM-DD:HH:MI:SS[.f…]`` of a value, cut to ``length``."""
        g = self._groups(text)
        day_text = self._date(g, text)[1]
        time_text = self._time(g, text)[1]
        if length <= 10:
            return day_text[:length]
        if length <= 20:
            return (day_text + time_text)[:min(length, 19)]
        frac = (g[self._frac] or "") if self._frac is not None else ""
        return (day_text + time_text + "." + frac.ljust(9, "0"))[:length]


_FIXED_WIDTH = re.compile(r"\(\[0-9\]\{([0-9]+)\}\)")


def _fixed_runs(pieces: list[tuple[int | None, str]]) -> tuple[int, int, int] | None:
    """(t0, f0, length) when every piece of a format has a fixed width and the format reads
    as a date run ``[0, t0)`` (date parts and literals), a time run ``[t0, f0)`` (time parts
    and literals) and then at most a fraction ``[f0, length)``, last; else None.

    The date part of a value then depends on the text of its date run alone, and the time of
    day on that of its time run (``micros`` caches them by those texts).
    """
    at, t0, f0 = 0, None, None
    for kind, regex in pieces:
        if f0 is not None:
            return None  # anything after the fraction
        if kind is None:
            width = 1  # a literal: one escaped character
        else:
            m = _FIXED_WIDTH.fullmatch(regex)
            if m is None:
                return None  # M or D: one or two digits
            width = int(m.group(1))
            if kind == _FRACTION:
                f0 = at
            elif kind in (_HOUR, _MINUTE, _SECOND):
                if t0 is None:
                    t0 = at
            elif t0 is not None:
                return None  # a date part after a time part
        at += width
    if f0 is None:
        f0 = at
    return (f0 if t0 is None else t0), f0, at


def _key(indexes: Iterable[int | None]) -> Callable[[tuple[str | None, ...]], object]:
    """A C-speed cache key over the groups at ``indexes`` (those that exist)."""
    present = [i for i in indexes if i is not None]
    if not present:
        return lambda groups: ()
    return itemgetter(*present)


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
