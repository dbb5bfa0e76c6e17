"""The fixed-width parser in copybook mode: properties.md §4, §15.1, sourcedefs.md §7.1."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.copybook import compile_copybook
from parsers.decoders import encoder_for
from parsers.model import MISSING, TX_BEGIN, TX_END, Message
from props.errors import MessageError, PropertyError

from .conftest import RETAIL_CPY, RETAIL_MESSAGES, RETAIL_PROPS


def us(text: str) -> int:
    dt = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def msg(body, id="m1", **headers) -> Message:
    return Message(id, dict(headers), body)


def error_of(parser, body, id="m1", **headers) -> MessageError:
    with pytest.raises(MessageError) as info:
        parser.parse(msg(body, id, **headers))
    return info.value


# -- properties.md §15.1 -------------------------------------------------------------------------

def test_example_15_1(retail):
    ops = [retail.parse(msg(body, f"id{i}"))[0] for i, body in enumerate(RETAIL_MESSAGES, 1)]
    a, b, c = ops
    assert [o.table.name for o in ops] == ["RETAIL.CUSTOMER", "RETAIL.ORDERS", "RETAIL.CUSTOMER"]
    assert [o.optype for o in ops] == ["I", "I", "U"]
    assert [o.timestamp for o in ops] == [us("2024-03-01 10:15:30.123456"),
                                          us("2024-03-01 10:15:31"), us("2024-03-02 09:00:00")]
    assert [o.seqid for o in ops] == ["id1", "id2", "id3"]  # $jmsid
    assert [o.txid for o in ops] == [None, None, None]  # *txid: the assembler's counter
    assert [o.txind for o in ops] == [None, None, None]
    assert [c.name for c in a.table.columns] == ["HDR_SOURCE", "CUST_ID", "CUST_NAME",
                                                 "BALANCE", "OPENED"]
    # HDR_SOURCE leads (no item uses it); CHAR keeps its padding; 9(7)V99 → 1250.00 (× 10^2)
    assert a.after == ["POS1", 1001, "ACME TRADING".ljust(30), 125000, "2024-03-01"]
    assert a.before is None
    assert b.after == ["POS1", 5001, 1001, 125000, "N"]
    assert c.after == ["POS1", 1001, "ACME TRADING LTD".ljust(30), 99950, "2024-03-01"]
    assert c.before is None  # no before values in a fixed-width message
    assert a.message_id == "id1" and a.ordinal == 0


def test_delete_is_a_before_image_and_short_record_is_missing(retail):
    (op,) = retail.parse(msg("2024-03-02-09.30.00.000000DORDERS  POS10000005001"))
    assert op.optype == "D" and op.after is None
    assert op.before == ["POS1", 5001, MISSING, MISSING, MISSING]


def test_short_record_ending_after_a_complete_field(retail):
    body = RETAIL_MESSAGES[0][:39 + 38]  # up to the end of CUST-NAME
    (op,) = retail.parse(msg(body))
    assert op.after == ["POS1", 1001, "ACME TRADING".ljust(30), MISSING, MISSING]


def test_record_cut_inside_a_field_is_an_error(retail):
    error = error_of(retail, RETAIL_MESSAGES[0][:39 + 42], id="ID:cut")
    text = str(error)
    assert error.source == "ID:cut"
    assert "field BALANCE" in text and "offset 77" in text and "inside the field" in text


def test_missing_key_is_an_error(retail):
    error = error_of(retail, RETAIL_MESSAGES[1][:39], id="k1")
    assert "key column ORDER_ID is missing" in str(error)
    assert str(error).startswith("message k1: field ORDER-ID")


def test_record_shorter_than_its_header(retail):
    error = error_of(retail, "2024-03-01-10.15.30.123456ACUSTOMER", id="short")
    assert str(error) == ("message short: header: 35 characters, shorter than the 39 of "
                          "header HEADER")


def test_unknown_record_name_names_the_field(retail):
    body = RETAIL_MESSAGES[0].replace("CUSTOMER", "SUPPLIER")
    error = error_of(retail, body, id="u1")
    assert error.source == "u1"
    assert error.position == "field HDR-REC-ID"
    assert "unknown table RETAIL.SUPPLIER" in error.reason


def test_non_numeric_character_in_a_numeric_field(retail):
    body = RETAIL_MESSAGES[0][:39 + 38] + "0001X5000" + RETAIL_MESSAGES[0][39 + 47:]
    error = error_of(retail, body, id="n1")
    assert error.source == "n1"
    assert error.position == "field BALANCE (offset 77, length 9)"
    assert "'0001X5000'" in error.reason


def test_bad_date_names_the_field(retail):
    body = RETAIL_MESSAGES[0][:-6] + "241301"
    error = error_of(retail, body)
    assert error.position == "field OPENED (offset 86, length 6)"
    assert "not a valid date" in error.reason


def test_bad_header_timestamp_names_the_item(retail):
    body = "2024-03-01 10:15:30.123456" + RETAIL_MESSAGES[0][26:]
    error = error_of(retail, body)
    assert "fixed.timestamp (field HDR-TIMESTAMP)" in str(error)
    assert error.position == "header HEADER"


def test_bad_optype_value(retail):
    body = RETAIL_MESSAGES[0][:26] + "X" + RETAIL_MESSAGES[0][27:]
    assert "optype value 'X' is not one of 'A', 'C', 'D'" in str(error_of(retail, body))


def test_blank_numeric_and_date_are_null(retail):
    body = RETAIL_MESSAGES[0][:39 + 38] + " " * 15
    (op,) = retail.parse(msg(body))
    assert op.after == ["POS1", 1001, "ACME TRADING".ljust(30), None, None]


def test_trailing_characters(retail):
    base = RETAIL_MESSAGES[1]
    assert retail.parse(msg(base + "   "))[0].after[-1] == "N"
    assert retail.parse(msg(base + "\n"))[0].after[-1] == "N"
    assert retail.parse(msg(base + "\r\n"))[0].after[-1] == "N"
    short = RETAIL_MESSAGES[0][:39 + 38] + "\n"  # a line break does not cut the next field
    assert retail.parse(msg(short))[0].after[3] is MISSING
    error = error_of(retail, base + "  x")
    assert "non-blank characters after the 69-character record" in str(error)


def test_record_name_matches_case_insensitively_with_dash_as_underscore(make):
    cpy = RETAIL_CPY.replace("01  ORDERS.", "01  ORDER-LINE.")
    parser = make(RETAIL_PROPS, retail__cpy=cpy)
    body = RETAIL_MESSAGES[1].replace("ORDERS  ", "order-li") + ""
    # the 8-character HDR-REC-ID cannot hold ORDER-LINE: use two concatenated sources
    assert "unknown table RETAIL.order-li" in str(error_of(parser, body))
    props = RETAIL_PROPS.replace("fixed.table=HDR-REC-ID", "fixed.table=HDR-REC-ID,$Rest")
    parser = make(props, retail__cpy=cpy)
    body = RETAIL_MESSAGES[1].replace("ORDERS  ", "order-  ")
    (op,) = parser.parse(msg(body, Rest="line"))
    assert op.table.name == "RETAIL.ORDER_LINE"
    assert op.after[1] == 5001


def test_table_from_several_header_fields(make):
    cpy = """\
       01  HDR.
           05  REC-ID     PIC X(6).
           05  REC-VER    PIC X(2).
           05  OPTYPE     PIC X.
       01  CUST01.
           05  ID         PIC 9(3).
       01  CUST02.
           05  ID         PIC 9(3).
           05  NAME       PIC X(4).
