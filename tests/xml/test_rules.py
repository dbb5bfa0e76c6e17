"""The rule engine: every rule property, transactions, images and the message errors."""

from __future__ import annotations

import pickle
import time

import pytest

from parsers.model import MISSING, TX_BEGIN, TX_END, TX_MIDDLE, TX_WHOLE
from parsers.xml import XmlParser
from props.errors import MessageError, PropertyError
from props.settings import XmlSettings

from .conftest import build, defs, msg
from .rules import rule

TS_2010 = 1265364681000000  # 2010-02-05 10:11:21 UTC in µs

DYNAMIC = """
xml.rules=dyntxrule
dyntxrule.type=tx
dyntxrule.match=/transaction
dyntxrule.timestamp=@ts
dyntxrule.subrules=dynoprule
dynoprule.type=op
dynoprule.match=./operation
dynoprule.schemaandtable=@table
dynoprule.optype=@optype
dynoprule.subrules=dyncolrule
dyncolrule.type=col
dyncolrule.match=./column
dyncolrule.name=@name
dyncolrule.index=@index
dyncolrule.before.value=./beforevalue/text()
dyncolrule.before.isnull=./beforevalue/@isnull
dyncolrule.after.value=./aftervalue/text()
dyncolrule.after.isnull=./aftervalue/@isnull
"""


def column(name: str, index: int | None = None, after: str | None = None,
           before: str | None = None, after_null: bool = False, before_null: bool = False) -> str:
    idx = f' index="{index}"' if index is not None else ""
    parts = []
    if before_null:
        parts.append('<beforevalue isnull="true"/>')
    elif before is not None:
        parts.append(f"<beforevalue>{before}</beforevalue>")
    if after_null:
        parts.append('<aftervalue isnull="true"/>')
    elif after is not None:
        parts.append(f"<aftervalue>{after}</aftervalue>")
    return f'<column name="{name}"{idx}>{"".join(parts)}</column>'


def dyn(*ops: tuple[str, str, list[str]], ts: str = "2010-02-05:10:11:21") -> str:
    body = "".join(f'<operation table="{t}" optype="{o}">{"".join(cols)}</operation>'
                   for t, o, cols in ops)
    return f'<transaction ts="{ts}">{body}</transaction>'


@pytest.fixture(scope="module")
def dynamic():
    return build(DYNAMIC)


# -- the documented examples -----------------------------------------------------------------------

def test_dynamic_insert(dynamic):
    [op] = dynamic.parse(msg(dyn(("MY.TABLE", "I", [column("keycol", 0, "keyval"),
                                                    column("col1", 1, "col1val")]))))
    assert op.table.name == "MY.TABLE" and op.optype == "I"
    assert op.after == ["keyval", "col1val"] and op.before is None
    assert op.timestamp == TS_2010
    assert op.seqid == "00000000000000000001"  # default $jmsid
    assert op.txid is None and op.txind is None and op.ordinal == 0
    assert op.message_id == "00000000000000000001"


def test_update_with_before_values_nulls_and_missing(dynamic):
    body = dyn(("HR.EMP", "U", [column("ID", 0, "7", "7"),
                                column("NAME", after="Ann", before_null=True),
                                column("SALARY", after="1200.5"),
                                column("GRADE", after_null=True, before="B1")]))
    [op] = dynamic.parse(msg(body))
    assert op.optype == "U"
    assert op.after == [7, "Ann", 120050, None, MISSING]
    # before.value selecting nothing is missing, not NULL (§6.2)
    assert op.before == [7, None, MISSING, "B1", MISSING]


def test_update_without_before_values_has_no_before_image(dynamic):
    [op] = dynamic.parse(msg(dyn(("HR.EMP", "U", [column("ID", after="7"),
                                                  column("NAME", after="Bo")]))))
    assert op.before is None and op.after[:2] == [7, "Bo"]


def test_delete_uses_before_values(dynamic):
    [op] = dynamic.parse(msg(dyn(("HR.EMP", "D", [column("ID", before="7"),
                                                  column("NAME", before="Ann")]))))
    assert op.after is None and op.before == [7, "Ann", MISSING, MISSING, MISSING]


