"""Per-field decoders for copybook layouts, chosen once per field (STYLE.md §1.3).

``decoder_for(field, encoding)`` looks at usage × sign × size × scale once and returns a closure
that turns the field's slice of a message (bytes, or text for text messages) into its value:
``str`` for alphanumeric items, ``int`` for integral numbers, ``Decimal`` for scaled ones and
floats, ``None`` for a blank numeric field (SQL NULL). Bad bytes raise ``MessageError``; the
fixed-width parser adds the message id, the Cobrix conformance harness maps them to null.

Binary fields are big-endian: ``struct.Struct`` for 2/4/8 bytes, ``int.from_bytes`` otherwise;
packed decimals go through a 256-entry nibble table; zoned (DISPLAY) numbers accept a separate
``+``/``-``, ``.``/``,`` as the point, blanks around (never between digits) and overpunched
signs (ASCII ``{``, ``A``–``I``, ``}``, ``J``–``R``, ``p``–``y``; EBCDIC zones C/F and D). A
field with a date format stays text for the date formatter. Code pages come from
``props.codepages`` (no codec is registered). ``encoder_for`` is each decoder's inverse (test
messages, property tests).
"""

from __future__ import annotations

import codecs
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext

from gendef.copybook import COMP, COMP1, COMP2, COMP3, COMP5, DISPLAY, FieldLayout
from props.codepages import code_page
from props.errors import MessageError, PropertyError

Value = Decimal | int | str | None
Decoder = Callable[[bytes | str], Value]

_WIDE = Context(prec=80)


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """Reader options that change how bytes are read (defaults: what msgcap does).

    ``strict_sign_overpunching``: overpunched signs only in signed (S) fields.
    ``floating_point_format``: ``IBM`` (hexadecimal, z/Architecture) or ``IEEE754`` big-endian.
    ``blank_is_null``: a numeric field of only blanks / NUL bytes is NULL (else an error).
    """

    strict_sign_overpunching: bool = True
    floating_point_format: str = "IBM"
    blank_is_null: bool = True


DEFAULT_OPTIONS = DecodeOptions()


# -- code pages ------------------------------------------------------------------------------

def lookup_codec(encoding: str) -> codecs.CodecInfo:
    """The codec of ``fixed.encoding`` over msgcap's own table (``props.codepages``: nothing is
    registered, so import order never matters); an unknown name is a PropertyError."""
    try:
        return code_page(encoding).codec_info()
    except (LookupError, ValueError) as error:
        raise PropertyError(str(error), prop="fixed.encoding") from None


def is_ebcdic(info: codecs.CodecInfo) -> bool:
    """True for code pages where the digits are 0xF0–0xF9."""
    try:
        return info.decode(b"\xf0\xf9")[0] == "09"
    except UnicodeDecodeError:
        return False


# -- DISPLAY numbers -----------------------------------------------------------------------------

_POS_OVERPUNCH = {"{": 0, **{chr(ord("A") + i): i + 1 for i in range(9)}}
_NEG_OVERPUNCH = {"}": 0, **{chr(ord("J") + i): i + 1 for i in range(9)},
                  **{chr(ord("p") + i): i for i in range(10)}}


def zoned_text_table(info: codecs.CodecInfo) -> dict[int, str]:
    """bytes → canonical characters for zoned numbers: EBCDIC zones C/D map to the ASCII
    overpunch letters, every other byte to the code page's character (U+FFFD if none)."""
    table: dict[int, str] = {}
    for b in range(256):
        try:
            table[b] = info.decode(bytes([b]))[0]
        except UnicodeDecodeError:
            table[b] = "\ufffd"
    if is_ebcdic(info):
        for d in range(10):
            table[0xF0 + d] = str(d)
            table[0xC0 + d] = "{" if d == 0 else chr(ord("A") + d - 1)
            table[0xD0 + d] = "}" if d == 0 else chr(ord("J") + d - 1)
        table[0x00] = " "
    return table