"""
    props = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=c.cpy
fixed.header=HDR
fixed.table=Rec-Id,rec_ver
fixed.schema=S
"""
    parser = make(props, c__cpy=cpy)
    (a,) = parser.parse(msg("CUST  01I007"))
    (b,) = parser.parse(msg("CUST  02U008ABCD"))
    assert (a.table.name, a.optype, a.after) == ("S.CUST01", "I", [7])
    assert (b.table.name, b.optype, b.after) == ("S.CUST02", "U", [8, "ABCD"])
    assert a.timestamp > 0 and a.seqid == "m1"  # defaults: *ts, $jmsid


def test_items_from_jms_properties_and_constants(make):
    props = RETAIL_PROPS.replace("fixed.timestamp=HDR-TIMESTAMP", "fixed.timestamp=$JMSTimestamp")
    props = props.replace("fixed.txid=*txid", "fixed.txid=$JMSTxId")
    props += 'fixed.txname="fixedtx"\nfixed.txowner=$Owner\nfixed.txind=$TX_IND\n'
    parser = make(props, retail__cpy=RETAIL_CPY)
    (op,) = parser.parse(msg(RETAIL_MESSAGES[0], timestamp="1709288130123", JMSTxId="TX-7",
                             owner="jsmith", TX_IND="B"))
    assert op.timestamp == 1709288130123000
    assert (op.txid, op.txname, op.txowner, op.txind) == ("TX-7", "fixedtx", "jsmith", TX_BEGIN)
    # every header field but HDR-FUNCTION and HDR-REC-ID is now a column
    assert [c.name for c in op.table.columns][:2] == ["HDR_TIMESTAMP", "HDR_SOURCE"]
    # HDR-TIMESTAMP is a DATETIME column (its DATEFORMAT comment): written in trail form
    assert op.after[:2] == ["2024-03-01:10:15:30.123456", "POS1"]
    error = error_of(parser, RETAIL_MESSAGES[0], timestamp="1", JMSTxId="T")
    assert "fixed.txind" in str(error) and "TX_IND" in str(error)