def test_after_value_selecting_nothing_is_null(dynamic):
    empty = "<column name='col1'><aftervalue/></column>"
    [op] = dynamic.parse(msg(dyn(("MY.TABLE", "I", [column("keycol", after="k"), empty]))))
    assert op.after == ["k", None]


def test_several_operations_one_transaction(dynamic):
    ops = dynamic.parse(msg(dyn(("MY.TABLE", "I", [column("keycol", after="a")]),
                                ("MY.TABLE", "I", [column("keycol", after="b")]),
                                ("HR.EMP", "D", [column("ID", before="1")]))))
    assert [op.ordinal for op in ops] == [0, 1, 2]
    assert [op.txind for op in ops] == [None, None, None]
    assert [op.table.name for op in ops] == ["MY.TABLE", "MY.TABLE", "HR.EMP"]


def test_column_names_resolve_case_insensitively(dynamic):
    [op] = dynamic.parse(msg(dyn(("my.table", "I", [column("KeyCol", after="x")]))))
    assert op.table.name == "MY.TABLE" and op.after == ["x", MISSING]


def test_index_only_column():
    p = build("""xml.rules=t
t.type=tx
t.subrules=o
o.type=op
o.match=/r/row
o.schemaandtable="MY.TABLE"
o.optype="I"
o.subrules=c0, c1
c0.type=col
c0.index=0
c0.value=@k
c1.type=col
c1.index="1"
c1.value=@v
""")
    [op] = p.parse(msg('<r><row k="a" v="b"/></r>'))
    assert op.after == ["a", "b"]


# -- sources of transaction and operation properties -----------------------------------------------

SOURCES = """xml.rules=t
t.type=tx
t.match=/batch
t.timestamp=$JMSTimestamp
t.seqid=$SEQNO
t.txid=$JMSTxId
t.txname="fixedtx"
t.txowner=$Owner
t.subrules=o
o.type=op
o.match=./row
o.schema=$Schema
o.table=@t
o.optype=@op
o.optype.insertval=A
o.optype.updateval=C
o.optype.deleteval=R
o.subrules=k
k.type=col
k.name="KEYCOL"
k.value=@k
"""


def test_jms_properties_and_constants():
    p = build(SOURCES)
    m = msg('<batch><row t="TABLE" op="A" k="1"/><row t="TABLE" op="R" k="2"/></batch>',
            timestamp="1265364681123", SEQNO="0042", JMSTxId="TX-9", owner="scott",
            Schema="MY")
    ops = p.parse(m)
    assert [op.optype for op in ops] == ["I", "D"]
    assert ops[0].timestamp == 1265364681123000  # epoch ms, format ignored (§2.2)
    assert {op.seqid for op in ops} == {"0042"} and {op.txid for op in ops} == {"TX-9"}
    assert ops[0].txname == "fixedtx" and ops[0].txowner == "scott"  # header case-insensitive
    assert ops[1].before == ["2", MISSING]


def test_missing_optional_header_is_none_required_is_error():
    p = build(SOURCES)
    m = msg('<batch><row t="TABLE" op="A" k="1"/></batch>', timestamp="1", SEQNO="1",
            JMSTxId="T", Schema="MY")
    assert p.parse(m)[0].txowner is None
    with pytest.raises(MessageError, match=r"t\.txid.*JMSTxId"):
        p.parse(msg('<batch><row t="TABLE" op="A" k="1"/></batch>', timestamp="1", SEQNO="1",
                    Schema="MY"))


def test_schema_needed_for_a_bare_table_name():
    p = build(SOURCES)
    with pytest.raises(MessageError, match="two-part name needed") as info:
        p.parse(msg('<batch><row t="TABLE" op="A" k="1"/></batch>', timestamp="1",
                    SEQNO="1", JMSTxId="T"))
    assert info.value.position.startswith("o.table")


def test_unknown_optype_value():
    p = build(SOURCES)
    with pytest.raises(MessageError, match=r"optype value 'I' is not one of 'A', 'C', 'R'") as i:
        p.parse(msg('<batch><row t="TABLE" op="I" k="1"/></batch>', timestamp="1",
                    SEQNO="1", JMSTxId="T", Schema="MY"))
    assert i.value.position == "o.optype (@op)"
    assert i.value.source == "00000000000000000001"


