"""GoldenGate times: Julian microseconds, UTC (trail-format.md §8). The one place that converts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# JD 2440587.5 × 86 400 000 000: 1970-01-01T00:00:00Z (JD 2440588 would shift every time by 12 h).
JULIAN_UNIX_EPOCH_US = 210_866_760_000_000_000

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_julian(unix_us: int) -> int:
    """µs since the Unix epoch → Julian µs."""
    return JULIAN_UNIX_EPOCH_US + unix_us


def from_julian(julian_us: int) -> int:
    """Julian µs → µs since the Unix epoch."""
    return julian_us - JULIAN_UNIX_EPOCH_US


def unix_us_to_iso(unix_us: int) -> str:
    """ISO-8601 UTC with 6 fraction digits and ``Z``, as msgcap dump prints times."""
    try:
        dt = _EPOCH + timedelta(microseconds=unix_us)
    except OverflowError:
        return f"<out of range: {unix_us} µs>"
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if dt.year >= 1000 else (
        f"{dt.year:04d}" + dt.strftime("-%m-%dT%H:%M:%S.%fZ"))


def julian_to_iso(julian_us: int) -> str:
    return unix_us_to_iso(from_julian(julian_us))


def datetime_to_unix_us(dt: datetime) -> int:
    """An aware datetime → µs since the Unix epoch (exact, no float)."""
    delta = dt - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
