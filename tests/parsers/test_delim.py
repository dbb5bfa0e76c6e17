"""The delimited parser: properties.md §5, §3, and the example of §15.3."""

import pickle
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gendef.defgen import parse_defs
from parsers.base import Parser, build_parser
from parsers.delim import DelimParser
from parsers.model import MISSING, Message
from props.errors import DefinitionError, MessageError, PropertyError
from props.loader import settings_from_text
from props.settings import Settings

SALES_DEF = """\
*+- Defgen version 4.0, Encoding UTF-8
*
Database type: GENERIC
Character set ID: UTF-8
National character set ID: UTF-16
Locale: neutral
Case sensitivity: 14 14 14 14 14 14 14 14 14 14 14 14 11 14 14 14
TimeZone: GMT
*
Definition for table SALES.CUSTOMER
Record length: 96
Syskey: 0
Columns: 4
CUST_ID  134     11        0  0  0 1 0      8      8      8 0 0 0 0 1    0 1   3    2       -1      0 0 0
NAME      64     30       12  0  0 1 0     30     30      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
CITY      64     20       48  0  0 1 0     20     20      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
CREATED  192     19       74  0  0 1 0     19     19     19 0 5 0 0 1    0 0   0   12       -1      0 0 0
End of definition
*
Definition for table SALES.ORDERS
Record length: 70
Syskey: 0
Columns: 5
ORDER_ID  134     13        0  0  0 1 0      8      8      8 0 0 0 0 1    0 1   3    2       -1      0 0 0
CUST_ID   134     11       12  0  0 1 0      8      8      8 0 0 0 0 1    0 0   3    2       -1      0 0 0
AMOUNT    134     13       24  2  0 1 0      8      8      8 0 0 0 0 1    0 0   3    2       -1      0 0 0
STATUS      0      1       36  0  0 1 0      1      1      0 0 0 0 0 1    0 0   0   96       -1      0 0 0
UPDATED   192     26       40  0  0 1 0     26     26     26 0 6 0 0 1    0 0   0  187       -1      0 0 0
End of definition
*
Definition for table SALES.NOTES
Record length: 24
Syskey: 0
Columns: 2
TXT       64     10        0  0  0 1 0     10     10      0 0 0 0 0 1    0 1   0    1       -1      0 0 0
CODE       0      2       16  0  0 1 0      2      2      0 0 0 0 0 1    0 0   0   96       -1      0 0 0
End of definition
*
Definition for table SALES.LOG
Record length: 20
Syskey: 0
Columns: 2
A         64      5        0  0  0 1 0      5      5      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
B         64      5       10  0  0 1 0      5      5      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
End of definition
"""
DEFS = parse_defs(SALES_DEF, "dirdef/sales.def")

# properties.md §15.3 (the parser part)
SALES_PROPS = r"""
parser.type=delim
delim.sourcedefs=dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.txid=*txid
delim.fielddelim=,
delim.linedelim=\x0a
delim.quote="
delim.nullindicator=NULL
delim.dateformat.SALES.ORDERS.UPDATED=YYYY-MM-DD HH:MI:SS.FFFFFF
"""

MESSAGE_1 = (
    'I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,B,0000000001,1001,"ACME, Inc.",Boston,'
    "2024-03-01 10:15:30\n"
    "I,SALES.ORDERS,2024-03-01 10:15:30.000000,E,0000000002,5001,1001,1250.00,N,"
    "2024-03-01 10:15:30.000000\n")
MESSAGE_2 = (
    'U,SALES.CUSTOMER,2024-03-01 11:00:00.000000,W,0000000003,1001,"ACME, Inc.",NULL,'
    "2024-03-01 10:15:30\n"
    "D,SALES.ORDERS,2024-03-01 11:05:00.000000,W,0000000004,5001\n")

T_10_15_30 = 1709288130000000


def parser(extra: str = "", props: str = SALES_PROPS) -> DelimParser:
    return build_parser(settings_from_text(props + extra, "dirprm/jmsvam.properties"), DEFS)