def test_timestamp_defaults_to_system_time():
    p = build("""xml.rules=o
o.type=op
o.schemaandtable="MY.TABLE"
o.optype="I"
o.subrules=k
k.type=col
k.name="keycol"
k.value=/r/text()
""")
    before = time.time_ns() // 1000
    [op] = p.parse(msg("<r>x</r>"))
    assert before <= op.timestamp <= time.time_ns() // 1000
    assert op.after == ["x", MISSING]


def test_timestamp_format_and_op_override():
    p = build("""xml.rules=t
t.type=tx
t.match=/tx
t.timestamp=@when
t.timestamp.format=DD/MM/YYYY HH.MI.SS
t.subrules=o1, o2
o1.type=op
o1.match=./a
o1.schemaandtable="MY.TABLE"
o1.optype="I"
o1.subrules=k
o2.type=op
o2.match=./b
o2.schemaandtable="MY.TABLE"
o2.optype="I"
o2.timestamp=./ts/text()
o2.timestamp.format=YYYY-MM-DD-HH.MI.SS.FFFFFF
o2.subrules=k
k.type=col
k.name="keycol"
k.value=@k
""")
    ops = p.parse(msg('<tx when="05/02/2010 10.11.21"><a k="1"/>'
                      '<b k="2"><ts>2010-02-05-10.11.22.500000</ts></b></tx>'))
    assert [op.timestamp for op in ops] == [TS_2010, TS_2010 + 1_500_000]


def test_bad_timestamp_is_a_message_error():
    p = build(DYNAMIC)
    with pytest.raises(MessageError, match="does not match the date format") as info:
        p.parse(msg(dyn(("MY.TABLE", "I", [column("keycol", after="k")]), ts="yesterday")))
    assert info.value.position == "dyntxrule.timestamp (@ts)"


def test_system_seqid_and_txid_are_left_to_the_assembler():
    p = build("""xml.rules=t
t.type=tx
t.seqid=*seqid
t.txid=*txid
t.subrules=o
o.type=op
o.schemaandtable="MY.TABLE"
o.optype="I"
o.subrules=k
k.type=col
k.name="keycol"
k.value=text()
""")
    [op] = p.parse(msg("<r>v</r>"))
    assert op.seqid is None and op.txid is None and op.after[0] == "v"


def test_op_seqid_becomes_the_txid_of_its_transaction():
    p = build("""xml.rules=t
t.type=tx
t.match=/tx
t.subrules=o
o.type=op
o.match=./row
o.seqid=@seq
o.schemaandtable="MY.TABLE"
o.optype="I"
o.subrules=k
k.type=col
k.name="keycol"
k.value=@k
""")
    ops = p.parse(msg('<tx><row seq="0001" k="a"/><row seq="0002" k="b"/></tx>'))
    assert [op.seqid for op in ops] == ["0001", "0002"]
    assert [op.txid for op in ops] == ["0001", "0001"]


# -- transactions (§6.4) --------------------------------------------------------------------------

MULTI = """xml.rules=t
t.type=tx
t.match=/batch/tx
t.txid=@id
t.subrules=o
o.type=op
o.match=./row
o.schemaandtable="MY.TABLE"
o.optype="I"
o.subrules=k
k.type=col
k.name="keycol"
k.value=@k
"""


def test_multiple_transactions_are_marked():
    p = build(MULTI)
    ops = p.parse(msg('<batch><tx id="1"><row k="a"/><row k="b"/><row k="c"/></tx>'
                      '<tx id="2"><row k="d"/></tx><tx id="3"/>'
                      '<tx id="4"><row k="e"/><row k="f"/></tx></batch>'))
    assert [op.txid for op in ops] == ["1", "1", "1", "2", "4", "4"]
    assert [op.txind for op in ops] == [TX_BEGIN, TX_MIDDLE, TX_END, TX_WHOLE, TX_BEGIN, TX_END]
    assert [op.ordinal for op in ops] == list(range(6))


def test_one_matched_transaction_is_not_marked():
    ops = build(MULTI).parse(msg('<batch><tx id="1"><row k="a"/><row k="b"/></tx></batch>'))
    assert [op.txind for op in ops] == [None, None]


