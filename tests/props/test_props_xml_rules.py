"""XML parser settings and the rule tree (properties.md §6, §14 #4, #10, #13, #18)."""

from __future__ import annotations

import logging
import pickle

import pytest

from props.errors import PropertyError
from props.expr import Const, JmsId, JmsProp, SysSeqid, SysTs, SysTxid, XPath
from props.loader import settings_from_text
from props.settings import OptypeValues, Settings, TxindValues

FILE = "x.properties"
HEAD = "parser.type=xml\nxml.sourcedefs=dirdef/x.def\n"


def load(text: str) -> Settings:
    return settings_from_text(HEAD + text, FILE, {})


def fail(text: str) -> str:
    with pytest.raises(PropertyError) as err:
        load(text)
    return str(err.value)


SPAN = """xml.rules=oprule
oprule.type=op
oprule.match=/ops/op
oprule.schemaandtable=@table
oprule.optype=@type
oprule.txind=@txind
oprule.txind.beginval=start
oprule.optype.insertval=A
oprule.seqid=$jmsid
oprule.txid=*txid
oprule.timestamp=*ts
oprule.timestamp.format=YYYY-MM-DD:HH:MI:SS
oprule.txname="fixedtx"
oprule.txowner=$MessageOwner
oprule.subrules=c
c.type=col
c.match=./col
c.name=@name
c.index=3
c.value=text()
c.isnull=@null
c.ismissing=./missing
c.before.value=./b/text()
c.before.isnull=./b/@null
c.before.ismissing=not(./b)
c.after.value="const"
c.after.isnull=./a/@null
c.after.ismissing=false()
"""


def test_span_rule_items():
    s = load(SPAN)
    (op,) = s.xml.rules
    assert (op.name, op.type, op.match) == ("oprule", "op", XPath("/ops/op"))
    assert (op.schemaandtable, op.optype, op.txind) == (XPath("@table"), XPath("@type"),
                                                       XPath("@txind"))
    assert op.txind_values == TxindValues(begin=("start",))
    assert op.optype_values == OptypeValues("A", "U", "D", None)
    assert (op.seqid, op.txid, op.timestamp) == (JmsId(), SysTxid(), SysTs())
    assert op.timestamp_format == "YYYY-MM-DD:HH:MI:SS"
    assert (op.txname, op.txowner) == (Const("fixedtx"), JmsProp("MessageOwner"))
    (col,) = op.subrules
    assert (col.column_name, col.index, col.value) == (XPath("@name"), Const("3"),
                                                       XPath("text()"))
    assert (col.isnull, col.ismissing) == (XPath("@null"), XPath("./missing"))
    assert (col.before_value, col.before_isnull, col.before_ismissing) == (
        XPath("./b/text()"), XPath("./b/@null"), XPath("not(./b)"))
    assert (col.after_value, col.after_isnull, col.after_ismissing) == (
        Const("const"), XPath("./a/@null"), XPath("false()"))


def test_rule_where_and_settings_where():
    s = load(SPAN)
    op = s.xml.rules[0]
    assert op.where() == f"{FILE}:4" and op.where("match") == f"{FILE}:5"
    assert op.where("optype") == f"{FILE}:7" and op.where("table") == f"{FILE}:4"
    assert op.prop("optype") == "oprule.optype"
    assert s.where("c.after.value") == f"{FILE}:{2 + 26}"


def test_rules_pickle():
    s = load(SPAN)
    assert pickle.loads(pickle.dumps(s.xml)) == s.xml


def test_xml_section_items():
    s = load(SPAN + "xml.namespace.po=urn:example:po\nxml.maxbytes=1048576\nxml.maxdepth=64\n"
             "xml.dateformat=DD/MM/YYYY\nxml.dateformat.MY.TABLE.D=YYYY\n")
    x = s.xml
    assert x.namespaces == {"po": "urn:example:po"}
    assert (x.maxbytes, x.maxdepth, x.sourcedefs) == (1048576, 64, "dirdef/x.def")
    assert x.dateformats.lookup("my.table", "d") == "YYYY"
    assert x.dateformats.lookup("my.table", "e") == "DD/MM/YYYY"