def parse_display(text: str, *, unsigned: bool, allow_overpunch: bool, relaxed: bool = False
                  ) -> tuple[int, str, int | None]:
    """Sign, digit string and position of an explicit point in a DISPLAY number.

    Blanks (spaces, NULs) may surround the number and separate a ``+``/``-`` from its digits,
    but never split the digits: ``12 4`` is refused, not read as 124 (Cobrix's ASCII decoder
    does the same). ``+``/``-`` may lead or trail; ``.`` or ``,`` is the point; an overpunched
    sign is accepted in the first or last position (anywhere, several, last one wins, when
    ``relaxed``). Raises ValueError on anything else, or a negative unsigned value.
    """
    sign = 0
    digits: list[str] = []
    point: int | None = None
    gap = False  # a blank after the first digit or point: only blanks and a sign may follow
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch == " " or ch == "\x00":
            gap = bool(digits) or point is not None
            continue
        if gap and ch not in "+-":
            raise ValueError("blank inside the number")
        if "0" <= ch <= "9":
            digits.append(ch)
        elif ch == "+" or ch == "-":
            if sign and not relaxed:
                raise ValueError("two signs")
            sign = 1 if ch == "+" else -1
        elif ch == "." or ch == ",":
            if point is not None:
                raise ValueError("two decimal points")
            point = len(digits)
        elif ch in _POS_OVERPUNCH or ch in _NEG_OVERPUNCH:
            if not allow_overpunch or not (relaxed or i == 0 or i == last):
                raise ValueError(f"unexpected character {ch!r}")
            if sign and not relaxed:
                raise ValueError("two signs")
            if ch in _POS_OVERPUNCH:
                sign = 1
                digits.append(str(_POS_OVERPUNCH[ch]))
            else:
                sign = -1
                digits.append(str(_NEG_OVERPUNCH[ch]))
        else:
            raise ValueError(f"unexpected character {ch!r}")
    if not digits:
        raise ValueError("no digits")
    if sign < 0 and unsigned:
        raise ValueError("negative value in an unsigned field")
    return sign, "".join(digits), point


def display_value(sign: int, digits: str, point: int | None, scale: int, scale_factor: int
                  ) -> Decimal:
    """The value of parsed DISPLAY digits: explicit point, else implied scale and P scaling."""
    neg = "-" if sign < 0 else ""
    if point is not None:
        return Decimal(f"{neg}{digits[:point] or '0'}.{digits[point:] or '0'}")
    if scale_factor < 0:
        return Decimal(f"{neg}0.{'0' * -scale_factor}{digits}")
    if scale_factor > 0:
        return Decimal(f"{neg}{digits}{'0' * scale_factor}")
    if scale > len(digits):
        raise ValueError(f"{len(digits)} digits for scale {scale}")
    if scale == 0:
        return Decimal(f"{neg}{digits}")
    return Decimal(f"{neg}{digits[:-scale] or '0'}.{digits[-scale:]}")


# -- binary ----------------------------------------------------------------------------------------

_STRUCTS = {(2, True): struct.Struct(">h"), (4, True): struct.Struct(">i"),
            (8, True): struct.Struct(">q"), (2, False): struct.Struct(">H"),
            (4, False): struct.Struct(">I"), (8, False): struct.Struct(">Q")}

_NIBBLES: tuple[str | None, ...] = tuple(
    f"{b >> 4}{b & 15}" if (b >> 4) < 10 and (b & 15) < 10 else None for b in range(256))
_SIGN_BYTE: tuple[tuple[str, int] | None, ...] = tuple(
    (str(b >> 4), -1 if (b & 15) in (0xB, 0xD) else 1) if (b >> 4) < 10 and (b & 15) >= 0xA
    else None for b in range(256))


def _scaler(scale: int, scale_factor: int, integral: bool) -> Callable[[int], Value]:
    """int → field value, with the implied point and P scaling applied exactly."""
    if scale_factor > 0:
        mult = 10 ** scale_factor
        return (lambda v: v * mult) if integral else (lambda v: Decimal(v * mult))
    exp = -(scale - scale_factor if scale_factor < 0 else scale)
    if exp == 0:
        return (lambda v: v) if integral else Decimal
    return lambda v: Decimal(v).scaleb(exp, _WIDE)


