"""The fixed-width parser's plan, and the two builders that make it (copybook, sourcedefs).

A plan is what the driver compiles from the properties and the layouts, as plain data: where
every header field and every trail column of every table lies in a message, the copybook field
layout (copybook mode) or nothing (a text column) behind each column, date formats as text, and
the code page by name. It pickles as is and never reads a file again: Spark tasks and the live
loop build the same runtime (``parsers.fixed.runtime``) from it.

Layout rules (properties.md §4, sourcedefs.md §5, §7.1): in copybook mode the header is the
``fixed.header`` 01 record and the data record the 01 record the table value names; in
sourcedefs mode the header is a DEFGEN or user-defined table and each data column lies at header
length + Fetch Offset over its External Length. Header fields that no item reads lead every
table (decided by ``gendef.build.used_header_fields`` so that the parser and gendef agree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gendef.build import (
    copybook_schema,
    load_source_definitions,
    shared_copybook,
    used_header_fields,
)
from gendef.copybook import (
    FieldLayout,
    RecordLayout,
    column_fields,
    copybook_table_name,
    normalize_name,
)
from gendef.model import DATETIME, Column, Definitions, Table
from gendef.userdefs import user_definitions
from parsers.decoders import lookup_codec
from parsers.timefmt import compile_format
from parsers.values import FieldIndex, compile_items, compile_table
from props.codepages import code_page
from props.errors import DefinitionError, PropertyError
from props.expr import Field, normalize_field
from props.settings import FixedSettings, Settings


@dataclass(frozen=True, slots=True)
class SlotPlan:
    """One trail column: its absolute slice of the message and what the slice holds."""

    name: str  # copybook field or column name, for errors
    start: int
    end: int
    column: Column  # the trail column
    field: FieldLayout | None = None  # copybook mode: the field's layout; None: a text column
    date_format: str | None = None  # DATETIME columns: the format (None: the default forms)
    date_prop: str = ""  # the property that sets the format, for errors

    @property
    def key(self) -> bool:
        return self.column.key


@dataclass(frozen=True, slots=True)
class OdoPlan:
    """``OCCURS … DEPENDING ON``: columns whose occurrence exceeds the counter are missing."""

    counter: FieldLayout
    start: int  # absolute offset of the counter field
    columns: tuple[tuple[int, int], ...]  # (column index, 1-based occurrence)


@dataclass(frozen=True, slots=True)
class TablePlan:
    table: Table
    slots: tuple[SlotPlan, ...]
    end: int  # absolute end of the full record (header + data)
    odo: tuple[OdoPlan, ...] = ()


@dataclass(frozen=True, slots=True)
class HeaderField:
    """A header field: its slice and, in copybook mode, its layout (binary fields decode)."""

    name: str
    start: int
    end: int
    field: FieldLayout | None = None
    date_format: str | None = None


@dataclass(frozen=True, slots=True)
class FixedPlan:
    """Everything the fixed-width runtime needs, compiled, picklable and file-free."""

    items: FixedSettings  # the fixed.* items, the timestamp field's own format applied
    file: str | None  # the properties file, for errors
    lines: tuple[tuple[str, int], ...]  # property → line, for errors
    copybook: bool
    encoding: str  # a props.codepages name
    header_name: str
    header_length: int
    header: tuple[HeaderField, ...]
    tables: tuple[TablePlan, ...]
    # copybook mode without fixed.schema: tables are named by their 01 record, and each message's
    # table value brings its schema (SCHEMA.RECORD)
    schema_from_message: bool = False


def build_plan(settings: Settings, definitions: Definitions) -> FixedPlan:
    """The plan of ``settings`` (parser.type=fixed) over the definitions gendef builds."""
    f = settings.fixed
    if f is None:
        raise PropertyError("no fixed.* settings", prop="parser.type")
    if not f.header:
        raise PropertyError("required", prop="fixed.header", file=settings.file)
    lookup_codec(f.encoding)  # validated when loaded: fails here for hand-made settings only
    if f.schematype == "copybook":
        return _copybook_plan(settings, f, definitions)
    return _sourcedefs_plan(settings, f, definitions)


def _error(settings: Settings, prop: str, reason: str) -> PropertyError:
    return PropertyError(reason, prop=prop, file=settings.file, line=settings.lines.get(prop))


def _items(settings: Settings, f: FixedSettings, header: tuple[HeaderField, ...]
           ) -> FixedSettings:
    """The items with the timestamp field's own format as default (§4), checked against the
    header fields now, so that a bad item fails when the parser is built."""
    index = FieldIndex([h.name for h in header], normalize_field)
    ts = f.timestamp if f.timestamp is not None else (
        Field("timestamp") if "timestamp" in index else None)
    if (f.timestamp_format is None and isinstance(ts, Field)
            and (at := index.get(ts.name)) is not None):
        own = header[at].date_format
        if own is not None:
            f = replace(f, timestamp_format=own)
    try:
        compile_items(f, index, prefix="fixed")
        compile_table(f, index, prefix="fixed")
    except PropertyError as error:
        if error.file:
            raise
        raise PropertyError(error.reason, prop=error.prop, file=settings.file,
                            line=settings.lines.get(error.prop or "")) from None
    return f


def _plan(settings: Settings, f: FixedSettings, copybook: bool, header_name: str,
          header_length: int, header: tuple[HeaderField, ...], tables: list[TablePlan]
          ) -> FixedPlan:
    return FixedPlan(_items(settings, f, header), settings.file,
                     tuple(settings.lines.items()), copybook, code_page(f.encoding).name,
                     header_name, header_length, header, tuple(tables),
                     copybook and copybook_schema(f) is None)


def _date_format(f: FixedSettings, table: Table, col: Column, own: str | None
                 ) -> tuple[str | None, str]:
    """A DATETIME column's format (the field's own first, then fixed.dateformat), checked."""
    fmt = own or f.dateformats.lookup(table.name, col.name)
    prop = f"fixed.dateformat for {table.name}"
    compile_format(fmt, date_only=True, prop=prop)
    return fmt, prop


def _table_plan(trail: Table, placed: Sequence[tuple[str, int, int, FieldLayout | None,
                                                      str | None]],
                end: int, f: FixedSettings, odo: tuple[OdoPlan, ...] = ()) -> TablePlan:
    """``placed``: (name, start, end, field, own date format) of each trail column, in order."""
    if len(placed) != len(trail.columns):
        raise DefinitionError(f"table {trail.name}: {len(trail.columns)} columns in the "
                              f"definitions, {len(placed)} in the fixed-width layout")
    slots = []
    for (name, start, stop, fld, own), col in zip(placed, trail.columns, strict=True):
        fmt, prop = (_date_format(f, trail, col, own) if col.type_code == DATETIME
                     else (None, ""))
        slots.append(SlotPlan(name, start, stop, col, fld, fmt, prop))
    end = max([end, *(s.end for s in slots)])
    return TablePlan(trail, tuple(slots), end, odo)


# -- copybook mode ---------------------------------------------------------------------------------

def _copybook_plan(settings: Settings, f: FixedSettings, definitions: Definitions) -> FixedPlan:
    if not f.copybook:
        raise _error(settings, "fixed.copybook", "required when fixed.schematype=copybook")
    copybook = shared_copybook(f.copybook, definitions, f.trunc)
    header = copybook.record(f.header)
    if header is None:
        raise _error(settings, "fixed.header",
                     f"header record {f.header!r} is not an 01 record of {f.copybook}")
    head_fields = tuple(HeaderField(x.name, x.offset, x.offset + x.length, x, x.date_format)
                        for x in header.fields if not x.filler)
    columns = column_fields(header)
    used = {normalize_name(u) for u in used_header_fields(f, [x.name for x in columns])}
    lead = [x for x in columns if normalize_name(x.name) not in used and x.column not in used]
    schema = copybook_schema(f)
    hlen = header.length
    tables: list[TablePlan] = []
    for rec in copybook.records:
        if rec is header:
            continue
        table = definitions.get(copybook_table_name(schema, rec.name))
        if table is None:
            continue
        fields = [(x, 0) for x in lead] + [(x, hlen) for x in column_fields(rec)]
        if len(fields) != len(table.columns):
            raise DefinitionError(f"table {table.name}: {len(table.columns)} columns in the "
                                  f"definitions, {len(fields)} in copybook record {rec.name}")
        placed = [(x.name, base + x.offset, base + x.offset + x.length, x, x.date_format)
                  for x, base in fields]
        tables.append(_table_plan(table, placed, hlen + rec.length, f,
                                  _odo(rec, fields, hlen)))
    known = {t.table.name for t in tables}
    for table in user_definitions(f.userdefs, "fixed", layout=True):
        trail = definitions.get(table.name)
        if trail is not None and trail.name not in known:
            tables.append(_columns_plan(trail, [], list(table.columns), hlen,
                                        table.record_length, f))
    return _plan(settings, f, True, header.name, hlen, head_fields, tables)


def _odo(rec: RecordLayout, fields: list[tuple[FieldLayout, int]],
         hlen: int) -> tuple[OdoPlan, ...]:
    """Counters of the record's OCCURS DEPENDING ON columns (sourcedefs.md §7.1)."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for i, (x, _) in enumerate(fields):
        for o in x.depending_on:
            groups.setdefault(o.counter, []).append((i, o.index))
    out = []
    for counter, columns in groups.items():
        c = rec.field(counter)
        assert c is not None  # the compiler resolved every DEPENDING ON counter
        out.append(OdoPlan(c, hlen + c.offset, tuple(columns)))
    return tuple(out)


