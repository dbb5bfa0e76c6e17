"""What the parser sections share (properties.md §3, §7): operation and transaction codes,
date formats, user-defined tables and the sourcedefs file; the fixed and delim items."""

from __future__ import annotations

import difflib
import re

from props.errors import PropertyError
from props.keys import COMMON_FORMS
from props.reader import MAX_COLUMN_LENGTH, MAX_COLUMNS, MAX_NAME, Reader, split_list, to_int
from props.settings import DateFormats, OptypeValues, TxindValues, UserColumn, UserTable
from props.text import quoted

_USER_TYPE = re.compile(r"(vchar|char|number|datetime)\s+([0-9]+)(?:\s*,\s*([0-9]+))?"
                        r"(?:\s+(key))?\Z", re.IGNORECASE)


def common_items(r: Reader, p: str, *, truncate: bool) -> dict[str, object]:
    """The items fixed and delim share, as keyword arguments of their settings."""
    items: dict[str, object] = {}
    for attr in ("optype", "txind", "timestamp", "seqid", "txid", "txname", "txowner"):
        items[attr] = r.expr(f"{p}.{attr}", COMMON_FORMS[attr])
    items["timestamp_format"] = r.fmt(f"{p}.timestamp.format")
    items["optype_values"] = optype_values(r, p, truncate=truncate)
    items["txind_values"] = txind_values(r, p)
    items["dateformats"] = dateformats(r, p)
    items["userdefs"] = userdefs(r, p)
    return items


def optype_values(r: Reader, p: str, *, truncate: bool) -> OptypeValues:
    """``<p>.optype.*val`` (``p`` a parser section or an XML op rule): distinct codes."""
    names = ["insert", "update", "delete"] + (["truncate"] if truncate else [])
    defaults = OptypeValues()
    values: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        key = f"{p}.optype.{name}val"
        value = r.delim(key, None) or getattr(defaults, name)
        other = seen.get(value)
        if other is not None:
            culprit = key if r.line(key) else f"{p}.optype.{other}val"
            raise r.error(culprit, f"value {quoted(value)} is both the {other} and the "
                          f"{name} value; operation codes must differ")
        seen[value] = name
        values[name] = value
    return OptypeValues(insert=values["insert"], update=values["update"],
                        delete=values["delete"], truncate=values.get("truncate"))


def txind_values(r: Reader, p: str) -> TxindValues:
    """``<p>.txind.*val`` (``p`` a parser section or an XML op rule): disjoint sets."""
    defaults = TxindValues()
    sets: dict[str, tuple[str, ...]] = {}
    for name in ("begin", "middle", "end", "whole"):
        value = r.delim(f"{p}.txind.{name}val", None)
        sets[name] = (value,) if value is not None else getattr(defaults, name)
    owner: dict[str, str] = {}
    for name, values in sets.items():
        for value in values:
            other = owner.get(value)
            if other is not None:
                key = f"{p}.txind.{name}val"
                if not r.line(key):
                    key = f"{p}.txind.{other}val"
                raise r.error(key, f"value {quoted(value)} is in both the {other} and the "
                              f"{name} set")
            owner[value] = name
    return TxindValues(**sets)


def dateformats(r: Reader, p: str) -> DateFormats:
    """``<p>.dateformat`` and its per-table and per-column ``<p>.dateformat.<T>[.<C>]``."""
    default = r.fmt(f"{p}.dateformat")
    prefix = f"{p}.dateformat."
    by_name: dict[str, str] = {}
    for key in r.items:
        if key.startswith(prefix):
            suffix = key[len(prefix):].upper()
            if suffix in by_name:
                raise r.error(key, "set twice (names are case-insensitive)")
            by_name[suffix] = r.fmt(key) or ""
    return DateFormats(default=default, by_name=by_name)


