"""The fixed-width parser in sourcedefs mode: properties.md §4, §7, §15.2; sourcedefs.md §5, §7.2."""

from __future__ import annotations

import pickle

import pytest

from parsers.model import MISSING, TX_WHOLE, Message
from props.errors import DefinitionError, MessageError

from .conftest import TCUST_MESSAGES, TCUST_PROPS, TCUSTMER_DEF


def msg(body, id="m1", **headers) -> Message:
    return Message(id, dict(headers), body)


def error_of(parser, body, id="m1", **headers) -> MessageError:
    with pytest.raises(MessageError) as info:
        parser.parse(msg(body, id, **headers))
    return info.value


def test_example_15_2(tcust):
    assert [len(m) for m in TCUST_MESSAGES] == [33 + 78, 33 + 74]
    a = tcust.parse(msg(TCUST_MESSAGES[0], "0001.msg"))[0]
    b = tcust.parse(msg(TCUST_MESSAGES[1], "0002.msg"))[0]
    assert (a.table.name, a.optype, a.seqid, a.txid) == ("GG.JMSCAP_TCUSTMER", "I", "0001.msg",
                                                          None)
    assert [c.name for c in a.table.columns] == ["CUST_CODE", "NAME", "CITY", "STATE"]
    # VARCHAR values lose trailing blanks; CHAR keeps its length
    assert a.after == ["WILL", "BG SOFTWARE CO.", "SEATTLE", "WA"]
    assert (b.optype, b.after, b.before) == ("U", ["ANN", "ANN'S BOATS", "NEW YORK", "NY"], None)
    assert a.timestamp > 0  # *ts


def test_data_follows_the_fetch_offsets(tcust):
    """Characters in the gaps between fetch-offset slots are not read."""
    body = (TCUST_MESSAGES[0][:33] + "WILLxxxxxx" + "BG".ljust(30) + "yyyyyy" + "CITY".ljust(20)
            + "zzzzzz" + "WA")
    (op,) = tcust.parse(msg(body))
    assert op.after == ["WILL", "BG", "CITY", "WA"]


def test_short_records(tcust):
    (op,) = tcust.parse(msg(TCUST_MESSAGES[1][:33 + 40]))  # ends after NAME
    assert op.after == ["ANN", "ANN'S BOATS", MISSING, MISSING]
    (op,) = tcust.parse(msg(TCUST_MESSAGES[1][:33 + 44]))  # ends in the gap after NAME
    assert op.after == ["ANN", "ANN'S BOATS", MISSING, MISSING]
    error = error_of(tcust, TCUST_MESSAGES[1][:33 + 73], id="0009.msg")
    assert str(error).startswith("message 0009.msg: field STATE (offset 105, length 2): ")
    assert "inside the field (1 of 2 characters)" in str(error)
    error = error_of(tcust, TCUST_MESSAGES[1][:33 + 2])
    assert error.position == "field CUST_CODE (offset 33, length 4)"
    error = error_of(tcust, TCUST_MESSAGES[1][:33])
    assert "key column CUST_CODE is missing" in str(error)
    error = error_of(tcust, TCUST_MESSAGES[1][:20])
    assert "20 characters, shorter than the 33 of header qasource.HEADER" in str(error)


def test_non_blank_text_after_the_record(tcust):
    assert tcust.parse(msg(TCUST_MESSAGES[0] + "   \n"))[0].after[3] == "WA"
    error = error_of(tcust, TCUST_MESSAGES[0] + "!")
    assert "1 non-blank characters after the 111-character record" in str(error)


def test_unknown_table(tcust):
    body = TCUST_MESSAGES[0].replace("GG.JMSCAP_TCUSTMER", "GG.NOPE            ")
    error = error_of(tcust, body, id="x")
    assert str(error) == "message x: field schemaandtable: unknown table GG.NOPE"


def test_table_name_is_case_insensitive(tcust):
    body = TCUST_MESSAGES[0].replace("GG.JMSCAP_TCUSTMER", "gg.jmscap_tcustmer")
    assert tcust.parse(msg(body))[0].table.name == "GG.JMSCAP_TCUSTMER"


def test_ebcdic_byte_body_is_decoded_whole(make):
    parser = make(TCUST_PROPS + "fixed.encoding=cp037\n", tcustmer__def=TCUSTMER_DEF)
    (op,) = parser.parse(msg(TCUST_MESSAGES[0].encode("cp037")))
    assert op.after == ["WILL", "BG SOFTWARE CO.", "SEATTLE", "WA"]


def test_invalid_byte_names_its_offset(tcust):
    body = TCUST_MESSAGES[0].encode("ascii").replace(b"SEATTLE", b"SEA\xffTLE")
    error = error_of(tcust, body, id="b1")
    assert str(error) == "message b1: offset 82: byte 0xff is not valid in ascii"


