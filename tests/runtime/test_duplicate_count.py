"""The log of duplicates skipped by ``msgcap run`` (issue 35): a broker restart that redelivered
2,601 messages gave 2,601 WARNING lines; now the first of a series is named at INFO and a count
is said once a minute (and when the run ends). The clock is injected so the minute passes at
once."""

from __future__ import annotations

import logging

import pytest

from msgcap.capture import Duplicates


def test_a_count_a_minute_with_the_first_named(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "msgcap.capture")
    now = [100.0]
    duplicates = Duplicates(lambda: now[0])
    for n in range(2601):
        duplicates.add(f"m{n}")
        duplicates.say()
    now[0] += 60.0
    duplicates.add("m2601")  # the minute is over: said with this one
    duplicates.say()
    now[0] += 30.0
    duplicates.add("m2602")
    duplicates.say(final=True)
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert said == [
        ("INFO", ("message m0: duplicate (already in the trail), skipped; duplicates are counted, "
                 "one line a minute")),
        ("WARNING", ("skipped 2,602 duplicates (messages already in the trail) in the last 60 s, "
                    "the last: m2601")),
        ("WARNING", ("skipped 1 duplicate (messages already in the trail) in the last 30 s, the "
                    "last: m2602")),
    ]


def test_a_series_ends_after_a_quiet_minute(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "msgcap.capture")
    now = [0.0]
    duplicates = Duplicates(lambda: now[0])
    duplicates.add("a")
    now[0] = 61.0
    duplicates.say()  # the count of the first minute
    now[0] = 122.0
    duplicates.say()  # a minute without one: the series is over
    duplicates.add("b")  # named again
    duplicates.say(final=True)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "message a", ("skipped 1 duplicate (messages already in the trail) in the last 61 s, the "
        "last"), "message b", ("skipped 1 duplicate (messages already in the trail) in the last "
        "0.0 s, the last")]