def test_default_header_field_names(make):
    cpy = """\
       01  HEADER.
           05  OPTYPE          PIC X.
           05  SCHEMAANDTABLE  PIC X(12).
      * DATEFORMAT YYYYMMDDHHMISS
           05  TIMESTAMP       PIC 9(14).
           05  TXIND           PIC X.
           05  ID              PIC 9(6).
           05  ORIGIN          PIC X(3).
       01  ITEM.
           05  CODE            PIC X(3).
"""
    props = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=h.cpy
fixed.header=HEADER
fixed.schema="IGNORED"
"""
    parser = make(props, h__cpy=cpy)
    (op,) = parser.parse(msg("IIGNORED.ITEM20240301101530B000042NYCabc"))
    assert (op.table.name, op.optype, op.txind, op.seqid) == ("IGNORED.ITEM", "I", TX_BEGIN,
                                                              "000042")
    assert op.timestamp == us("2024-03-01 10:15:30")
    assert [c.name for c in op.table.columns] == ["ORIGIN", "CODE"]
    assert op.after == ["NYC", "abc"]
    (end,) = parser.parse(msg("DIGNORED.ITEM20240301101530E000043NYCabc"))
    assert end.txind == TX_END and end.before == ["NYC", "abc"]


def test_timestamp_format_property_overrides_the_comment(make):
    props = RETAIL_PROPS + "fixed.timestamp.format=YYYY-MM-DD-HH.MI.SS.FF\n"
    parser = make(props, retail__cpy=RETAIL_CPY)
    error = error_of(parser, RETAIL_MESSAGES[0])
    assert "YYYY-MM-DD-HH.MI.SS.FF" in str(error)


def test_unknown_header_field_is_a_property_error(make):
    props = RETAIL_PROPS.replace("fixed.optype=HDR-FUNCTION", "fixed.optype=HDR-FUNC")
    with pytest.raises(PropertyError, match="fixed.optype: no header field named HDR-FUNC"):
        make(props, retail__cpy=RETAIL_CPY)


def test_missing_header_record_is_a_property_error(make):
    props = RETAIL_PROPS.replace("fixed.header=HEADER", "fixed.header=HDR")
    with pytest.raises(PropertyError, match="fixed.header"):
        make(props, retail__cpy=RETAIL_CPY)


# -- signs, points, wide numbers -------------------------------------------------------------------

SIGNS_CPY = """\
       01  H.
           05  OP        PIC X.
           05  TBL       PIC X(5).
       01  NUMS.
           05  K         PIC 9(2).
           05  OVER      PIC S9(3)V99.
           05  LEAD-SEP  PIC S9(3)V99 SIGN LEADING SEPARATE.
           05  TRAIL-SEP PIC S9(3) SIGN TRAILING SEPARATE.
           05  POINT     PIC 99.99.
           05  WIDE      PIC 9(20).
           05  SCALED    PIC 9(3)PP.
"""
SIGNS_PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=s.cpy
fixed.header=H
fixed.optype=OP
fixed.table=TBL
fixed.schema=N
"""


