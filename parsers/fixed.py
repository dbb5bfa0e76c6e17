"""The fixed-width parser (properties.md §4): a header record, then the data record of one table.

Layouts come from a COBOL copybook (``fixed.schematype=copybook``: the ``fixed.header`` 01 record,
then the 01 record the table value names) or from source definitions (``sourcedefs``: the header
table, then each column at header length + Fetch Offset over its External Length,
sourcedefs.md §5). Everything is compiled when the parser is built: one plan per table with the
absolute slice and the converter of every trail column, the header's unused fields leading
(sourcedefs.md §7.1, decided by ``gendef.build.used_header_fields`` so that the parser and gendef
agree). Per message: slice the header fields the items read, pick the plan (cached by the text
of the table field), then slice and convert every column — for ASCII text in one generated
function per table, otherwise one ``convert(body[start:end])`` per column.

Text bodies are characters; byte bodies are read in ``fixed.encoding``: per field in copybook mode
(binary and packed fields come from the raw bytes, decoders of ``parsers.decoders``), the whole
body at once in sourcedefs mode (single-byte code pages keep offsets). One trailing line break of
a text body is dropped, so spool files written by editors still parse.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from gendef.build import load_source_definitions, used_header_fields
from gendef.model import CHAR, DATETIME, NUMBER, VARCHAR, Column, Definitions, Table
from gendef.userdefs import user_definitions
from parsers.base import ParserBase
from parsers.convert import build_converter, canonical_number
from parsers.decoders import decoder_for, is_ebcdic, lookup_codec
from parsers.model import DELETE, MISSING, Message, Op
from parsers.timefmt import TimeFormat, compile_format
from parsers.values import FieldIndex, HeaderItems, compile_items, compile_table, describe
from props.errors import DefinitionError, MessageError, PropertyError
from props.expr import Const, Field, JmsProp, SysSeqid, SysTs, SysTxid, normalize_field
from props.settings import FixedSettings, Settings

Convert = Callable[[Any], Any]

_INT64 = (-(1 << 63), (1 << 63) - 1)
_CACHE_SIZE = 4096  # table names / table field texts remembered

# How the generated image function reads a slot of an ASCII text body (``_compile_image``).
SAME, RSTRIP, DIGITS, CALL = "same", "rstrip", "digits", "call"


@dataclass(frozen=True, slots=True)
class _Slot:
    """One trail column: its absolute slice of the message and its converters."""

    name: str  # copybook field or column name, for errors
    start: int
    end: int
    key: bool
    text: Convert  # text slice → trail value
    raw: Convert  # byte slice → trail value
    kind: str = CALL  # SAME: the slice; RSTRIP: without trailing blanks; DIGITS: int if digits

    @property
    def position(self) -> str:
        return f"field {self.name} (offset {self.start}, length {self.end - self.start})"


@dataclass(frozen=True, slots=True)
class _Odo:
    """``OCCURS … DEPENDING ON``: columns whose occurrence exceeds the counter are missing."""

    counter: _Slot  # converts the counter field to its integer value
    columns: tuple[tuple[int, int], ...]  # (column index, 1-based occurrence)


@dataclass(frozen=True, slots=True)
class _Plan:
    """Everything a record of one table needs, compiled."""

    table: Table
    slots: tuple[_Slot, ...]
    text_items: tuple[tuple[int, int, Convert], ...]
    raw_items: tuple[tuple[int, int, Convert], ...]
    ascii_image: Callable[[str], list[Any]]  # the text image of a full-length ASCII body
    end: int  # absolute end of the full record (header + data)
    odo: tuple[_Odo, ...] = ()


@dataclass(frozen=True, slots=True)
class _HeaderGet:
    """A header field an item reads: position in the field list, slice, text getters."""

    index: int
    start: int
    end: int
    text: Convert | None  # None: the slice itself
    raw: Convert


def _same(value: Any) -> Any:
    return value


def _trimmed(getter: Callable[..., str | None], expr: Any) -> Callable[..., str | None]:
    """A header field's value without the blanks that pad it to its width (txid, txname,
    txowner); the seqid keeps its width."""
    if not isinstance(expr, Field):
        return getter

    def trimmed(message: Message, values: Sequence[str | None]) -> str | None:
        value = getter(message, values)
        return value.rstrip(" ") if value is not None else None
    return trimmed


def _plan(table: Table, slots: Sequence[_Slot], end: int, odo: tuple[_Odo, ...] = ()) -> _Plan:
    if len(slots) != len(table.columns):
        raise DefinitionError(f"table {table.name}: {len(table.columns)} columns in the "
                              f"definitions, {len(slots)} in the fixed-width layout")
    end = max([end, *(s.end for s in slots)])
    return _Plan(table, tuple(slots), tuple((s.start, s.end, s.text) for s in slots),
                 tuple((s.start, s.end, s.raw) for s in slots),
                 _compile_image(table.name, slots), end, odo)


def _compile_image(name: str, slots: Sequence[_Slot]) -> Callable[[str], list[Any]]:
    """One generated function that slices and converts every column of a full-length record.

    Like ``collections.namedtuple``, the source is built from trusted parts only (integer
    offsets, converter names): a CHAR column costs a slice, a zoned number ``int()``, with no
    per-column call or tuple unpacking. Valid for ASCII text only (``str.isdigit`` accepts other
    scripts' digits); other bodies take ``text_items``.
    """
    env: dict[str, Any] = {}
    parts = []
    for i, slot in enumerate(slots):
        cut = f"b[{int(slot.start)}:{int(slot.end)}]"
        if slot.kind == SAME:
            parts.append(cut)
        elif slot.kind == RSTRIP:
            parts.append(f"{cut}.rstrip(' ')")
        elif slot.kind == DIGITS:
            parts.append(f"(int(s) if (s := {cut}).isdigit() else c{i}(s))")
            env[f"c{i}"] = slot.text
        else:
            parts.append(f"c{i}({cut})")
            env[f"c{i}"] = slot.text
    source = "def image(b):\n    return [" + ", ".join(parts) + "]\n"
    exec(compile(source, f"<fixed-width image of {name}>", "exec"), env)  # noqa: S102
    return env["image"]


class _Codec:
    """``fixed.encoding`` resolved once: text of byte slices, and what 'blank' means."""

    __slots__ = ("decode", "digits_ascii", "name")

    def __init__(self, name: str) -> None:
        info = lookup_codec(name)
        self.name = name
        self.decode = info.decode
        try:
            self.digits_ascii = (not is_ebcdic(info)
                                 and info.decode(b"0123456789")[0] == "0123456789")
        except UnicodeDecodeError:
            self.digits_ascii = False

    def text(self, data: bytes, offset: int = 0) -> str:
        try:
            return self.decode(data)[0]
        except UnicodeDecodeError as error:
            raise MessageError(f"byte 0x{data[error.start]:02x} is not valid in {self.name}",
                               position=f"offset {offset + error.start}") from None


# -- converters ---------------------------------------------------------------------------------

def _column_converter(col: Column, fmt: TimeFormat | None, table: str) -> tuple[Convert, str]:
    """Text of a source-definitions column → trail value (§4 field values, §2.5), and its kind."""
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


def _trail_value(col: Column, fmt: TimeFormat | None, digits: int, table: str) -> Convert:
    """A decoded copybook value (str, int, Decimal or None) → the trail value of its column."""
    t = col.type_code
    if t == CHAR:
        n = col.external_length
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


def _field_converters(f, col: Column, codec: _Codec, fmt: TimeFormat | None,
                      table: str) -> tuple[Convert, Convert, str]:
    """(text, raw) converters of one copybook field (a ``gendef.copybook.FieldLayout``), and
    the kind of its text converter."""
    decode = decoder_for(f, codec.name)
    to_trail = _trail_value(col, fmt, f.digits, table)
    plain = (f.usage == "DISPLAY" and f.kind == "numeric" and not f.date_format
             and not f.explicit_point and not f.sign_separate and f.scale_factor == 0
             and col.type_code == NUMBER and col.scale == f.scale)
    if col.type_code == CHAR and f.kind == "alnum" and not f.date_format:
        n = col.external_length
        text_conv: Convert = _same

        def raw_char(data: bytes) -> str:
            text = decode(data)
            return text if len(text) == n else text.ljust(n)
        return text_conv, raw_char, SAME

    def slow(data: Any) -> Any:
        return to_trail(decode(data))

    if f.date_format and f.usage == "DISPLAY":
        return to_trail, slow, CALL  # the decoder keeps text as it is
    if not plain:
        return slow, slow, CALL

    def text_number(data: str) -> Any:
        if data.isdigit() and data.isascii():
            return int(data)  # unscaled digits: already value × 10^scale
        return slow(data)

    if not codec.digits_ascii:
        return text_number, slow, DIGITS

    def raw_number(data: bytes) -> Any:
        if data.isdigit():
            return int(data)
        return slow(data)
    return text_number, raw_number, DIGITS


# -- the parser ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FixedPlan:
    """What a fixed-width parser runs over: its settings, the definitions, and what the files
    they name held (the compiled copybook, or the source definitions), read once by the driver."""

    settings: Settings
    definitions: Definitions
    copybook: Any = None
    source: Definitions | None = None


class FixedParser(ParserBase):
    """``parser.type=fixed``: one Op per message (header record + data record)."""

    @classmethod
    def compile_plan(cls, settings: Settings, definitions: Definitions) -> FixedPlan:
        from gendef.copybook import compile_copybook_file

        f = settings.fixed
        if f is None:
            raise PropertyError("no fixed.* settings", prop="parser.type")
        if f.schematype != "copybook":
            return FixedPlan(settings, definitions, source=load_source_definitions(settings))
        if not f.copybook:
            raise PropertyError("required when fixed.schematype=copybook", prop="fixed.copybook",
                                file=settings.file)
        return FixedPlan(settings, definitions, copybook=compile_copybook_file(f.copybook))

    def __init__(self, plan: FixedPlan) -> None:
        super().__init__(plan)
        settings = plan.settings
        self.definitions = plan.definitions
        f = settings.fixed
        if not f.header:
            raise PropertyError("required", prop="fixed.header", file=settings.file)
        self._codec = _Codec(f.encoding)
        self._formats: dict[str | None, TimeFormat] = {}
        self._copybook = f.schematype == "copybook"
        if self._copybook:
            names, plans = self._build_copybook(settings, f)
        else:
            names, plans = self._build_sourcedefs(settings, f)
        self._plans = plans
        self._nheader = len(names)
        self._header_text = tuple((g.index, g.start, g.end, g.text) for g in self._header_gets)
        self._table_slice = next(((g.start, g.end) for g in self._header_gets
                                  if g.index == self._table_field), None)
        self._optype_slice = next(((g.start, g.end) for g in self._header_gets
                                   if g.index == self._optype_field), None)
        self._by_slice: dict[str | bytes, _Plan] = {}
        self._optypes: dict[str | bytes, str] = {}
        self._fast = self._compile_fast()
        self._by_name: dict[str, _Plan] = {}

    # -- building --------------------------------------------------------------------------

    def _format(self, fmt: str | None, prop: str) -> TimeFormat:
        found = self._formats.get(fmt)
        if found is None:
            found = self._formats[fmt] = compile_format(fmt, date_only=True, prop=prop)
        return found

    def _items(self, settings: Settings, f: FixedSettings, names: list[str],
               header_format: Callable[[str], str | None]) -> None:
        """Compile the header items; the timestamp field's own format is the default (§4)."""
        index = FieldIndex(names, normalize_field)
        ts = f.timestamp if f.timestamp is not None else (
            Field("timestamp") if "timestamp" in index else None)
        if f.timestamp_format is None and isinstance(ts, Field) and ts.name in index:
            own = header_format(names[index.get(ts.name)])
            if own is not None:
                f = replace(f, timestamp_format=own)
        try:
            self._header_items: HeaderItems = compile_items(f, index, prefix="fixed")
            sources = compile_table(f, index, prefix="fixed")[1]
        except PropertyError as error:
            if error.file:
                raise
            raise PropertyError(error.reason, prop=error.prop, file=settings.file,
                                line=settings.lines.get(error.prop or "")) from None
        items = self._header_items
        seqid = f.seqid if f.seqid is not None else (Field("id") if "id" in index else None)
        self._getters = (
            None if isinstance(seqid, SysSeqid) else items.seqid,
            None if f.txid is None or isinstance(f.txid, SysTxid) else
            _trimmed(items.txid, f.txid),
            items.txind,
            None if f.txname is None else _trimmed(items.txname, f.txname),
            None if f.txowner is None else _trimmed(items.txowner, f.txowner))
        self._need_now = isinstance(ts, SysTs) or ts is None
        optype = f.optype if f.optype is not None else Field("optype")
        self._optype_field = index.get(optype.name) if isinstance(optype, Field) else None
        fields = [e for e in sources if isinstance(e, Field)]
        self._table_position = ", ".join(describe(e) for e in sources
                                         if isinstance(e, (Field, JmsProp)))
        # A table named by one header field (and constants): its text alone selects the plan.
        self._table_field = (index.get(fields[0].name) if len(fields) == 1 and all(
            isinstance(e, (Field, Const)) for e in sources) else None)

    def _build_copybook(self, settings: Settings, f: FixedSettings
                        ) -> tuple[list[str], dict[str, _Plan]]:
        from gendef.copybook import column_fields, normalize_name

        copybook = self.plan.copybook
        header = copybook.record(f.header)
        if header is None:
            raise PropertyError(f"header record {f.header!r} is not an 01 record of "
                                f"{f.copybook}", prop="fixed.header", file=settings.file,
                                line=settings.lines.get("fixed.header"))
        self._header_name = header.name
        self._header_length = header.length
        head_fields = [x for x in header.fields if not x.filler]
        names = [x.name for x in head_fields]
        formats = {x.name: x.date_format for x in head_fields}
        self._items(settings, f, names, formats.get)
        codec = self._codec

        def header_get(i: int) -> _HeaderGet:
            x = head_fields[i]
            decode = decoder_for(x, codec.name)
            if x.usage == "DISPLAY":
                text: Convert | None = None

                def raw(data: bytes, start=x.offset) -> str:
                    return codec.text(data, start)
            else:
                def text(data: Any) -> str | None:
                    value = decode(data)
                    return None if value is None else str(value)
                raw = text
            return _HeaderGet(i, x.offset, x.offset + x.length, text, raw)
        self._header_gets = tuple(header_get(i) for i in sorted(self._header_items.used))

        columns = column_fields(header)
        used = {normalize_name(u)
                for u in used_header_fields(f, [x.name for x in columns])}
        lead = [x for x in columns if normalize_name(x.name) not in used and x.column not in used]
        if not isinstance(f.schema, Const):
            raise PropertyError('required when fixed.schematype=copybook (a constant such as '
                                '"RETAIL")', prop="fixed.schema", file=settings.file)
        schema = f.schema.text
        hlen = header.length
        plans: dict[str, _Plan] = {}
        for rec in copybook.records:
            if rec is header:
                continue
            table = self.definitions.get(f"{schema}.{normalize_name(rec.name)}")
            if table is None:
                continue
            fields = [(x, 0) for x in lead] + [(x, hlen) for x in column_fields(rec)]
            if len(fields) != len(table.columns):
                raise DefinitionError(f"table {table.name}: {len(table.columns)} columns in the "
                                      f"definitions, {len(fields)} in copybook record "
                                      f"{rec.name}")
            slots = []
            for (x, base), col in zip(fields, table.columns):
                fmt = None
                if col.type_code == DATETIME:
                    fmt = self._format(x.date_format or f.dateformats.lookup(table.name,
                                                                             col.name),
                                       f"fixed.dateformat for {table.name}")
                text, raw, kind = _field_converters(x, col, codec, fmt, table.name)
                slots.append(_Slot(x.name, base + x.offset, base + x.offset + x.length,
                                   col.key, text, raw, kind))
            odo = self._odo(rec, fields, hlen)
            plans[table.name] = _plan(table, slots, hlen + rec.length, odo)
        for table in user_definitions(f.userdefs, "fixed", layout=True):
            trail = self.definitions.get(table.name)
            if trail is not None and trail.name not in plans:
                plans[trail.name] = self._columns_plan(trail, [], list(table.columns), 0, hlen,
                                                       table.record_length, f)
        return names, plans

    def _odo(self, rec, fields, hlen: int) -> tuple[_Odo, ...]:
        """Counters of the record's OCCURS DEPENDING ON columns (sourcedefs.md §7.1)."""
        groups: dict[str, list[tuple[int, int]]] = {}
        for i, (x, _) in enumerate(fields):
            for o in x.depending_on:
                groups.setdefault(o.counter, []).append((i, o.index))
        out = []
        for counter, columns in groups.items():
            c = rec.field(counter)
            decode = decoder_for(c, self._codec.name)
            out.append(_Odo(_Slot(c.name, hlen + c.offset, hlen + c.offset + c.length, False,
                                  decode, decode), tuple(columns)))
        return tuple(out)

    def _build_sourcedefs(self, settings: Settings, f: FixedSettings
                          ) -> tuple[list[str], dict[str, _Plan]]:
        source = self.plan.source
        header = source.get(f.header)
        if header is None:
            raise PropertyError(f"header table {f.header!r} is not defined in fixed.sourcedefs "
                                "or fixed.userdefs", prop="fixed.header", file=settings.file,
                                line=settings.lines.get("fixed.header"))
        self._header_name = header.name
        hlen = max([header.record_length,
                    *(c.fetch_offset + c.external_length for c in header.columns)])
        self._header_length = hlen
        names = [c.name for c in header.columns]
        self._items(settings, f, names, lambda n: f.dateformats.lookup(header.name, n))
        self._header_gets = tuple(
            _HeaderGet(i, c.fetch_offset, c.fetch_offset + c.external_length, None, _same)
            for i, c in ((i, header.columns[i]) for i in sorted(self._header_items.used)))
        used = used_header_fields(f, names)
        lead = [c for c in header.columns if c.name not in used]
        plans: dict[str, _Plan] = {}
        for table in source:
            if table is header:
                continue
            trail = self.definitions.get(table.name)
            if trail is None:
                continue
            plans[trail.name] = self._columns_plan(trail, lead, list(table.columns), hlen, hlen,
                                                   table.record_length, f)
        return names, plans

    def _columns_plan(self, trail: Table, lead: list[Column], columns: list[Column],
                      lead_end: int, hlen: int, record_length: int, f: FixedSettings) -> _Plan:
        """A plan of text columns: ``lead`` header columns, then the data columns at hlen."""
        placed = [(c, 0) for c in lead] + [(c, hlen) for c in columns]
        if len(placed) != len(trail.columns) or any(
                c.name != t.name for (c, _), t in zip(placed, trail.columns)):
            raise DefinitionError(f"table {trail.name}: the definitions' columns are not the "
                                  "header's unused columns followed by the table's")
        slots = []
        for (c, base), col in zip(placed, trail.columns):
            fmt = None
            if col.type_code == DATETIME:
                fmt = self._format(f.dateformats.lookup(trail.name, col.name),
                                   f"fixed.dateformat for {trail.name}")
            conv, kind = _column_converter(col, fmt, trail.name)
            start = base + c.fetch_offset
            slots.append(_Slot(c.name, start, start + c.external_length, col.key, conv, conv,
                               kind))
        return _plan(trail, slots, hlen + record_length)

    # -- parsing ---------------------------------------------------------------------------

    def parse(self, message: Message) -> list[Op]:
        try:
            op = self._fast(message)
            return [op if op is not None else self._parse(message)]
        except MessageError as error:
            raise MessageError(error.reason, source=message.name,
                               position=error.position) from None

    def _compile_fast(self) -> Callable[[Message], Op | None]:
        """The common case in one closure: an ASCII text body of exactly its record's length
        whose table and optype texts were seen before. Anything else (and any error) returns
        None, and ``_parse`` does the full work, caches included."""
        if self._table_slice is None or self._optype_slice is None:
            return lambda message: None
        (ta, tb), (oa, ob) = self._table_slice, self._optype_slice
        by_slice, optypes = self._by_slice, self._optypes
        header_text, nheader = self._header_text, self._nheader
        timestamp = self._header_items.timestamp
        seqid, txid, txind, txname, txowner = self._getters
        need_now = self._need_now

        def fast(message: Message) -> Op | None:
            body = message.body
            if body.__class__ is not str or not body.isascii():
                return None
            plan = by_slice.get(body[ta:tb])
            optype = optypes.get(body[oa:ob])
            if plan is None or optype is None or len(body) != plan.end or plan.odo:
                return None
            values: list[Any] = [None] * nheader
            for i, a, b, text in header_text:
                values[i] = body[a:b] if text is None else text(body[a:b])
            try:
                image = plan.ascii_image(body)
                op = Op(plan.table, optype,
                        timestamp(message, values, time.time_ns() // 1000 if need_now else 0),
                        seqid(message, values) if seqid is not None else None,
                        txid(message, values) if txid is not None else None,
                        txind(message, values) if txind is not None else None,
                        txname(message, values) if txname is not None else None,
                        txowner(message, values) if txowner is not None else None,
                        message_id=message.id)
            except MessageError:
                return None
            if optype == DELETE:
                op.before = image
            else:
                op.after = image
            return op
        return fast

    def _lookup(self, name: str) -> _Plan:
        table = self.definitions.get(name)
        if table is None and self._copybook:
            head, dot, tail = name.rpartition(".")
            table = self.definitions.get(f"{head}{dot}{tail.upper().replace('-', '_')}")
        plan = self._plans.get(table.name) if table is not None else None
        if plan is None:
            raise MessageError(f"unknown table {name}"
                               + (" (no such 01 record)" if self._copybook else ""),
                               position=self._table_position)
        if len(self._by_name) >= _CACHE_SIZE:
            self._by_name.clear()
        self._by_name[name] = plan
        return plan

    def _parse(self, message: Message) -> Op:
        body = message.body
        raw = isinstance(body, bytes)
        if raw and not self._copybook:
            body = self._codec.text(body)
            raw = False
        if not raw and body.endswith("\n"):
            body = body[:-2] if body.endswith("\r\n") else body[:-1]
        n = len(body)
        hlen = self._header_length
        if n < hlen:
            unit = "bytes" if raw else "characters"
            raise MessageError(f"{n} {unit}, shorter than the {hlen} of header "
                               f"{self._header_name}", position="header")
        values: list[Any] = [None] * self._nheader
        if raw:
            for g in self._header_gets:
                values[g.index] = g.raw(body[g.start:g.end])
        else:
            for i, a, b, text in self._header_text:
                values[i] = body[a:b] if text is None else text(body[a:b])
        items = self._header_items
        try:
            plan = None
            if self._table_slice is not None:
                key = body[self._table_slice[0]:self._table_slice[1]]
                plan = self._by_slice.get(key)
            if plan is None:
                name = items.table(message, values)
                plan = self._by_name.get(name) or self._lookup(name)
                if self._table_slice is not None:
                    if len(self._by_slice) >= _CACHE_SIZE:
                        self._by_slice.clear()
                    self._by_slice[key] = plan
            optype = None
            if self._optype_slice is not None:
                okey = body[self._optype_slice[0]:self._optype_slice[1]]
                optype = self._optypes.get(okey)
            if optype is None:
                optype = items.optype(message, values)
                if self._optype_slice is not None and len(self._optypes) < _CACHE_SIZE:
                    self._optypes[okey] = optype
            seqid, txid, txind, txname, txowner = self._getters
            op = Op(plan.table, optype,
                    items.timestamp(message, values,
                                    time.time_ns() // 1000 if self._need_now else 0),
                    seqid(message, values) if seqid is not None else None,
                    txid(message, values) if txid is not None else None,
                    txind(message, values) if txind is not None else None,
                    txname(message, values) if txname is not None else None,
                    txowner(message, values) if txowner is not None else None,
                    message_id=message.id)
        except MessageError as error:
            raise MessageError(error.reason, position=error.position or
                               f"header {self._header_name}") from None
        image = self._image(plan, body, raw, n)
        if optype == DELETE:
            op.before = image
        else:
            op.after = image
        return op

    def _image(self, plan: _Plan, body: Any, raw: bool, n: int) -> list[Any]:
        if n < plan.end:
            return self._short(plan, body, raw, n)
        if n > plan.end:
            tail = body[plan.end:]
            if (self._codec.text(tail, plan.end) if raw else tail).strip():
                raise MessageError(f"{n - plan.end} non-blank characters after the "
                                   f"{plan.end}-character record of {plan.table.name}",
                                   position=f"offset {plan.end}")
        try:
            if raw:
                out = [conv(body[a:b]) for a, b, conv in plan.raw_items]
            elif body.isascii():
                out = plan.ascii_image(body)
            else:
                out = [conv(body[a:b]) for a, b, conv in plan.text_items]
        except MessageError:
            self._locate(plan, body, raw)
            raise
        if plan.odo:
            self._apply_odo(plan, body, raw, out)
        return out

    def _locate(self, plan: _Plan, body: Any, raw: bool) -> None:
        """Re-run the converters one by one to name the failing field."""
        for slot in plan.slots:
            try:
                (slot.raw if raw else slot.text)(body[slot.start:slot.end])
            except MessageError as error:
                raise MessageError(error.reason, position=slot.position) from None

    def _short(self, plan: _Plan, body: Any, raw: bool, n: int) -> list[Any]:
        """A record that ends early: omitted trailing non-key columns are missing (§4)."""
        out: list[Any] = []
        for slot in plan.slots:
            if slot.end <= n:
                try:
                    out.append((slot.raw if raw else slot.text)(body[slot.start:slot.end]))
                except MessageError as error:
                    raise MessageError(error.reason, position=slot.position) from None
            elif slot.start < n:
                raise MessageError(f"the message ends at offset {n}, inside the field "
                                   f"({n - slot.start} of {slot.end - slot.start} characters)",
                                   position=slot.position)
            elif slot.key:
                raise MessageError(f"key column {plan.table.columns[len(out)].name} is missing: "
                                   f"the message ends at offset {n}", position=slot.position)
            else:
                out.append(MISSING)
        if plan.odo:
            self._apply_odo(plan, body, raw, out)
        return out

    def _apply_odo(self, plan: _Plan, body: Any, raw: bool, out: list[Any]) -> None:
        for odo in plan.odo:
            c = odo.counter
            if c.end > len(body):
                count = 0
            else:
                try:
                    count = (c.raw if raw else c.text)(body[c.start:c.end]) or 0
                except MessageError as error:
                    raise MessageError(error.reason, position=c.position) from None
            for i, occurrence in odo.columns:
                if occurrence > count:
                    if plan.slots[i].key:
                        raise MessageError(f"key column {plan.table.columns[i].name} is "
                                           f"missing: {c.name} is {count}",
                                           position=plan.slots[i].position)
                    out[i] = MISSING