def parse(body: str | bytes, extra: str = "", props: str = SALES_PROPS, **kw):
    return parser(extra, props).parse(Message("ID:7", body=body, **kw))


def error(body: str, extra: str = "", props: str = SALES_PROPS) -> str:
    with pytest.raises(MessageError) as info:
        parse(body, extra, props)
    return str(info.value)


# -- §15.3 ---------------------------------------------------------------------------------------

def test_example_message_1_one_transaction_over_two_records():
    ops = parse(MESSAGE_1)
    assert [(o.table.name, o.optype, o.txind, o.seqid, o.txid, o.ordinal) for o in ops] == [
        ("SALES.CUSTOMER", "I", 0, "0000000001", None, 0),
        ("SALES.ORDERS", "I", 2, "0000000002", None, 1)]
    assert ops[0].timestamp == ops[1].timestamp == T_10_15_30
    assert ops[0].before is None and ops[0].after == [
        1001, "ACME, Inc.", "Boston", "2024-03-01:10:15:30"]
    assert ops[1].after == [5001, 1001, 125000, "N", "2024-03-01:10:15:30.000000"]
    assert all(o.message_id == "ID:7" for o in ops)


def test_example_message_2_update_with_null_and_delete_with_key_only():
    update, delete = parse(MESSAGE_2)
    assert (update.optype, update.txind, update.before) == ("U", 3, None)
    assert update.after == [1001, "ACME, Inc.", None, "2024-03-01:10:15:30"]
    assert (delete.optype, delete.txind, delete.after) == ("D", 3, None)
    assert delete.before == [5001, MISSING, MISSING, MISSING, MISSING]
    assert delete.timestamp == T_10_15_30 + (49 * 60 + 30) * 1_000_000


def test_example_variant_with_befores_and_names():
    body = ('U,SALES.CUSTOMER,2024-03-01 11:00:00,W,0000000005,CUST_ID,1001,1001,NAME,'
            '"ACME, Inc.","ACME, Inc.",CITY,Boston,Chicago,CREATED,2024-03-01 10:15:30,'
            '2024-03-01 10:15:30')
    (op,) = parse(body, "delim.hasbefores=true\ndelim.hasnames=true\n")
    assert op.before == [1001, "ACME, Inc.", "Boston", "2024-03-01:10:15:30"]
    assert op.after == [1001, "ACME, Inc.", "Chicago", "2024-03-01:10:15:30"]


# -- layouts: hasbefores, hasnames, afterfirst, isgrouped ----------------------------------------

HEAD = "U,SALES.NOTES,2024-03-01 10:15:30,W,1,"


@pytest.mark.parametrize("extra,data", [
    ("delim.hasbefores=true\n", "k1, k1,XX,YY"),
    ("delim.hasbefores=true\ndelim.afterfirst=true\n", " k1,k1,YY,XX"),
    ("delim.hasbefores=true\ndelim.hasnames=true\n", "txt,k1, k1,Code,XX,YY"),
    ("delim.hasbefores=true\ndelim.hasnames=true\ndelim.afterfirst=true\n",
     "TXT, k1,k1,CODE,YY,XX"),
    ("delim.hasbefores=true\ndelim.isgrouped=true\n", "k1,XX, k1,YY"),
    ("delim.hasbefores=true\ndelim.isgrouped=true\ndelim.afterfirst=true\n", " k1,YY,k1,XX"),
    ("delim.hasbefores=true\ndelim.hasnames=true\ndelim.isgrouped=true\n",
     "TXT,CODE,k1,XX, k1,YY"),
    ("delim.hasbefores=true\ndelim.hasnames=true\ndelim.isgrouped=true\ndelim.afterfirst=true\n",
     "TXT,CODE, k1,YY,k1,XX"),
])
def test_value_layouts(extra, data):
    """The key TXT is unchanged; its after value carries a leading blank (VARCHAR keeps it)."""
    op = parser(extra).parse(Message("m", body=HEAD + data.replace(" k1", "k1")))[0]
    assert op.before == ["k1", "XX"] and op.after == ["k1", "YY"]
    with pytest.raises(MessageError, match="key column TXT changes from 'k1' to ' k1'") as info:
        parse(HEAD + data, extra)
    assert info.value.position == f"record 1, field {6 + data.split(',').index(' k1')}"