SPAN = """xml.rules=o
o.type=op
o.match=/ops/op
o.schemaandtable="MY.TABLE"
o.optype="I"
o.txind=@ind
o.txind.beginval=start
o.txid=$JMSTxId
o.subrules=k
k.type=col
k.name="keycol"
k.value=@k
"""


def test_span_transactions_take_txind_from_the_rule():
    p = build(SPAN)
    ops = p.parse(msg('<ops><op ind="start" k="a"/><op ind="M" k="b"/></ops>', JMSTxId="T1"))
    assert [op.txind for op in ops] == [TX_BEGIN, TX_MIDDLE]
    ops = p.parse(msg('<ops><op ind="2" k="c"/><op ind="W" k="d"/></ops>', JMSTxId="T1"))
    assert [op.txind for op in ops] == [TX_END, TX_WHOLE]


def test_bad_txind_value():
    with pytest.raises(MessageError, match=r"txind value 'B' is not one of") as info:
        build(SPAN).parse(msg('<ops><op ind="B" k="a"/></ops>', JMSTxId="T1"))
    assert info.value.position == "o.txind (@ind)"


def test_two_rule_sets_the_one_not_matching_is_ignored():
    both = build(MULTI.replace("xml.rules=t", "xml.rules=t, s") + """s.type=tx
s.match=/other
s.subrules=so
so.type=op
so.match=./x
so.schemaandtable="HR.EMP"
so.optype="D"
so.subrules=sk
sk.type=col
sk.name="ID"
sk.value=@id
""")
    [op] = both.parse(msg('<other><x id="5"/></other>'))
    assert op.table.name == "HR.EMP" and op.optype == "D" and op.before[0] == 5


def test_nested_op_rules_inherit():
    p = build("""xml.rules=t
t.type=tx
t.match=/doc
t.txname="outer"
t.txowner=@owner
t.subrules=group
group.type=op
group.match=./group
group.txowner=@owner
group.subrules=leaf
leaf.type=op
leaf.match=./row
leaf.schemaandtable="MY.TABLE"
leaf.optype="I"
leaf.subrules=k
k.type=col
k.name="keycol"
k.value=@k
""")
    ops = p.parse(msg('<doc owner="o1"><group owner="g1"><row k="a"/></group>'
                      '<group><row k="b"/></group></doc>'))
    assert [(op.txname, op.txowner, op.after[0]) for op in ops] == [
        ("outer", "g1", "a"), ("outer", None, "b")]


def test_no_rule_matching_is_a_message_error():
    with pytest.raises(MessageError, match="no rule matches the document") as info:
        build(MULTI).parse(msg("<nothing/>", id_="m-7"))
    assert info.value.source == "m-7"


# -- column rules ----------------------------------------------------------------------------------

COLS = """xml.rules=o
o.type=op
o.match=/row
o.schemaandtable="HR.EMP"
o.optype=@op
o.subrules=id, name, sal
id.type=col
id.name="ID"
id.value=@id
name.type=col
name.match=./name
name.name="NAME"
name.value=content()
name.isnull=@nil='1'
name.ismissing=@skip
sal.type=col
sal.name="SALARY"
sal.before.value=@old
sal.after.value=@new
sal.after.ismissing=@keep
"""


def test_value_isnull_ismissing_and_overrides():
    p = build(COLS)
    [op] = p.parse(msg('<row op="U" id="3"><name>A <b>B</b></name></row>'))
    assert op.after == [3, "A <b>B</b>", None, MISSING, MISSING]  # sal: no node → NULL
    assert op.before is None  # no before.* on id/name, and sal's before selected nothing
    [op] = p.parse(msg('<row op="U" id="3" old="1" new="2"><name nil="1"/></row>'))
    assert op.after == [3, None, 200, MISSING, MISSING]
    assert op.before == [MISSING, MISSING, 100, MISSING, MISSING]
    [op] = p.parse(msg('<row op="U" id="3" keep="y"><name skip="y"/></row>'))
    assert op.after == [3, MISSING, MISSING, MISSING, MISSING]


def test_delete_without_before_rules_uses_the_values():
    [op] = build(COLS).parse(msg('<row op="D" id="3" old="1.25"><name>Z</name></row>'))
    assert op.after is None and op.before == [3, "Z", 125, MISSING, MISSING]


