"""The delimited parser's fast paths give exactly what the general paths give.

``compile_row`` (one generated function per table record) against the column converters,
``Dialect.one_line`` against ``Dialect.split``, and the table plan found by the table field's
text against the name rules of §3.5.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gendef.model import (
    INT16,
    Column,
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    varchar_column,
)
from parsers.convert import build_converter, compile_row
from parsers.delim import DelimParser, Dialect
from parsers.model import Message
from props.errors import MessageError
from props.loader import settings_from_text

COLUMNS = [
    number_column("N0", 12), number_column("N2", 11, 2), number_column("N3", 5, 3),
    number_column("BIG", 19), varchar_column("V", 5), char_column("C", 3),
    datetime_column("D", 19), datetime_column("D10", 10),
    Column("S", INT16, 6), number_column("NT", 20, 2),
]

NUMBERISH = st.text(alphabet="0123456789.-+ _x١", max_size=22)
TEXTS = st.one_of(
    st.none(), NUMBERISH, st.text(max_size=7),
    st.sampled_from(["12.34", "0.10", "123456789012.34", "9223372036854775807",
                     "9223372036854775808", "99999999999999999.99", "2024-03-01 10:15:30",
                     "2024-03-01", "2024-02-30 10:00:00", "32767", "32768", "abc", "abcd",
                     "12.5", ".5", "1.5.", "999999999.9", "9999999999999999999.9", "-12.5"]))


def _outcome(f, *args):
    try:
        return ("ok", f(*args))
    except MessageError as exc:
        return ("error", exc.reason)


def _converters():
    return [build_converter(c) for c in COLUMNS]


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, min_size=len(COLUMNS), max_size=len(COLUMNS)))
def test_compiled_row_equals_the_column_converters(texts):
    converters = _converters()
    row = compile_row(converters, 2, table="T")
    want = []
    for c, t in zip(converters, texts, strict=True):
        got = _outcome(c, t) if t is not None else ("ok", None)
        if got[0] == "error":
            want = got
            break
        want.append(got[1])
    else:
        want = ("ok", want)
    assert _outcome(row, ["h1", "h2", *texts]) == want


def test_compiled_row_repeats_cached_datetimes_and_rejects_bad_ones():
    converters = _converters()
    row = compile_row(converters, 0, table="T")
    texts = ["1", "1.5", "0.001", "1", "v", "c", "2024-03-01 10:15:30", "2024-03-01", "7", "007"]
    first = row(texts)
    assert row(texts) == first == [1, 150, 1, "1", "v", "c  ", "2024-03-01:10:15:30",
                                  "2024-03-01", 7, "7"]
    with pytest.raises(MessageError):
        row([*texts[:6], "not a date", *texts[7:]])


def test_compiled_row_without_columns():
    assert compile_row([], 3, table="T")(["a", "b", "c"]) == []


BODY_CHARS = st.text(alphabet=',"\\|$NUL\r\n ab', max_size=30)
DIALECTS = [
    Dialect(),
    Dialect(nullindicator="NULL"),
    Dialect(nullindicator="NULL", nullindicator_escaped="$NULL$"),
    Dialect(fielddelim="|", fielddelim_escaped="\\|", quote="'", quote_escaped="\\'"),
    Dialect(fielddelim=",", linedelim="\n", fielddelim_escaped="$,"),
    Dialect(fielddelim=",\n", linedelim="\n"),
    Dialect(linedelim="\n", linedelim_escaped="$\n", nullindicator="NULL"),
    Dialect(linedelim="|\n"),
]


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(range(len(DIALECTS))), BODY_CHARS, st.sampled_from(["", "\n", "\r\n"]))
def test_one_line_equals_the_one_record_split_gives(which, text, end):
    dialect, body = DIALECTS[which], text + end
    values = dialect.one_line(body)
    if values is None:
        return
    assert dialect.linedelim not in body.removesuffix(dialect.linedelim)
    assert dialect.split(body) == [values]


def test_one_line_reader_recovers_after_an_unfinished_or_bad_line():
    d = Dialect()
    assert d.one_line('"a,b') is None  # open quote: csv wants another line
    assert d.one_line('x,"y"') == ["x", "y"]
    assert d.one_line('"a"b,c') is None  # text after the closing quote
    assert d.one_line('"p",q') == ["p", "q"]
    with pytest.raises(MessageError):
        d.split('"a"b,c')


def test_one_line_declines_what_needs_split():
    d = Dialect(nullindicator="NULL")
    assert d.one_line("a,NULL,c") == ["a", None, "c"]
    for body in ("", "\n", "a\nb", "a,b\n\n", "a,b\r\n", '"a\r",b', '"NULL",b', 'a""b,c'):
        assert d.one_line(body) is None
    assert d.one_line("a,b\n") == ["a", "b"]  # a final line delimiter ends the one record
    assert d.one_line('a,"b,c"\n') == ["a", "b,c"]
    assert Dialect(linedelim="\n", linedelim_escaped="$\n").one_line("a$\n") is None
    assert d.one_line('"a,b",c') == ["a,b", "c"]
    assert Dialect(fielddelim_escaped="$,").one_line("a$,b") is None  # shares the delimiter
    assert Dialect(nullindicator="N", nullindicator_escaped="~N~").one_line("~N~,N") == [
        "N", None]


PROPS = """\
parser.type=delim
delim.sourcedefs=dirdef/x.def
delim.header=optype,schema,table
"""


def _parser(props: str = PROPS) -> DelimParser:
    defs = Definitions(tuple(
        Table.build(name, [number_column("ID", 5, key=True), varchar_column("NAME", 10)])
        for name in ("A.T", "B.T", "A.U")))
    return DelimParser.build(settings_from_text(props), defs)


def test_table_found_by_field_text_follows_the_name_rules():
    p = _parser()
    ops = p.parse(Message("m", body="I,A,T,1,x\nI,B,T,2,y\nI,B,a.t,3,z\nI,A, A.U ,4,w\nI,B,T,5,v"))
    assert [o.table.name for o in ops] == ["A.T", "B.T", "A.T", "A.U", "B.T"]
    with pytest.raises(MessageError, match="unknown table"):
        p.parse(Message("m2", body="I,A,X.T,1,x"))
    assert p.parse(Message("m3", body="I,A,a.t,1,x"))[0].table.name == "A.T"


def test_one_line_and_general_paths_give_the_same_ops():
    props = PROPS + "delim.nullindicator=NULL\n"
    p = _parser(props)
    lines = ["I,A,T,1,x", "U,B,T,2,NULL", "D,A,U,3,", "I,A,T,4,q\r"]
    whole = p.parse(Message("m", body="\n".join(lines) + "\n"))
    single = [p.parse(Message("m", body=line))[0] for line in lines]
    for a, b in zip(whole, single[:3], strict=False):
        assert (a.table, a.optype, a.seqid, a.before, a.after) == (
            b.table, b.optype, b.seqid, b.before, b.after)
    assert single[3].after == [4, "q\r"]  # no line delimiter follows: the \r is data
    with pytest.raises(MessageError) as info:
        p.parse(Message("m", body="I,A,T,x1,a"))
    assert info.value.position == "record 1, field 4 (ID)"


STAMPS = st.one_of(
    st.builds(lambda d, t, f: f"{d} {t}{f}",
              st.sampled_from(["2024-03-01", "2024-02-30", "1999-12-31", "٢024-03-01"]),
              st.sampled_from(["10:15:30", "23:59:59", "24:00:00", "10:15:3"]),
              st.sampled_from(["", ".", ".5", ".123456", ".123456789", ".1234567890", ".12a",
                               ". 5", ".١", "5"])),
    st.text(alphabet="0123456789-: .T", max_size=30))


@settings(max_examples=300, deadline=None)
@given(st.lists(STAMPS, max_size=6))
def test_timestamp_micros_equal_the_full_parse(texts):
    from parsers.timefmt import compile_format

    fmt = compile_format(None)
    for text in texts:
        assert _outcome(fmt.micros, text) == _outcome(
            lambda t: compile_format(None).parse(t)[0], text)
