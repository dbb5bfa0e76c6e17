"""Column text → trail-typed value (properties.md §2.5), one converter compiled per column.

``build_converter`` looks at the column's definition once and returns a small function that
takes the column text (never None: NULL is decided before conversion) and returns what
``parsers.model`` says the trail stores. Numbers never pass through float; failures raise a
``MessageError`` without a source, which the parser completes with message and field.
``compile_row`` fuses the converters of a table into one function per record; each converter
carries an ``inline`` tag naming the common case it may skip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gendef.model import (
    CHAR,
    DATETIME,
    INT16,
    INT32,
    NUMBER,
    UINT16,
    UINT32,
    UINT64,
    VARCHAR,
    Column,
)
from parsers.codegen import compile_function
from parsers.timefmt import TimeFormat, compile_format
from props.errors import DefinitionError, MessageError
from props.text import quoted

Converter = Callable[[str], Any]
RowConverter = Callable[[Sequence[str | None]], list[Any]]

_VALUE_CACHE_SIZE = 4096  # converted DATETIME texts kept per column

# Value range of the integer type codes (sourcedefs.md §4).
_INT_RANGES = {
    INT16: (-(1 << 15), (1 << 15) - 1),
    UINT16: (0, (1 << 16) - 1),
    INT32: (-(1 << 31), (1 << 31) - 1),
    UINT32: (0, (1 << 32) - 1),
    NUMBER: (-(1 << 63), (1 << 63) - 1),
    UINT64: (0, (1 << 64) - 1),
}


def split_number(text: str) -> tuple[bool, str, str]:
    """(negative, integer digits, fraction digits) of ``[+-]digits[.digits]``, blanks trimmed."""
    t = text.strip()
    negative = False
    if t[:1] in ("-", "+"):
        negative = t[0] == "-"
        t = t[1:]
    whole, dot, frac = t.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (
            dot and not (frac.isascii() and frac.isdigit())):
        raise MessageError(f"value {quoted(text)} is not a number")
    return negative, whole, frac


def _scaled_converter(scale: int, low: int, high: int) -> Converter:
    """Text → integer value × 10^scale, exact: extra fraction digits and overflow are errors."""
    factor = 10 ** scale
    frac_factor = [10 ** (scale - n) for n in range(scale + 1)]  # by fraction digit count
    safe = len(str(high)) - 1 - scale  # unsigned texts this short cannot overflow

    def convert(text: str) -> int:
        if text.isascii() and text.isdigit():  # the common cases first: 123 and 123.45
            value = int(text) * factor
            if len(text) <= safe:
                return value
        else:
            whole, _, frac = text.partition(".")
            if (text.isascii() and whole.isdigit() and frac.isdigit()
                    and len(frac) <= scale):
                value = int(whole) * factor + int(frac) * frac_factor[len(frac)]
                if len(whole) <= safe:
                    return value
            else:
                negative, whole, frac = split_number(text)
                frac = frac.rstrip("0")
                if len(frac) > scale:
                    raise MessageError(
                        f"value {quoted(text)} has more than {scale} fraction digits (never rounded)")
                value = int(whole + frac.ljust(scale, "0"))
                if negative:
                    value = -value
        if not low <= value <= high:
            raise MessageError(f"value {quoted(text)} is out of range for the column type")
        return value
    convert.inline = ("digits", safe, factor, scale)  # type: ignore[attr-defined]
    return convert


def canonical_number(text: str) -> str:
    """``[+-]digits[.digits]`` without ``+``, leading zeros or trailing fraction zeros."""
    negative, whole, frac = split_number(text)
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    out = f"{whole}.{frac}" if frac else whole
    return "-" + out if negative and out != "0" else out


def _number_text_converter(length: int) -> Converter:
    def convert(text: str) -> str:
        value = canonical_number(text)
        if len(value) > length:
            raise MessageError(f"value {quoted(text)} is longer than {length} characters")
        return value
    return convert


def _char_converter(length: int) -> Converter:
    def convert(text: str) -> str:
        if len(text) > length:
            stripped = text.rstrip(" ")
            if len(stripped) > length:
                raise MessageError(f"value {quoted(text)} is longer than CHAR({length})")
            return stripped.ljust(length)
        return text.ljust(length)
    convert.inline = ("exact", length)  # type: ignore[attr-defined]
    return convert


def _varchar_converter(length: int) -> Converter:
    def convert(text: str) -> str:
        if len(text) > length:
            raise MessageError(f"value {quoted(text)} is longer than VARCHAR({length})")
        return text
    convert.inline = ("max", length)  # type: ignore[attr-defined]
    return convert


def _datetime_converter(fmt: TimeFormat, length: int) -> Converter:
    """Dates repeat (a day's orders, a batch's load time): results are cached by text."""
    column_text = fmt.column_text
    cache: dict[str, str] = {}

    def convert(text: str) -> str:
        out = cache.get(text)
        if out is None:
            out = column_text(text, length)
            if len(cache) >= _VALUE_CACHE_SIZE:
                cache.clear()
            cache[text] = out
        return out
    # compile_row reads the cache directly: clear() keeps the dict, so the bound get stays valid
    convert.inline = ("cached", cache.get)  # type: ignore[attr-defined]
    return convert


def build_converter(column: Column, dateformat: str | TimeFormat | None = None,
                    *, table: str = "") -> Converter:
    """The converter for one column; ``dateformat`` applies to DATETIME columns only.

    Unsupported type codes fail here, at build time, naming table and column.
    """
    t = column.type_code
    if t == CHAR:
        return _char_converter(column.characters)
    if t == VARCHAR:
        if column.is_number_text:
            return _number_text_converter(column.external_length)
        return _varchar_converter(column.characters)
    if t in _INT_RANGES:
        low, high = _INT_RANGES[t]
        return _scaled_converter(column.scale, low, high)
    if t == DATETIME:
        if not isinstance(dateformat, TimeFormat):
            dateformat = compile_format(dateformat, date_only=True)
        return _datetime_converter(dateformat, column.external_length)
    where = f"table {table} column {column.name}" if table else f"column {column.name}"
    raise DefinitionError(f"{where}: type {t} not supported")


def compile_row(converters: Sequence[Converter], skip: int = 0, *, table: str
                ) -> RowConverter:
    """One function for a whole record: ``values`` holds ``skip`` leading fields, then exactly
    one text (or None) per converter; it returns the converted list, None kept as None.

    The result equals calling each converter, which still raises every error: the common cases
    (a VARCHAR within its length, a CHAR of its exact length, plain digits of a NUMBER, a cached
    DATETIME) are tested inline and only the rest reach the converter. Generated once per
    table, so a record costs one call instead of one per column.
    """
    space: dict[str, Any] = {}
    names = [f"_{i}" for i in range(skip)]
    items = []
    for i, convert in enumerate(converters):
        t, c = f"t{i}", f"c{i}"
        names.append(t)
        space[c] = convert
        kind: tuple[Any, ...] = getattr(convert, "inline", None) or ()
        tag = kind[0] if kind else None
        if tag == "max":
            items.append(f"{t} if {t} is None or len({t}) <= {kind[1]} else {c}({t})")
        elif tag == "exact":
            items.append(f"{t} if {t} is None or len({t}) == {kind[1]} else {c}({t})")
        elif tag == "digits":
            safe, factor, scale = kind[1], kind[2], kind[3]
            digits = (f"int({t}) if len({t}) <= {safe} and {t}.isdigit() and {t}.isascii()"
                      if scale == 0 else
                      # w.f with exactly ``scale`` fraction digits: the digits of w and f (a
                      # dot before that one is left in u, which then is no number)
                      f"int(u) if {t}[{-scale - 1}:{-scale}] == '.' and {scale + 1} < len({t})"
                      f" <= {safe + scale + 1} and (u := {t}.replace('.', '', 1))"
                      f".isdigit() and u.isascii() else int({t}) * {factor} if len({t}) <= "
                      f"{safe} and {t}.isdigit() and {t}.isascii()")
            if scale > 1:  # w.f with one fraction digit (12.5 of a NUMBER(p,2)), the same way
                digits += (f" else int(u) * {10 ** (scale - 1)} if {t}[-2:-1] == '.' and 2 < "
                           f"len({t}) <= {safe + 2} and (u := {t}.replace('.', '', 1))"
                           f".isdigit() and u.isascii()")
            items.append(f"None if {t} is None else {digits} else {c}({t})")
        elif tag == "cached":
            space[f"g{i}"] = kind[1]
            items.append(f"None if {t} is None else g{i}({t}) or {c}({t})")
        else:
            items.append(f"None if {t} is None else {c}({t})")
    unpack = f"    ({', '.join(names)},) = values\n" if names else ""
    source = f"def row(values):\n{unpack}    return [{', '.join(items)}]\n"
    return compile_function(source, space, "row", f"delimited row converter for {table}")