def userdefs(r: Reader, p: str) -> tuple[UserTable, ...]:
    """The tables declared by ``<p>.userdefs.tables``, each with its columns and their types."""
    prefix = f"{p}.userdefs."
    keys = [k for k in r.items if k.startswith(prefix)]
    if not keys:
        return ()
    tables_key = f"{prefix}tables"
    tables_text = r.text(tables_key)
    if tables_text is None:
        raise r.error(keys[0], f"user-defined tables need {tables_key}")
    declared: set[str] = {tables_key}
    tables: list[UserTable] = []
    names = split_list(tables_text)
    seen_tables: set[str] = set()
    for name in names:
        if not name or "." not in name or "" in name.split("."):
            raise r.error(tables_key, f"{quoted(name)} is not a qualified table name "
                          "(SCHEMA.TABLE)")
        if max(len(part) for part in name.split(".")) > MAX_NAME:
            raise r.error(tables_key, f"{quoted(name)}: a name part of more than "
                          f"{MAX_NAME} characters")
        if name.upper() in seen_tables:
            raise r.error(tables_key, f"table {name} is listed twice")
        seen_tables.add(name.upper())
    for name in names:
        columns_key = f"{prefix}{name}.columns"
        declared.add(columns_key)
        columns_text = r.text(columns_key)
        if columns_text is None:
            raise r.error(tables_key, f"table {name} needs {columns_key}")
        columns: list[UserColumn] = []
        seen_columns: set[str] = set()
        column_names = split_list(columns_text)
        if len(column_names) > MAX_COLUMNS:
            raise r.error(columns_key, f"{len(column_names)} columns (at most "
                          f"{MAX_COLUMNS})")
        for column in column_names:
            if not column or any(c.isspace() or c in ".," for c in column):
                raise r.error(columns_key, f"{quoted(column)} is not a column name")
            if len(column) > MAX_NAME:
                raise r.error(columns_key, f"{quoted(column)}: a column name of more "
                              f"than {MAX_NAME} characters")
            if column.upper() in seen_columns:
                raise r.error(columns_key, f"column {column} is listed twice")
            seen_columns.add(column.upper())
            type_key = f"{prefix}{name}.{column}"
            declared.add(type_key)
            columns.append(_user_column(r, column, type_key, columns_key))
        tables.append(UserTable(name, tuple(columns), r.file,
                                r.line(tables_key) or 0))
    for key in keys:
        if key not in declared:
            guess = difflib.get_close_matches(key, sorted(declared), n=1)
            hint = f"; did you mean {guess[0]}?" if guess else ""
            raise r.error(key, f"unknown property (not a declared user-defined table "
                          f"or column){hint}")
    return tuple(tables)


def _user_column(r: Reader, column: str, key: str, columns_key: str) -> UserColumn:
    value = r.text(key)
    if value is None:
        raise r.error(columns_key, f"column {column} needs its type in {key}")
    match = _USER_TYPE.match(value)
    if not match:
        raise r.error(key, f"{quoted(value)} is not vchar n, char n, number p[,s] or "
                      "datetime n (optionally followed by key)")
    kind = match.group(1).lower()
    length, scale = to_int(match.group(2)), to_int(match.group(3) or "0")
    if length is None or length > MAX_COLUMN_LENGTH or scale is None:
        raise r.error(key, f"{quoted(value)}: a length of at most {MAX_COLUMN_LENGTH} "
                      "(a trail record holds at most 65,535 bytes)")
    if match.group(3) is not None and kind != "number":
        raise r.error(key, f"{kind} takes one length, not {length},{scale}")
    if length < 1:
        raise r.error(key, "length must be at least 1")
    if kind == "number" and scale > length:
        raise r.error(key, f"scale {scale} exceeds precision {length}")
    if kind == "datetime" and length not in (10, 19) and not 21 <= length <= 29:
        raise r.error(key, f"datetime length {length} is not 10, 19 or 20+n "
                      "(n = 1..9 fraction digits)")
    return UserColumn(column, kind, length, scale, match.group(4) is not None)


def sourcedefs(r: Reader, p: str, tables: tuple[UserTable, ...]) -> str | None:
    """``<p>.sourcedefs``, required unless every table is user-defined."""
    path = r.path(f"{p}.sourcedefs")
    if path is None and not tables:
        raise PropertyError("required (unless every table is user-defined with "
                            f"{p}.userdefs.*)", prop=f"{p}.sourcedefs", file=r.file)
    return path
