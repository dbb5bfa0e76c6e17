"""DEFGEN mapping (sourcedefs.md §7.1): copybook records → table definitions."""

from __future__ import annotations

import re

from gendef.copybook.model import COMP1, Copybook, FieldLayout, RecordLayout, normalize_name
from gendef.copybook.naming import unique_columns
from gendef.model import (
    Column,
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
)
from props.errors import CopybookError


def date_format_length(fmt: str) -> int:
    """DATETIME external length of a format: 10 (date), 19 (time), 20 + fraction digits."""
    upper = fmt.upper()
    m = re.search(r"F([0-9])|(F+)", upper)
    if m:
        return 20 + (int(m.group(1)) if m.group(1) else len(m.group(2)))
    if "HH" in upper or "MI" in upper or "SS" in upper:
        return 19
    return 10


def field_column(f: FieldLayout, name: str | None = None) -> Column:
    """The definition column of one field (CHAR, NUMBER, NUMBER text or DATETIME)."""
    col = name or f.column
    if f.date_format:
        return datetime_column(col, date_format_length(f.date_format), f.key)
    if f.kind == "alnum":
        return char_column(col, f.length, f.key)
    if f.kind == "float":
        return number_text_column(col, 16 if f.usage == COMP1 else 24, f.key)
    precision, scale = f.precision, f.effective_scale
    return number_column(col, precision, scale, f.key) if precision <= 18 else \
        number_text_column(col, precision + 1 + (1 if scale > 0 else 0), f.key)


def column_fields(record: RecordLayout) -> tuple[FieldLayout, ...]:
    """The fields that become columns: no FILLER, no redefining alternatives."""
    return tuple(f for f in record.fields if not f.filler and not f.redefining)


def copybook_table_name(schema: str | None, record: str) -> str:
    """``SCHEMA.RECORD``, or the record's name alone when messages bring the schema."""
    name = normalize_name(record)
    return f"{schema}.{name}" if schema else name


def copybook_definitions(copybook: Copybook, *, schema: str | None, header: str | None = None,
                         used_header_fields: set[str] | frozenset[str] = frozenset()
                         ) -> Definitions:
    """Every 01 record except the header → table ``<schema>.<RECORD>`` (``<RECORD>`` without a
    schema); header fields that no ``fixed.*`` item uses lead every table (sourcedefs.md §7.1)."""
    head_fields: tuple[FieldLayout, ...] = ()
    if header is not None:
        rec = copybook.record(header)
        if rec is None:
            raise CopybookError(f"header record {header} not found", file=copybook.file)
        used = {normalize_name(u) for u in used_header_fields}
        head_fields = tuple(f for f in column_fields(rec)
                            if normalize_name(f.name) not in used and f.column not in used)
    tables = []
    for rec in copybook.records:
        if header is not None and normalize_name(rec.name) == normalize_name(header):
            continue
        fields = head_fields + column_fields(rec)
        names = unique_columns(fields)
        seen: dict[str, FieldLayout] = {}
        for f, n in zip(fields, names, strict=True):
            if n in seen:
                raise CopybookError(f"column {n} is defined twice (line {seen[n].line})",
                                    file=copybook.file, line=f.line, field=f.name)
            seen[n] = f
        columns = [field_column(f, n) for f, n in zip(fields, names, strict=True)]
        tables.append(Table.build(copybook_table_name(schema, rec.name), columns))
    return Definitions(tuple(tables))
