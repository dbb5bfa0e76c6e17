"""AMQP 1.0 values as a JMS consumer reads them (the OASIS AMQP JMS Mapping 1.0, as Qpid JMS
and Artemis implement it): ``getStringProperty()`` of a typed application property, and the
``ID:AMQP_…`` forms of message and correlation ids. The names these values go under are
``props.jmsnames``'s.

A property's text is Java's ``String.valueOf`` of the Java type the mapping gives the AMQP type:
``int`` −42 is ``-42``, a ``float`` 0.5 ``0.5``, a ``double`` 1e20 ``1.0E20``, a boolean
``true``; the unsigned types are their numbers (Artemis reads them as ``long``), a timestamp its
epoch milliseconds, a char the character, a UUID its canonical text, a decimal its value; null is
no value at all (``None``: the caller leaves the key out).
"""

from __future__ import annotations

import math
import struct
import uuid
from decimal import Decimal
from typing import Any

JMS_ID_PREFIX = "ID:"
# The encodings of a non-string id (and the escape of a string that looks encoded).
_ENCODED = ("AMQP_NO_PREFIX:", "AMQP_UUID:", "AMQP_ULONG:", "AMQP_STRING:", "AMQP_BINARY:")


def message_id_text(value: Any) -> str:
    """``getJMSMessageID()`` of an AMQP message-id: a string with ``ID:`` as is (escaped with
    ``ID:AMQP_STRING:`` when an encoding prefix follows), a string without it
    ``ID:AMQP_NO_PREFIX:…``, other kinds their ``ID:AMQP_…`` form."""
    if isinstance(value, str):
        if not value.startswith(JMS_ID_PREFIX):
            return f"ID:AMQP_NO_PREFIX:{value}"
        return _escaped(value)
    return _encoded_id(value)


def correlation_id_text(value: Any) -> str:
    """``getJMSCorrelationID()`` of an AMQP correlation-id: a string as is (an application's
    own value), escaped when it is ``ID:`` and an encoding prefix; other kinds as message ids."""
    if isinstance(value, str):
        return _escaped(value) if value.startswith(JMS_ID_PREFIX) else str(value)
    return _encoded_id(value)


def id_object(text: str) -> Any:
    """The AMQP id a JMS id text stands for (Qpid JMS's ``toIdObject``), so that an id msgcap
    publishes again reads back as the same text: ``ID:AMQP_ULONG:7`` the ulong 7,
    ``ID:AMQP_NO_PREFIX:x`` and ``ID:AMQP_STRING:x`` the string x, any other text as is."""
    from proton import ulong

    if not text.startswith(JMS_ID_PREFIX):
        return text
    rest = text[len(JMS_ID_PREFIX):]
    try:
        if rest.startswith(("AMQP_NO_PREFIX:", "AMQP_STRING:")):
            return rest.partition(":")[2]
        if rest.startswith("AMQP_ULONG:"):
            return ulong(int(rest.partition(":")[2]))
        if rest.startswith("AMQP_UUID:"):
            return uuid.UUID(rest.partition(":")[2])
        if rest.startswith("AMQP_BINARY:"):
            return bytes.fromhex(rest.partition(":")[2])
    except ValueError:
        pass  # not what its prefix says: sent as the text it is
    return text


def _escaped(value: str) -> str:
    if value.startswith(_ENCODED, len(JMS_ID_PREFIX)):
        return f"ID:AMQP_STRING:{value}"
    return str(value)


def _encoded_id(value: Any) -> str:
    if isinstance(value, uuid.UUID):
        return f"ID:AMQP_UUID:{value}"
    if isinstance(value, (bytes, memoryview)):
        return f"ID:AMQP_BINARY:{bytes(value).hex().upper()}"
    return f"ID:AMQP_ULONG:{int(value)}"


def java_text(value: Any) -> str | None:
    """``String.valueOf`` of the Java value an AMQP application property maps to; None for
    null. Lists and maps (not JMS property types) read as Java's ``toString`` of them."""
    if value is None:
        return None
    kind = type(value).__name__
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "float32":
        return java_float(float(value))
    if isinstance(value, float):
        return java_double(value)
    if kind in ("decimal32", "decimal64", "decimal128"):
        return str(decimal_of(value, kind))
    if isinstance(value, int):  # byte … long, the unsigned types, timestamp (ms)
        return str(int(value))
    if isinstance(value, str):  # string, symbol, char
        return str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_text(k)}={java_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(java_text(v)) for v in value) + "]"
    elements = getattr(value, "elements", None)  # proton.Array
    if elements is not None:
        return "[" + ", ".join(str(java_text(v)) for v in elements) + "]"
    return str(value)


