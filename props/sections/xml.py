"""The ``xml.*`` section and the XML rules (properties.md §6): which rules exist and their
types (needed to classify every rule key), then the rule tree built and checked."""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from props.expr import Const, Expr, XPath, parse_expr
from props.keys import RESERVED, RULE_ATTRS, RULE_FORMS
from props.reader import INTEGER, MAX_COLUMNS, Reader, split_list, to_int
from props.sections.common import dateformats, optype_values, sourcedefs, txind_values, userdefs
from props.settings import Rule, XmlSettings
from props.text import quoted

log = logging.getLogger("msgcap.props")

_XML = XmlSettings()  # the defaults of unset properties
_RULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
# Rule attributes whose Rule field is spelled differently.
_RULE_FIELD = {"timestamp.format": "timestamp_format", "name": "column_name",
               "before.value": "before_value", "before.isnull": "before_isnull",
               "before.ismissing": "before_ismissing", "after.value": "after_value",
               "after.isnull": "after_isnull", "after.ismissing": "after_ismissing"}


def declared_rules(r: Reader) -> dict[str, Rule]:
    """The rules reachable from ``xml.rules`` and their types (keys depend on them), by name."""
    declared: dict[str, Rule] = {}
    if r.raw("xml.rules") is None:
        return declared
    queue = [(name, "xml.rules") for name in _rule_list(r, "xml.rules")]
    while queue:
        name, referrer = queue.pop(0)
        if name in declared:
            continue
        type_key = f"{name}.type"
        rule_type = r.text(type_key)
        if rule_type is not None:
            rule_type = rule_type.lower()
        if rule_type is None:
            raise r.error(referrer, f"rule {name} has no {type_key} (tx, op or col)")
        if rule_type not in RULE_ATTRS:
            raise r.error(type_key, f"{quoted(rule_type)} is not tx, op or col")
        declared[name] = Rule(name=name, type=rule_type, file=r.file,
                              line=r.line(type_key) or 0)
        subrules_key = f"{name}.subrules"
        if r.raw(subrules_key) is not None:
            queue.extend((sub, subrules_key) for sub in _rule_list(r, subrules_key))
    return declared


def xml_settings(r: Reader, declared: dict[str, Rule]) -> XmlSettings:
    r.required("xml.rules")
    tables = userdefs(r, "xml")
    tree = _RuleTree(r, declared)
    top = tuple(tree.rule(name, (), top=True) for name in _rule_list(r, "xml.rules"))
    namespaces = {key[len("xml.namespace."):]: r.text(key) or ""
                  for key in r.items if key.startswith("xml.namespace.")}
    return XmlSettings(
        sourcedefs=sourcedefs(r, "xml", tables),
        rules=top,
        namespaces=namespaces,
        maxbytes=r.integer("xml.maxbytes", None, 1) or _XML.maxbytes,
        maxdepth=r.integer("xml.maxdepth", None, 1) or _XML.maxdepth,
        dateformats=dateformats(r, "xml"),
        userdefs=tables,
    )


def _rule_list(r: Reader, key: str) -> list[str]:
    names = split_list(r.text(key) or "")
    seen: set[str] = set()
    for name in names:
        if not name:
            raise r.error(key, "empty rule name in the list")
        if not _RULE_NAME.match(name):
            raise r.error(key, f"{quoted(name)} is not a valid rule name")
        if name in RESERVED:
            raise r.error(key, f"{quoted(name)} is a reserved word, not usable as a rule name")
        if name in seen:
            raise r.error(key, f"rule {name} is listed twice")
        seen.add(name)
    return names


