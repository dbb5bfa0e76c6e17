"""Value expressions (properties.md §2.1) and the {value|\\xhh} syntax (§2.3)."""

from __future__ import annotations

import pickle

import pytest

from props.errors import PropertyError
from props.expr import (
    CONST,
    FIELD,
    JMSID,
    JMSPROP,
    SEQID,
    TS,
    TXID,
    XPATH,
    Const,
    Field,
    JmsId,
    JmsProp,
    SysSeqid,
    SysTs,
    SysTxid,
    XPath,
    forms_text,
    parse_delim_value,
    parse_expr,
)

ALL_FIXED = frozenset({FIELD, JMSPROP, JMSID, TS, SEQID, TXID, CONST})
ALL_XML = frozenset({XPATH, JMSPROP, JMSID, TS, SEQID, TXID, CONST})


def p(value: str, allowed: frozenset[str] = ALL_FIXED):
    return parse_expr(value, allowed, prop="x.y", file="f", line=7)


@pytest.mark.parametrize("value, expected", [
    ("Hdr-Timestamp", Field("Hdr-Timestamp")),
    ("optype", Field("optype")),
    ("1ST-FIELD", Field("1ST-FIELD")), ("tbl.name", Field("tbl.name")),
    ("$JMSTxId", JmsProp("JMSTxId")),
    ("$TX_IND", JmsProp("TX_IND")),
    ("$jmsid", JmsId()), ("$JMSID", JmsId()), ("$JmsId", JmsId()),
    ("*ts", SysTs()), ("*seqid", SysSeqid()), ("*txid", SysTxid()), ("*TS", SysTs()),
    ('"OGG"', Const("OGG")), ('" a  b "', Const(" a  b ")), ('""', Const("")),
    ('"x"y"', Const('x"y')),
])
def test_forms(value, expected):
    assert p(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("@ts", XPath("@ts")), ("./CreateTime/text()", XPath("./CreateTime/text()")),
    ("keycol", XPath("keycol")), ("*", XPath("*")), ("/a[@b='c']", XPath("/a[@b='c']")),
    ('"I"', Const("I")), ("$JMSTxId", JmsProp("JMSTxId")), ("*txid", SysTxid()),
])
def test_xml_forms(value, expected):
    assert p(value, ALL_XML) == expected


def test_surrounding_blanks_ignored():
    assert p("  $A  ") == JmsProp("A")


def test_field_key_is_normalised():
    assert Field("Hdr-Source-DB-Rec-Id").key == "HDR_SOURCE_DB_REC_ID"


@pytest.mark.parametrize("value, allowed, fragment", [
    ("*ts", frozenset({FIELD, JMSPROP, TXID}), "expected a header field name, $property or *txid"),
    ("*seqid", frozenset({FIELD, JMSPROP, TS}), "'*seqid' is not an accepted form"),
    ('"x"', frozenset({FIELD, JMSPROP}), "expected a header field name or $property"),
    ("$jmsid", frozenset({FIELD, JMSPROP, TXID}), "'$jmsid' is not an accepted form"),
    ("$A", frozenset({FIELD, CONST}), "'$A' is not an accepted form"),
    ("a b", frozenset({FIELD, JMSPROP}), "'a b' is not an accepted form"),
    ("@x", frozenset({FIELD, JMSPROP}), "'@x' is not an accepted form"),
    ("*foo", ALL_FIXED, "'*foo' is not an accepted form"),
    ("", ALL_FIXED, "empty value"),
    ('"abc', ALL_FIXED, "unterminated constant"),
    ("$a b", ALL_FIXED, "not a valid JMS property name"),
    ("field", frozenset({CONST}), "expected \"value\""),
])
def test_rejected(value, allowed, fragment):
    with pytest.raises(PropertyError) as err:
        p(value, allowed)
    assert str(err.value).startswith("f:7: x.y: ")
    assert fragment in str(err.value)


def test_forms_text():
    assert forms_text(frozenset({TS})) == "*ts"
    assert forms_text(frozenset({XPATH, JMSPROP, TS})) == "an XPath expression, $property or *ts"


def test_expressions_hash_compare_and_pickle():
    exprs = [Field("a"), JmsProp("b"), JmsId(), SysTs(), SysSeqid(), SysTxid(), Const("c"),
             XPath("@d")]
    assert len(set(exprs)) == len(exprs)
    assert pickle.loads(pickle.dumps(exprs)) == exprs
    assert Field("a") != JmsProp("a") and Const("a") != XPath("a")
    assert [e.kind for e in exprs] == [FIELD, JMSPROP, JMSID, TS, SEQID, TXID, CONST, XPATH]
    with pytest.raises(AttributeError):
        Field("a").name = "b"  # type: ignore[misc]


def test_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError):
        parse_expr("a", frozenset({"bogus"}), prop="p")


class TestDelimValue:
    def d(self, value: str) -> str:
        return parse_delim_value(value, prop="delim.fielddelim", file="f", line=2)

    @pytest.mark.parametrize("value, expected", [
        (",", ","), ("||", "||"), ("$#$", "$#$"), ("\\x0a", "\n"), ("\\x0d\\x0a", "\r\n"),
        ("\\xc7", "\u00c7"), ("\\xC7", "\u00c7"), ("a\\x2Cb", "a,b"), ("\\x20", " "),
        ("  \\x20  ", " "), ("\\'", "\\'"), ("\\", "\\"), ("\\x5c", "\\"), ("x\\", "x\\"),
        ("\\X41", "\\X41"),
    ])
    def test_values(self, value, expected):
        assert self.d(value) == expected

    @pytest.mark.parametrize("value, fragment", [
        ("", "empty value"), ("   ", "empty value"), ("\\x", "\\x needs two hex digits"),
        ("\\x4", "\\x needs two hex digits"), ("\\xg0", "\\x needs two hex digits"),
    ])
    def test_errors(self, value, fragment):
        with pytest.raises(PropertyError) as err:
            self.d(value)
        assert str(err.value).startswith("f:2: delim.fielddelim: ")
        assert fragment in str(err.value)