def test_signs_points_and_wide_numbers(make):
    parser = make(SIGNS_PROPS, s__cpy=SIGNS_CPY)
    body = "INUMS " + "01" + "1234}" + "-00012" + "045+" + "12.34" + "0" * 19 + "7" + "123"
    (op,) = parser.parse(msg(body))
    # 123.40 negative (} = -0), -0.12, 45, 12.34, wide as NUMBER text, 123 × 100
    assert op.after == [1, -12340, -12, 45, 1234, "7", 12300]
    positive = "INUMS " + "01" + "1234A" + "+12345" + "045-" + "01.50" + "1" * 20 + "001"
    (op,) = parser.parse(msg(positive))
    assert op.after == [1, 12341, 12345, -45, 150, "1" * 20, 100]
    wide = next(c for c in op.table.columns if c.name == "WIDE")
    assert wide.is_number_text


def test_overpunch_in_an_unsigned_field_is_an_error(make):
    parser = make(SIGNS_PROPS, s__cpy=SIGNS_CPY)
    body = "INUMS 0{" + "1234}" + "-00012" + "045+" + "12.34" + "0" * 20 + "123"
    error = error_of(parser, body)
    assert error.position == "field K (offset 6, length 2)"


# -- byte messages in EBCDIC code pages -------------------------------------------------------------

