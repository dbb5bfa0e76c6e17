"""The whole-record functions of the fixed-width parser give exactly what the general per-column
converters give (parsers/fixed/records.py), on random layouts and random bytes.

* ``record_image`` (byte bodies, copybook mode) on random copybook records in random code pages,
  each field's bytes a valid encoding of a random value but for one at most: random bytes,
  blanks, or a valid encoding with one byte changed or replaced by a sign, point, blank or
  overpunch letter;
* ``text_image`` (text bodies, its ASCII and its general variant) on random text columns with
  random texts, blanks, control characters and other scripts' digits included.

Where the general path raises, the fast one must return None (or raise); where the general path
gives values, the fast one must give the same values or None, and never None when every field
holds a valid value.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.build import build_definitions
from gendef.copybook import compile_copybook
from gendef.model import (
    char_column,
    datetime_column,
    number_column,
    number_text_column,
    varchar_column,
)
from parsers.base import build_parser
from parsers.decoders import encoder_for
from parsers.fixed.records import Slot, column_converter, record_image, text_image
from parsers.timefmt import compile_format
from props.codepages import UNDEFINED, code_page
from props.errors import MessageError
from props.loader import settings_from_text

ENCODINGS = ("cp037", "cp1047", "cp277", "cp838", "common", "ascii", "latin-1")

PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook={path}
fixed.header=H
fixed.optype=OP
fixed.table=TBL
fixed.schema=S
fixed.encoding={encoding}
"""


def _digits(draw, most: int = 18) -> tuple[int, int]:
    n = draw(st.integers(1, most))
    return n, draw(st.integers(0, n))


@st.composite
def pictures(draw) -> str:
    """One elementary item's clauses (and its date comment), every usage the corpus covers."""
    kind = draw(st.sampled_from(["alnum", "zoned", "signed", "lead", "sep", "point", "comp",
                                 "comp5", "comp3", "wide", "date", "float"]))
    n, s = _digits(draw)
    pic = f"9({n - s})V9({s})" if s and n > s else f"9({n})"
    if kind == "alnum":
        return f"PIC X({draw(st.integers(1, 12))})"
    if kind == "zoned":
        return f"PIC {pic}"
    if kind == "signed":
        return f"PIC S{pic}"
    if kind == "lead":
        return f"PIC S{pic} SIGN LEADING"
    if kind == "sep":
        return f"PIC S{pic} SIGN {draw(st.sampled_from(['LEADING', 'TRAILING']))} SEPARATE"
    if kind == "point":
        return f"PIC 9({max(n - s, 1)}).9({max(s, 1)})"
    if kind in ("comp", "comp5"):
        sign = draw(st.sampled_from(["S", ""]))
        return f"PIC {sign}{pic} {'COMP' if kind == 'comp' else 'COMP-5'}"
    if kind == "comp3":
        return f"PIC {draw(st.sampled_from(['S', '']))}{pic} COMP-3"
    if kind == "wide":
        return f"PIC S9({draw(st.integers(19, 24))})"
    if kind == "date":
        return "* YYYYMMDD\nPIC 9(8)"
    return "COMP-2"


def copybook_text(pics: list[str]) -> str:
    lines = ["       01  H.", "           05  OP   PIC X.", "           05  TBL  PIC X(4).",
             "       01  T."]
    for i, pic in enumerate(pics):
        if pic.startswith("*"):
            comment, pic = pic.split("\n")
            lines.append(f"      {comment}")
        lines.append(f"           05  F{i}  {pic}.")
    return "\n".join(lines) + "\n"


def value_of(draw, f, page):
    """A random value the field can hold (what its encoder takes)."""
    if f.date_format:
        return draw(st.dates(date(1900, 1, 1), date(2999, 12, 31))).strftime("%Y%m%d")
    if f.kind == "alnum":
        chars = [c for c in page.table if c != UNDEFINED]
        return draw(st.text(alphabet=chars, max_size=f.length))
    if f.kind == "float":
        return Decimal(draw(st.integers(-10**6, 10**6))).scaleb(-3)
    top = 10 ** f.digits - 1
    unscaled = draw(st.integers(0 if not f.signed else -top, top))
    return Decimal(unscaled).scaleb(-f.scale)


SIGNS = list("{}AEIJNRpuy+-., 0")


@st.composite
def records(draw):
    pics = draw(st.lists(pictures(), min_size=1, max_size=8))
    encoding = draw(st.sampled_from(ENCODINGS))
    return pics, encoding