def ibm_float(data: bytes) -> float:
    """IBM hexadecimal floating point (4 or 8 bytes, big-endian) → float."""
    raw = int.from_bytes(data, "big")
    bits = len(data) * 8
    sign = -1.0 if raw >> (bits - 1) else 1.0
    exponent = (raw >> (bits - 8)) & 0x7F
    fraction = raw & ((1 << (bits - 8)) - 1)
    return sign * fraction * 16.0 ** (exponent - 64) / float(1 << (bits - 8))


def shortest_float32(value: float) -> str:
    """The shortest decimal text that reads back as the same float32."""
    pack = struct.Struct(">f")
    target = pack.pack(value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if pack.pack(float(text)) == target:
            return text
    return repr(value)


# -- the selector --------------------------------------------------------------------------------

def decoder_for(field: FieldLayout, encoding: str = "ascii", *,
                options: DecodeOptions = DEFAULT_OPTIONS) -> Decoder:
    """The decoder closure of one field, for byte bodies in ``encoding`` (text bodies as is)."""
    info = lookup_codec(encoding)
    where = f"field {field.name} at offset {field.offset}"

    def fail(reason: str) -> MessageError:
        return MessageError(reason, position=where)

    if field.kind == "alnum" or (field.date_format and field.usage == DISPLAY):
        # Dates stay text (``* YYMMDD`` on PIC 9(6) keeps its leading zeros) for the formatter.
        decode = info.decode

        def alnum(data: bytes | str) -> str:
            if isinstance(data, str):
                return data
            try:
                return decode(data)[0]
            except UnicodeDecodeError as e:
                raise fail(f"bytes not valid in {encoding}: {e.reason}") from None
        return alnum
    if field.usage == DISPLAY:
        return _display_decoder(field, info, options, fail)
    if field.usage in (COMP1, COMP2):
        return _float_decoder(field, options, fail)
    if field.usage in (COMP, COMP5):
        return _binary_decoder(field, fail)
    if field.usage == COMP3:
        return _packed_decoder(field, fail)
    raise fail(f"unsupported usage {field.usage}")


def _as_bytes(data: bytes | str) -> bytes:
    """Binary fields of a text message: its characters are taken as Latin-1 bytes."""
    return data.encode("latin-1", "replace") if isinstance(data, str) else data


def _display_decoder(field: FieldLayout, info: codecs.CodecInfo, options: DecodeOptions,
                     fail: Callable[[str], MessageError]) -> Decoder:
    table = zoned_text_table(info)
    # One bytes.translate to ASCII per value: what matters to a number is ASCII (anything
    # else becomes '?', which is invalid in a number anyway).
    to_ascii = bytes(ord(c) if ord(c) < 128 else 0x3F for c in (table[b] for b in range(256)))
    unsigned = not field.signed
    allow = field.signed or not options.strict_sign_overpunching
    relaxed = not options.strict_sign_overpunching
    scale, factor = field.scale, field.scale_factor
    explicit = field.explicit_point
    integral = field.effective_scale == 0 and not explicit
    scaled = _scaler(scale, factor, integral)
    blank_is_null = options.blank_is_null

    def display(data: bytes | str) -> Value:
        text = data if isinstance(data, str) else data.translate(to_ascii).decode("ascii")
        if text.isdigit() and text.isascii() and not explicit:
            return scaled(int(text))  # the common case: unsigned digits only
        if not text.strip(" \x00"):
            if blank_is_null:
                return None
            raise fail("blank number")
        try:
            sign, digits, point = parse_display(text, unsigned=unsigned, allow_overpunch=allow,
                                                relaxed=relaxed)
            value = display_value(sign, digits, point, scale, factor)
        except (ValueError, ArithmeticError) as e:
            raise fail(f"invalid number {text!r}: {e}") from None
        return int(value) if integral and point is None else value
    return display


def beyond_picture(field: FieldLayout, value: int) -> str:
    """The error of a COMP value with more digits than its PICTURE (``fixed.trunc`` std/opt):
    refused rather than cut to the PICTURE, which would write a different number."""
    record = f" of record {field.path[0]}" if field.path else ""
    return (f"binary value {value}{record} has more than the {field.digits} digits of its "
            "PICTURE; "
            "a COMP field holds no more under TRUNC(STD) or TRUNC(OPT) (fixed.trunc): if its "
            "producer was compiled with TRUNC(BIN), set fixed.trunc=bin")


def _binary_decoder(field: FieldLayout, fail: Callable[[str], MessageError]) -> Decoder:
    signed, length = field.signed, field.length
    integral = field.effective_scale == 0
    scaled = _scaler(field.scale, field.scale_factor, integral)
    st = _STRUCTS.get((length, signed))
    # a native field's every value fits its definition; another's at most its PICTURE's digits
    limit = None if field.native else 10 ** field.digits

    if st is not None:
        unpack = st.unpack

        def binary(data: bytes | str) -> Value:
            b = _as_bytes(data)
            if len(b) != length:
                raise fail(f"{len(b)} bytes for a {length}-byte binary field")
            value = unpack(b)[0]
            if limit is not None and not -limit < value < limit:
                raise fail(beyond_picture(field, value))
            return scaled(value)
        return binary

    def wide_binary(data: bytes | str) -> Value:
        b = _as_bytes(data)
        if len(b) != length:
            raise fail(f"{len(b)} bytes for a {length}-byte binary field")
        value = int.from_bytes(b, "big", signed=signed)
        if limit is not None and not -limit < value < limit:
            raise fail(beyond_picture(field, value))
        return scaled(value)
    return wide_binary


def _packed_decoder(field: FieldLayout, fail: Callable[[str], MessageError]) -> Decoder:
    length = field.length
    scaled = _scaler(field.scale, field.scale_factor, field.effective_scale == 0)
    unsigned = not field.signed

    def packed(data: bytes | str) -> Value:
        b = _as_bytes(data)
        if len(b) != length:
            raise fail(f"{len(b)} bytes for a {length}-byte packed field")
        try:
            head = "".join([_NIBBLES[x] for x in b[:-1]])  # type: ignore[misc]
        except TypeError:
            raise fail(f"invalid packed decimal {b.hex()}") from None
        last = _SIGN_BYTE[b[-1]]
        if last is None:
            raise fail(f"invalid packed decimal sign {b.hex()}")
        value = int(head + last[0])
        if last[1] < 0:
            if unsigned and value:
                raise fail(f"negative packed decimal in an unsigned field {b.hex()}")
            value = -value
        return scaled(value)
    return packed


_F32_MIN, _F32_MAX = 1.1754943508222875e-38, 3.4028234663852886e38


def _float_decoder(field: FieldLayout, options: DecodeOptions,
                   fail: Callable[[str], MessageError]) -> Decoder:
    single = field.usage == COMP1
    ieee = options.floating_point_format.upper() in ("IEEE754", "IEEE")
    unpack = struct.Struct(">f" if single else ">d").unpack
    length = field.length

    def floating(data: bytes | str) -> Value:
        b = _as_bytes(data)
        if len(b) != length:
            raise fail(f"{len(b)} bytes for a {length}-byte floating point field")
        value = unpack(b)[0] if ieee else ibm_float(b)
        if math.isnan(value) or math.isinf(value):
            raise fail(f"floating point value {value} is not a number")
        # An IBM single (24-bit fraction) is exact in float32 when within its range; beyond
        # it (IBM reaches 16^±64) the float64 text is the exact one.
        as_single = single and (ieee or value == 0 or _F32_MIN <= abs(value) <= _F32_MAX)
        with localcontext(_WIDE):
            return Decimal(shortest_float32(value) if as_single else repr(value))
    return floating


# -- encoders: the inverse of each decoder (test messages, ``msgcap send``, property tests) ------

Encoder = Callable[[Value], bytes]


# C901 accepted: one encoder closure per usage × kind, as decoder_for picks its decoders
def encoder_for(field: FieldLayout, encoding: str = "ascii", *,  # noqa: C901
                options: DecodeOptions = DEFAULT_OPTIONS) -> Encoder:
    """The bytes of a value for one field, so that ``decoder_for`` reads the value back."""
    info = lookup_codec(encoding)
    where = f"field {field.name}"
    length = field.length

    def fail(reason: str) -> MessageError:
        return MessageError(reason, position=where)

    space = info.encode(" ")[0]
    if field.kind == "alnum" or (field.date_format and field.usage == DISPLAY):
        def alnum(value: Value) -> bytes:
            data = info.encode("" if value is None else str(value))[0]
            if len(data) > length:
                raise fail(f"{len(data)} bytes do not fit {length}")
            return data + space * (length - len(data))
        return alnum
    exp = field.effective_scale

    def unscaled(value: Value) -> int:
        if value is None:  # DISPLAY writes NULL as blanks; a binary number has no NULL
            raise fail("NULL has no binary form")
        if field.scale_factor > 0:
            q, r = divmod(int(value), 10 ** field.scale_factor)
            if r or Decimal(value) != int(value):
                raise fail(f"{value} is not a multiple of 10^{field.scale_factor}")
            return q
        v = Decimal(value).scaleb(exp, _WIDE)
        if v != v.to_integral_value():
            raise fail(f"{value} has more than {exp} decimals")
        return int(v)

    if field.usage == DISPLAY:
        ebcdic = is_ebcdic(info)
        digits_n = field.digits

        def display(value: Value) -> bytes:
            if value is None:
                return space * length
            n = unscaled(value)
            if n < 0 and not field.signed:
                raise fail(f"negative value {value} in an unsigned field")
            text = str(abs(n)).zfill(digits_n)
            if len(text) > digits_n:
                raise fail(f"{value} does not fit {digits_n} digits")
            if field.explicit_point:
                cut = digits_n - field.scale
                text = f"{text[:cut]}.{text[cut:]}"
            data = bytearray(info.encode(text)[0])
            if field.sign_separate:
                sign = info.encode("-" if n < 0 else "+")[0]
                data = bytearray(sign + data if field.sign_leading else data + sign)
            elif field.signed:
                i = 0 if field.sign_leading else len(data) - 1
                d = data[i] & 0x0F if ebcdic else data[i] - 0x30
                if ebcdic:
                    data[i] = (0xD0 if n < 0 else 0xC0) + d
                else:
                    data[i] = ord(("}JKLMNOPQR" if n < 0 else "{ABCDEFGHI")[d])
            return bytes(data)
        return display
    if field.usage in (COMP, COMP5):
        def binary(value: Value) -> bytes:
            try:
                return unscaled(value).to_bytes(length, "big", signed=field.signed)
            except OverflowError:
                raise fail(f"{value} does not fit {length} bytes") from None
        return binary
    if field.usage == COMP3:
        def packed(value: Value) -> bytes:
            n = unscaled(value)
            sign = "d" if n < 0 else ("c" if field.signed else "f")
            text = str(abs(n)).zfill(2 * length - 1)
            if len(text) > 2 * length - 1:
                raise fail(f"{value} does not fit {length} packed bytes")
            return bytes.fromhex(text + sign)
        return packed
    single = field.usage == COMP1
    ieee = options.floating_point_format.upper() in ("IEEE754", "IEEE")

    def floating(value: Value) -> bytes:
        f = float(value)  # type: ignore[arg-type]
        if ieee:
            return struct.pack(">f" if single else ">d", f)
        return ibm_float_bytes(f, 4 if single else 8)
    return floating


def ibm_float_bytes(value: float, size: int) -> bytes:
    """float → IBM hexadecimal floating point of 4 or 8 bytes (truncating the fraction)."""
    bits = size * 8 - 8
    if value == 0:
        return bytes(size)
    sign = 0x80 if value < 0 else 0
    frac, exp2 = math.frexp(abs(value))  # value = frac × 2^exp2, 0.5 <= frac < 1
    exp16 = -(-exp2 // 4)
    mantissa = int(math.ldexp(frac, bits + exp2 - 4 * exp16))
    if not 0 <= exp16 + 64 <= 127:
        raise ValueError(f"{value} is out of range for IBM floating point")
    return ((sign | (exp16 + 64)) << bits | mantissa).to_bytes(size, "big")