@pytest.mark.parametrize("extra,data", [
    ("", "v,C"), ("delim.hasnames=true\n", "TXT,v,CODE,C"),
    ("delim.hasnames=true\ndelim.isgrouped=true\n", "TXT,CODE,v,C"),
])
def test_single_value_is_after_image_or_delete_before_image(extra, data):
    (ins,) = parse(HEAD.replace("U,", "I,") + data, extra)
    assert (ins.before, ins.after) == (None, ["v", "C "])
    (dele,) = parse(HEAD.replace("U,", "D,") + data, extra)
    assert (dele.before, dele.after) == (["v", "C "], None)


def test_inserts_ignore_befores_and_deletes_ignore_afters():
    extra = "delim.hasbefores=true\n"
    (ins,) = parse(HEAD.replace("U,", "I,") + "ignored-long-text,a,!!!,XY", extra)
    assert (ins.before, ins.after) == (None, ["a", "XY"])
    (dele,) = parse(HEAD.replace("U,", "D,") + "b,ignored-long-text,XY,!!!", extra)
    assert (dele.before, dele.after) == (["b", "XY"], None)


def test_names_are_checked_in_order_case_insensitively():
    msg = error(HEAD + "TXT,a,COD,b", "delim.hasnames=true\n")
    assert "record 1, field 8: column name 'COD', expected CODE" in msg
    msg = error(HEAD + "CODE,a,TXT,b", "delim.hasnames=true\n")
    assert "field 6: column name 'CODE', expected TXT" in msg


def test_update_before_and_after_keep_null_and_missing_apart():
    body = "U,SALES.ORDERS,2024-03-01 10:15:30,W,1,5001,5001,NULL,7"
    (op,) = parse(body, "delim.hasbefores=true\n")
    assert op.before == [5001, None, MISSING, MISSING, MISSING]
    assert op.after == [5001, 7, MISSING, MISSING, MISSING]


def test_empty_text_is_not_null_when_an_indicator_is_set():
    assert "record 1, field 7 (CUST_ID): value '' is not a number" in error(
        "I,SALES.ORDERS,2024-03-01 10:15:30,W,1,5001,,1")
    (op,) = parse("I,SALES.NOTES,2024-03-01 10:15:30,W,1,,")
    assert op.after == ["", "  "]
    props = SALES_PROPS.replace("delim.nullindicator=NULL\n", "")
    (op,) = parse("I,SALES.NOTES,2024-03-01 10:15:30,W,1,,NU", props=props)
    assert op.after == [None, "NU"]


# -- field counts (§5.2) -------------------------------------------------------------------------

def test_fewer_fields_than_the_header():
    msg = error(MESSAGE_1 + "I,SALES.ORDERS,2024-03-01 10:15:30\n")
    assert msg == ("message ID:7: record 3: 3 fields, fewer than the 5 header fields")


def test_trailing_columns_may_be_absent():
    (op,) = parse("I,SALES.ORDERS,2024-03-01 10:15:30,W,1,5001,1001")
    assert op.after == [5001, 1001, MISSING, MISSING, MISSING]


def test_too_many_fields():
    msg = error("I,SALES.NOTES,2024-03-01 10:15:30,W,1,a,b,c")
    assert "record 1: 8 fields, more than the 7 of table SALES.NOTES" in msg
    msg = error("U,SALES.NOTES,2024-03-01 10:15:30,W,1,a,b,c,d,e", "delim.hasbefores=true\n")
    assert "10 fields, more than the 9" in msg


