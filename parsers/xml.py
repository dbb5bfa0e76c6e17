"""The XML parser: a tree of tx/op/col rules with compiled XPath (properties.md §6).

Built once from the rule tree of ``XmlSettings``: every expression is compiled (parsers.xpath),
every constant checked, every transaction/operation property given its default. Per message the
document is parsed hardened, each top-level rule's ``match`` selects its instances, and the walk
yields one ``Op`` per operation instance (an op rule with column subrules, or without any
subrules), its columns converted to trail types.

Transactions (§6.4): each match of a ``tx`` rule, and all operations of a top-level ``op`` rule
without ``txind``, form one transaction. When one message yields several transactions, or mixes
them with span operations (``txind``), the parser marks each transaction's boundaries in
``Op.txind`` (TX_WHOLE for a one-operation transaction, else TX_BEGIN, TX_MIDDLE…, TX_END), so
that the assembler sees them even when txids are ``*txid``. A message with one transaction and
no span rule leaves ``txind`` None (one transaction per message). When an op rule sets ``seqid``
and no txid is set on it or above, the transaction's txid is its first operation's seqid
(§6.2); span rules keep ``*txid`` then.

A top-level rule without ``match`` (and relative expressions of top-level rules) work from the
root element. Images (§3.6): inserts get the after image; updates the after image, plus the
before image when some column rule has ``before.*`` and it yields a value; deletes the before
image, from ``before.*``/``value`` or, for column rules that have only ``after.*``, from those.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gendef.model import Definitions, Table
from parsers.base import ParserBase
from parsers.convert import Converter, build_converter
from parsers.model import (
    DELETE,
    MISSING,
    TX_BEGIN,
    TX_END,
    TX_MIDDLE,
    TX_WHOLE,
    UPDATE,
    Message,
    Op,
)
from parsers.opmap import optype_mapper, txind_mapper
from parsers.timefmt import compile_format
from parsers.values import compile_timestamp, compile_value, describe
from parsers.xpath import CompiledXPath, Doc, SafeXml, compile_xpath
from props.errors import MessageError, PropertyError
from props.expr import Const, Expr, SysSeqid, SysTs, SysTxid, XPath
from props.settings import Rule, Settings, XmlSettings

_NAMES_KEPT = 4096  # column names remembered per table (a message may write any)

# Getters take the node a rule instance matched and the message's _State.
_TextGetter = Callable[[Any, "_State"], "str | None"]
# Column rules read the node alone (XPath and constants): their getters take the node and the
# document, one call less per value than a getter of the state.
_NodeText = Callable[[Any, Doc], "str | None"]
_NodeTest = Callable[[Any, Doc], bool]


class _State:
    """What one message's evaluation shares: the message, its document, its ``*ts``."""

    __slots__ = ("derived", "doc", "message", "now")

    def __init__(self, message: Message, doc: Doc) -> None:
        self.message, self.doc = message, doc
        self.now = time.time_ns() // 1000
        self.derived: set[int] = set()  # ids of ops whose txid is their seqid


def _position(rule: Rule, attr: str, expr: Expr | None = None) -> str:
    """How a message error names where it happened: ``rule.attr`` and the expression."""
    where = rule.prop(attr)
    if isinstance(expr, XPath):
        return f"{where} ({expr.text})"
    if expr is not None:
        return f"{where} ({describe(expr)})"
    return where


def _error(reason: str, rule: Rule, attr: str, expr: Expr | None = None) -> MessageError:
    return MessageError(reason, position=_position(rule, attr, expr))


def _prop_error(reason: str, rule: Rule, attr: str | None = None) -> PropertyError:
    line = rule.lines.get(attr, rule.line) if attr else rule.line
    return PropertyError(reason, prop=rule.prop(attr or "type"), file=rule.file,
                         line=line or None)


# -- value getters --------------------------------------------------------------------------------