BIN_CPY = """\
       01  HDR.
           05  H-OP        PIC X.
           05  H-TABLE     PIC X(8).
           05  H-SEQ       PIC 9(6).
           05  H-CNT       PIC S9(4) COMP.
       01  ACCOUNT.
      * KEY
           05  ACCT-NO     PIC S9(9) COMP.
           05  ACCT-NAME   PIC X(10).
           05  BAL         PIC S9(7)V99 COMP-3.
           05  LIMIT-AMT   PIC S9(5)V99.
           05  DELTA       PIC S9(3) SIGN LEADING SEPARATE.
           05  NCOUNT      PIC 99.
           05  ITEMS OCCURS 1 TO 3 DEPENDING ON NCOUNT.
               10  ITEM-CODE PIC X(2).
"""
BIN_PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=bin.cpy
fixed.header=HDR
fixed.optype=H-OP
fixed.table=H-TABLE
fixed.schema="BANK"
fixed.seqid=H-SEQ
fixed.encoding={encoding}
"""

ACCOUNT = {"ACCT-NO": -12345, "ACCT-NAME": "Zoë [x]", "BAL": Decimal("-1234.56"),
           "LIMIT-AMT": Decimal("-99.01"), "DELTA": -5, "NCOUNT": 2,
           "ITEM-CODE": ["AB", "CD", "EF"]}


def encode(record: str, values: dict, encoding: str) -> bytes:
    """A record's bytes through the decoders' inverse encoders."""
    out = b""
    for f in compile_copybook(BIN_CPY).record(record).fields:
        v = values[f.name]
        out += encoder_for(f, encoding)(v[f.occurs_index[0] - 1] if isinstance(v, list) else v)
    return out


def bin_message(encoding: str, op: str = "I", **changes) -> bytes:
    head = encode("HDR", {"H-OP": op, "H-TABLE": "ACCOUNT", "H-SEQ": 1, "H-CNT": 7}, encoding)
    return head + encode("ACCOUNT", {**ACCOUNT, **changes}, encoding)


@pytest.mark.parametrize("encoding", ["cp037", "cp500", "cp1140", "cp273", "cp1047"])
def test_ebcdic_byte_message_with_binary_packed_and_zoned_fields(make, encoding):
    parser = make(BIN_PROPS.format(encoding=encoding), bin__cpy=BIN_CPY)
    body = bin_message(encoding)
    assert body[:1] == b"\xc9"  # 'I' in EBCDIC
    (op,) = parser.parse(msg(body))
    assert (op.table.name, op.optype, op.seqid) == ("BANK.ACCOUNT", "I", "000001")
    assert [c.name for c in op.table.columns][:2] == ["H_CNT", "ACCT_NO"]
    # H_CNT (COMP header field, unused) leads; ITEM_CODE_3 is beyond NCOUNT: missing
    assert op.after == [7, -12345, "Zoë [x]   ", -123456, -9901, -5, 2, "AB", "CD", MISSING]


def test_ebcdic_zero_overpunch_bytes(make):
    parser = make(BIN_PROPS.format(encoding="cp037"), bin__cpy=BIN_CPY)
    body = bytearray(bin_message("cp037"))
    at = 15 + 2 + 4 + 10 + 5  # LIMIT-AMT in the data record
    body[at:at + 7] = b"\xf0\xf0\xf0\xf1\xf2\xf3\xd0"  # -00123.0 → D0 zone on the last digit
    (op,) = parser.parse(msg(bytes(body)))
    assert op.after[4] == -1230
    body[at + 6] = 0xC0  # +0
    (op,) = parser.parse(msg(bytes(body)))
    assert op.after[4] == 1230


def test_bad_packed_nibble(make):
    parser = make(BIN_PROPS.format(encoding="cp037"), bin__cpy=BIN_CPY)
    body = bytearray(bin_message("cp037"))
    at = 17 + 4 + 10  # BAL
    body[at] = 0x1A  # 'A' is not a decimal digit
    error = error_of(parser, bytes(body), id="p1")
    assert error.source == "p1"
    assert error.position == "field BAL (offset 31, length 5)"
    assert "invalid packed decimal" in error.reason


def test_ascii_byte_message_and_invalid_bytes(make):
    cpy = "       01  H.\n           05  OP  PIC X.\n       01  T.\n           05  V  PIC X(3).\n"
    props = ("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=t.cpy\n"
             "fixed.header=H\nfixed.optype=OP\nfixed.table=$T\nfixed.schema=S\n")
    parser = make(props, t__cpy=cpy)
    (op,) = parser.parse(msg(b"Iabc", T="T"))
    assert op.after == ["abc"]
    error = error_of(parser, b"Ia\xe9c", T="T")
    assert error.position == "field V (offset 1, length 3)"
    assert "not valid in ascii" in error.reason
    latin = make(props + "fixed.encoding=latin-1\n", t__cpy=cpy)
    assert latin.parse(msg(b"Ia\xe9c", T="T"))[0].after == ["aéc"]


def test_text_message_with_the_same_layout_as_bytes(make):
    """A text body is characters already: ``fixed.encoding`` does not apply to it."""
    parser = make(BIN_PROPS.format(encoding="cp037"), bin__cpy=BIN_CPY)
    latin = bin_message("latin-1").decode("latin-1")
    assert parser.parse(msg(latin))[0].after[2] == "Zoë [x]   "


def test_odo_key_missing_and_counter_values(make):
    parser = make(BIN_PROPS.format(encoding="cp037"), bin__cpy=BIN_CPY)
    (op,) = parser.parse(msg(bin_message("cp037", NCOUNT=3)))
    assert op.after[-3:] == ["AB", "CD", "EF"]
    (op,) = parser.parse(msg(bin_message("cp037", NCOUNT=0)))
    assert op.after[-3:] == [MISSING, MISSING, MISSING]


def test_parser_pickles(retail):
    clone = pickle.loads(pickle.dumps(retail))
    assert clone.parse(msg(RETAIL_MESSAGES[0]))[0].after == retail.parse(
        msg(RETAIL_MESSAGES[0]))[0].after


# -- exactness: encoder → message → parser is the identity ---------------------------------------

ENCODINGS = ("cp037", "cp1047", "latin-1")


@pytest.fixture
def bin_parsers(make):
    return {e: make(BIN_PROPS.format(encoding=e), bin__cpy=BIN_CPY) for e in ENCODINGS}


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(acct=st.integers(-(10**9) + 1, 10**9 - 1),
       bal=st.integers(-(10**9) + 1, 10**9 - 1),
       limit=st.integers(-(10**7) + 1, 10**7 - 1),
       delta=st.integers(-999, 999),
       encoding=st.sampled_from(ENCODINGS))
def test_binary_packed_and_zoned_values_are_exact(bin_parsers, acct, bal, limit, delta,
                                                  encoding):
    body = bin_message(encoding, **{"ACCT-NO": acct, "BAL": Decimal(bal).scaleb(-2),
                                    "LIMIT-AMT": Decimal(limit).scaleb(-2), "DELTA": delta})
    (op,) = bin_parsers[encoding].parse(msg(body))
    after = op.after
    assert [after[1], after[3], after[4], after[5]] == [acct, bal, limit, delta]


def test_header_field_items_lose_their_padding_but_seqid_keeps_its_width(make):
    cpy = """\
       01  H.
           05  OP      PIC X.
           05  SEQ     PIC X(6).
           05  TX      PIC X(8).
           05  WHO     PIC X(8).
       01  T.
           05  V       PIC X(2).