TYPED_PROPS = """\
parser.type=fixed
fixed.schematype=sourcedefs
fixed.userdefs.tables=app.HDR,APP.ORDERS
fixed.userdefs.app.HDR.columns=op,tbl,ts,src,ind
fixed.userdefs.app.HDR.op=char 1
fixed.userdefs.app.HDR.tbl=vchar 10
fixed.userdefs.app.HDR.ts=datetime 19
fixed.userdefs.app.HDR.src=vchar 4
fixed.userdefs.app.HDR.ind=char 1
fixed.userdefs.APP.ORDERS.columns=ID,AMOUNT,CREATED,NOTE,CODE,BIG
fixed.userdefs.APP.ORDERS.ID=number 8 key
fixed.userdefs.APP.ORDERS.AMOUNT=number 9,2
fixed.userdefs.APP.ORDERS.CREATED=datetime 10
fixed.userdefs.APP.ORDERS.NOTE=vchar 10
fixed.userdefs.APP.ORDERS.CODE=char 3
fixed.userdefs.APP.ORDERS.BIG=number 20
fixed.header=app.HDR
fixed.optype=op
fixed.table=tbl
fixed.timestamp=ts
fixed.txind=ind
fixed.dateformat.app.HDR.ts=DD/MM/YYYY HH:MI:SS
fixed.dateformat.APP.ORDERS.CREATED=YYYYMMDD
"""
HEAD = "IAPP.ORDERS02/03/2024 10:15:30POS W"  # 1 + 10 + 19 + 4 + 1 = 35


def test_user_defined_tables_with_every_column_kind(make):
    parser = make(TYPED_PROPS)
    # number p[,s] is p digits, a sign and a point wide (External Length): 9, 11, 21;
    # datetime 10 is 10 wide whatever its format
    body = (HEAD + "000000042" + "   -1250.5 " + "20240301  " + "a note    " + "ab " + "0" * 20
            + "9")
    (op,) = parser.parse(msg(body))
    assert (op.table.name, op.optype, op.txind) == ("APP.ORDERS", "I", TX_WHOLE)
    assert op.timestamp == 1709374530_000000  # 2 March, DD/MM/YYYY of the header column
    # SRC is read by no item: it leads the table; NUMBER(9,2) is value × 100
    assert [c.name for c in op.table.columns] == ["src", "ID", "AMOUNT", "CREATED", "NOTE",
                                                  "CODE", "BIG"]
    assert op.after == ["POS", 42, -125050, "2024-03-01", "a note", "ab ", "9"]


def test_blank_numbers_and_dates_are_null_blank_text_is_empty(make):
    parser = make(TYPED_PROPS)
    body = HEAD + "000000042" + " " * 11 + " " * 10 + " " * 10 + "   " + " " * 21
    (op,) = parser.parse(msg(body))
    assert op.after == ["POS", 42, None, None, "", "   ", None]


def test_conversion_errors_name_the_column(make):
    parser = make(TYPED_PROPS)
    body = HEAD + "000000042" + "    12.345 " + "20240301"
    error = error_of(parser, body, id="c1")
    assert error.position == "field AMOUNT (offset 44, length 11)"
    assert "more than 2 fraction digits" in error.reason
    error = error_of(parser, HEAD + "00000004x")
    assert error.position == "field ID (offset 35, length 9)"
    assert "is not a number" in error.reason
    error = error_of(parser, HEAD + "000000042" + "          1" + "2024-03-  ")
    assert error.position == "field CREATED (offset 55, length 10)"


HEADER_DEF = """\
*+- Defgen version 4.0, Encoding UTF-8
*
Database type: GENERIC
*
Definition for table QA.HEADER
Record length: 44
Syskey: 0
Columns: 2
OPTYPE           64      3        0  0  0 1 0      3      3      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
SCHEMAANDTABLE   64     30        8  0  0 1 0     30     30      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
End of definition
*
Definition for table GG.T
Record length: 12
Syskey: 0
Columns: 1
C   0      2       0  0  0 1 0      2      2      0 0 0 0 0 1    0 1   0   96       -1      0 0 0
End of definition
"""


def test_header_from_the_defgen_file_uses_its_offsets_and_record_length(make):
    props = ("parser.type=fixed\nfixed.schematype=sourcedefs\nfixed.sourcedefs=h.def\n"
             "fixed.header=QA.HEADER\n")
    parser = make(props, h__def=HEADER_DEF)
    body = "D  .....GG.T" + " " * 26 + "......" + "XY"
    assert len(body) == 44 + 2
    (op,) = parser.parse(msg(body))
    assert (op.table.name, op.optype, op.before) == ("GG.T", "D", ["XY"])


def test_definitions_that_do_not_match_the_layout_are_rejected(make, tmp_path):
    from gendef.build import build_definitions
    from gendef.model import Definitions, Table, varchar_column
    from parsers.fixed import FixedParser
    from props.loader import settings_from_text

    (tmp_path / "tcustmer.def").write_text(TCUSTMER_DEF)
    settings = settings_from_text(TCUST_PROPS, env={})
    good = build_definitions(settings)
    bad = Definitions((Table.build("GG.JMSCAP_TCUSTMER", [varchar_column("X", 3)]),))
    assert FixedParser.build(settings, good)
    with pytest.raises(DefinitionError, match="GG.JMSCAP_TCUSTMER"):
        FixedParser.build(settings, bad)


def test_pickles(tcust):
    clone = pickle.loads(pickle.dumps(tcust))
    assert clone.parse(msg(TCUST_MESSAGES[1]))[0].after == ["ANN", "ANN'S BOATS", "NEW YORK",
                                                           "NY"]