class _Compiler:
    """Compiles rule expressions with the parser's namespaces."""

    def __init__(self, namespaces: dict[str, str]) -> None:
        self.namespaces = namespaces

    def xpath(self, rule: Rule, attr: str, expr: XPath) -> CompiledXPath:
        try:
            return compile_xpath(expr.text, rule.prop(attr), self.namespaces)
        except PropertyError as exc:
            raise _prop_error(exc.reason, rule, attr) from None

    def text(self, rule: Rule, attr: str, expr: Expr, *, required: bool) -> _TextGetter:
        """A getter ``(node, state) -> text | None`` (None: no value, or *seqid/*txid)."""
        if isinstance(expr, XPath):
            value = self.xpath(rule, attr, expr).text_getter
            if not required:
                return lambda node, st: value(node, st.doc)
            what = f"no value: {expr.text!r} selects nothing"

            def xpath_required(node: Any, st: _State) -> str:
                text = value(node, st.doc)
                if text is None:
                    raise _error(what, rule, attr, expr)
                return text
            return xpath_required
        if isinstance(expr, Const):
            text = expr.text
            return lambda node, st: text
        try:
            getter = compile_value(expr, None, prop=rule.prop(attr), required=required)
        except PropertyError as exc:
            raise _prop_error(exc.reason, rule, attr) from None

        def header(node: Any, st: _State) -> str | None:
            try:
                return getter(st.message, ())
            except MessageError as exc:
                raise _error(exc.reason, rule, attr, expr) from None
        return header

    def node_text(self, rule: Rule, attr: str, expr: Expr) -> _NodeText:
        """A getter ``(node, document) -> text | None`` of an XPath or a constant."""
        if isinstance(expr, Const):
            text = expr.text
            return lambda node, doc: text
        if not isinstance(expr, XPath):
            raise _prop_error(f"{describe(expr)} is not accepted here; expected an XPath "
                              'expression or "value"', rule, attr)
        return self.xpath(rule, attr, expr).text_getter

    def boolean(self, rule: Rule, attr: str, expr: Expr | None) -> _NodeTest | None:
        """A test ``(node, document) -> bool`` of an XPath (None: not configured)."""
        if expr is None:
            return None
        if not isinstance(expr, XPath):
            raise _prop_error(f"{describe(expr)} is not accepted here; expected an XPath "
                              "expression", rule, attr)
        return self.xpath(rule, attr, expr).boolean_getter

    def timestamp(self, rule: Rule, expr: Expr) -> Callable[[Any, _State], int]:
        """A getter ``(node, state) -> µs since the epoch`` for ``<rule>.timestamp``."""
        fmt = rule.timestamp_format
        if isinstance(expr, SysTs):
            return lambda node, st: st.now
        if isinstance(expr, XPath):
            text_of = self.text(rule, "timestamp", expr, required=True)
            try:
                micros = compile_format(fmt, prop=rule.prop("timestamp.format")).micros
            except PropertyError as exc:
                raise _prop_error(exc.reason, rule, "timestamp.format") from None

            def from_xpath(node: Any, st: _State) -> int:
                text = text_of(node, st) or ""  # (required: never None)
                try:
                    return micros(text)
                except MessageError as exc:
                    raise _error(exc.reason, rule, "timestamp", expr) from None
            return from_xpath
        try:
            getter = compile_timestamp(expr, fmt, None, prop=rule.prop("timestamp"))
        except PropertyError as exc:
            raise _prop_error(exc.reason, rule, "timestamp") from None

        def from_header(node: Any, st: _State) -> int:
            try:
                return getter(st.message, (), st.now)
            except MessageError as exc:
                raise _error(exc.reason, rule, "timestamp", expr) from None
        return from_header


# -- compiled rules -------------------------------------------------------------------------------

@dataclass(slots=True)
class _TxItems:
    """Getters of the transaction properties a rule sets (None: inherited or defaulted).

    ``*seqid``/``*txid`` have no getter (the assembler assigns them) but count as set.
    """

    timestamp: Callable[[Any, _State], int] | None
    seqid: _TextGetter | None
    seqid_system: bool
    txid: _TextGetter | None
    txid_system: bool
    txname: _TextGetter | None
    txowner: _TextGetter | None