class _RuleTree:
    """Builds the rules reachable from ``xml.rules``, each once (a rule may be the subrule of
    several), refusing cycles and subrules of the wrong type."""

    def __init__(self, r: Reader, declared: dict[str, Rule]) -> None:
        self.r = r
        self.declared = declared
        self.built: dict[str, Rule] = {}

    def rule(self, name: str, path: tuple[str, ...], *, top: bool,
             parent: Rule | None = None) -> Rule:
        r = self.r
        if name in path:
            cycle = " → ".join((*path[path.index(name):], name))
            raise r.error(f"{path[-1]}.subrules", f"rule cycle {cycle}")
        declared = self.declared[name]
        if top and declared.type == "col":
            raise r.error("xml.rules", f"rule {name} is a col rule; top-level rules must be "
                          "tx or op")
        if parent is not None:
            allowed = {"tx": ("op",), "op": ("op", "col"), "col": ()}[parent.type]
            if declared.type not in allowed:
                what = "no subrules" if not allowed else f"only {' or '.join(allowed)} subrules"
                raise r.error(f"{parent.name}.subrules", f"{parent.type} rule {parent.name} "
                              f"may have {what}, not {declared.type} rule {name}")
        if name in self.built:
            if self.built[name].txind is not None and not top:
                raise r.error(f"{name}.txind", "txind is allowed only on top-level op rules")
            return self.built[name]
        fields: dict[str, object] = {}
        lines: dict[str, int] = {}
        prefix = f"{name}."
        for key, pending in r.items.items():
            if not key.startswith(prefix):
                continue
            attr = key[len(prefix):]
            lines[attr] = pending.entry.line
            if attr in RULE_FORMS:
                fields[_RULE_FIELD.get(attr, attr)] = _rule_expr(r, key, attr)
        fields["timestamp_format"] = r.fmt(f"{name}.timestamp.format")
        rule_type = declared.type
        if rule_type == "op":
            fields["optype_values"] = optype_values(r, name, truncate=False)
            fields["txind_values"] = txind_values(r, name)
            if fields.get("txind") is not None and not top:
                raise r.error(f"{name}.txind", "txind is allowed only on top-level op rules")
        match = fields.pop("match", None)
        if isinstance(match, XPath) and not top and match.text.startswith("/"):
            log.warning("%s: %s.match: absolute XPath %r in a subrule is evaluated from the "
                        "document root; did you mean %r?", r.where(f"{name}.match"), name,
                        match.text, "./" + match.text.lstrip("/"))
        rule = Rule(name=name, type=rule_type, match=match,  # type: ignore[arg-type]
                    file=r.file, line=declared.line, lines=lines,
                    **fields)  # type: ignore[arg-type]
        subrule_names = (_rule_list(r, f"{name}.subrules")
                         if r.raw(f"{name}.subrules") is not None else [])
        subrules = tuple(self.rule(sub, (*path, name), top=False, parent=rule)
                         for sub in subrule_names)
        rule = replace(rule, subrules=subrules)
        _check_rule(r, rule)
        self.built[name] = rule
        return rule


def _rule_expr(r: Reader, key: str, attr: str) -> Expr | None:
    value = r.raw(key)
    if value is None:
        return None
    if attr == "index":
        text = value.strip()
        if INTEGER.match(text):
            index = to_int(text)
            if index is not None and index < 0:
                raise r.error(key, f"column index {text} is negative")
            if index is None or index >= MAX_COLUMNS:
                raise r.error(key, f"column index {quoted(text)} is out of range "
                              f"(0–{MAX_COLUMNS - 1})")
            return Const(str(index))
    return r.held(key, parse_expr(value, RULE_FORMS[attr], prop=key, file=r.file,
                                  line=r.line(key)))


def _check_rule(r: Reader, rule: Rule) -> None:
    if rule.type == "col":
        if rule.column_name is None and rule.index is None:
            raise r.error(f"{rule.name}.type", f"col rule {rule.name} needs "
                          f"{rule.name}.name or {rule.name}.index")
        return
    if rule.type == "op":
        grouping = bool(rule.subrules) and all(s.type == "op" for s in rule.subrules)
        if not grouping:
            if rule.optype is None:
                raise r.error(f"{rule.name}.type",
                              f"op rule {rule.name} needs {rule.name}.optype")
            if rule.schemaandtable is None and rule.table is None:
                raise r.error(f"{rule.name}.type", f"op rule {rule.name} needs "
                              f"{rule.name}.schemaandtable or {rule.name}.table")
