"""The ``fixed.*`` section (properties.md §4): fixed-width messages described by a copybook or
sourcedefs."""

from __future__ import annotations

from typing import Literal

from props.codepages import code_page
from props.errors import PropertyError
from props.expr import Const, Expr, parse_expr
from props.keys import COMMON_FORMS
from props.reader import Reader
from props.sections.common import common_items, sourcedefs
from props.settings import FixedSettings, SchemaType
from props.text import quoted

_FIXED = FixedSettings()  # the defaults of unset properties


def fixed_settings(r: Reader) -> FixedSettings:
    items = common_items(r, "fixed", truncate=False)
    schematype: SchemaType | Literal[""] = r.choice("fixed.schematype",
                                                    ("copybook", "sourcedefs"), "")
    if not schematype:
        raise PropertyError("required (copybook or sourcedefs)", prop="fixed.schematype",
                            file=r.file)
    copybook = sourcedefs_path = None
    if schematype == "copybook":
        copybook = r.required("fixed.copybook", " with fixed.schematype=copybook")
        r.path("fixed.copybook")
        sourcedefs_path = r.path("fixed.sourcedefs")
    else:
        sourcedefs_path = sourcedefs(r, "fixed", items["userdefs"])  # type: ignore[arg-type]
    table: tuple[Expr, ...] = ()
    table_text = r.raw("fixed.table")
    if table_text is not None:
        table = tuple(parse_expr(part, COMMON_FORMS["table"], prop="fixed.table",
                                 file=r.file, line=r.line("fixed.table"))
                      for part in table_text.split(","))
    schema = r.text("fixed.schema")
    schema_expr: Expr | None = None
    if schema is not None:
        if len(schema) >= 2 and schema[0] == schema[-1] == '"':
            schema = schema[1:-1]
        elif schema[0] in "$*\"":
            raise r.error("fixed.schema", f"{quoted(schema)} is not an accepted form; "
                          "expected \"value\" (a constant schema name)")
        if not schema:
            raise r.error("fixed.schema", "empty schema name")
        schema_expr = r.held("fixed.schema", Const(schema))
    return FixedSettings(
        **items,  # type: ignore[arg-type]
        table=table, schema=schema_expr,
        schematype=schematype, copybook=copybook, sourcedefs=sourcedefs_path,
        header=r.required("fixed.header"),
        encoding=_encoding(r),
        trunc=r.choice("fixed.trunc", ("std", "opt", "bin"), _FIXED.trunc),
    )


def _encoding(r: Reader) -> str:
    value = r.text("fixed.encoding") or _FIXED.encoding
    try:
        return code_page(value).name
    except LookupError:
        raise r.error("fixed.encoding", f"unknown encoding {quoted(value)}") from None
    except ValueError:
        raise r.error("fixed.encoding",
                      f"{quoted(value)} is not a single-byte character set") from None