def java_double(value: float) -> str:
    """Java's ``Double.toString``: plain from 10⁻³ up to 10⁷, else ``d.dddE±n``; the digits
    those of Java 17's ``FloatingDecimal`` for a whole number (``_whole_digits``), else the
    shortest that read back as ``value``."""
    whole = _whole_digits(value, 53)
    return _java_decimal(value, whole if whole is not None else repr(value))


def java_float(value: float) -> str:
    """Java's ``Float.toString`` of a 32-bit float (``value`` widened to a Python float), in
    ``Double.toString``'s layout and with its choice of digits."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return _java_decimal(value, repr(value))
    whole = _whole_digits(value, 24)
    if whole is not None:
        return _java_decimal(value, whole)
    single = _single(value)
    for digits in range(1, 10):
        text = f"{value:.{digits - 1}e}"
        if _single(float(text)) == single:
            return _java_decimal(value, text)
    return _java_decimal(value, repr(value))  # (nine digits always read back)


# FloatingDecimal's insignificantDigitsNumber: the decimal digits of a whole number that its
# 2^p ulp leaves insignificant.
_INSIGNIFICANT = (0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7,
                  7, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14,
                  14, 14, 15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18, 19)


def _whole_digits(value: float, significant_bits: int) -> str | None:
    """The digits Java up to 18 (``FloatingDecimal``'s "easy case") prints for a whole number
    below 2⁶³: the number itself, its last digits rounded away where the float cannot hold
    them, as ``d…dE+n`` text; None for any other value (there Java prints the shortest digits
    that read back, and Java 19 and later do everywhere)."""
    if not value or math.isinf(value) or math.isnan(value) or value != int(value):
        return None
    binary_exponent = math.frexp(value)[1] - 1
    if binary_exponent > 62:
        return None
    whole = int(abs(value))
    insignificant = 0
    if binary_exponent > significant_bits:
        p2 = binary_exponent - significant_bits - 1
        insignificant = _INSIGNIFICANT[p2] if 1 < p2 < len(_INSIGNIFICANT) else 0
    if insignificant:
        scale = 10 ** insignificant
        whole, residue = divmod(whole, scale)
        if residue >= scale // 2:
            whole += 1
    return f"{'-' if value < 0 else ''}{whole}E+{insignificant}"


def _single(value: float) -> bytes | None:
    """The 32-bit float of ``value``; None for a decimal text rounded beyond the largest one
    (near ``Float.MAX_VALUE`` a shorter text can round up out of range: no match)."""
    try:
        return struct.pack(">f", value)
    except OverflowError:
        return None


def _java_decimal(value: float, shortest: str) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(shortest).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent  # the decimal point sits after this many digits
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{text}"
        whole, fraction = text[:point].ljust(point, "0"), text[point:]
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{point - 1}"


# IEEE 754-2008 decimals in the binary integer encoding (AMQP decimal32/64/128):
# (total bits, exponent continuation bits, bias).
_DECIMAL_FORMATS = {"decimal32": (32, 6, 101), "decimal64": (64, 8, 398),
                    "decimal128": (128, 12, 6176)}


def decimal_of(value: Any, kind: str) -> Decimal:
    """The value of an AMQP decimal (proton gives its raw bits: an int, or 16 bytes for
    decimal128), as Java's ``BigDecimal`` prints it."""
    bits, width, bias = _DECIMAL_FORMATS[kind]
    raw = int.from_bytes(bytes(value), "big") if isinstance(value, (bytes, memoryview)) \
        else int(value) & ((1 << bits) - 1)
    sign = raw >> (bits - 1)
    top = (raw >> (bits - 6)) & 0b11111  # the five bits after the sign
    if top >= 0b11110:
        return Decimal("NaN" if top == 0b11111 else ("-Infinity" if sign else "Infinity"))
    large = (top >> 3) == 0b11  # the significand's top bits are implied: 100
    shift = bits - (3 if large else 1) - (width + 2)
    exponent = (raw >> shift) & ((1 << (width + 2)) - 1)
    coefficient = raw & ((1 << shift) - 1)
    if large:
        coefficient |= 0b100 << shift
    return Decimal((sign, tuple(int(d) for d in str(coefficient)), exponent - bias))