@settings(max_examples=250, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(layout=records(), data=st.data())
def test_record_image_equals_the_field_converters(tmp_path_factory, layout, data):
    pics, encoding = layout
    work = tmp_path_factory.mktemp("cpy")
    (work / "t.cpy").write_text(copybook_text(pics))
    s = settings_from_text(PROPS.format(path=work / "t.cpy", encoding=encoding), "t.properties",
                           env={})
    parser = build_parser(s, build_definitions(s))
    (table,) = parser._tables.values()  # the one data record
    page = code_page(encoding)
    fields = compile_copybook(copybook_text(pics)).record("T").fields
    body = bytearray(b"I" + b"T   ")  # header bytes: not read by the images' data slots
    # one field at most holds something else than a valid value, so that an error there is
    # not hidden by another field's
    odd = data.draw(st.integers(-1, len(fields) - 1))
    for k, f in enumerate(fields):
        how = "valid" if k != odd else data.draw(
            st.sampled_from(["random", "blank", "changed", "sign"]))
        if how == "random":
            raw = data.draw(st.binary(min_size=f.length, max_size=f.length))
        elif how == "blank":
            raw = page.encode(" ")[0] * f.length
        else:
            raw = encoder_for(f, encoding)(value_of(data.draw, f, page))
            at = data.draw(st.integers(0, f.length - 1))
            if how == "changed":
                raw = raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1:]
            elif how == "sign":  # a sign, point, blank or overpunch letter anywhere
                char = page.encode(data.draw(st.sampled_from(SIGNS)), "replace")[0]
                raw = raw[:at] + char + raw[at + 1:]
        body += raw
    body = bytes(body)
    assert len(body) == table.end
    general, fast = _general(table, body), _fast(table, body)
    assert fast == general or (fast is None and general is not None and odd >= 0)


def _table_of(tmp_path_factory, pics: list[str], encoding: str, extra: str = ""):
    work = tmp_path_factory.mktemp("cpy")
    (work / "t.cpy").write_text(copybook_text(pics))
    s = settings_from_text(PROPS.format(path=work / "t.cpy", encoding=encoding) + extra,
                           "t.properties", env={})
    (table,) = build_parser(s, build_definitions(s))._tables.values()
    return table


