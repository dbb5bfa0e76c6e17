"""Untrusted input: whatever a message holds, the parser returns ops or raises MessageError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from props.errors import MessageError

from .conftest import build, msg
from .test_rules import DYNAMIC

VALID = ('<transaction ts="2010-02-05:10:11:21"><operation table="HR.EMP" optype="U">'
         '<column name="ID" index="0"><beforevalue>1</beforevalue><aftervalue>1</aftervalue>'
         '</column><column name="SALARY"><aftervalue>12.5</aftervalue></column>'
         '<column name="NAME"><aftervalue isnull="true"/></column></operation></transaction>')

PARSER = build(DYNAMIC)


def outcome(body: str | bytes) -> None:
    try:
        ops = PARSER.parse(msg(body))
    except MessageError as exc:
        assert str(exc).startswith("message 00000000000000000001: ")
    else:
        assert isinstance(ops, list)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300)))
def test_arbitrary_bodies(body):
    outcome(body)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(VALID)), st.integers(0, 20),
       st.text(alphabet='<>/"=&;! abcINUD0123456789.-:', max_size=8))
def test_mutated_documents(start, length, insert):
    outcome(VALID[:start] + insert + VALID[start + length:])


def test_valid_document_parses():
    [op] = PARSER.parse(msg(VALID))
    assert op.after[:3] == [1, None, 1250] and op.before[0] == 1