@dataclass(slots=True)
class _Inherited:
    """Transaction properties in force for an instance (after defaults and overrides)."""

    timestamp: int
    seqid: str | None
    txid: str | None
    txid_set: bool
    seqid_set: bool
    txname: str | None
    txowner: str | None


def _mapped(c: _Compiler, rule: Rule, attr: str, expr: Expr,
            mapper: Callable[[str], Any]) -> Callable[[Any, _State], Any]:
    """A getter ``(node, state) -> code`` of an op rule's ``optype`` or ``txind``: the text of
    ``expr`` mapped by ``mapper``, its errors naming the rule's attribute."""
    text = c.text(rule, attr, expr, required=True)

    def mapped(node: Any, st: _State) -> Any:
        try:
            return mapper(text(node, st) or "")
        except MessageError as exc:
            if exc.position:
                raise
            raise _error(exc.reason, rule, attr, expr) from None
    return mapped


def _items(c: _Compiler, rule: Rule) -> _TxItems:
    def text(attr: str, expr: Expr | None, required: bool) -> _TextGetter | None:
        if expr is None or isinstance(expr, SysSeqid | SysTxid):
            return None
        return c.text(rule, attr, expr, required=required)
    return _TxItems(
        timestamp=c.timestamp(rule, rule.timestamp) if rule.timestamp is not None else None,
        seqid=text("seqid", rule.seqid, True),
        seqid_system=isinstance(rule.seqid, SysSeqid),
        txid=text("txid", rule.txid, True),
        txid_system=isinstance(rule.txid, SysTxid),
        txname=text("txname", rule.txname, False),
        txowner=text("txowner", rule.txowner, False),
    )


def _inherit(items: _TxItems, node: Any, st: _State, parent: _Inherited | None) -> _Inherited:
    """The instance's transaction properties: its own, else the parent's, else the defaults."""
    if items.timestamp is not None:
        ts = items.timestamp(node, st)
    else:
        ts = parent.timestamp if parent is not None else st.now
    if items.seqid is not None:
        seqid, seqid_set = items.seqid(node, st), True
    elif items.seqid_system:
        seqid, seqid_set = None, True
    else:
        seqid = parent.seqid if parent is not None else st.message.id
        seqid_set = parent.seqid_set if parent is not None else False
    if items.txid is not None:
        txid, txid_set = items.txid(node, st), True
    elif items.txid_system:
        txid, txid_set = None, True
    else:
        txid = parent.txid if parent is not None else None
        txid_set = parent.txid_set if parent is not None else False
    txname = items.txname(node, st) if items.txname is not None else (
        parent.txname if parent is not None else None)
    txowner = items.txowner(node, st) if items.txowner is not None else (
        parent.txowner if parent is not None else None)
    return _Inherited(ts, seqid, txid, txid_set, seqid_set, txname, txowner)


@dataclass(slots=True)
class _Image:
    """How a column rule computes one image: value, isnull, ismissing (None: not configured)."""

    value: _NodeText | None
    value_attr: str
    isnull: _NodeTest | None
    ismissing: _NodeTest | None
    absent: Any  # what "no node" means: NULL for value/after.value, MISSING for before.value


@dataclass(slots=True)
class _ColRule:
    rule: Rule
    match: CompiledXPath | None
    name: _NodeText | None
    name_const: str | None
    index: _NodeText | None
    index_const: int | None
    before: _Image
    after: _Image
    has_before: bool  # some before.* property is configured
    delete: _Image  # the before image of a delete: before/value, else the after values


@dataclass(slots=True)
class _OpRule:
    rule: Rule
    match: CompiledXPath | None
    items: _TxItems
    table: Callable[[Any, _State], str] | None
    optype: Callable[[Any, _State], str] | None
    txind: Callable[[Any, _State], int] | None
    cols: tuple[_ColRule, ...]
    ops: tuple[_OpRule, ...]
    emits: bool  # this rule's instances are operations (not only groups of nested ops)


@dataclass(slots=True)
class _TxRule:
    rule: Rule
    match: CompiledXPath | None
    items: _TxItems
    ops: tuple[_OpRule, ...]


