"""Field decoders and encoders: code pages (cp1047), zoned/overpunch, COMP, COMP-3, floats."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gendef.copybook import compile_copybook
from parsers.decoders import (
    DecodeOptions,
    decoder_for,
    encoder_for,
    ibm_float,
    ibm_float_bytes,
    lookup_codec,
    shortest_float32,
)
from props.errors import MessageError, PropertyError


def field(pic_clause: str, *, date: str | None = None):
    comment = f"      * {date}\n" if date else ""
    cb = compile_copybook(f"       01  R.\n{comment}           05  F  {pic_clause}.\n")
    return cb.records[0].fields[0]


# -- code pages ----------------------------------------------------------------------------------

def test_cp1047_codec() -> None:
    info = lookup_codec("cp1047")
    every = bytes(range(256))
    assert info.encode(info.decode(every)[0])[0] == every
    assert lookup_codec("IBM-1047").name == "cp1047"
    diffs = {b: (bytes([b]).decode("cp037"), info.decode(bytes([b]))[0])
             for b in range(256) if bytes([b]).decode("cp037") != info.decode(bytes([b]))[0]}
    assert diffs == {0x5F: ("¬", "^"), 0xAD: ("Ý", "["), 0xB0: ("^", "¬"), 0xBA: ("[", "Ý"),
                     0xBB: ("]", "¨"), 0xBD: ("¨", "]")}
    assert info.encode("[Hello]^")[0] == b"\xad\xc8\x85\x93\x93\x96\xbd\x5f"


def test_unknown_encoding_is_a_property_error() -> None:
    with pytest.raises(PropertyError, match="fixed.encoding"):
        lookup_codec("no-such-codepage")


def test_alnum_in_ebcdic_and_text() -> None:
    f = field("PIC X(5)")
    assert decoder_for(f, "cp037")(b"\xc1\xc2\xc3\x40\x40") == "ABC  "
    assert decoder_for(f, "cp1047")(b"\xad\xbd\x5f\x40\x40") == "[]^  "
    assert decoder_for(f)("AB   ") == "AB   "
    with pytest.raises(MessageError, match="field F"):
        decoder_for(f, "ascii")(b"\xff\xff\xff\xff\xff")


# -- zoned ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("clause", "text", "value"), [
    ("PIC 9(5)V99", "1234567", Decimal("12345.67")),
    ("PIC 9(4)", "0042", 42),
    ("PIC S9(4)", "004B", 42),
    ("PIC S9(4)", "004K", -42),
    ("PIC S9(4)", "004r", -42),
    ("PIC S9(4)", "000}", 0),
    ("PIC S9(3)V99", "1234{", Decimal("123.40")),
    ("PIC S9(4) SIGN LEADING", "J234", -1234),
    ("PIC S9(7)V99 SIGN LEADING SEPARATE", "-000012345", Decimal("-123.45")),
    ("PIC S9(3) SIGN TRAILING SEPARATE", "123+", 123),
    ("PIC 99.99", "12.34", Decimal("12.34")),
    ("PIC 9(4)", " 42 ", 42),
    ("PIC 9(4)", "    ", None),
    ("PIC S9(3)V99", "     ", None),
    ("PIC SPPP9(2)", "12", Decimal("0.00012")),
    ("PIC 9(2)PP", "12", 1200),
])
def test_zoned_text(clause: str, text: str, value) -> None:
    got = decoder_for(field(clause))(text)
    assert got == value and type(got) is type(value)
    assert decoder_for(field(clause))(text.encode("ascii")) == value


def test_zoned_ebcdic_overpunch_from_zones() -> None:
    f = field("PIC S9(4)")
    for page in ("cp037", "cp1047", "cp273", "cp500"):
        dec = decoder_for(f, page)
        assert dec(b"\xf0\xf0\xf4\xd2") == -42
        assert dec(b"\xf0\xf0\xf4\xc2") == 42
        assert dec(b"\xf0\xf0\xf4\xf2") == 42
        assert dec(b"\x40\x40\x40\x40") is None


@pytest.mark.parametrize(("clause", "text"), [
    ("PIC 9(4)", "12A4"), ("PIC 9(4)", "004K"), ("PIC 9(4)", "-042"),
    ("PIC S9(4)", "1-2-"), ("PIC 9(4)", "1.2.")])
def test_zoned_bad_values_raise(clause: str, text: str) -> None:
    with pytest.raises(MessageError, match="field F at offset 0: invalid number"):
        decoder_for(field(clause))(text)


def test_relaxed_overpunch_option() -> None:
    f = field("PIC 9(4)")
    assert decoder_for(f, options=DecodeOptions(strict_sign_overpunching=False))("123{") == 1230
    with pytest.raises(MessageError):
        decoder_for(f)("123{")


def test_blank_is_null_can_be_disabled() -> None:
    with pytest.raises(MessageError, match="blank"):
        decoder_for(field("PIC 9(3)"), options=DecodeOptions(blank_is_null=False))("   ")


def test_date_fields_stay_text() -> None:
    f = field("PIC 9(6)", date="YYMMDD")
    assert decoder_for(f)("000101") == "000101"
    assert decoder_for(f, "cp037")(b"\xf1\xf0\xf0\xf5\xf2\xf2") == "100522"


# -- binary, packed, floats ------------------------------------------------------------------------

@pytest.mark.parametrize(("clause", "data", "value"), [
    ("PIC S9(4) COMP", b"\xff\xfe", -2),
    ("PIC 9(4) COMP-5", b"\xff\xfe", 65534),  # COMP: beyond its PICTURE (test_trunc.py)
    ("PIC S9(9) BINARY", b"\xc4\x65\x36\x01", -999999999),
    ("PIC S9(7)V99 COMP-5", b"\x00\x00\x30\x39", Decimal("123.45")),
    ("PIC S9(18) COMP-4", b"\xff" * 8, -1),
    ("PIC 9(20) COMP", b"\x01" + b"\x00" * 8, 2**64),
    ("PIC S9(28) COMP", b"\xff" * 12, -1),
    ("PIC S9(5) COMP-3", b"\x12\x34\x5c", 12345),
    ("PIC S9(5) COMP-3", b"\x12\x34\x5d", -12345),
    ("PIC 9(5) COMP-3", b"\x12\x34\x5f", 12345),
    ("PIC S9(3)V99 COMP-3", b"\x12\x34\x5d", Decimal("-123.45")),
    ("PIC S9(18)V9(10) COMP-3", bytes.fromhex("1234567890123456789012345678" + "9c"),
     Decimal("1234567890123456789.0123456789")),
])
def test_binary_and_packed(clause: str, data: bytes, value) -> None:
    got = decoder_for(field(clause), "cp037")(data)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(("clause", "data"), [
    ("PIC S9(5) COMP-3", b"\x1a\x34\x5c"), ("PIC S9(5) COMP-3", b"\x12\x34\x56"),
    ("PIC 9(5) COMP-3", b"\x12\x34\x5d"), ("PIC S9(4) COMP", b"\x00"),
    ("PIC S9(5) COMP-3", b"\x12\x34")])
def test_bad_binary_bytes_raise(clause: str, data: bytes) -> None:
    with pytest.raises(MessageError, match="field F"):
        decoder_for(field(clause))(data)


def test_floats_ibm_and_ieee() -> None:
    c1, c2 = field("COMP-1"), field("COMP-2")
    assert decoder_for(c1)(bytes.fromhex("41100000")) == Decimal(1)
    assert decoder_for(c1)(bytes.fromhex("c276a000")) == Decimal("-118.625")
    assert decoder_for(c2)(ibm_float_bytes(0.1, 8)) == Decimal("0.1")
    ieee = DecodeOptions(floating_point_format="IEEE754")
    assert decoder_for(c1, options=ieee)(struct.pack(">f", -30503.93)) == Decimal("-30503.93")
    assert decoder_for(c2, options=ieee)(struct.pack(">d", -3.0503932576762e9)) == Decimal(
        "-3050393257.6762")
    with pytest.raises(MessageError, match="not a number"):
        decoder_for(c2, options=ieee)(struct.pack(">d", float("nan")))
    assert ibm_float(bytes(4)) == 0.0
    assert decoder_for(c1)(bytes.fromhex("7f100000")) == Decimal(repr(16.0**62))  # beyond float32
    assert decoder_for(c1)(bytes.fromhex("00100000")) == Decimal(repr(16.0**-65))
    assert shortest_float32(struct.unpack(">f", struct.pack(">f", 0.1))[0]) == "0.1"


# -- encoders: encode → decode is the identity -----------------------------------------------------

NUMERIC = [
    ("PIC S9(4) COMP", -9999, 9999, 0), ("PIC 9(9) BINARY", 0, 999_999_999, 0),
    ("PIC S9(18) COMP-5", -(10**18) + 1, 10**18 - 1, 0), ("PIC S9(20) COMP", -(10**20) + 1,
                                                           10**20 - 1, 0),
    ("PIC S9(7)V99 COMP-3", -(10**9) + 1, 10**9 - 1, 2), ("PIC 9(6) COMP-3", 0, 999_999, 0),
    ("PIC S9(5)V9(3)", -(10**8) + 1, 10**8 - 1, 3), ("PIC 9(5)", 0, 99_999, 0),
    ("PIC S9(4) SIGN LEADING", -9999, 9999, 0),
    ("PIC S9(3)V9 SIGN TRAILING SEPARATE", -9999, 9999, 1),
    ("PIC S9(3)V9 SIGN LEADING SEPARATE", -9999, 9999, 1), ("PIC 9(3).99", 0, 99_999, 2),
]


@pytest.mark.parametrize(("clause", "lo", "hi", "scale"), NUMERIC,
                         ids=[c for c, *_ in NUMERIC])
@pytest.mark.parametrize("encoding", ["ascii", "cp037", "cp1047"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_encode_decode_identity(clause: str, lo: int, hi: int, scale: int, encoding: str,
                                data) -> None:
    f = field(clause)
    n = data.draw(st.integers(lo, hi))
    value = Decimal(n).scaleb(-scale) if scale else n
    raw = encoder_for(f, encoding)(value)
    assert len(raw) == f.length
    assert decoder_for(f, encoding)(raw) == value


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.just(0.0), st.floats(1e-70, 1e70), st.floats(-1e70, -1e-70)))
def test_ibm_double_roundtrip(x: float) -> None:
    back = ibm_float(ibm_float_bytes(x, 8))
    assert back == pytest.approx(x, rel=1e-15, abs=1e-300)


def test_encoder_rejects_values_that_do_not_fit() -> None:
    with pytest.raises(MessageError, match="does not fit"):
        encoder_for(field("PIC 9(3)"))(1000)
    with pytest.raises(MessageError, match="decimals"):
        encoder_for(field("PIC 9(3)V9"))(Decimal("1.25"))
    with pytest.raises(MessageError, match="unsigned"):
        encoder_for(field("PIC 9(3)"))(-1)
    with pytest.raises(MessageError, match="do not fit"):
        encoder_for(field("PIC X(2)"))("ABC")
    assert encoder_for(field("PIC X(4)"), "cp037")("AB") == b"\xc1\xc2\x40\x40"
    assert encoder_for(field("PIC 9(3)"))(None) == b"   "
    for binary in ("PIC S9(4) COMP", "PIC S9(5) COMP-3"):  # no NULL form (once a TypeError)
        with pytest.raises(MessageError, match="NULL"):
            encoder_for(field(binary))(None)



RETAIL_SRC = """\
       01  HEADER.
      * DATEFORMAT YYYY-MM-DD-HH.MI.SS.FFFFFF
           05  HDR-TIMESTAMP          PIC X(26).
           05  HDR-FUNCTION           PIC X.
           05  HDR-REC-ID             PIC X(8).
           05  HDR-SOURCE             PIC X(4).
       01  CUSTOMER.
      * KEY
           05  CUST-ID                PIC 9(8).
           05  CUST-NAME              PIC X(30).
           05  BALANCE                PIC 9(7)V99.
      * YYMMDD
           05  OPENED                 PIC 9(6).
