"""Test helpers: XML settings and definitions built directly from the settings dataclasses."""

from __future__ import annotations

from gendef.model import Definitions, Table, number_column, varchar_column
from parsers.model import Message
from props.expr import KINDS, parse_expr
from props.settings import OptypeValues, Rule, TxindValues, XmlSettings

_ATTRS = {
    "name": "column_name", "before.value": "before_value", "before.isnull": "before_isnull",
    "before.ismissing": "before_ismissing", "after.value": "after_value",
    "after.isnull": "after_isnull", "after.ismissing": "after_ismissing",
}
_PLAIN = {"timestamp.format"}


def rule(rule_name: str, type_: str, *subrules: Rule, **attrs: str) -> Rule:
    """A rule with attributes given as property text (``before_value='./b/text()'``)."""
    kwargs: dict = {}
    for key, text in attrs.items():
        attr = key.replace("__", ".")
        field = _ATTRS.get(attr, attr.replace(".", "_"))
        if attr in _PLAIN:
            kwargs[field] = text
        elif field == "optype_values":
            kwargs[field] = text
        elif field == "txind_values":
            kwargs[field] = text
        elif field == "match":
            kwargs[field] = parse_expr(text, frozenset({"xpath"}), prop=f"{rule_name}.match")
        else:
            kwargs[field] = parse_expr(text, KINDS - {"field"}, prop=f"{rule_name}.{attr}")
    kwargs.setdefault("optype_values", OptypeValues(truncate=None))
    kwargs.setdefault("txind_values", TxindValues())
    return Rule(name=rule_name, type=type_, subrules=subrules, **kwargs)


def settings(*rules: Rule, **kw) -> XmlSettings:
    return XmlSettings(rules=rules, **kw)


def my_table_defs() -> Definitions:
    return Definitions((Table.build("MY.TABLE", [varchar_column("KEYCOL", 10, key=True),
                                                 varchar_column("COL1", 20)]),
                        Table.build("HR.EMP", [number_column("ID", 9, key=True),
                                               varchar_column("NAME", 30),
                                               number_column("SALARY", 9, 2)])))


def msg(body: str | bytes, id_: str = "00001", **headers: str) -> Message:
    return Message(id=id_, headers=dict(headers), body=body)