@dataclass(frozen=True, slots=True)
class XmlPlan:
    """What an XML parser runs over: the rule tree (its XPath expressions as source text, since
    compiled lxml XPath objects do not pickle) and the definitions."""

    xml: XmlSettings
    definitions: Definitions


class XmlParser(ParserBase[XmlPlan]):
    """Message → operations by the XML rules; pickles as its plan, compiled again on load."""

    @classmethod
    def compile_plan(cls, settings: Settings | XmlSettings, definitions: Definitions) -> XmlPlan:
        xml = settings if isinstance(settings, XmlSettings) else settings.xml
        if xml is None:
            raise PropertyError("no xml.* settings", prop="parser.type")
        return XmlPlan(xml, definitions)

    def __init__(self, plan: XmlPlan) -> None:
        super().__init__(plan)
        xml, definitions = plan.xml, plan.definitions
        self.definitions = definitions
        if not xml.rules:
            raise PropertyError("no rules: set xml.rules", prop="xml.rules")
        self.xml = xml
        self._safe = SafeXml(xml.maxbytes, xml.maxdepth)
        self._compiler = _Compiler(dict(xml.namespaces))
        # Column converters of every table, built now so that a bad date format stops the start.
        formats = xml.dateformats
        self._columns: dict[str, tuple[Converter, ...]] = {
            table.name: tuple(build_converter(col, formats.lookup(table.name, col.name),
                                              table=table.name) for col in table.columns)
            for table in definitions}
        self._top: list[_TxRule | _OpRule] = []
        # per table: column names as messages write them → their index (``Table.column_index``)
        self._names: dict[str, dict[str, int | None]] = {}
        for rule in xml.rules:
            if rule.type == "tx":
                self._top.append(self._tx_rule(rule))
            elif rule.type == "op":
                self._top.append(self._op_rule(rule, under_tx=False, top=True))
            else:
                raise _prop_error(f"top-level rule {rule.name} is of type {rule.type}; "
                                  "xml.rules takes tx or op rules", rule)

    # -- build ------------------------------------------------------------------------------------

    def _match(self, rule: Rule) -> CompiledXPath | None:
        """The compiled ``match`` (an absolute one in a subrule is evaluated as written)."""
        if rule.match is None:
            return None
        return self._compiler.xpath(rule, "match", rule.match)

    def _tx_rule(self, rule: Rule) -> _TxRule:
        ops = []
        for sub in rule.subrules:
            if sub.type != "op":
                raise _prop_error(f"a tx rule takes only op subrules; {sub.name} is {sub.type}",
                                  rule, "subrules")
            ops.append(self._op_rule(sub, under_tx=True, top=False))
        return _TxRule(rule, self._match(rule), _items(self._compiler, rule), tuple(ops))

    def _op_rule(self, rule: Rule, *, under_tx: bool, top: bool) -> _OpRule:
        c = self._compiler
        cols, ops = [], []
        for sub in rule.subrules:
            if sub.type == "col":
                cols.append(self._col_rule(sub))
            elif sub.type == "op":
                ops.append(self._op_rule(sub, under_tx=under_tx, top=False))
            else:
                raise _prop_error(f"an op rule takes op or col subrules; {sub.name} is "
                                  f"{sub.type}", rule, "subrules")
        if rule.txind is not None and not top:
            where = "under a tx rule" if under_tx else "nested in another op rule"
            raise _prop_error(f"txind is only for top-level op rules; {rule.name} is {where}",
                              rule, "txind")
        emits = bool(cols) or not ops
        table = optype = txind = None
        if emits:
            table = self._table(rule)
            if rule.optype is None:
                raise _prop_error(f"op rule {rule.name} needs an optype", rule, "optype")
            optype = _mapped(c, rule, "optype", rule.optype, optype_mapper(rule.optype_values))
        if rule.txind is not None:
            txind = _mapped(c, rule, "txind", rule.txind, txind_mapper(rule.txind_values))
        return _OpRule(rule, self._match(rule), _items(c, rule), table, optype, txind,
                       tuple(cols), tuple(ops), emits)

    def _table(self, rule: Rule) -> Callable[[Any, _State], str]:
        """The ``SCHEMA.TABLE`` getter of an op rule (§3.5)."""
        c = self._compiler
        if rule.schemaandtable is not None:
            attr, expr, schema_of = "schemaandtable", rule.schemaandtable, None
        elif rule.table is not None:
            attr, expr = "table", rule.table
            schema_of = (c.text(rule, "schema", rule.schema, required=False)
                         if rule.schema is not None else None)
        else:
            raise _prop_error(f"op rule {rule.name} needs schemaandtable, or table (with "
                              "schema)", rule, "schemaandtable")
        name_of = c.text(rule, attr, expr, required=True)

        def table(node: Any, st: _State) -> str:
            name = (name_of(node, st) or "").strip()
            if not name:
                raise _error("empty table name", rule, attr, expr)
            if "." in name:
                return name
            owner = schema_of(node, st) if schema_of is not None else None
            owner = owner.strip() if owner else ""
            if not owner:
                raise _error(f"table {name!r}: two-part name needed (no schema)", rule, attr,
                             expr)
            return f"{owner}.{name}"
        return table

    def _col_rule(self, rule: Rule) -> _ColRule:
        c = self._compiler
        if rule.subrules:
            raise _prop_error(f"a col rule takes no subrules ({rule.name})", rule, "subrules")
        if rule.column_name is None and rule.index is None:
            raise _prop_error(f"col rule {rule.name} needs a name or an index", rule, "name")
        name = index = None
        name_const = index_const = None
        if isinstance(rule.column_name, Const):
            name_const = rule.column_name.text
        elif rule.column_name is not None:
            name = self._name_or_index(rule, "name", rule.column_name)
        if rule.index is not None:
            index_const = _constant_index(rule, rule.index)
            if index_const is None:
                index = self._name_or_index(rule, "index", rule.index)

        def image(side: str, value: Expr | None, isnull: Expr | None, ismissing: Expr | None,
                  absent: Any) -> _Image:
            attr = f"{side}.value" if value is not None else "value"
            value = value if value is not None else rule.value
            getter = c.node_text(rule, attr, value) if value is not None else None
            return _Image(
                getter, attr,
                c.boolean(rule, f"{side}.isnull" if isnull else "isnull", isnull or rule.isnull),
                c.boolean(rule, f"{side}.ismissing" if ismissing else "ismissing",
                          ismissing or rule.ismissing),
                absent)

        before_absent = MISSING if rule.before_value is not None else None
        before = image("before", rule.before_value, rule.before_isnull, rule.before_ismissing,
                       before_absent)
        after = image("after", rule.after_value, rule.after_isnull, rule.after_ismissing, None)
        has_before = any(e is not None for e in (
            rule.before_value, rule.before_isnull, rule.before_ismissing))
        delete = before if before.value is not None or has_before else after
        return _ColRule(rule, self._match(rule), name, name_const, index, index_const,
                        before, after, has_before, delete)

    def _name_or_index(self, rule: Rule, attr: str, expr: Expr) -> _NodeText:
        if not isinstance(expr, XPath):
            raise _prop_error(f"{describe(expr)} is not accepted here; expected an XPath "
                              'expression or "value"', rule, attr)
        return self._compiler.node_text(rule, attr, expr)

    # -- per message ------------------------------------------------------------------------------

    def parse(self, message: Message) -> list[Op]:
        """The operations of one message, in document order of the rules."""
        try:
            doc = self._safe.parse(message.body)
            st = _State(message, doc)
            groups: list[tuple[bool, list[Op]]] = []  # (span operations?, ops)
            matched = False
            for top in self._top:
                nodes = top.match.nodes(doc.root, doc) if top.match is not None else [doc.root]
                if not nodes:
                    continue
                matched = True
                if isinstance(top, _TxRule):
                    for node in nodes:
                        ctx = _inherit(top.items, node, st, None)
                        ops: list[Op] = []
                        for sub in top.ops:
                            self._walk_op(sub, node, st, ctx, None, ops)
                        groups.append((False, ops))
                else:
                    ops = []
                    for node in nodes:
                        self._emit_instance(top, node, st, None, None, ops)
                    groups.append((top.txind is not None, ops))
        except MessageError as exc:
            raise exc.located(message.name) from None
        if not matched:
            raise MessageError("no rule matches the document (xml.rules: "
                               + ", ".join(t.rule.name for t in self._top) + ")",
                               source=message.name, position="xml.rules")
        return _assemble(groups, st.derived)

    def _walk_op(self, r: _OpRule, node: Any, st: _State, parent: _Inherited | None,
                 txind: int | None, out: list[Op]) -> None:
        nodes = r.match.nodes(node, st.doc) if r.match is not None else (node,)
        for instance in nodes:
            self._emit_instance(r, instance, st, parent, txind, out)

    def _emit_instance(self, r: _OpRule, node: Any, st: _State, parent: _Inherited | None,
                       txind: int | None, out: list[Op]) -> None:
        """The op of one instance (if the rule emits) and those of its nested op rules.

        Nested op rules inherit the transaction properties and the span rule's txind.
        """
        ctx = _inherit(r.items, node, st, parent)
        if r.txind is not None:
            txind = r.txind(node, st)
        if r.emits:
            out.append(self._op(r, node, st, ctx, txind))
        for sub in r.ops:
            self._walk_op(sub, node, st, ctx, txind, out)

    def _op(self, r: _OpRule, node: Any, st: _State, ctx: _Inherited,
            txind: int | None) -> Op:
        rule = r.rule
        assert r.table is not None and r.optype is not None  # an emitting rule has both
        name = r.table(node, st)
        table = self.definitions.get(name)
        if table is None:
            raise _error(f"unknown table {name!r} (not in the definitions)", rule,
                         "schemaandtable" if rule.schemaandtable is not None else "table",
                         rule.schemaandtable or rule.table)
        optype = r.optype(node, st)
        converters = self._columns[table.name]
        n = len(table.columns)
        before = [MISSING] * n
        after = [MISSING] * n
        seen = [False] * n
        doc = st.doc
        names = self._names.get(table.name)
        if names is None or len(names) >= _NAMES_KEPT:
            names = self._names[table.name] = {}
        for col in r.cols:
            nodes = col.match.nodes(node, doc) if col.match is not None else (node,)
            for cnode in nodes:
                i = self._column_index(col, cnode, doc, table, names)
                if seen[i]:
                    raise _error(f"column {table.columns[i].name} of {table.name} is set twice "
                                 "in one operation", col.rule, "match", col.rule.match)
                seen[i] = True
                convert = converters[i]
                if optype == DELETE:
                    before[i] = _value(col, col.delete, cnode, doc, convert, table, i)
                    continue
                after[i] = _value(col, col.after, cnode, doc, convert, table, i)
                if optype == UPDATE and col.has_before:
                    before[i] = _value(col, col.before, cnode, doc, convert, table, i)
        if optype == DELETE:
            images: tuple[list[Any] | None, list[Any] | None] = (before, None)
        elif optype == UPDATE and any(v is not MISSING for v in before):
            images = (before, after)
        else:
            images = (None, after)
        _check_keys(table, images[1] if optype != DELETE else images[0], rule)
        op = Op(table=table, optype=optype, timestamp=ctx.timestamp, seqid=ctx.seqid,
                txid=ctx.txid, txind=txind, txname=ctx.txname, txowner=ctx.txowner,
                before=images[0], after=images[1], message_id=st.message.id)
        if (txind is None and ctx.txid is None and not ctx.txid_set and ctx.seqid_set
                and ctx.seqid is not None):
            # An op seqid becomes the txid when none is defined above (§6.2); _assemble gives
            # the whole transaction the txid of its first operation.
            op.txid = ctx.seqid
            st.derived.add(id(op))
        return op

    def _column_index(self, col: _ColRule, node: Any, doc: Doc, table: Table,
                      names: dict[str, int | None]) -> int:
        """The column an instance sets: by name, by index, or both (which must agree).

        An expression that selects nothing leaves the other one to decide; both empty is an
        error. ``names``: the table's column names seen so far, by index (``self._names``).
        """
        rule = col.rule
        name = col.name_const if col.name is None else col.name(node, doc)
        given = col.index_const
        if col.index is not None:
            text = col.index(node, doc)
            if text is not None:
                try:
                    given = int(text.strip())
                except ValueError:
                    raise _error(f"column index {text!r} is not an integer", rule, "index",
                                 rule.index) from None
        if name is None and given is None:
            raise _error("no column: name and index select nothing", rule,
                         "name" if rule.column_name is not None else "index",
                         rule.column_name or rule.index)
        index = None
        if name is not None:
            index = names.get(name, -1)
            if index == -1:
                index = names[name] = table.column_index(name)
            if index is None:
                raise _error(f"table {table.name} has no column {name!r}", rule, "name",
                             rule.column_name)
        if given is not None:
            if not 0 <= given < len(table.columns):
                raise _error(f"column index {given} out of range: {table.name} has "
                             f"{len(table.columns)} columns", rule, "index", rule.index)
            if index is not None and index != given:
                raise _error(f"column {name!r} is index {index} of {table.name}, not {given} "
                             f"({table.columns[given].name})", rule, "index", rule.index)
            index = given
        assert index is not None  # name or index selected one (else refused above)
        return index