def test_xml_defaults():
    x = load(SPAN).xml
    assert (x.maxbytes, x.maxdepth, x.namespaces, x.userdefs) == (10485760, 256, {}, ())


def test_shared_subrule_and_order():
    s = load("""xml.rules=b, a
a.type=tx
a.subrules=o
b.type=tx
b.match=/b
b.subrules=o
o.type=op
o.optype="I"
o.table="T"
o.schema="S"
o.seqid=*seqid
""")
    assert [r.name for r in s.xml.rules] == ["b", "a"]
    assert s.xml.rules[0].subrules[0] is s.xml.rules[1].subrules[0]
    assert s.xml.rules[1].match is None
    op = s.xml.rules[0].subrules[0]
    assert (op.table, op.schema, op.seqid) == (Const("T"), Const("S"), SysSeqid())


def test_op_grouping_rule_needs_no_optype():
    s = load("""xml.rules=outer
outer.type=op
outer.match=/doc
outer.subrules=inner
inner.type=op
inner.match=./row
inner.optype=@op
inner.table=@t
""")
    assert s.xml.rules[0].subrules[0].name == "inner"


def test_schemandtable_alias(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load("xml.rules=o\no.type=op\no.optype=\"I\"\no.schemandtable=\"A.B\"\n"
                 "o.optype.insert=N\n")
    op = s.xml.rules[0]
    assert op.schemaandtable == Const("A.B") and op.optype_values.insert == "N"
    assert f"{FILE}:6: o.schemandtable is an alias of o.schemaandtable" in caplog.text
    assert "o.optype.insert is an alias of o.optype.insertval" in caplog.text


def test_absolute_match_in_subrule_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"A.B\"\no.subrules=k\n"
                 "k.type=col\nk.match=/KeyCol\nk.name=\"keycol\"\n")
    assert s.xml.rules[0].subrules[0].match == XPath("/KeyCol")
    assert f"{FILE}:9: k.match: absolute XPath '/KeyCol'" in caplog.text
    assert "did you mean './KeyCol'?" in caplog.text


def test_absolute_match_top_level_no_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        load(SPAN)
    assert not caplog.records


