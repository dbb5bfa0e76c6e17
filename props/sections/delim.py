"""The ``delim.*`` section (properties.md §5): delimited messages and their header fields."""

from __future__ import annotations

from props import expr as ex
from props.keys import COMMON_FORMS, FIELD_FORMS
from props.reader import Reader, split_list
from props.sections.common import common_items, sourcedefs
from props.settings import DelimSettings
from props.text import quoted

_DELIM = DelimSettings()  # the defaults of unset properties


def delim_settings(r: Reader) -> DelimSettings:
    items = common_items(r, "delim", truncate=True)
    header_text = r.required("delim.header")
    header = tuple(split_list(header_text))
    seen: set[str] = set()
    for name in header:
        if not name:
            raise r.error("delim.header", "empty name in the list")
        if name.lower() in seen:
            raise r.error("delim.header", f"name {name} is listed twice")
        seen.add(name.lower())
    for attr in ("schemaandtable", "table"):
        items[attr] = r.expr(f"delim.{attr}", COMMON_FORMS[attr])
    items["schema"] = r.expr("delim.schema", FIELD_FORMS | {ex.CONST})
    items["table"] = (items["table"],) if items["table"] is not None else ()
    for attr in ("optype", "txind", "timestamp", "seqid", "txid", "txname", "txowner",
                 "schemaandtable", "schema"):
        _check_header_field(r, f"delim.{attr}", items[attr], seen)
    for table_expr in items["table"]:  # type: ignore[attr-defined]
        _check_header_field(r, "delim.table", table_expr, seen)
    fielddelim = r.delim("delim.fielddelim", None) or _DELIM.fielddelim
    linedelim = r.delim("delim.linedelim", None) or _DELIM.linedelim
    quote = r.delim("delim.quote", None) or _DELIM.quote
    for a, b in (("fielddelim", "linedelim"), ("quote", "fielddelim"),
                 ("quote", "linedelim")):
        values = {"fielddelim": fielddelim, "linedelim": linedelim, "quote": quote}
        if values[a] == values[b]:
            culprit = f"delim.{a}" if r.line(f"delim.{a}") else f"delim.{b}"
            raise r.error(culprit, f"delim.{a} and delim.{b} are both {quoted(values[a])}")
    nullindicator = r.delim("delim.nullindicator", None)
    plain = {"fielddelim": fielddelim, "linedelim": linedelim, "quote": quote,
             "nullindicator": nullindicator}
    escaped: dict[str, str | None] = {}
    for name, value in plain.items():
        key = f"delim.{name}.escaped"
        escaped[name] = r.delim(key, None)
        if escaped[name] is not None and escaped[name] == value:
            raise r.error(key, f"is the same as delim.{name}; an escape sequence must "
                          "differ from what it stands for")
    return DelimSettings(
        **items,  # type: ignore[arg-type]
        sourcedefs=sourcedefs(r, "delim", items["userdefs"]),  # type: ignore[arg-type]
        header=header,
        fielddelim=fielddelim, linedelim=linedelim, quote=quote,
        nullindicator=nullindicator,
        fielddelim_escaped=escaped["fielddelim"],
        linedelim_escaped=escaped["linedelim"],
        quote_escaped=escaped["quote"],
        nullindicator_escaped=escaped["nullindicator"],
        hasbefores=r.boolean("delim.hasbefores", _DELIM.hasbefores),
        hasnames=r.boolean("delim.hasnames", _DELIM.hasnames),
        afterfirst=r.boolean("delim.afterfirst", _DELIM.afterfirst),
        isgrouped=r.boolean("delim.isgrouped", _DELIM.isgrouped),
    )


def _check_header_field(r: Reader, key: str, value: object, header: set[str]) -> None:
    if isinstance(value, ex.Field) and value.name.lower() not in header:
        raise r.error(key, f"field {value.name} is not in delim.header")