# -- sourcedefs mode -------------------------------------------------------------------------------

def _sourcedefs_plan(settings: Settings, f: FixedSettings, definitions: Definitions
                     ) -> FixedPlan:
    source = load_source_definitions(settings)
    header = source.get(f.header)
    if header is None:
        raise _error(settings, "fixed.header",
                     f"header table {f.header!r} is not defined in fixed.sourcedefs or "
                     "fixed.userdefs")
    hlen = max([header.record_length,
                *(c.fetch_offset + c.characters for c in header.columns)])
    formats: Callable[[str], str | None] = lambda n: f.dateformats.lookup(header.name, n)
    head_fields = tuple(HeaderField(c.name, c.fetch_offset, c.fetch_offset + c.characters,
                                    None, formats(c.name)) for c in header.columns)
    used = used_header_fields(f, [c.name for c in header.columns])
    lead = [c for c in header.columns if c.name not in used]
    tables = []
    for table in source:
        if table is header:
            continue
        trail = definitions.get(table.name)
        if trail is None:
            continue
        tables.append(_columns_plan(trail, lead, list(table.columns), hlen,
                                    table.record_length, f))
    return _plan(settings, f, False, header.name, hlen, head_fields, tables)


def _columns_plan(trail: Table, lead: list[Column], columns: list[Column],
                  hlen: int, record_length: int, f: FixedSettings) -> TablePlan:
    """A plan of text columns: ``lead`` header columns, then the data columns at hlen."""
    placed = [(c, 0) for c in lead] + [(c, hlen) for c in columns]
    if len(placed) != len(trail.columns) or any(
            c.name != t.name for (c, _), t in zip(placed, trail.columns, strict=True)):
        raise DefinitionError(f"table {trail.name}: the definitions' columns are not the "
                              "header's unused columns followed by the table's")
    return _table_plan(trail, [(c.name, base + c.fetch_offset,
                                base + c.fetch_offset + c.characters, None, None)
                               for c, base in placed], hlen + record_length, f)
