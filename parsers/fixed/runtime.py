"""The fixed-width runtime: a ``FixedPlan`` made executable, one Op per message.

Per message: slice the header fields the items read, pick the table plan (cached by the text of
the table field), then decode the record: a full-length body through its table's whole-record
function (``records.text_image`` for text, ``records.record_image`` for bytes in copybook
mode), anything else — short records, ODO, values outside their common form — through the
general per-column converters, which also locate every error.

Text bodies are characters; byte bodies are read in ``fixed.encoding``: per field in copybook mode
(binary and packed fields come from the raw bytes), the whole body at once in sourcedefs mode
(single-byte code pages keep offsets). One trailing line break of a text body is dropped, so
spool files written by editors still parse.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from gendef.model import DATETIME, Definitions, Table
from parsers.base import ParserBase
from parsers.decoders import decoder_for
from parsers.fixed.plan import FixedPlan, TablePlan, build_plan
from parsers.fixed.records import (
    CALL,
    Slot,
    column_converter,
    field_converters,
    header_image,
    record_image,
    text_image,
)
from parsers.model import DELETE, MISSING, Message, Op
from parsers.timefmt import TimeFormat, compile_format
from parsers.values import FieldIndex, HeaderItems, compile_items, compile_table, describe
from props.codepages import CodePage, code_page
from props.errors import MessageError, PropertyError
from props.expr import Const, Field, JmsProp, SysSeqid, SysTs, SysTxid, normalize_field
from props.settings import Settings

Convert = Callable[[Any], Any]
_CACHE_SIZE = 4096  # table names / table field texts remembered


@dataclass(frozen=True, slots=True)
class _Table:
    """A table plan made executable."""

    table: Table
    slots: tuple[Slot, ...]
    raw_items: tuple[tuple[int, int, Convert], ...]
    ascii_image: Callable[[str], list[Any]]  # a text body of ASCII characters
    text_image: Callable[[str], list[Any]]  # any text body
    byte_image: Callable[[bytes], list[Any] | None] | None  # copybook mode only
    end: int
    odo: tuple[tuple[Slot, tuple[tuple[int, int], ...]], ...]


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


class _Text:
    """Byte slices → text in the plan's code page, errors located by offset."""

    __slots__ = ("decode", "name")

    def __init__(self, page: CodePage) -> None:
        self.name = page.name
        self.decode = page.decode

    def __call__(self, data: bytes, offset: int = 0) -> str:
        try:
            return self.decode(data)[0]
        except UnicodeDecodeError as error:
            raise MessageError(f"byte 0x{data[error.start]:02x} is not valid in {self.name}",
                               position=f"offset {offset + error.start}") from None