"""
    props = ("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=t.cpy\n"
             "fixed.header=H\nfixed.optype=OP\nfixed.table=$T\nfixed.schema=S\n"
             "fixed.seqid=SEQ\nfixed.txid=TX\nfixed.txname=WHO\nfixed.txowner=WHO\n")
    parser = make(props, t__cpy=cpy)
    (op,) = parser.parse(msg("I  42  TX-7    jsmith  ab", T="T"))
    assert (op.seqid, op.txid, op.txname, op.txowner) == ("  42  ", "TX-7", "jsmith", "jsmith")
    assert op.after == ["ab"]


def test_repeated_tables_take_the_same_results_and_errors(retail):
    """Once a table and optype are known, later messages take a shortcut: same results,
    same located errors."""
    first = [retail.parse(msg(b, f"a{i}"))[0] for i, b in enumerate(RETAIL_MESSAGES * 2)]
    again = [retail.parse(msg(b, f"a{i}"))[0] for i, b in enumerate(RETAIL_MESSAGES * 2)]
    for x, y in zip(first, again, strict=True):
        assert (x.table, x.optype, x.timestamp, x.seqid, x.after, x.before) == (
            y.table, y.optype, y.timestamp, y.seqid, y.after, y.before)
    bad = RETAIL_MESSAGES[0][:39 + 38] + "0001X5000" + RETAIL_MESSAGES[0][39 + 47:]
    error = error_of(retail, bad, id="late")
    assert (error.source, error.position) == ("late", "field BALANCE (offset 77, length 9)")
    bad_ts = "2024-13-01" + RETAIL_MESSAGES[0][10:]
    assert "fixed.timestamp" in str(error_of(retail, bad_ts))
    accented = RETAIL_MESSAGES[0].replace("ACME TRADING", "ÀCME TRADING")
    assert retail.parse(msg(accented))[0].after[2] == "ÀCME TRADING".ljust(30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 25),
                          st.sampled_from("0123456789012345678 .-:x")), max_size=6))
def test_the_shortcut_reads_timestamps_as_the_general_path(retail, changes):
    """The shortcut (``_fast``) reads the timestamp field straight through its format: the
    same Op as the general path (``_parse``), and the same error, for any timestamp text."""
    def outcome(fn, m):
        try:
            op = fn(m)
        except MessageError as error:
            return error.reason, error.position
        return None if op is None else (op.table, op.optype, op.timestamp, op.seqid, op.after)

    for n, at, char in changes:
        body = RETAIL_MESSAGES[n]
        body = body[:at] + char + body[at + 1:]
        retail.parse(msg(RETAIL_MESSAGES[n]))  # the table and optype known: the shortcut runs
        general = outcome(retail._parse, msg(body))
        fast = outcome(retail._fast, msg(body))
        assert fast is None or fast == general
        assert outcome(lambda m: retail.parse(m)[0], msg(body)) == general


EBCDIC_CPY = """\
       01  HEADER.
           05  HDR-FUNCTION    PIC X.
           05  HDR-REC-ID      PIC X(8).
      * DATEFORMAT YYYYMMDDHHMISS
           05  HDR-TIMESTAMP   PIC 9(14).
       01  ACCOUNT.
      * KEY
           05  ACCT-NO         PIC 9(6).
           05  NAME            PIC X(8).
           05  BALANCE         PIC S9(5)V99.
           05  FEE             PIC S9(3)V99 COMP-3.
