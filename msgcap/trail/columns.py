"""Column spans of the D token, per table, built once (trail-format.md §9).

``TableEncoder`` turns a list of trail-typed values into the D area; ``TableDecoder`` is its
inverse. Both pick one function per column when built, so encoding a record never looks at a
definition again.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from operator import call
from typing import Any

from gendef.model import CHAR, DATETIME, VARCHAR, Column, Table
from msgcap.trail.layout import BE_INTS, NULL_IND, VALUE_IND, Layout
from parsers.codegen import compile_function
from parsers.model import MISSING
from props.errors import DefinitionError, MessageError

NULL_DATETIME = b"1900-01-01:00:00:00.000000000"
_INT_SIZES = {130: 2, 131: 2, 132: 4, 133: 4, 134: 8, 135: 8}

Encoder = Callable[[Any], bytes]
Decoder = Callable[[bytes, int, int], Any]  # (data, start, end) of one column's span


class ValueTooLong(ValueError):
    """A value that does not fit its column."""


def _null_span(col: Column) -> bytes:
    t = col.type_code
    if t == VARCHAR:
        return NULL_IND + b"\x00\x00"
    if t == CHAR:
        return NULL_IND + bytes(col.characters)
    if t == DATETIME:
        return NULL_IND + NULL_DATETIME[:col.external_length]
    return NULL_IND + bytes(_INT_SIZES[t])


def _fit_datetime(text: str, n: int) -> bytes:
    """Datetime text at exactly the external length: cut, or pad a missing fraction/time."""
    b = text.encode("ascii")
    if len(b) > n:
        return b[:n]
    if len(b) == 10 and n >= 19:
        b += b":00:00:00"
    if len(b) == 19 and n > 20:
        b += b"."
    if len(b) >= 20 or (len(b) == 19 and n == 19):
        return b.ljust(n, b"0")
    raise ValueTooLong(f"datetime {text!r} does not fit length {n}")


def _fit_char(v: str, n: int, size: int) -> bytes:
    """CHAR text padded to its n characters, in at most ``size`` bytes: blanks past n
    characters are dropped, and so are pad blanks past ``size`` bytes (text of characters
    outside the column's code page, source-definitions.md §6.3)."""
    text = v if len(v) <= n else v.rstrip(" ")
    if len(text) > n:
        raise ValueTooLong(f"{len(text)} characters do not fit CHAR({n})")
    b = text.ljust(n).encode()
    if len(b) > size:
        b = b[:max(size, len(text.rstrip(" ").encode()))]
        if len(b) > size:
            raise ValueTooLong(f"{len(b)} bytes do not fit CHAR({n}) of {size} bytes")
    return b


def _absent(v: Any, null: bytes, kind: str) -> bytes:
    """The entry of a value that is not of the column's Python type: NULL, missing or an error."""
    if v is None:
        return null
    if v is MISSING:
        return b""
    raise TypeError(f"expected {kind}, got {type(v).__name__}")


def column_encoder(index: int, col: Column, layout: Layout) -> Encoder:
    """A function value → whole column entry (index, length, span) for one column: the NULL
    entry for None, nothing (b"") for MISSING. The common case runs without a test."""
    t, n = col.type_code, col.external_length
    entry = layout.entry.pack
    null_span = _null_span(col)
    null = entry(index, len(null_span)) + null_span
    if t == VARCHAR:
        var = layout.entry_var.pack
        heads = [var(index, k + 4, 0, k) for k in range(min(n, 255) + 1)]  # by byte length
        known = len(heads)

        def enc_var(v: str) -> bytes:
            try:
                b = v.encode()
            except AttributeError:
                return _absent(v, null, "str")
            k = len(b)
            if k < known:
                return heads[k] + b
            if k > n:
                raise ValueTooLong(f"{k} bytes do not fit {col.kind} of {n} bytes")
            return var(index, k + 4, 0, k) + b
        return enc_var
    if t == CHAR:
        chars = col.characters  # and n, field 3: its most bytes (source-definitions.md §6.3)
        head = entry(index, chars + 2) + VALUE_IND

        def enc_char(v: str) -> bytes:
            try:
                b = v.encode()
            except AttributeError:
                return _absent(v, null, "str")
            if len(b) == chars == len(v):
                return head + b
            b = _fit_char(v, chars, n)
            return entry(index, len(b) + 2) + VALUE_IND + b
        return enc_char
    if t in BE_INTS:
        head = entry(index, 2 + _INT_SIZES[t]) + VALUE_IND
        pack = BE_INTS[t].pack

        def enc_int(v: int) -> bytes:
            if type(v) is int:
                return head + pack(v)
            return _absent(v, null, "int")
        return enc_int
    if t == DATETIME:
        head = entry(index, n + 2) + VALUE_IND

        def enc_dt(v: str) -> bytes:
            try:
                b = v.encode("ascii")
            except AttributeError:
                return _absent(v, null, "str")
            return head + (b if len(b) == n else _fit_datetime(v, n))
        return enc_dt
    raise DefinitionError(f"column {col.name}: type {t} not supported")


def column_decoder(col: Column, layout: Layout) -> Decoder:
    """A function (buffer, start, end) → trail-typed value (None for NULL) of the span
    buffer[start:end]; the inverse of ``column_encoder``."""
    t = col.type_code
    if t == VARCHAR:
        u16 = layout.u16.unpack_from

        def dec_var(b: bytes, p: int, q: int) -> Any:
            if b[p] == 0xFF and b[p + 1] == 0xFF:
                return None
            if q - p < 4:
                raise ValueError(f"VARCHAR span of {q - p} bytes")
            (n,) = u16(b, p + 2)
            if p + 4 + n > q:
                raise ValueError(f"VARCHAR length {n} exceeds its span of {q - p} bytes")
            return b[p + 4:p + 4 + n].decode("utf-8", "replace")
        return dec_var
    if t in BE_INTS:
        size, unpack = 2 + _INT_SIZES[t], BE_INTS[t].unpack_from

        def dec_int(b: bytes, p: int, q: int) -> Any:
            if b[p] == 0xFF and b[p + 1] == 0xFF:
                return None
            if q - p != size:
                raise ValueError(f"type {t} span of {q - p} bytes (expected {size})")
            return unpack(b, p + 2)[0]
        return dec_int
    if t in (CHAR, DATETIME):
        def dec_text(b: bytes, p: int, q: int) -> Any:
            if b[p] == 0xFF and b[p + 1] == 0xFF:
                return None
            return b[p + 2:q].decode("utf-8", "replace")
        return dec_text

    def dec_raw(b: bytes, p: int, q: int) -> Any:  # a type msgcap does not decode: keep bytes
        return None if b[p] == 0xFF and b[p + 1] == 0xFF else bytes(b[p + 2:q])
    return dec_raw


def _fails(enc: Encoder, v: Any) -> bool:
    try:
        enc(v)
    except (ValueError, TypeError, AttributeError, struct.error, UnicodeError):
        return True
    return False


# What the generated encoders catch to decline a value that is not the common case (the caller
# then takes the per-column path, which raises the error): a wrong type (no ``encode``, not
# unpackable), a wrong length (ValueError, IndexError of a by-length table), an integer out of
# range (struct.error), a field of the record header out of range (KeyError, struct.error).
NOT_COMMON = (AttributeError, IndexError, KeyError, TypeError, ValueError, struct.error)


@dataclass(slots=True)
class InlineColumns:
    """Source of the common case of one table's D area, for generated encoders (``exec``).

    ``body`` (statements at one indent level, inside a ``try``) unpacks ``values`` and sets
    ``h{i}``/``b{i}`` (entry head, value bytes; both empty for MISSING) of every column, or
    returns None when a value is not the common case: a wrong type, a CHAR not ASCII or over
    its length, a DATETIME not of its length, a VARCHAR over 255 bytes or its bytes (the
    caller then takes the per-column path, which raises every error). ``parts`` are the pieces
    of the D area in order, ``size`` the expression of its length; ``space`` holds the names
    the source uses.
    """

    body: str
    parts: str
    size: str
    space: dict[str, Any]


def inline_columns(table: Table, layout: Layout) -> InlineColumns:
    """The common-case encoding of ``table``'s values as source text (see ``InlineColumns``);
    its output is byte for byte what ``column_encoder`` gives for the same values."""
    entry = layout.entry.pack
    space: dict[str, Any] = {"E": b"", "MISSING": MISSING}
    lines = [f"({''.join(f'v{i}, ' for i in range(len(table.columns)))}) = values", "m = 0"]
    fixed = 0  # bytes of the columns whose entry has one size (NULL or not), less m: MISSING
    varying = []
    for i, col in enumerate(table.columns):
        t, n = col.type_code, col.external_length
        null_span = _null_span(col)
        space[f"N{i}"] = entry(i, len(null_span)) + null_span
        null = f"elif v{i} is None: h{i} = N{i}; b{i} = E"  # (after the common case)
        if t == VARCHAR:
            var = layout.entry_var.pack
            # by byte length, up to the column's bytes (a longer value: the per-column path)
            space[f"H{i}"] = [var(i, k + 4, 0, k) for k in range(min(n, 255) + 1)]
            lines += [f"if type(v{i}) is str: b{i} = v{i}.encode(); h{i} = H{i}[len(b{i})]",
                      null, f"elif v{i} is MISSING: h{i} = E; b{i} = E; m += 8",
                      "else: return None"]
            fixed += 8  # the NULL entry too: index, length, FFFF, 0000
            varying.append(f"len(b{i})")
            continue
        if t == CHAR:
            n = col.characters  # ASCII text only below: its bytes are its characters
        size = _INT_SIZES[t] if t in BE_INTS else n
        space[f"C{i}"] = entry(i, size + 2) + VALUE_IND
        if len(null_span) == size + 2:
            fixed += size + 6
            missing = f"elif v{i} is MISSING: h{i} = E; b{i} = E; m += {size + 6}"
        else:  # a DATETIME longer than the NULL text
            varying.append(f"len(h{i}) + len(b{i})")
            missing = f"elif v{i} is MISSING: h{i} = E; b{i} = E"
        if t in BE_INTS:
            space[f"P{i}"] = BE_INTS[t].pack
            lines += [f"if type(v{i}) is int: h{i} = C{i}; b{i} = P{i}(v{i})", null, missing,
                      "else: return None"]
        elif t == CHAR:
            # n bytes for n characters: padding bytes is padding characters (the per-column
            # path drops the blanks a wider character needs); wider columns take ASCII only
            wider = col.external_length != n
            differs = f"len(b{i}) != {n}" + (f" or len(v{i}) != {n}" if wider else "")
            over = f"len(b{i}) > {n}" + (f" or len(b{i}) != len(v{i})" if wider else "")
            lines += [f"if type(v{i}) is str:", f" b{i} = v{i}.encode()", f" if {differs}:",
                      f"  if {over}: return None", f"  b{i} = b{i}.ljust({n})",
                      f" h{i} = C{i}", null, missing, "else: return None"]
        elif t == DATETIME:
            lines += [f"if type(v{i}) is str:", f" b{i} = v{i}.encode('ascii')",
                      f" if len(b{i}) != {n}: return None", f" h{i} = C{i}", null, missing,
                      "else: return None"]
        else:
            raise DefinitionError(f"column {col.name}: type {t} not supported")
    body = "\n".join(lines)
    parts = "".join(f"h{i}, b{i}, " for i in range(len(table.columns)))
    return InlineColumns(body, parts, " + ".join([str(fixed), *varying]) + " - m", space)


# what the all-present case raises for a value of no column's form
NOT_PRESENT = (TypeError, ValueError, UnicodeError, struct.error)


@dataclass(slots=True)
class PresentColumns:
    """Source of the D area of one table's records whose every value is present and of its
    common form — an int for the integer columns, a text of exactly the column's length in
    ASCII for CHAR and DATETIME — for generated encoders (``exec``), as one ``struct`` call.

    ``lines`` (statements at one indent level) unpack ``values`` and, in the common case, set
    ``d`` to the D area (``size`` bytes), the last line at the indent the caller's own lines
    after it take (two spaces more); otherwise they fall through (a value that is None, MISSING or of another form: the caller
    goes on with ``InlineColumns``). They raise TypeError, ValueError, UnicodeError or
    struct.error for values of no column's form, which the caller catches to go on the same way.

    Consecutive text columns whose entry heads are ASCII are one run: their heads and values
    joined and encoded at once, the run's byte length telling that every value was ASCII.
    """

    lines: list[str]
    size: int
    space: dict[str, Any]


def present_columns(table: Table, layout: Layout) -> PresentColumns | None:
    """The all-present case of ``table`` (see ``PresentColumns``), byte for byte what
    ``column_encoder`` gives for those values; None for a table with a column of another type
    (VARCHAR) or without columns."""
    entry = layout.entry.pack
    space: dict[str, Any] = {}
    tests: list[str] = []
    runs: list[tuple[list[int], int]] = []  # (columns, byte length) of each text run
    fmt, args = ">", []
    size = 0
    run: list[int] = []
    for i, col in enumerate(table.columns):
        t, n = col.type_code, col.external_length
        if t in BE_INTS:
            space[f"E{i}"] = entry(i, _INT_SIZES[t] + 2)
            fmt += "4s2x" + BE_INTS[t].format.lstrip("<>!=@")
            args += [f"E{i}", f"v{i}"]
            tests.append(f"type(v{i}) is int")
            size += 6 + _INT_SIZES[t]
            run = []
            continue
        if t not in (CHAR, DATETIME):
            return None
        if t == CHAR:
            n = col.characters  # ASCII text only: its bytes are its characters
        head = entry(i, n + 2) + VALUE_IND
        tests.append(f"len(v{i}) == {n}")
        size += 6 + n
        if not head.isascii():  # a text entry alone: its head as bytes
            space[f"E{i}"] = head
            fmt += f"6s{n}s"
            args += [f"E{i}", f"(v{i}.encode('ascii'))"]
            run = []
            continue
        space[f"S{i}"] = head.decode("ascii")
        if not run:
            run = []
            runs.append((run, 0))
            fmt += "{}s"  # the run's length, known at its end
            args.append(f"r{len(runs) - 1}")
        run.append(i)
        runs[-1] = (run, runs[-1][1] + 6 + n)
    if not table.columns:
        return None
    fmt = fmt.format(*(length for _, length in runs))
    space["DPACK"] = struct.Struct(fmt).pack
    lines = [f"({''.join(f'v{i}, ' for i in range(len(table.columns)))}) = values",
             f"if {' and '.join(tests)}:"]
    for k, (cols, _) in enumerate(runs):
        parts = "".join(f"S{i}, v{i}, " for i in cols)
        lines.append(f" r{k} = ''.join(({parts})).encode()")
    check = " and ".join(f"len(r{k}) == {length}" for k, (_, length) in enumerate(runs))
    lines.append(f" if {check or 'True'}:")
    lines.append(f"  d = DPACK({', '.join(args)})")
    return PresentColumns(lines, size, space)


def _indent(text: str, by: str) -> str:
    return "\n".join(by + line for line in text.splitlines())


class TableEncoder:
    """The D area of one table's records; built once per table and byte order.

    ``encode`` runs one generated function for the common case and falls back to one function
    per column (which raises every error) for the rest.
    """

    __slots__ = ("_cols", "_encs", "_fast", "_u16", "inline", "name_bytes", "table")

    def __init__(self, table: Table, layout: Layout) -> None:
        if len(table.columns) > 65536:
            raise DefinitionError(f"table {table.name}: more than 65536 columns")
        self.table = table
        self.name_bytes = table.name.encode() + b"\x00"
        self._encs = [column_encoder(i, c, layout) for i, c in enumerate(table.columns)]
        self._u16 = layout.u16.pack
        self._cols = len(table.columns)
        self.inline = inline_columns(table, layout)
        space = dict(self.inline.space)
        present = present_columns(table, layout)
        first = ""  # every value present and of its common form: one struct call
        if present is not None:
            space.update(present.space, NOT_PRESENT=NOT_PRESENT)
            first = (f" try:\n{_indent(chr(10).join([*present.lines, '  return d']), '  ')}\n"
                     " except NOT_PRESENT:\n  pass\n")
        source = (f"def fast(values):\n{first} try:\n{_indent(self.inline.body, '  ')}\n"
                  f"  return b''.join(({self.inline.parts}))\n except NOT_COMMON:\n"
                  f"  return None\n")
        space["NOT_COMMON"] = NOT_COMMON
        self._fast = compile_function(source, space, "fast", f"trail column encoder for {table.name}")

    def encode(self, values: list[Any]) -> bytes:
        """Entries for every value that is not MISSING, in column order."""
        d = self._fast(values)
        if d is not None:
            return d
        if len(values) != self._cols:
            raise MessageError(f"table {self.table.name}: {len(values)} values for "
                               f"{self._cols} columns")
        try:
            return b"".join(map(call, self._encs, values))
        except (ValueError, TypeError, AttributeError, struct.error, UnicodeError) as exc:
            i = next(i for i, (enc, v) in enumerate(zip(self._encs, values, strict=True))
                     if _fails(enc, v))
            col = self.table.columns[i].name
            raise MessageError(f"cannot encode {values[i]!r}: {exc}",
                               position=f"table {self.table.name} column {col}") from None

    def encode_pk(self, key_before: list[Any] | None, values: list[Any]) -> bytes:
        """PK update: u16 before_len, key before entries, then the after entries (§6)."""
        if key_before is None:
            raise MessageError(f"table {self.table.name}: PK update without key before values")
        before = self.encode(key_before)
        return self._u16(len(before)) + before + self.encode(values)


class TableDecoder:
    """Spans → values for one table; the inverse of ``TableEncoder``."""

    __slots__ = ("_entry", "decoders", "table")

    def __init__(self, table: Table, layout: Layout) -> None:
        self.table = table
        self.decoders = [column_decoder(c, layout) for c in table.columns]
        self._entry = layout.entry.unpack_from

    def decode(self, data: bytes, start: int, end: int) -> list[Any]:
        """Values of the column entries filling data[start:end], MISSING where none.

        Bad entries raise ValueError (the reader adds file and RBA).
        """
        decs = self.decoders
        ncols = len(decs)
        out: list[Any] = [MISSING] * ncols
        entry = self._entry
        p = start
        while p < end:
            if p + 4 > end:
                raise ValueError("column entries do not fill the data area")
            index, n = entry(data, p)
            p += 4
            q = p + n
            if q > end:
                raise ValueError(f"column {index} length {n} runs past the data area")
            if index >= ncols:
                raise ValueError(f"column index {index} not in table {self.table.name} "
                                 f"({ncols} columns)")
            if n < 2:
                raise ValueError(f"column {index} span of {n} bytes")
            out[index] = decs[index](data, p, q)
            p = q
        return out

    def values(self, entries: list[tuple[int, bytes]]) -> list[Any]:
        """One value per column from (index, span) pairs, MISSING where there is none."""
        out: list[Any] = [MISSING] * len(self.decoders)
        for index, span in entries:
            if len(span) < 2:
                raise ValueError(f"column {index} span of {len(span)} bytes")
            out[index] = self.decoders[index](span, 0, len(span))
        return out