def test_partial_column_group():
    msg = error("U,SALES.NOTES,2024-03-01 10:15:30,W,1,b,a,c", "delim.hasbefores=true\n")
    assert "record 1, field 8: partial column group (1 of 2 values)" in msg


def test_grouped_needs_every_value():
    extra = "delim.hasbefores=true\ndelim.isgrouped=true\n"
    msg = error("U,SALES.NOTES,2024-03-01 10:15:30,W,1,b,a", extra)
    assert "7 fields; table SALES.NOTES needs 5 + 2×2 = 9 (isgrouped=true)" in msg


def test_missing_key_column():
    msg = error("D,SALES.ORDERS,2024-03-01 10:15:30,W,1")
    assert "record 1: key column ORDER_ID is missing" in msg


def test_table_without_keys_uses_all_columns_as_key():
    msg = error("D,SALES.LOG,2024-03-01 10:15:30,W,1,x")
    assert "key column B is missing" in msg


# -- bad input ----------------------------------------------------------------------------------

def test_unknown_table():
    msg = error(MESSAGE_1 + "I,SALES.NOPE,2024-03-01 10:15:30,W,3,1\n")
    assert msg == "message ID:7: record 3: unknown table SALES.NOPE"


def test_table_names_are_case_insensitive_and_spelled_as_defined():
    (op,) = parse("I,sales.orders,2024-03-01 10:15:30,W,1,5001")
    assert op.table.name == "SALES.ORDERS"


def test_conversion_error_names_message_record_field_and_column():
    body = MESSAGE_1.replace("1250.00", "12.505")
    msg = error(body)
    assert msg == ("message ID:7: record 2, field 8 (AMOUNT): value '12.505' has more than 2 "
                   "fraction digits (never rounded)")
    msg = error(MESSAGE_1.replace("Boston", "B" * 21))
    assert "record 1, field 8 (CITY): value 'BBBBBBBBBBBBBBBBBBBBB' is longer than VARCHAR(20)" in msg
    msg = error(MESSAGE_1.replace("2024-03-01 10:15:30.000000\n", "2024-03-01\n"))
    assert "record 2, field 10 (UPDATED): value '2024-03-01' does not match the date format " \
           "YYYY-MM-DD HH:MI:SS.FFFFFF" in msg


def test_message_origin_names_the_message():
    with pytest.raises(MessageError) as info:
        parser().parse(Message("ID:9", body="X,SALES.NOTES,2024-03-01 10:15:30,W,1",
                               origin="dump.jsonl:3"))
    assert info.value.source == "dump.jsonl:3"
    assert info.value.position == "record 1"
    assert "optype value 'X' is not one of 'I', 'U', 'D', 'T'" in info.value.reason


def test_bad_timestamp_and_txind():
    assert "delim.timestamp (field timestamp): value 'yesterday'" in error(
        "I,SALES.NOTES,yesterday,W,1,a,b")
    assert "txind value 'Q'" in error("I,SALES.NOTES,2024-03-01 10:15:30,Q,1,a,b")


def test_a_record_that_changes_its_key_is_an_error():
    """§3.6: the delimited parser does not support primary-key updates."""
    body = "U,SALES.ORDERS,2024-03-01 10:15:30,W,1,5001,5002,1,1"
    msg = error(body, "delim.hasbefores=true\n")
    assert "record 1, field 7: key column ORDER_ID changes from '5001' to '5002'" in msg
    # the same key written differently is the same key
    (op,) = parse(body.replace("5002", "05001.0"), "delim.hasbefores=true\n")
    assert op.before[0] == op.after[0] == 5001


def test_null_header_field_is_no_value():
    assert "no value for delim.seqid (field id is NULL)" in error(
        "I,SALES.NOTES,2024-03-01 10:15:30,W,NULL,a,b")