@pytest.mark.parametrize("text, expected", [
    ("xml.rules=t\nt.type=tx\nt.subrules=c\nc.type=col\nc.name=\"x\"\n",
     "5: t.subrules: tx rule t may have only op subrules, not col rule c"),
    ("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.subrules=t\nt.type=tx\n",
     "7: o.subrules: op rule o may have only op or col subrules, not tx rule t"),
    (("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.subrules=c\nc.type=col\n"
     "c.name=\"x\"\nc.subrules=d\nd.type=col\nd.name=\"y\"\n"),
     "10: c.subrules: col rule c may have no subrules, not col rule d"),
    ("xml.rules=c\nc.type=col\nc.name=\"x\"\n",
     "3: xml.rules: rule c is a col rule; top-level rules must be tx or op"),
    ("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.subrules=o\n",
     "7: o.subrules: rule cycle o → o"),
    ("xml.rules=a\na.type=op\na.subrules=b\nb.type=op\nb.subrules=a\n",
     "7: b.subrules: rule cycle a → b → a"),
    (("xml.rules=t\nt.type=tx\nt.subrules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\n"
     "o.txind=@txind\n"),
     "9: o.txind: txind is allowed only on top-level op rules"),
    (("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.subrules=c\nc.type=col\n"
     "c.match=./x\n"),
     "8: c.type: col rule c needs c.name or c.index"),
    ("xml.rules=o\no.type=op\no.table=\"T\"\n",
     "4: o.type: op rule o needs o.optype"),
    ("xml.rules=o\no.type=op\no.optype=\"I\"\no.schema=\"S\"\n",
     "4: o.type: op rule o needs o.schemaandtable or o.table"),
    ("xml.rules=o\no.type=opp\n", "4: o.type: 'opp' is not tx, op or col"),
    ("xml.rules=o\n", "3: xml.rules: rule o has no o.type (tx, op or col)"),
    ("xml.rules=t\nt.type=tx\nt.subrules=x\n",
     "5: t.subrules: rule x has no x.type (tx, op or col)"),
    ("xml.rules=a,,b\n", "3: xml.rules: empty rule name in the list"),
    ("xml.rules=a,a\na.type=tx\n", "3: xml.rules: rule a is listed twice"),
    ("xml.rules=a.b\n", "3: xml.rules: 'a.b' is not a valid rule name"),
    ("xml.rules=jms\n", "3: xml.rules: 'jms' is a reserved word, not usable as a rule name"),
    ("xml.rules=t\nt.type=tx\nt.optype=\"I\"\n", "5: t.optype: not a property of a tx rule"),
    ("xml.rules=t\nt.type=tx\nt.tymestamp=@ts\n",
     "5: t.tymestamp: unknown attribute of tx rule t; did you mean t.timestamp?"),
    ("xml.rules=t\nt.type=tx\nzz.type=tx\n",
     "5: zz.type: unknown property (XML rule zz is not reachable from xml.rules)"),
    ("xml.rules=t\nt.type=tx\nt.seqid=*txid\n",
     ("5: t.seqid: '*txid' is not an accepted form; expected an XPath expression, $property, "
     "$jmsid or *seqid")),
    ("xml.rules=t\nt.type=tx\nt.timestamp=*seqid\n",
     ("5: t.timestamp: '*seqid' is not an accepted form; expected an XPath expression, "
     "$property or *ts")),
    ("xml.rules=t\nt.type=tx\nt.match=$X\n",
     "5: t.match: '$X' is not an accepted form; expected an XPath expression"),
    (("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.subrules=c\nc.type=col\n"
     "c.index=-1\n"), "9: c.index: column index -1 is negative"),
    (("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.subrules=c\nc.type=col\n"
     "c.name=\"x\"\nc.isnull=\"true\"\nc.value=*ts\n"),
     "11: c.value: '*ts' is not an accepted form; expected an XPath expression or \"value\""),
    ("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.optype.updateval=I\n",
     "7: o.optype.updateval: value 'I' is both the insert and the update value"),
    (("xml.rules=o\no.type=op\no.optype=\"I\"\no.table=\"T\"\no.txind=@t\n"
     "o.txind.endval=W\n"), "8: o.txind.endval: value 'W' is in both the end and the whole set"),
    ("xml.rules=t\nt.type=tx\nxml.namespace.1a=urn:x\n",
     "5: xml.namespace.1a: '1a' is not a valid namespace prefix"),
    ("xml.rules=t\nt.type=tx\nxml.maxdepth=0\n", "5: xml.maxdepth: 0 is out of range (≥ 1)"),
    ("xml.rules=t\nt.type=tx\nt.timestamp.format=F10\n",
     "5: t.timestamp.format: bad fraction 'F10'"),
])
def test_rule_errors(text, expected):
    message = fail(text)
    assert message.startswith(f"{FILE}:{expected}"), message


def test_quoted_value_of_an_xpath_only_property_is_an_xpath_literal():
    s = load("xml.rules=t\nt.type=tx\nt.match=\"x\"\nt.timestamp='2020-01-01'\n")
    assert s.xml.rules[0].match == XPath('"x"')
    assert s.xml.rules[0].timestamp == XPath("'2020-01-01'")


def test_xml_rules_required():
    assert fail("") == f"{FILE}: xml.rules: required"


def test_xml_sourcedefs_required():
    with pytest.raises(PropertyError) as err:
        settings_from_text("parser.type=xml\nxml.rules=t\nt.type=tx\n", FILE, {})
    assert str(err.value) == (f"{FILE}: xml.sourcedefs: required (unless every table is "
                              "user-defined with xml.userdefs.*)")


def test_rule_keys_ignored_when_parser_is_not_xml(caplog):
    text = ("parser.type=delim\ndelim.sourcedefs=d\ndelim.header=a\nxml.rules=t\nt.type=tx\n")
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = settings_from_text(text, FILE, {})
    assert s.xml is None
    assert "XML rule properties are ignored because parser.type=delim" in caplog.text


def test_rule_repr_shows_configured_items_only():
    text = repr(load(SPAN).xml.rules[0].subrules[0])
    assert text.startswith("Rule(name='c', type='col', match=XPath(text='./col'), ")
    assert "column_name=XPath(text='@name')" in text and "index=Const(text='3')" in text
    assert "timestamp=" not in text and "lines=" not in text and "subrules" not in text
