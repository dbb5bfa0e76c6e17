"""Rule trees built directly (bypassing the loader) to test the parser's own build checks."""

from __future__ import annotations

from props.expr import KINDS, parse_expr
from props.settings import Rule

_FIELDS = {
    "name": "column_name", "before.value": "before_value", "before.isnull": "before_isnull",
    "before.ismissing": "before_ismissing", "after.value": "after_value",
    "after.isnull": "after_isnull", "after.ismissing": "after_ismissing",
}


def rule(rule_name: str, type_: str, *subrules: Rule, **attrs: str) -> Rule:
    """A rule whose attributes are property text; ``before__value`` means ``before.value``."""
    kwargs = {}
    for key, text in attrs.items():
        attr = key.replace("__", ".")
        field = _FIELDS.get(attr, attr.replace(".", "_"))
        allowed = frozenset({"xpath"}) if attr == "match" else KINDS - {"field"}
        kwargs[field] = parse_expr(text, allowed, prop=f"{rule_name}.{attr}")
    return Rule(name=rule_name, type=type_, subrules=subrules, **kwargs)