class FixedParser(ParserBase[FixedPlan]):
    """``parser.type=fixed``: the runtime over a ``FixedPlan`` (the plan contract of
    ``parsers.base``)."""

    plan: FixedPlan

    @classmethod
    def compile_plan(cls, settings: Settings, definitions: Definitions) -> FixedPlan:
        return build_plan(settings, definitions)

    def __init__(self, plan: FixedPlan) -> None:
        super().__init__(plan)
        self._page = code_page(plan.encoding)
        self._text = _Text(self._page)
        self._digits_ascii = (not self._page.ebcdic
                              and self._page.table[0x30:0x3A] == "0123456789")
        self._formats: dict[str | None, TimeFormat] = {}
        self._copybook = plan.copybook
        self._header_name = plan.header_name
        self._header_length = plan.header_length
        self._compile_items(plan)
        self._tables = {tp.table.name: self._table(tp) for tp in plan.tables}
        self._definitions = Definitions(tuple(tp.table for tp in plan.tables))
        self._nheader = len(plan.header)
        self._header_text = tuple((g.index, g.start, g.end, g.text) for g in self._header_gets)
        self._header_raw = tuple((g.index, g.start, g.end, g.raw) for g in self._header_gets)
        self._table_slice = next(((g.start, g.end) for g in self._header_gets
                                  if g.index == self._table_field), None)
        self._optype_slice = next(((g.start, g.end) for g in self._header_gets
                                   if g.index == self._optype_field), None)
        self._by_slice: dict[str | bytes, _Table] = {}
        self._optypes: dict[str | bytes, str] = {}
        self._by_name: dict[str, _Table] = {}
        self._named: dict[str, _Table] = {}  # SCHEMA.RECORD → its table (schema from messages)
        self._fast = self._compile_fast()

    # -- building --------------------------------------------------------------------------

    def _format(self, fmt: str | None, prop: str) -> TimeFormat:
        found = self._formats.get(fmt)
        if found is None:
            found = self._formats[fmt] = compile_format(fmt, date_only=True, prop=prop)
        return found

    def _compile_items(self, plan: FixedPlan) -> None:
        f = plan.items
        index = FieldIndex([h.name for h in plan.header], normalize_field)
        try:
            self._header_items: HeaderItems = compile_items(f, index, prefix="fixed")
            sources = compile_table(f, index, prefix="fixed")[1]
        except PropertyError as error:
            raise PropertyError(error.reason, prop=error.prop, file=plan.file,
                                line=dict(plan.lines).get(error.prop or "")) from None
        items = self._header_items
        ts = f.timestamp if f.timestamp is not None else (
            Field("timestamp") if "timestamp" in index else None)
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
        self._header_gets = tuple(self._header_get(i) for i in sorted(items.used))

    def _header_get(self, i: int) -> _HeaderGet:
        """Text fields read as the slice (text bodies) or decoded (byte bodies); copybook
        binary fields through their decoder, as text."""
        h = self.plan.header[i]
        x = h.field
        if x is None:
            return _HeaderGet(i, h.start, h.end, None, _same)
        if x.usage == "DISPLAY":
            text_of = self._text

            def raw(data: bytes, start: int = x.offset) -> str:
                return text_of(data, start)
            return _HeaderGet(i, h.start, h.end, None, raw)
        decode = decoder_for(x, self._page.name)

        def text(data: Any) -> str | None:
            value = decode(data)
            return None if value is None else str(value)
        return _HeaderGet(i, h.start, h.end, text, text)

    def _slot(self, tp: TablePlan, i: int) -> Slot:
        s = tp.slots[i]
        col = s.column
        fmt = self._format(s.date_format, s.date_prop) if col.type_code == DATETIME else None
        if s.field is None:  # a text column; in a byte body, its text in fixed.encoding
            conv, kind = column_converter(col, fmt, tp.table.name)
            text_of = self._text

            def raw_text(data: bytes, start: int = s.start) -> Any:
                return conv(text_of(data, start))
            return Slot(s.name, s.start, s.end, col.key, conv, raw_text, kind, col)
        text, raw, kind = field_converters(s.field, col, self._page.name, self._digits_ascii,
                                           fmt, tp.table.name)
        return Slot(s.name, s.start, s.end, col.key, text, raw, kind, col, s.field)

    def _table(self, tp: TablePlan) -> _Table:
        slots = tuple(self._slot(tp, i) for i in range(len(tp.slots)))
        odo = []
        for o in tp.odo:
            c = o.counter
            decode = decoder_for(c, self._page.name)
            counter = Slot(c.name, o.start, o.start + c.length, False, decode, decode, CALL,
                           tp.slots[0].column, c)
            odo.append((counter, o.columns))
        name = tp.table.name
        return _Table(tp.table, slots, tuple((s.start, s.end, s.raw) for s in slots),
                      text_image(name, slots), text_image(name, slots, ascii_only=False),
                      record_image(name, slots, self._page) if self._copybook else None,
                      tp.end, tuple(odo))

    # -- parsing ---------------------------------------------------------------------------

    def parse(self, message: Message) -> list[Op]:
        try:
            op = self._fast(message)
            return [op if op is not None else self._parse(message)]
        except MessageError as error:
            raise MessageError(error.reason, source=message.name,
                               position=error.position) from None

    def _compile_fast(self) -> Callable[[Message], Op | None]:
        """The common case in one closure: a body of exactly its record's length (ASCII text,
        or bytes in copybook mode) whose table and optype texts were seen before. Anything
        else (and any error) returns None, and ``_parse`` does the full work, caches
        included."""
        if self._table_slice is None or self._optype_slice is None:
            return lambda message: None
        (ta, tb), (oa, ob) = self._table_slice, self._optype_slice
        by_slice, optypes = self._by_slice, self._optypes
        nheader = self._nheader
        timestamp = self._header_items.timestamp
        ts_field, ts_micros = (self._header_items.timestamp_field,
                               self._header_items.timestamp_micros)
        if ts_micros is None or ts_field is None:
            ts_field, ts_micros = 0, None
        seqid, txid, txind, txname, txowner = self._getters
        specs = self._header_specs()
        if ts_micros is not None and not any(self._getters):
            # the table and optype come from their slices: only the timestamp field is read
            specs = tuple(spec for spec in specs if spec[0] == ts_field)
        header_text = header_image(specs, nheader, None)
        header_raw = header_image(specs, nheader, self._page)
        need_now = self._need_now
        raw_ok = self._copybook

        def fast(message: Message) -> Op | None:
            # body's class picks the functions (byte_image is set when raw_ok)
            body: Any = message.body
            cls = body.__class__
            if cls is str:
                header = header_text
            elif cls is bytes and raw_ok:
                header = header_raw
            else:
                return None
            plan = by_slice.get(body[ta:tb])
            optype = optypes.get(body[oa:ob])
            if plan is None or optype is None or len(body) != plan.end or plan.odo:
                return None
            try:
                values = header(body)
                if values is None:
                    return None
                image = ((plan.ascii_image if body.isascii() else plan.text_image)(body)
                         if cls is str else plan.byte_image(body))  # type: ignore[misc]
                if image is None:
                    return None
                # the timestamp field's text straight through its format, else the item
                deleted = optype == DELETE
                return Op(plan.table, optype,
                          ts_micros(ts) if ts_micros is not None and (ts := values[ts_field])
                          is not None else
                          timestamp(message, values, time.time_ns() // 1000 if need_now else 0),
                          seqid(message, values) if seqid is not None else None,
                          txid(message, values) if txid is not None else None,
                          txind(message, values) if txind is not None else None,
                          txname(message, values) if txname is not None else None,
                          txowner(message, values) if txowner is not None else None,
                          image if deleted else None, None if deleted else image, 0, message.id)
            except MessageError:
                return None
        return fast

    def _header_specs(self) -> tuple[tuple[int, int, int, Convert | None, Convert], ...]:
        return tuple((g.index, g.start, g.end, g.text, g.raw) for g in self._header_gets)

    def _lookup(self, name: str) -> _Table:
        if self.plan.schema_from_message:
            plan = self._named_table(name)
        else:
            table = self._definitions.get(name)
            if table is None and self._copybook:
                head, dot, tail = name.rpartition(".")
                table = self._definitions.get(f"{head}{dot}{tail.upper().replace('-', '_')}")
            plan = self._tables.get(table.name) if table is not None else None
        if plan is None:
            raise MessageError(f"unknown table {name}"
                               + (" (no such 01 record)" if self._copybook else "")
                               + self._encoding_hint(name), position=self._table_position)
        if len(self._by_name) >= _CACHE_SIZE:
            self._by_name.clear()
        self._by_name[name] = plan
        return plan

    def _encoding_hint(self, name: str) -> str:
        """A table name that is not printable ASCII was most likely read in the wrong code page."""
        if name.isascii() and name.isprintable():
            return ""
        return (f": a name that is not printable ASCII; are the messages in "
                f"fixed.encoding={self.plan.encoding} (EBCDIC feeds: cp037, cp1047, ...)?")

    def _named_table(self, name: str) -> _Table | None:
        """``SCHEMA.RECORD`` without ``fixed.schema``: the record's table under the message's
        schema, made once per name (the same Table object each time, as encoders expect)."""
        found = self._named.get(name)
        if found is not None:
            return found
        schema, _, record = name.rpartition(".")  # two parts at least (parsers.values)
        template = self._tables.get(record.upper().replace("-", "_"))
        if template is None:
            return None
        if len(self._named) >= _CACHE_SIZE:
            raise MessageError(f"table {name}: more than {_CACHE_SIZE} tables named by messages",
                               position=self._table_position)
        table = template.table
        found = self._named[name] = replace(
            template, table=Table(f"{schema}.{table.name}", table.columns, table.record_length))
        return found

    def _parse(self, message: Message) -> Op:
        body = message.body
        raw = isinstance(body, bytes)
        if isinstance(body, str) and body.endswith("\n"):  # a text body's line end
            body = body[:-2] if body.endswith("\r\n") else body[:-1]
        if raw and not self._copybook:  # every byte is data, a last LF (0x0A, 0x25) too
            body = self._text(cast(bytes, body))
            raw = False
        n = len(body)
        hlen = self._header_length
        if n < hlen:
            unit = "bytes" if raw else "characters"
            raise MessageError(f"{n} {unit}, shorter than the {hlen} of header "
                               f"{self._header_name}", position="header")
        values: list[Any] = [None] * self._nheader
        for i, a, b, get in (self._header_raw if raw else self._header_text):
            values[i] = body[a:b] if get is None else get(body[a:b])
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

    def _image(self, plan: _Table, body: Any, raw: bool, n: int) -> list[Any]:
        if n < plan.end:
            return self._short(plan, body, raw, n)
        if n > plan.end:
            tail = body[plan.end:]
            if (self._text(tail, plan.end) if raw else tail).strip():
                raise MessageError(f"{n - plan.end} non-blank characters after the "
                                   f"{plan.end}-character record of {plan.table.name}",
                                   position=f"offset {plan.end}")
        try:
            if raw:
                out = [conv(body[a:b]) for a, b, conv in plan.raw_items]
            else:
                out = (plan.ascii_image if body.isascii() else plan.text_image)(body)
        except MessageError:
            self._locate(plan, body, raw)
            raise
        if plan.odo:
            self._apply_odo(plan, body, raw, out)
        return out

    def _locate(self, plan: _Table, body: Any, raw: bool) -> None:
        """Re-run the converters one by one to name the failing field."""
        for slot in plan.slots:
            try:
                (slot.raw if raw else slot.text)(body[slot.start:slot.end])
            except MessageError as error:
                raise MessageError(error.reason, position=slot.position) from None

    def _short(self, plan: _Table, body: Any, raw: bool, n: int) -> list[Any]:
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

    def _apply_odo(self, plan: _Table, body: Any, raw: bool, out: list[Any]) -> None:
        for c, columns in plan.odo:
            if c.end > len(body):
                count = 0
            else:
                try:
                    count = (c.raw if raw else c.text)(body[c.start:c.end]) or 0
                except MessageError as error:
                    raise MessageError(error.reason, position=c.position) from None
            for i, occurrence in columns:
                if occurrence > count:
                    if plan.slots[i].key:
                        raise MessageError(f"key column {plan.table.columns[i].name} is "
                                           f"missing: {c.name} is {count}",
                                           position=plan.slots[i].position)
                    out[i] = MISSING