"""


@pytest.mark.parametrize("encoding", ["ascii", "cp037", "cp1047"])
def test_retail_example_message_decodes(encoding: str) -> None:
    """properties.md §15.1, first message, as text and as bytes in each code page."""
    msg = ("2024-03-01-10.15.30.123456ACUSTOMERPOS100001001ACME TRADING"
           "                  000125000240301")
    cb = compile_copybook(RETAIL_SRC)
    head, cust = cb.record("HEADER"), cb.record("CUSTOMER")
    raw = lookup_codec(encoding).encode(msg)[0]
    got = {}
    for rec, base in ((head, 0), (cust, head.length)):
        for f in rec.fields:
            a, b = base + f.offset, base + f.offset + f.length
            got[f.column] = (decoder_for(f, encoding)(msg[a:b]),
                             decoder_for(f, encoding)(raw[a:b]))
    assert {k: v[0] for k, v in got.items()} == {k: v[1] for k, v in got.items()}
    assert {k: v[0] for k, v in got.items()} == {
        "HDR_TIMESTAMP": "2024-03-01-10.15.30.123456", "HDR_FUNCTION": "A",
        "HDR_REC_ID": "CUSTOMER", "HDR_SOURCE": "POS1", "CUST_ID": 1001,
        "CUST_NAME": "ACME TRADING".ljust(30), "BALANCE": Decimal("1250.00"),
        "OPENED": "240301"}