"""
EBCDIC_BODY = ("IACCOUNT 20240301101530" "000042" "ACME    " "001250{").encode("cp037") + (
    bytes.fromhex("01250c"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["fixed.seqid=*seqid\n", "fixed.seqid=*seqid\nfixed.txname=HDR-FUNCTION\n",
                        ""]),
       st.lists(st.tuples(st.integers(0, len(EBCDIC_BODY) - 1), st.integers(0, 255)),
                max_size=4))
def test_the_shortcut_reads_byte_headers_as_the_general_path(make, items, changes):
    """In a byte body the shortcut reads the header fields its items need (only the timestamp
    when no other item reads one): the same Op as the general path, and the same error, for
    any bytes in the header or the record."""
    def outcome(fn, m):
        try:
            op = fn(m)
        except MessageError as error:
            return error.reason, error.position
        return None if op is None else (op.table, op.optype, op.timestamp, op.seqid,
                                        op.txname, op.after)

    parser = make("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=t.cpy\n"
                  "fixed.header=HEADER\nfixed.timestamp=HDR-TIMESTAMP\n"
                  "fixed.optype=HDR-FUNCTION\nfixed.table=HDR-REC-ID\nfixed.schema=S\n"
                  "fixed.encoding=cp037\n" + items, t__cpy=EBCDIC_CPY)
    parser.parse(msg(EBCDIC_BODY))  # the table and optype known: the shortcut runs
    body = bytearray(EBCDIC_BODY)
    for at, byte in changes:
        body[at] = byte
    general = outcome(parser._parse, msg(bytes(body)))
    fast = outcome(parser._fast, msg(bytes(body)))
    assert fast is None or fast == general
    assert outcome(lambda m: parser.parse(m)[0], msg(bytes(body))) == general
    if not changes:
        assert fast == general  # (the shortcut really runs)


def test_user_defined_table_in_a_byte_message(make):
    """A user-defined table beside the copybook records: its text columns are read in
    fixed.encoding from a byte body, like the copybook's."""
    cpy = "       01  H.\n           05  OP  PIC X.\n           05  TBL PIC X(4).\n"
    props = ("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=t.cpy\n"
             "fixed.header=H\nfixed.optype=OP\nfixed.table=TBL\nfixed.schema=S\n"
             "fixed.encoding=cp037\nfixed.userdefs.tables=S.U\nfixed.userdefs.S.U.columns=A,N\n"
             "fixed.userdefs.S.U.A=char 3\nfixed.userdefs.S.U.N=vchar 4\n")
    parser = make(props, t__cpy=cpy)
    body = "IU   abcxy  ".encode("cp037")
    for _ in range(2):  # the first message takes the general path, the next the fast one
        (op,) = parser.parse(msg(body))
        assert (op.table.name, op.after) == ("S.U", ["abc", "xy"])


# -- without fixed.schema: the table value names the schema (properties.md §3.5, §4) ---------

SCHEMALESS_CPY = """\
       01  HEADER.
           05  HDR-FUNCTION    PIC X.
           05  HDR-TABLE       PIC X(20).
       01  CUSTOMER.
      * KEY
           05  CUST-ID         PIC 9(4).
           05  CUST-NAME       PIC X(10).
"""
SCHEMALESS_PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=shop.cpy
fixed.header=HEADER
fixed.optype=HDR-FUNCTION
fixed.table=HDR-TABLE
fixed.timestamp=*ts
"""


def test_without_schema_each_message_names_its_schema(make):
    parser = make(SCHEMALESS_PROPS, shop__cpy=SCHEMALESS_CPY)
    bodies = ["ISHOP1.CUSTOMER      0001ALICE     ", "Ishop2.customer      0002BOB       ",
              "ISHOP1.CUSTOMER      0003CAROL     "]
    ops = [parser.parse(msg(b, f"m{i}"))[0] for i, b in enumerate(bodies)]
    # the schema as the message spells it, the record as the definitions do
    assert [o.table.name for o in ops] == ["SHOP1.CUSTOMER", "shop2.CUSTOMER", "SHOP1.CUSTOMER"]
    assert ops[0].table is ops[2].table  # one table object a name: encoders are cached by it
    assert [o.after[:2] for o in ops] == [[1, "ALICE     "], [2, "BOB       "], [3, "CAROL     "]]
    assert pickle.loads(pickle.dumps(parser)).parse(msg(bodies[1]))[0].table.name == \
        "shop2.CUSTOMER"


def test_without_schema_a_one_part_or_unknown_table_is_a_message_error(make):
    parser = make(SCHEMALESS_PROPS, shop__cpy=SCHEMALESS_CPY)
    assert "table 'CUSTOMER': two-part name needed (no schema)" in \
        error_of(parser, "ICUSTOMER             0001ALICE     ").reason
    assert "unknown table SHOP1.ORDERS (no such 01 record)" in \
        error_of(parser, "ISHOP1.ORDERS         0001ALICE     ").reason
