"""User-defined tables (``<p>.userdefs.*``, properties.md §7) as definition tables.

A user-defined table has two layouts: the definition gendef writes (offsets by the slot rule,
sourcedefs.md §5) and the message layout of the fixed-width parser, where the columns simply
follow each other (``vchar 3`` + ``vchar 30`` = a 33-character header, properties.md §4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gendef.model import (
    Column,
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    varchar_column,
)
from props.errors import DefinitionError, PropertyError
from props.settings import UserColumn, UserTable


def user_column(col: UserColumn) -> Column:
    """The definition column of one ``vchar n`` | ``char n`` | ``number p[,s]`` | ``datetime n``."""
    if col.kind == "vchar":
        return varchar_column(col.name, col.length, col.key)
    if col.kind == "char":
        return char_column(col.name, col.length, col.key)
    if col.kind == "number":
        return number_column(col.name, col.length, col.scale, col.key)
    if col.kind == "datetime":
        return datetime_column(col.name, col.length, col.key)
    raise DefinitionError(f"column {col.name}: unknown kind {col.kind!r} "
                          "(expected vchar, char, number or datetime)")


def user_table(table: UserTable, prefix: str) -> Table:
    """The table as definitions describe it: offsets and record length by the slot rule.

    ``prefix`` (``fixed``, ``delim``, ``xml``) names the property in errors.
    """
    try:
        return Table.build(table.name, [user_column(c) for c in table.columns])
    except DefinitionError as exc:
        raise PropertyError(exc.reason, prop=f"{prefix}.userdefs.{table.name}",
                            file=table.file, line=table.line or None) from None


def message_layout(table: Table) -> Table:
    """The same columns laid end to end: fetch offset = sum of the preceding external lengths."""
    columns, offset = [], 0
    for col in table.columns:
        columns.append(replace(col, fetch_offset=offset))
        offset += col.external_length
    return Table(table.name, tuple(columns), offset, table.syskey)


def user_definitions(tables: Iterable[UserTable], prefix: str, *,
                     layout: bool = False) -> Definitions:
    """All user-defined tables in ``<p>.userdefs.tables`` order.

    ``layout=True`` gives them the fixed-width message layout instead of the slot rule.
    """
    built = (user_table(ut, prefix) for ut in tables)
    return Definitions(tuple(message_layout(t) if layout else t for t in built))