@settings(max_examples=200, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(signed=st.booleans(), digits=st.integers(1, 18), encoding=st.sampled_from(ENCODINGS),
       data=st.data())
def test_zoned_numbers_with_signs_anywhere(tmp_path_factory, signed, digits, encoding, data):
    """Zoned numbers of digits, overpunch letters, signs, points and blanks in any position:
    the fast path reads a value exactly where the general path does."""
    scale = data.draw(st.integers(0, digits))
    pic = f"PIC {'S' if signed else ''}9({digits - scale})" + (f"V9({scale})" if scale else "")
    if digits == scale:
        pic = f"PIC {'S' if signed else ''}V9({scale})"
    table = _table_of(tmp_path_factory, [pic], encoding)
    page = code_page(encoding)
    text = data.draw(st.text(alphabet=[*SIGNS, *"0123456789" * 3], min_size=digits,
                             max_size=digits))
    body = page.encode("IT   ")[0] + page.encode(text, "replace")[0]
    general, fast = _general(table, body), _fast(table, body)
    assert fast == general or (fast is None and general is not None)


@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(usage=st.sampled_from(["COMP", "COMP-5", "COMP-3"]), signed=st.booleans(),
       digits=st.one_of(st.just(18), st.integers(1, 18)),
       trunc=st.sampled_from(["std", "bin"]), data=st.data())
def test_binary_and_packed_fields_on_random_bytes(tmp_path_factory, usage, signed, digits,
                                                  trunc, data):
    """Every bit pattern, the ones out of the trail's 64-bit range and (``fixed.trunc=std``)
    beyond the PICTURE included."""
    scale = data.draw(st.integers(0, digits - 1))
    pic = f"PIC {'S' if signed else ''}9({digits - scale})" + (f"V9({scale})" if scale else "")
    table = _table_of(tmp_path_factory, [f"{pic} {usage}"], "cp037", f"fixed.trunc={trunc}\n")
    size = table.end - 5
    if usage == "COMP-3" and data.draw(st.booleans()):  # decimal nibbles, any sign nibble
        # 18 digits take 10 bytes, whose 19 digits may pass the trail's 64-bit integers
        nibbles = (data.draw(st.sampled_from(["", "9", "92", "93"]))
                   + data.draw(st.text("0123456789", min_size=2 * size, max_size=2 * size)))
        nibbles = nibbles[:2 * size - 1]
        raw = bytes.fromhex(nibbles + data.draw(st.sampled_from("0123456789abcdef")))
    else:
        raw = data.draw(st.binary(min_size=size, max_size=size))
    body = b"\xc9\xe3@@@" + raw
    assert _fast(table, body) == _general(table, body)


def _general(table, body):
    try:
        return [conv(body[a:b]) for a, b, conv in table.raw_items]
    except MessageError:
        return None


def _fast(table, body):
    """The fast path's values; None when it declines (returns None or raises a MessageError
    through a general converter it called)."""
    try:
        return table.byte_image(body)
    except MessageError:
        return None


TEXT_COLUMNS = st.sampled_from([
    char_column("C", 4), varchar_column("V", 6), number_column("N", 9),
    number_column("N2", 7, 2), number_column("BIG", 18), number_text_column("NT", 22),
    datetime_column("D", 10), datetime_column("TS", 19), datetime_column("F", 26)])
TEXTS = st.one_of(
    st.text(alphabet=" \t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0²١-+.,0123456789AZaz:é", max_size=30),
    st.sampled_from(["2024-03-01", "2024-03-01 10:15:30", "2024-03-01 10:15:30.123456",
                     "00012345", "12345.67", "-42", "   ", "9" * 19, "ab\t", "a\x0b ", "\x1c",
                     " 12\t", "١٢٣٤٥٦٧٨٩٠", "123456789²"]))  # 10: the width of column N


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(TEXT_COLUMNS, TEXTS), min_size=1, max_size=8))
def test_text_image_equals_the_column_converters(columns):
    """Includes VARCHAR values ending in tabs and other characters ``str.rstrip()`` would
    remove: only trailing blanks go."""
    slots, at, body = [], 0, ""
    for i, (col, text) in enumerate(columns):
        width = col.external_length
        fmt = compile_format(None, date_only=True, prop="p") if col.type_code == 192 else None
        conv, kind = column_converter(col, fmt, "S.T")
        slots.append(Slot(f"c{i}", at, at + width, False, conv, conv, kind, col))
        body += text[:width].ljust(width)
        at += width
    slots = tuple(slots)
    try:
        general = ("ok", [s.text(body[s.start:s.end]) for s in slots])
    except MessageError as error:
        general = ("error", error.reason)
    variants = (True, False) if body.isascii() else (False,)  # the ASCII one: ASCII only
    for ascii_only in variants:
        try:
            fast = ("ok", text_image("S.T", slots, ascii_only=ascii_only)(body))
        except MessageError as error:
            fast = ("error", error.reason)
        assert fast == general


def test_every_usage_takes_its_fast_form():
    """The generated source reads text, zoned, packed and binary fields without a converter
    call (the forms the benchmark's layout uses)."""
    pics = ["PIC X(3)", "PIC 9(4)", "PIC S9(5)V99", "PIC S9(7)V99 COMP-3", "PIC S9(4) COMP",
            "PIC 9(9) COMP", "PIC S9(18) COMP"]
    cb = compile_copybook(copybook_text(pics))
    values = ["ab", 12, Decimal("-123.45"), Decimal("-1234567.89"), -7, 999999999,
              -(10**18) + 1]
    for encoding in ("cp037", "ascii"):
        body = b"".join(encoder_for(f, encoding)(v)
                        for f, v in zip(cb.record("H").fields + cb.record("T").fields,
                                        ["I", "T", *values], strict=True))
        calls = []
        slots = tuple(Slot(f.name, f.offset + 5, f.offset + 5 + f.length, False,
                           *_never(calls), "call", col, f)
                      for f, col in zip(cb.record("T").fields,
                                        [char_column("X", 3), number_column("A", 4),
                                         number_column("B", 7, 2), number_column("C", 9, 2),
                                         number_column("D", 4), number_column("E", 9),
                                         number_column("F", 18)], strict=True))
        image = record_image("S.T", slots, code_page(encoding))
        assert image(body) == ["ab ", 12, -12345, -123456789, -7, 999999999, -(10**18) + 1]
        assert calls == []


def _never(calls):
    def call(data):
        calls.append(data)
        raise AssertionError("general converter called")
    return call, call