def _value(col: _ColRule, image: _Image, node: Any, doc: Doc, convert: Converter,
           table: Table, i: int) -> Any:
    """One image value of a column: MISSING, None (NULL) or the converted value."""
    if image.ismissing is not None and image.ismissing(node, doc):
        return MISSING
    if image.isnull is not None and image.isnull(node, doc):
        return None
    if image.value is None:
        return MISSING
    text = image.value(node, doc)
    if text is None:
        return image.absent
    try:
        return convert(text)
    except MessageError as exc:
        raise MessageError(f"{table.name}.{table.columns[i].name}: {exc.reason}",
                           position=_position(col.rule, image.value_attr,
                                              _expr_of(col.rule, image.value_attr))) from None


def _expr_of(rule: Rule, attr: str) -> Expr | None:
    return getattr(rule, attr.replace(".", "_"), None)


def _constant_index(rule: Rule, expr: Expr) -> int | None:
    """A constant index: ``"1"`` or an unquoted integer (§14 #18); None for an XPath."""
    text = expr.text if isinstance(expr, Const | XPath) else None
    if text is None:
        raise _prop_error(f"{describe(expr)} is not accepted here; expected an XPath "
                          'expression or "value"', rule, "index")
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    if isinstance(expr, Const):
        raise _prop_error(f"index {text!r} is not an integer", rule, "index")
    return None


def _check_keys(table: Table, image: list[Any] | None, rule: Rule) -> None:
    if image is None or not table.has_declared_keys:
        return
    for i in table.key_indexes:
        if image[i] is MISSING:
            raise MessageError(f"key column {table.columns[i].name} of {table.name} is missing",
                               position=rule.prop("subrules"))


def _assemble(groups: list[tuple[bool, list[Op]]], derived: set[int]) -> list[Op]:
    """One list of the message's ops, transaction boundaries marked when there are several."""
    groups = [g for g in groups if g[1]]
    out: list[Op] = []
    if not groups:
        return out
    mark = len(groups) > 1 or groups[0][0]
    for span, ops in groups:
        if derived and not span:
            first = next((op.txid for op in ops if id(op) in derived), None)
            for op in ops:
                if id(op) in derived:
                    op.txid = first
        if mark and not span:
            if len(ops) == 1:
                ops[0].txind = TX_WHOLE
            else:
                ops[0].txind = TX_BEGIN
                for op in ops[1:-1]:
                    op.txind = TX_MIDDLE
                ops[-1].txind = TX_END
        out.extend(ops)
    for ordinal, op in enumerate(out):
        op.ordinal = ordinal
    return out
