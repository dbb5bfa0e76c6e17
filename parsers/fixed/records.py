"""Column converters and the whole-record decoders generated once per table layout.

Every trail column has two converters (``Slot.text`` for a slice of a text body, ``Slot.raw``
for a slice of a byte body), built once from its copybook field layout or its text column.
They are the *general path*: any record, every error, located by field.

The *fast path* decodes a whole record with one generated function per table, as
``collections.namedtuple`` builds its class: source made of trusted parts only (integer offsets,
names of converters), compiled once.

* ``text_image`` — a full-length text body (one variant for ASCII bodies, one for any text): a
  CHAR column is a slice, a VARCHAR one a slice without trailing blanks, a zoned number
  ``int()``; the rest calls its converter.
* ``record_image`` — a full-length byte body in copybook mode: one ``charmap_decode`` for its
  text fields, one ``bytes.translate`` to ASCII digits and overpunch letters for its zoned numbers
  (and one to the digits overpunch letters stand for, for signed ones), one ``bytes.hex`` for its
  packed (COMP-3) fields — each over the bytes its fields span only — one precompiled
  ``struct.Struct`` for all its 2/4/8-byte binary fields (a value beyond its PICTURE, which
  ``fixed.trunc`` std/opt refuses, takes the general path to its error); numbers go straight to
  the trail's integer form (unscaled digits) instead of through ``Decimal``. Any field outside
  these common forms calls its general converter. When a value is not in its common form (a
  blank number, a bad nibble, a byte the code page lacks), the function returns None and the
  caller takes the general path, which gives the same result or the located error.

tests/fixed/test_fast_paths.py proves both functions equal to the general path on random layouts
and random bytes.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from gendef.copybook import COMP, COMP3, COMP5, DISPLAY, FieldLayout
from gendef.model import CHAR, DATETIME, NUMBER, VARCHAR, Column
from parsers.codegen import compile_function
from parsers.convert import build_converter, canonical_number
from parsers.decoders import _NEG_OVERPUNCH, _POS_OVERPUNCH, decoder_for, zoned_text_table
from parsers.timefmt import TimeFormat
from props.codepages import UNDEFINED, CodePage
from props.errors import DefinitionError, MessageError

Convert = Callable[[Any], Any]

_INT64 = (-(1 << 63), (1 << 63) - 1)
_CACHE_SIZE = 4096  # date texts remembered per column

# How ``text_image`` reads a slot of an ASCII text body.
SAME, RSTRIP, DIGITS, CALL = "same", "rstrip", "digits", "call"


@dataclass(frozen=True, slots=True)
class Slot:
    """One trail column at run time: its slice and its general converters."""

    name: str  # copybook field or column name, for errors
    start: int
    end: int
    key: bool
    text: Convert  # text slice → trail value
    raw: Convert  # byte slice → trail value
    kind: str  # how text_image reads it (SAME, RSTRIP, DIGITS, CALL)
    column: Column
    field: FieldLayout | None = None

    @property
    def position(self) -> str:
        return f"field {self.name} (offset {self.start}, length {self.end - self.start})"


def _same(value: Any) -> Any:
    return value


# -- the general path: converters --------------------------------------------------------------

def column_converter(col: Column, fmt: TimeFormat | None, table: str) -> tuple[Convert, str]:
    """Text of a text column → trail value (§4 field values, §2.5), and its kind."""
    if col.type_code == CHAR:
        return _same, SAME  # CHAR keeps its padding
    if col.type_code == VARCHAR and not col.is_number_text:
        return (lambda text: text.rstrip(" ")), RSTRIP
    convert = build_converter(col, fmt, table=table)

    def trimmed(text: str) -> Any:
        text = text.strip()
        return convert(text) if text else None  # an all-blank number or date is NULL
    fast = col.type_code == NUMBER and col.scale == 0 and col.external_length <= 18
    return trimmed, DIGITS if fast else CALL


def trail_value(col: Column, fmt: TimeFormat | None, digits: int, table: str) -> Convert:
    """A decoded copybook value (str, int, Decimal or None) → the trail value of its column."""
    t = col.type_code
    if t == CHAR:
        n = col.characters
        return lambda v: v if len(v) == n else v.ljust(n)
    if t == DATETIME:
        convert = build_converter(col, fmt, table=table)
        seen: dict[Any, str] = {}  # dates repeat: most values are converted once

        def date(v: Any) -> Any:
            if v is None:
                return None
            found = seen.get(v)
            if found is not None:
                return found
            text = v.strip() if isinstance(v, str) else str(v).zfill(digits)
            if not text:
                return None
            found = convert(text)
            if len(seen) < _CACHE_SIZE:
                seen[v] = found
            return found
        return date
    if t == NUMBER:
        scale = col.scale
        low, high = _INT64

        def number(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, int):
                n = v * 10 ** scale if scale else v
            else:
                d = v.scaleb(scale)
                if d != d.to_integral_value():
                    raise MessageError(f"value {v} has more than {scale} fraction digits")
                n = int(d)
            if not low <= n <= high:
                raise MessageError(f"value {v} is out of range for the column type")
            return n
        return number
    if col.is_number_text:
        length = col.external_length

        def number_text(v: Any) -> Any:
            if v is None:
                return None
            text = canonical_number(format(Decimal(v), "f"))
            if len(text) > length:
                raise MessageError(f"value {text} is longer than {length} characters")
            return text
        return number_text
    raise DefinitionError(f"table {table} column {col.name}: type {t} not supported for a "
                          "copybook field")


def _plain_zoned(f: FieldLayout, col: Column) -> bool:
    """A DISPLAY number whose unscaled digits are its trail value."""
    return (f.usage == DISPLAY and f.kind == "numeric" and not f.date_format
            and not f.explicit_point and not f.sign_separate and f.scale_factor == 0
            and col.type_code == NUMBER and col.scale == f.scale)


def field_converters(f: FieldLayout, col: Column, encoding: str, digits_ascii: bool,
                     fmt: TimeFormat | None, table: str) -> tuple[Convert, Convert, str]:
    """(text, raw) converters of one copybook field, and the kind of its text converter."""
    decode = decoder_for(f, encoding)
    to_trail = trail_value(col, fmt, f.digits, table)
    if col.type_code == CHAR and f.kind == "alnum" and not f.date_format:
        n = col.characters
        decode_text = cast("Callable[[bytes], str]", decode)  # an alnum field decodes to text

        def raw_char(data: bytes) -> str:
            text = decode_text(data)
            return text if len(text) == n else text.ljust(n)
        return _same, raw_char, SAME

    def slow(data: Any) -> Any:
        return to_trail(decode(data))

    if f.date_format and f.usage == DISPLAY:
        return to_trail, slow, CALL  # the decoder keeps text as it is
    if not _plain_zoned(f, col):
        return slow, slow, CALL

    def text_number(data: str) -> Any:
        if data.isdigit() and data.isascii():
            return int(data)  # unscaled digits: already value × 10^scale
        return slow(data)

    if not digits_ascii:
        return text_number, slow, DIGITS

    def raw_number(data: bytes) -> Any:
        if data.isdigit():
            return int(data)
        return slow(data)
    return text_number, raw_number, DIGITS


# -- the fast path: whole-record functions -----------------------------------------------------

def _compile(source: str, env: dict[str, Any], name: str, what: str) -> Callable:
    return compile_function(source, env, "image", f"fixed-width {what} of {name}")


def text_image(name: str, slots: tuple[Slot, ...], *, ascii_only: bool = True
               ) -> Callable[[str], list[Any]]:
    """One function that slices and converts every column of a full-length text body.

    ``ascii_only``: for ASCII bodies, where ``str.isdigit`` means ASCII digits; otherwise
    (other scripts' digits are digits to ``isdigit``) each number is also tested ASCII.
    """
    env: dict[str, Any] = {}
    parts = []
    digits = "isdigit()" if ascii_only else "isascii() and s.isdigit()"
    for i, slot in enumerate(slots):
        cut = f"b[{int(slot.start)}:{int(slot.end)}]"
        if slot.kind == SAME:
            parts.append(cut)
        elif slot.kind == RSTRIP:
            parts.append(f"{cut}.rstrip(' ')")
        elif slot.kind == DIGITS:
            parts.append(f"(int(s) if (s := {cut}).{digits} else c{i}(s))")
            env[f"c{i}"] = slot.text
        else:
            parts.append(f"c{i}({cut})")
            env[f"c{i}"] = slot.text
    source = "def image(b):\n    return [" + ", ".join(parts) + "]\n"
    return _compile(source, env, name, "text image")


def header_image(gets: tuple[tuple[int, int, int, Convert | None, Convert], ...], count: int,
                 page: CodePage | None) -> Callable[[Any], list[Any] | None]:
    """One function that reads the header fields the items use into a list of ``count``
    values (None elsewhere). ``gets``: (index, start, end, text getter or None for the slice,
    raw getter) per field; ``page`` None: for text bodies, else for byte bodies, whose DISPLAY
    fields come from one decode of their span (None returned when a byte has no character)."""
    env: dict[str, Any] = {"DECODE": codecs.charmap_decode}
    values = ["None"] * count
    lines = ["def image(b):"]
    if page is None:
        for i, a, b, text, _ in gets:
            values[i] = f"b[{a}:{b}]" if text is None else f"g{i}(b[{a}:{b}])"
            env[f"g{i}"] = text
    else:
        spans = [(a, b) for _, a, b, text, _ in gets if text is None]
        low = min((a for a, _ in spans), default=0)
        high = max((b for _, b in spans), default=0)
        if spans:
            env["TABLE"] = page.table
            lines += ["    try:", f"        t = DECODE(b[{low}:{high}], None, TABLE)[0]",
                      "    except UnicodeDecodeError:", "        return None"]
        for i, a, b, text, raw in gets:
            values[i] = f"t[{a - low}:{b - low}]" if text is None else f"g{i}(b[{a}:{b}])"
            env[f"g{i}"] = raw
    lines.append("    return [" + ", ".join(values) + "]")
    return _compile("\n".join(lines) + "\n", env, "the header", "header image")


_STRUCT_CODES = {(2, True): "h", (4, True): "i", (8, True): "q",
                 (2, False): "H", (4, False): "I", (8, False): "Q"}
_PACKED_SIGNS = {"a": 1, "c": 1, "e": 1, "f": 1, "b": -1, "d": -1}


def _is_plain_number(f: FieldLayout, col: Column) -> bool:
    """A binary or packed field whose unscaled integer is its trail value."""
    return (col.type_code == NUMBER and f.scale_factor == 0 and col.scale == f.scale
            and f.kind == "numeric")


def zoned_ascii(page: CodePage) -> bytes:
    """The ``bytes.translate`` table of zoned numbers: digits, overpunch letters and signs in
    ASCII, anything else '?' (what ``parsers.decoders`` reads numbers through)."""
    table = zoned_text_table(page.codec_info())
    return bytes(ord(c) if ord(c) < 128 else 0x3F for c in (table[b] for b in range(256)))


def overpunch_digits(zoned: bytes) -> bytes:
    """The ``bytes.translate`` table from message bytes to the digit each byte stands for in a
    zoned number: digits and overpunch letters (``zoned`` gives them in ASCII) → ``0``–``9``,
    anything else ``?``."""
    digit = {ord(c): ord(str(v)) for c, v in (*_POS_OVERPUNCH.items(), *_NEG_OVERPUNCH.items())}
    digit.update((c, c) for c in b"0123456789")
    return bytes(digit.get(zoned[b], 0x3F) for b in range(256))


# The whole-span conversions each form of ``record_image`` reads.
_FORM_USES = {"text": "t", "overpunch": "zd", "zoned": "z", "binary": "", "packed": "h",
              "unsigned packed": "h", "general": ""}


def _record_form(slot: Slot) -> str:
    """How ``record_image`` reads a slot (a key of ``_FORM_USES``)."""
    f, col = slot.field, slot.column
    if f is None:
        return "general"
    if f.kind == "alnum" and not f.date_format and col.type_code == CHAR:
        return "text"
    if _plain_zoned(f, col):
        return "overpunch" if f.signed and not f.sign_leading else "zoned"
    if f.usage in (COMP, COMP5) and _is_plain_number(f, col) and (
            (int(slot.end) - int(slot.start), f.signed) in _STRUCT_CODES):
        return "binary"
    if f.usage == COMP3 and _is_plain_number(f, col):
        return "packed" if f.signed else "unsigned packed"
    return "general"


def record_image(name: str, slots: tuple[Slot, ...], page: CodePage
                 ) -> Callable[[bytes], list[Any] | None]:
    """One function that decodes every column of a full-length byte body (copybook mode), or
    returns None when a value needs the general path (see the module docstring)."""
    env: dict[str, Any] = {"DECODE": codecs.charmap_decode, "TABLE": page.table,
                           "ZONED": zoned_ascii(page), "PS": _PACKED_SIGNS,
                           "LOW": _INT64[0], "HIGH": _INT64[1],
                           "NEG": frozenset(ord(c) for c in _NEG_OVERPUNCH)}
    env["DIGITS"] = overpunch_digits(env["ZONED"])
    forms = [_record_form(slot) for slot in slots]
    # each whole-span conversion (``t`` text, ``z``/``d`` translations, ``h`` hex) runs over
    # the bytes of the fields read through it only, ``span_start[...]`` to ``span_end[...]``
    span_start = {var: min((int(s.start) for s, form in zip(slots, forms, strict=True)
                            if var in _FORM_USES[form]), default=0) for var in "tzdh"}
    span_end = {var: max((int(s.end) for s, form in zip(slots, forms, strict=True)
                          if var in _FORM_USES[form]), default=0) for var in "tzdh"}
    # offsets into each conversion's result (``h`` has two hex digits per byte)
    t, z, d, h = span_start["t"], span_start["z"], span_start["d"], 2 * span_start["h"]
    parts: list[str] = []
    # (start, end, struct code, part index, the PICTURE's bound or None for a native field)
    binary: list[tuple[int, int, str, int, int | None]] = []
    text_spans = []
    for i, (slot, form) in enumerate(zip(slots, forms, strict=True)):
        f, a, b = slot.field, int(slot.start), int(slot.end)
        env[f"c{i}"] = slot.raw
        general = f"c{i}(b[{a}:{b}])"
        if form == "text":
            parts.append(f"t[{a - t}:{b - t}]")
            text_spans.append((a - t, b - t))
        elif form == "overpunch":
            # trailing overpunch: digits, then a digit with the sign in its zone (``d``: the
            # overpunch letters read as their digits)
            parts.append(f"((-int(s) if z[{b - 1 - z}] in NEG else int(s)) if "
                         f"(s := d[{a - d}:{b - d}]).isdigit() and z[{a - z}:{b - 1 - z}]"
                         f".isdigit() else {general})")
        elif form == "zoned":
            parts.append(f"(int(s) if (s := z[{a - z}:{b - z}]).isdigit() else {general})")
        elif form == "binary":
            assert f is not None  # (a binary form has its field)
            binary.append((a, b, _STRUCT_CODES[(b - a, f.signed)], len(parts),
                           None if f.native else 10 ** f.digits))
            parts.append(general)  # replaced below once the struct's layout is known
        elif form in ("packed", "unsigned packed"):
            digits, sign = f"h[{2 * a - h}:{2 * b - 1 - h}]", f"h[{2 * b - 1 - h}]"
            # unsigned: a negative sign nibble (an error, or 0 for -0) is the field's converter's
            value = (f"int({digits}) * PS[{sign}]" if form == "packed" else
                     f"(int({digits}) if {sign} in 'acef' else {general})")
            if 2 * (b - a) - 1 > 18:  # 19 digits may exceed the trail's 64-bit integer
                value = f"(v if LOW <= (v := {value}) <= HIGH else {general})"
            parts.append(value)
        else:
            parts.append(general)
    lines = ["def image(b):", "    try:"]
    if text_spans:
        defined = UNDEFINED not in page.table
        errors = "None" if defined else repr("replace")
        lines.append(f"        t = DECODE(b[{t}:{span_end['t']}], {errors}, TABLE)[0]")
        if not defined:  # a byte without a character in a text field: the general path
            env["SPANS"] = tuple(text_spans)
            lines.append("        if '\\ufffd' in t and any('\\ufffd' in t[x:y] for x, y in "
                         "SPANS): return None")
    for var, call in (("z", "translate(ZONED)"), ("d", "translate(DIGITS)"), ("h", "hex()")):
        if span_end[var]:
            lines.append(f"        {var} = b[{span_start[var]}:{span_end[var]}].{call}")
    if binary:
        binary.sort()
        fmt, at = ">", 0
        overlap = False
        for a, b, code, _, _ in binary:
            if a < at:
                overlap = True
                break
            fmt += (f"{a - at}x" if a > at else "") + code
            at = b
        if not overlap:
            env["UNPACK"] = struct.Struct(fmt).unpack_from
            lines.append("        n = UNPACK(b)")
            for k, (a, b, code, index, bound) in enumerate(binary):
                # beyond the PICTURE (or the trail's 64 bits): the general path's error
                if bound is not None:
                    parts[index] = (f"(v if -{bound} < (v := n[{k}]) < {bound} "
                                    f"else c{index}(b[{a}:{b}]))")
                elif code == "Q":
                    parts[index] = f"(v if (v := n[{k}]) <= HIGH else c{index}(b[{a}:{b}]))"
                else:
                    parts[index] = f"n[{k}]"
    lines.append("        return [" + ", ".join(parts) + "]")
    lines.append("    except (ValueError, KeyError):")  # a value not in its common form
    lines.append("        return None")
    return _compile("\n".join(lines) + "\n", env, name, "record image")