def test_bytes_body():
    (op,) = parse("I,SALES.NOTES,2024-03-01 10:15:30,W,1,Zürich,b".encode())
    assert op.after == ["Zürich", "b "]
    with pytest.raises(MessageError, match="message ID:7: body is not UTF-8 text"):
        parse(b"I,SALES.NOTES,\xff")


# -- items -------------------------------------------------------------------------------------

def test_truncate_ignores_column_values():
    (op,) = parse("T,SALES.ORDERS,2024-03-01 10:15:30,W,1")
    assert (op.optype, op.before, op.after) == ("T", None, None)
    (op,) = parse("X,SALES.ORDERS,2024-03-01 10:15:30,W,1,anything,at,all",
                  "delim.optype.truncateval=X\n")
    assert op.optype == "T"


def test_optype_values():
    extra = "delim.optype.insertval=\\x41\ndelim.optype.updateval=C\ndelim.optype.deleteval=R\n"
    ops = parse("A,SALES.NOTES,2024-03-01 10:15:30,W,1,a,b\n"
                "C,SALES.NOTES,2024-03-01 10:15:30,W,2,a,b\n"
                "R,SALES.NOTES,2024-03-01 10:15:30,W,3,a,b\n", extra)
    assert [o.optype for o in ops] == ["I", "U", "D"]


def test_txind_values_and_no_txind():
    ops = parse("I,SALES.NOTES,2024-03-01 10:15:30,S,1,a,b\nI,SALES.NOTES,2024-03-01 10:15:30,"
                "F,2,a,b\n", "delim.txind.beginval=S\ndelim.txind.endval=F\n")
    assert [o.txind for o in ops] == [0, 2]
    props = SALES_PROPS.replace("timestamp,txind,id", "timestamp,id")
    (op,) = parse("I,SALES.NOTES,2024-03-01 10:15:30,1,a,b", props=props)
    assert op.txind is None


def test_system_and_header_sources():
    props = SALES_PROPS.replace("delim.header=optype,schemaandtable,timestamp,txind,id",
                                "delim.header=optype,table")
    extra = ('delim.schema="SALES"\ndelim.seqid=*seqid\ndelim.txid=$JMSTxId\n'
             'delim.txname="batch"\ndelim.txowner=$Owner\n')
    before = time.time_ns() // 1000
    ops = parse("I,NOTES,a,b\nI,NOTES,c,d", extra, props,
                headers={"JMSTxId": "T1", "owner": "jsmith"})
    after = time.time_ns() // 1000
    assert {o.table.name for o in ops} == {"SALES.NOTES"}
    assert before <= ops[0].timestamp == ops[1].timestamp <= after  # *ts: one per message
    assert [(o.seqid, o.txid, o.txname, o.txowner) for o in ops] == [
        (None, "T1", "batch", "jsmith")] * 2
    ops = parse("I,NOTES,a,b", 'delim.schema="SALES"\ndelim.timestamp=$JMSTimestamp\n', props,
                headers={"timestamp": "1709288130123"})
    assert ops[0].timestamp == 1709288130123000
    assert ops[0].seqid == "ID:7"  # $jmsid


def test_timestamp_format():
    (op,) = parse("I,SALES.NOTES,20240301101530,W,1,a,b",
                  "delim.timestamp.format=YYYYMMDDHHMISS\n")
    assert op.timestamp == T_10_15_30


def test_date_formats_column_table_global():
    extra = ("delim.dateformat=YYYYMMDD\n"
             "delim.dateformat.SALES.CUSTOMER=DD.MM.YYYY HH:MI:SS\n")
    ops = parse("I,SALES.CUSTOMER,2024-03-01 10:15:30,W,1,1,n,c,01.03.2024 10:15:30\n"
                "I,SALES.ORDERS,2024-03-01 10:15:30,W,2,1,1,1,N,2024-03-01 10:15:30.123456\n",
                extra)
    assert ops[0].after[3] == "2024-03-01:10:15:30"
    assert ops[1].after[4] == "2024-03-01:10:15:30.123456"  # the column's own format
    props = SALES_PROPS.replace("delim.dateformat.SALES.ORDERS.UPDATED=YYYY-MM-DD HH:MI:SS.FFFFFF",
                                "delim.dateformat=YYYYMMDD")
    (op,) = parse("I,SALES.CUSTOMER,2024-03-01 10:15:30,W,1,1,n,c,20240301", props=props)
    assert op.after[3] == "2024-03-01:00:00:00"