def test_missing_key_column_is_an_error(dynamic):
    with pytest.raises(MessageError, match="key column ID of HR.EMP is missing"):
        dynamic.parse(msg(dyn(("HR.EMP", "I", [column("NAME", after="Z")]))))
    with pytest.raises(MessageError, match="key column KEYCOL of MY.TABLE is missing"):
        dynamic.parse(msg(dyn(("MY.TABLE", "D", [column("col1", before="Z")]))))


def test_key_column_may_be_null(dynamic):
    [op] = dynamic.parse(msg(dyn(("HR.EMP", "I", [column("ID", after_null=True)]))))
    assert op.after[0] is None


def test_unknown_table():
    with pytest.raises(MessageError, match="unknown table 'NO.SUCH'") as info:
        build(DYNAMIC).parse(msg(dyn(("NO.SUCH", "I", [column("keycol", after="k")]))))
    assert info.value.position == "dynoprule.schemaandtable (@table)"


def test_match_that_finds_no_table():
    p = build(DYNAMIC)
    with pytest.raises(MessageError, match=r"no value: '@table' selects nothing") as info:
        p.parse(msg('<transaction ts="2010-02-05:10:11:21"><operation optype="I">'
                    + column("keycol", after="k") + "</operation></transaction>"))
    assert "dynoprule.schemaandtable" in str(info.value)


def test_unknown_column_name():
    with pytest.raises(MessageError, match="MY.TABLE has no column 'nope'") as info:
        build(DYNAMIC).parse(msg(dyn(("MY.TABLE", "I", [column("nope", after="k")]))))
    assert info.value.position == "dyncolrule.name (@name)"


def test_name_and_index_must_agree():
    with pytest.raises(MessageError, match=r"column 'col1' is index 1 of MY.TABLE, not 0") as i:
        build(DYNAMIC).parse(msg(dyn(("MY.TABLE", "I", [column("col1", 0, "k")]))))
    assert i.value.position == "dyncolrule.index (@index)"
    assert "message 00000000000000000001" in str(i.value)


def test_index_out_of_range_and_not_an_integer():
    with pytest.raises(MessageError, match="index 5 out of range"):
        build(DYNAMIC).parse(msg(dyn(("MY.TABLE", "I", [column("keycol", 5, "k")]))))
    with pytest.raises(MessageError, match="index 'x' is not an integer"):
        bad = '<column name="keycol" index="x"><aftervalue>k</aftervalue></column>'
        build(DYNAMIC).parse(msg(dyn(("MY.TABLE", "I", [bad]))))


def test_column_set_twice():
    with pytest.raises(MessageError, match="KEYCOL of MY.TABLE is set twice"):
        build(DYNAMIC).parse(msg(dyn(("MY.TABLE", "I", [column("keycol", after="a"),
                                                        column("KEYCOL", after="b")]))))


@pytest.mark.parametrize("value, reason", [
    ("12.345", "fraction"),
    ("abc", ""),
])
def test_conversion_error_names_table_column_and_rule(value, reason):
    with pytest.raises(MessageError, match=r"HR\.EMP\.SALARY: ") as info:
        build(DYNAMIC).parse(msg(dyn(("HR.EMP", "I", [column("ID", after="1"),
                                                      column("SALARY", after=value)]))))
    assert info.value.position == "dyncolrule.after.value (./aftervalue/text())"


def test_char_too_long_is_an_error():
    with pytest.raises(MessageError, match="GRADE"):
        build(DYNAMIC).parse(msg(dyn(("HR.EMP", "I", [column("ID", after="1"),
                                                      column("GRADE", after="ABC")]))))


def test_dateformat_per_column():
    p = build(DYNAMIC + "xml.dateformat.HR.EMP.HIRED=DD.MM.YYYY\n")
    [op] = p.parse(msg(dyn(("HR.EMP", "I", [column("ID", after="1"),
                                            column("HIRED", after="31.12.1999")]))))
    assert op.after[4] == "1999-12-31"


def test_malformed_message():
    with pytest.raises(MessageError, match="malformed XML") as info:
        build(DYNAMIC).parse(msg("<transaction>", id_="bad-1"))
    assert info.value.source == "bad-1"


