"""Hostile inputs of issue 24's lower-severity items: blanks inside fixed-width numbers.

A blank between the digits of a DISPLAY (zoned) number is refused with the field and offset
(docs/fixed-width.md, "Blanks in numbers"), never read by dropping the blank (``12 D`` was
12.4, ``1 2 `` was 12), on every path: the generated whole-record functions (ASCII text, other
text, bytes), the general per-field path (a record with trailing blanks) and the short-record
path; in copybook and sourcedefs mode, for text and byte bodies. Blanks around a number are
still trimmed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from gendef.build import build_definitions
from parsers.base import build_parser
from parsers.decoders import parse_display
from parsers.fixed import FixedParser
from parsers.model import Message
from props.errors import MessageError
from props.loader import settings_from_text

COPYBOOK = """\
       01  H.
           05  OP        PIC X.
           05  TBL       PIC X(5).
       01  NUMS.
      * KEY
           05  K         PIC 9(2).
           05  TXT       PIC X(2).
           05  S         PIC S9(3)V9.
           05  U         PIC 9(4).
"""
COPYBOOK_PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=n.cpy
fixed.header=H
fixed.optype=OP
fixed.table=TBL
fixed.schema=N
fixed.encoding={encoding}
"""
SOURCEDEFS_PROPS = """\
parser.type=fixed
fixed.schematype=sourcedefs
fixed.userdefs.tables=app.HDR,APP.NUMS
fixed.userdefs.app.HDR.columns=op,tbl
fixed.userdefs.app.HDR.op=char 1
fixed.userdefs.app.HDR.tbl=vchar 8
fixed.userdefs.APP.NUMS.columns=ID,AMOUNT
fixed.userdefs.APP.NUMS.ID=number 9 key
fixed.userdefs.APP.NUMS.AMOUNT=number 9,1
fixed.header=app.HDR
fixed.optype=op
fixed.table=tbl
fixed.encoding={encoding}
"""
ENCODINGS = ("ascii", "cp037")

Build = Callable[[str, str], FixedParser]


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Build:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "n.cpy").write_text(COPYBOOK)

    def make(props: str, encoding: str) -> FixedParser:
        settings = settings_from_text(props.format(encoding=encoding), "t.properties", env={})
        parser = build_parser(settings, build_definitions(settings))
        assert isinstance(parser, FixedParser)
        return parser
    return make


def _error(parser: FixedParser, body: str | bytes) -> MessageError:
    with pytest.raises(MessageError) as info:
        parser.parse(Message("m1", {}, body))
    return info.value


def _bodies(text: str, encoding: str) -> list[str | bytes]:
    """The record as an ASCII text body, a text body with a non-ASCII character (other
    generated function) and a byte body in ``encoding``."""
    bodies: list[str | bytes] = [text, text.encode(encoding)]
    if "ab" in text:
        bodies.append(text.replace("ab", "é ", 1))
    return bodies


# -- the rule itself ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["1 2", "12 4", "1 2 ", "12 D", "1. 5", "1 .5", "- 1 2",
                                  "12\x004", "1 2-"])
def test_a_blank_between_digits_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="blank inside the number"):
        parse_display(text, unsigned=False, allow_overpunch=True)


@pytest.mark.parametrize(("text", "expected"), [
    (" 12 ", (0, "12", None)), ("- 12", (-1, "12", None)), ("12 -", (-1, "12", None)),
    ("  1.5", (0, "15", 1)), (" 12D", (1, "124", None)), ("\x0012\x00", (0, "12", None))])
def test_blanks_around_a_number_and_its_sign_are_trimmed(text: str, expected: tuple) -> None:
    assert parse_display(text, unsigned=False, allow_overpunch=True) == expected


# -- copybook mode: every path ------------------------------------------------------------------

HEAD = "INUMS 01ab"  # header (OP, TBL), K = 01, TXT = "ab"; S at offset 10, U at 14


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("record", "field", "end"), [
    (HEAD + "12 D" + "0001", "field S (offset 10, length 4)", 14),
    (HEAD + "0120" + "1 2 ", "field U (offset 14, length 4)", 18),
])
def test_copybook_number_with_an_inner_blank_is_refused(build: Build, encoding: str,
                                                        record: str, field: str, end: int
                                                        ) -> None:
    parser = build(COPYBOOK_PROPS, encoding)
    (table,) = parser._tables.values()
    for body in _bodies(record, encoding):
        blank = " ".encode(encoding) if isinstance(body, bytes) else " "
        # the whole record (generated function, then the general path), with a trailing
        # blank (general path only), and cut right after the field (short-record path)
        for shaped in (body, body + blank, body[:end]):
            error = _error(parser, shaped)
            assert error.position == field, shaped
            assert "blank inside the number" in error.reason
        # the generated function gives no value for it: it declines (None) or raises
        image = (table.byte_image if isinstance(body, bytes)
                 else table.ascii_image if body.isascii() else table.text_image)
        assert image is not None
        with contextlib.suppress(MessageError):
            assert image(body) is None


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_copybook_blanks_around_numbers_are_still_trimmed(build: Build, encoding: str) -> None:
    parser = build(COPYBOOK_PROPS, encoding)
    for body in _bodies(HEAD + " 12D" + " 12 ", encoding):
        (op,) = parser.parse(Message("m1", {}, body))
        assert op.after[2:] == [124, 12]  # S = +12.4 (scale 1), U = 12


# -- sourcedefs mode ----------------------------------------------------------------------------

SD_HEAD = "IAPP.NUMS"  # op, tbl (8); ID at offset 9 (10 wide), AMOUNT at 19 (11 wide)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("record", "field"), [
    (SD_HEAD + "     1 2  " + "       12.4", "field ID (offset 9, length 10)"),
    (SD_HEAD + "        12" + "      12 .4", "field AMOUNT (offset 19, length 11)"),
])
def test_sourcedefs_number_with_an_inner_blank_is_refused(build: Build, encoding: str,
                                                          record: str, field: str) -> None:
    parser = build(SOURCEDEFS_PROPS, encoding)
    for body in (record, record.encode(encoding)):
        error = _error(parser, body)
        assert error.position == field
        assert "is not a number" in error.reason


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_sourcedefs_blanks_around_numbers_are_trimmed(build: Build, encoding: str) -> None:
    parser = build(SOURCEDEFS_PROPS, encoding)
    record = SD_HEAD + "  12      " + "   -12.4   "
    for body in (record, record.encode(encoding)):
        (op,) = parser.parse(Message("m1", {}, body))
        assert op.after == [12, -124]