def test_delimiters_quotes_escapes_through_properties():
    extra = ("delim.fielddelim=\\xc7\ndelim.linedelim=||\ndelim.quote='\n"
             "delim.quote.escaped=\\'\ndelim.nullindicator.escaped=$NULL$\n")
    head = "I\u00c7SALES.NOTES\u00c72024-03-01 10:15:30\u00c7W\u00c71\u00c7"
    ops = parse(f"{head}'it\\'s'\u00c7ab||{head}$NULL$\u00c7NULL||{head}'NULL'\u00c7||", extra)
    assert [o.after for o in ops] == [["it's", "ab"], ["NULL", None], ["NULL", "  "]]


def test_several_records_and_crlf():
    ops = parse(MESSAGE_1.replace("\n", "\r\n") + MESSAGE_2.replace("\n", "\r\n"))
    assert [o.ordinal for o in ops] == [0, 1, 2, 3]
    assert ops[3].before[0] == 5001


# -- building ----------------------------------------------------------------------------------

def test_factory_protocol_and_pickle():
    p = parser()
    assert isinstance(p, DelimParser) and isinstance(p, Parser)
    clone = pickle.loads(pickle.dumps(p))
    assert [o.after for o in clone.parse(Message("m", body=MESSAGE_1))] == [
        o.after for o in p.parse(Message("m", body=MESSAGE_1))]


def test_unknown_parser_type():
    with pytest.raises(PropertyError, match="parser.type: unknown parser type 'csv'"):
        build_parser(Settings(parser_type="csv"), DEFS)


def test_unsupported_column_type_stops_with_a_definition_error():
    defs = parse_defs(SALES_DEF.replace("TXT       64", "TXT       70"), "x.def")
    p = build_parser(settings_from_text(SALES_PROPS), defs)
    with pytest.raises(DefinitionError, match="SALES.NOTES column TXT: type 70 not supported"):
        p.parse(Message("m", body="I,SALES.NOTES,2024-03-01 10:15:30,W,1,a,b"))


def test_build_errors_name_the_property():
    with pytest.raises(PropertyError, match="delim.optype"):
        parser(props=SALES_PROPS.replace("optype,schemaandtable", "op,schemaandtable"))
    with pytest.raises(PropertyError, match="delim.dateformat: date format 'MM-DD': no year"):
        parser("delim.dateformat=MM-DD\n")
    with pytest.raises(PropertyError, match=r"delim.dateformat.SALES.X.Y: "):
        parser("delim.dateformat.SALES.X.Y=YYYY F10\n")


def quoted(text: str) -> str:
    if text in ("", "NULL") or any(c in text for c in ',"\n\r') or text.startswith('"'):
        return '"' + text.replace('"', '""') + '"'
    return text


VALUE = st.text(alphabet='ab ,"\n\rNUL$é', max_size=10)


@given(st.lists(st.tuples(VALUE, st.one_of(st.none(), st.text(alphabet='x,"', max_size=2))),
                min_size=1, max_size=5))
def test_any_text_round_trips_through_quoting(rows):
    """Whatever the text, quoting it the csv way and parsing gives it back (NULL apart)."""
    body = "\n".join(f"I,SALES.NOTES,2024-03-01 10:15:30,W,{i},{quoted(txt)},"
                     f"{'NULL' if code is None else quoted(code)}"
                     for i, (txt, code) in enumerate(rows))
    ops = PARSER.parse(Message("m", body=body))
    assert [op.after for op in ops] == [
        [txt, None if code is None else code.ljust(2)] for txt, code in rows]


PARSER = parser()