def test_namespaces():
    p = build("""xml.namespace.po=urn:example:po
xml.rules=o
o.type=op
o.match=/po:orders/po:order
o.schemaandtable="MY.TABLE"
o.optype="I"
o.subrules=k
k.type=col
k.name="keycol"
k.value=po:id/text()
""")
    ops = p.parse(msg('<orders xmlns="urn:example:po"><order><id>1</id></order>'
                      '<order><id>2</id></order></orders>'))
    assert [op.after[0] for op in ops] == ["1", "2"]
    assert [op.txind for op in ops] == [None, None]  # a top-level op rule: one transaction


def test_limits_come_from_the_properties():
    p = build(DYNAMIC + "xml.maxbytes=100\nxml.maxdepth=3\n")
    with pytest.raises(MessageError, match="exceeds xml.maxbytes=100"):
        p.parse(msg(dyn(("MY.TABLE", "I", [column("keycol", after="k" * 80)]))))
    with pytest.raises(MessageError, match="deeper than xml.maxdepth=3"):
        p.parse(msg("<transaction><a><b><c/></b></a></transaction>"))


# -- build-time errors -----------------------------------------------------------------------------

def test_invalid_xpath_names_rule_and_property():
    with pytest.raises(PropertyError, match=r"test\.properties:\d+: dyncolrule\.after\.value: "
                                            r"invalid XPath"):
        build(DYNAMIC.replace("./aftervalue/text()", "./aftervalue[/text()"))


def test_unbound_prefix_names_rule_and_property():
    with pytest.raises(PropertyError, match=r"dynoprule\.match: .*prefix 'x' is not bound"):
        build(DYNAMIC.replace("./operation", "./x:operation"))


def test_txind_under_a_tx_rule_is_refused():
    # The loader refuses it; a parser built from other settings refuses it too.
    with pytest.raises(PropertyError, match="txind"):
        build(DYNAMIC + "dynoprule.txind=@txind\n")
    settings = XmlSettings(rules=(rule("t", "tx", rule(
        "o", "op", rule("c", "col", name='"keycol"', value="text()"),
        schemaandtable='"MY.TABLE"', optype='"I"', txind="@ind")),))
    with pytest.raises(PropertyError, match=r"o\.txind: txind is only for top-level op rules"):
        XmlParser.build(settings, defs())


def test_parser_checks_rule_shapes():
    op = rule("o", "op", rule("c", "col", name='"keycol"', value="text()"),
              schemaandtable='"MY.TABLE"', optype='"I"')
    with pytest.raises(PropertyError, match="top-level rule c is of type col"):
        XmlParser.build(XmlSettings(rules=(rule("c", "col", name='"x"'),)), defs())
    with pytest.raises(PropertyError, match="needs a name or an index"):
        XmlParser.build(XmlSettings(rules=(rule("o", "op", rule("c", "col", value="."),
                                          schemaandtable='"A.B"', optype='"I"'),)), defs())
    with pytest.raises(PropertyError, match="needs an optype"):
        XmlParser.build(XmlSettings(rules=(rule("o", "op", *op.subrules, table='"A.B"'),)), defs())
    with pytest.raises(PropertyError, match="index 'x' is not an integer"):
        XmlParser.build(XmlSettings(rules=(rule("o", "op", rule("c", "col", index='"x"'),
                                          schemaandtable='"A.B"', optype='"I"'),)), defs())
    assert XmlParser.build(XmlSettings(rules=(op,)), defs()).parse(msg("<a>v</a>"))[0].after[0] == "v"


# -- pickling --------------------------------------------------------------------------------------

def test_parser_pickles_by_rebuilding(dynamic):
    clone = pickle.loads(pickle.dumps(dynamic))
    assert clone is not dynamic
    body = dyn(("MY.TABLE", "I", [column("keycol", 0, "keyval"), column("col1", 1, "v")]))
    assert [op.after for op in clone.parse(msg(body))] == [["keyval", "v"]]


def test_xpath2_parser_pickles():
    p = build(DYNAMIC.replace("dynoprule.schemaandtable=@table",
                              "dynoprule.schemaandtable=upper-case(@table)"))
    clone = pickle.loads(pickle.dumps(p))
    [op] = clone.parse(msg(dyn(("my.table", "I", [column("keycol", after="k")]))))
    assert op.table.name == "MY.TABLE"
