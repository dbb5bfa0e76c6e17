"""XPath for the XML parser: compiled once, native lxml for XPath 1.0, elementpath for 2.0+.

properties.md §6.3. Every rule expression is compiled when the parser is built. An expression
that lxml compiles and that calls only XPath 1.0 functions runs on libxml2 (the common case,
native speed); anything else — a syntax lxml rejects, a function XPath 1.0 lacks such as
``upper-case`` or ``format-dateTime``, a prefixed function — is compiled with elementpath's
XPath 3.1 parser. The choice is made by scanning the expression, because libxml2 reports an
unknown function only when it evaluates it (and not at all inside a predicate that selects
nothing). Oracle's trailing accessors ``name()``, ``position()`` (in the parent) and
``content()`` (inner XML) are split off and applied to the first node the path selects.

Messages are untrusted: ``SafeXml`` parses without DTDs, entity expansion or network access,
with limits on size and depth, and raises ``MessageError`` for each refusal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from lxml import etree

from props.errors import MessageError, PropertyError

# XPath 1.0 core functions (XPath 1.0 §4); anything else needs the 2.0+ engine.
XPATH1_FUNCTIONS = frozenset({
    "last", "position", "count", "id", "local-name", "namespace-uri", "name",
    "string", "concat", "starts-with", "contains", "substring-before", "substring-after",
    "substring", "string-length", "normalize-space", "translate",
    "boolean", "not", "true", "false", "lang",
    "number", "sum", "floor", "ceiling", "round",
})
_NODE_TESTS = frozenset({"text", "node", "comment", "processing-instruction"})
_OPERATOR_NAMES = frozenset({"and", "or", "div", "mod"})

_TOKEN = re.compile(r"""
    (?P<string>"[^"]*"|'[^']*')
  | (?P<axis>[A-Za-z_][\w.\-]*\s*::)
  | (?P<name>[A-Za-z_][\w.\-]*(?::[A-Za-z_*][\w.\-]*)?)(?P<call>\s*\()?
  | (?P<var>\$)
  | (?P<open>[(\[])
  | (?P<close>[)\]])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

# A trailing Oracle accessor: ``path/name()``, ``name()`` alone, likewise position(), content().
_ACCESSOR = re.compile(r"^(?:(?P<path>.*\S)\s*/\s*)?(?P<acc>name|position|content)\s*\(\s*\)\s*$",
                       re.DOTALL)

_STRING_VALUE = etree.XPath("string()")


@dataclass(frozen=True, slots=True)
class Scan:
    """What a lexical scan of an expression found."""

    needs_xpath2: bool
    prefixes: frozenset[str]
    balanced: bool


def scan(text: str) -> Scan:
    """Functions, namespace prefixes and bracket balance of an expression (strings skipped)."""
    needs2, prefixes, depth, balanced = False, set(), [], True
    pairs = {")": "(", "]": "["}
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "name" or kind == "call":
            name = m.group("name")
            prefix, sep, _ = name.partition(":")
            if sep:
                prefixes.add(prefix)
            if m.group("call"):
                depth.append("(")
                if sep:
                    needs2 = True  # fn:, xs:, math:, … are 2.0+ functions
                elif name not in XPATH1_FUNCTIONS and name not in _NODE_TESTS \
                        and name not in _OPERATOR_NAMES:
                    needs2 = True
        elif kind == "open":
            depth.append(m.group())
        elif kind == "close":
            if not depth or depth.pop() != pairs[m.group()]:
                balanced = False
        elif kind == "var":
            needs2 = True  # XPath variables exist only in 2.0+ (for/let/quantified)
    if depth:
        balanced = False
    return Scan(needs2, frozenset(prefixes), balanced)


class Doc:
    """One parsed message document and the per-document state XPath evaluation needs."""

    __slots__ = ("_ep_tree", "root", "tree")

    def __init__(self, tree: etree._ElementTree) -> None:
        self.tree = tree
        self.root = tree.getroot()
        self._ep_tree: Any = None

    def ep_tree(self) -> Any:
        """elementpath's node tree of the document, built on the first 2.0+ evaluation."""
        if self._ep_tree is None:
            from elementpath import get_node_tree
            self._ep_tree = get_node_tree(self.tree)
        return self._ep_tree


@dataclass(frozen=True, slots=True)
class CompiledXPath:
    """One rule expression compiled for its engine; ``where`` names rule.property for errors."""

    text: str
    where: str
    engine: str  # "lxml" or "elementpath"
    accessor: str | None  # None, "name", "position" or "content"
    path: str | None  # the expression before the accessor (None: the context node)
    _select: Callable[[Any, Doc], list[Any]] = field(repr=False, compare=False)
    _boolean: Callable[[Any, Doc], bool] = field(repr=False, compare=False)
    path_is_direct: bool = False  # a plain child path run on lxml's element API
    _text: Callable[[Any, Doc], str | None] | None = field(default=None, repr=False,
                                                           compare=False)

    def select(self, node: Any, doc: Doc) -> list[Any]:
        """Every item the expression yields from ``node`` (nodes, strings or one atom)."""
        try:
            items = self._select(node, doc)
        except MessageError:
            raise
        except Exception as exc:
            raise MessageError(f"XPath {self.text!r} failed: {exc}", position=self.where) from exc
        if self.accessor is None:
            return items
        if not items:
            return []
        return [_ACCESSORS[self.accessor](items[0])]

    def nodes(self, node: Any, doc: Doc) -> list[Any]:
        """The element nodes a ``match`` selects; anything but elements is a message error."""
        items = self.select(node, doc)
        for item in items:
            if not isinstance(item, etree._Element) or not isinstance(item.tag, str):
                raise MessageError(f"match {self.text!r} selected {_describe(item)}, "
                                   "not an element", position=self.where)
        return items

    def text_value(self, node: Any, doc: Doc) -> str | None:
        """The value as text (first node's string value), or None when it selects nothing."""
        if self._text is not None and self.accessor is None:
            return self._text(node, doc)
        items = self.select(node, doc)
        if not items:
            return None
        return to_text(items[0])

    @property
    def text_getter(self) -> Callable[[Any, Doc], str | None]:
        """``text_value`` in one call: a plain child path's own function, else the method."""
        return self._text if self._text is not None and self.accessor is None else (
            self.text_value)

    @property
    def boolean_getter(self) -> Callable[[Any, Doc], bool]:
        """``boolean`` in one call: a plain child path's own function (lxml's element API,
        which raises nothing to wrap), else the method."""
        return self._boolean if self.path_is_direct and self.accessor is None else self.boolean

    def boolean(self, node: Any, doc: Doc) -> bool:
        """XPath boolean of the result (``isnull``/``ismissing``): a non-empty node-set is true."""
        if self.accessor is not None:
            return bool(self.text_value(node, doc))
        try:
            return self._boolean(node, doc)
        except MessageError:
            raise
        except Exception as exc:
            raise MessageError(f"XPath {self.text!r} failed: {exc}", position=self.where) from exc


class _Atomic(list):
    """A one-item list holding an atomic result (string, number, boolean), not a node-set."""

    __slots__ = ()


def _atom_boolean(item: Any) -> bool:
    if isinstance(item, bool):
        return item
    if isinstance(item, str):
        return item != ""
    if isinstance(item, int | float | Decimal):
        return item != 0 and not _is_nan(item)
    return True


def _is_nan(item: float | Decimal) -> bool:
    if isinstance(item, Decimal):
        return item.is_nan()
    return isinstance(item, float) and math.isnan(item)


def to_text(item: Any) -> str:
    """An XPath result item as text (§6.3): string value; integral numbers without ``.0``."""
    if isinstance(item, str):
        return str(item)
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, etree._Element):
        return _STRING_VALUE(item)
    if isinstance(item, etree._ElementTree):
        return _STRING_VALUE(item.getroot())
    if isinstance(item, float):
        if math.isnan(item):
            return "NaN"
        if item in (float("inf"), float("-inf")):
            return "Infinity" if item > 0 else "-Infinity"
        return _decimal_text(Decimal(repr(item)))
    if isinstance(item, Decimal):
        return _decimal_text(item)
    if isinstance(item, int):
        return str(item)
    return str(item)


def _decimal_text(d: Decimal) -> str:
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


def _describe(item: Any) -> str:
    if isinstance(item, str):
        return f"text {item[:40]!r}"
    return type(item).__name__.lstrip("_")


# -- Oracle's trailing accessors -------------------------------------------------------------------

def _name(item: Any) -> str:
    if isinstance(item, etree._Element) and isinstance(item.tag, str):
        q = etree.QName(item)
        return f"{item.prefix}:{q.localname}" if item.prefix else q.localname
    return ""


def _position(item: Any) -> str:
    if isinstance(item, etree._Element):
        return str(1 + sum(1 for _ in item.itersiblings(etree.Element, preceding=True)))
    return "1"


def _content(item: Any) -> str:
    """Inner XML: the element serialized, its own start and end tags cut off.

    Serializing the element itself (not each child) keeps namespace declarations on the
    element, so children do not repeat the ones they inherit.
    """
    if not isinstance(item, etree._Element):
        return to_text(item)
    whole = etree.tostring(item, encoding="unicode", with_tail=False)
    if whole.endswith("/>") and len(item) == 0 and not item.text:
        return ""
    return whole[whole.index(">") + 1:whole.rindex("</")]


_ACCESSORS: dict[str, Callable[[Any], str]] = {
    "name": _name, "position": _position, "content": _content,
}


# -- compilation -----------------------------------------------------------------------------------

def compile_xpath(text: str, where: str, namespaces: dict[str, str] | None = None) -> CompiledXPath:
    """Compile a rule expression once; a bad one is a PropertyError naming ``where``."""
    ns = dict(namespaces or {})
    source = text.strip()
    if not source:
        raise PropertyError("empty XPath expression", prop=where)
    accessor, path = None, source
    m = _ACCESSOR.match(source)
    if m:
        accessor, path = m.group("acc"), m.group("path")
    if path is None:
        return CompiledXPath(text, where, "lxml", accessor, None, _context_node, _true)
    found = scan(path)
    unbound = sorted(p for p in found.prefixes if p not in ns and p not in _EP_PREFIXES)
    if unbound:
        raise PropertyError(f"XPath {text!r}: namespace prefix {unbound[0]!r} is not bound "
                            f"(set xml.namespace.{unbound[0]})", prop=where)
    direct = _direct_engine(path)
    if direct is not None:
        select, boolean, first_text = direct
        return CompiledXPath(text, where, "lxml", accessor, path, select, boolean,
                             path_is_direct=True, _text=first_text)
    lxml_error = None
    if found.balanced and not found.needs_xpath2 and found.prefixes <= ns.keys():
        try:
            compiled = etree.XPath(path, namespaces=ns, smart_strings=False)
        except etree.XPathError as exc:
            lxml_error = exc
        else:
            select, boolean = _lxml_engine(compiled)
            return CompiledXPath(text, where, "lxml", accessor, path, select, boolean)
    select, boolean = _elementpath_engine(text, path, where, ns, lxml_error)
    return CompiledXPath(text, where, "elementpath", accessor, path, select, boolean)


# Prefixes elementpath binds itself (fn:upper-case, xs:dateTime, math:pi, …).
_EP_PREFIXES = frozenset({"fn", "xs", "xsi", "math", "map", "array", "err", "xml"})


# Plain child paths (``@a``, ``./x/y``, ``/x/y/text()``, ``x/@a``): the hot forms of rule sets.
# lxml's findall() costs more than a comprehension over the children, so they use the latter.
_NCNAME = r"[A-Za-z_][\w.\-]*"
_SIMPLE = re.compile(rf"(?P<abs>/)?(?:\./)?(?P<steps>{_NCNAME}(?:/{_NCNAME})*)?"
                     rf"(?:(?(steps)/|)(?:@(?P<attr>{_NCNAME})|(?P<text>text\(\))))?")


# C901 accepted: one specialised closure per recognised path shape (the fast path's point)
def _direct_engine(path: str) -> tuple[Callable[[Any, Doc], list[Any]],  # noqa: C901
                                       Callable[[Any, Doc], bool],
                                       Callable[[Any, Doc], str | None]] | None:
    """Plain child paths run on lxml's element API (same results as libxml2's XPath, several
    times cheaper per call); anything else returns None and goes to an XPath engine."""
    m = _SIMPLE.fullmatch(path.strip())
    if m is None or path.strip() in ("", "/", "./"):
        return None
    names = m.group("steps").split("/") if m.group("steps") else []
    attr, text = m.group("attr"), m.group("text")
    if m.group("abs"):
        if not names:
            return None
        root_name, rest = names[0], names[1:]

        def elements(node: Any) -> list[Any]:
            root = node.getroottree().getroot()
            return _children([root], rest) if root.tag == root_name else []
    elif len(names) == 1:
        name = names[0]

        def elements(node: Any) -> list[Any]:
            # Comments and PIs have a non-string tag; namespaced tags are "{uri}name".
            return [child for child in node if child.tag == name]
    elif names:
        def elements(node: Any) -> list[Any]:
            return _children([node], names)
    else:
        def elements(node: Any) -> list[Any]:
            return [node]

    one = names[0] if len(names) == 1 and not m.group("abs") else None  # ``./x/@a``, ``x/text()``
    if attr is not None:
        if not names and not m.group("abs"):
            def select(node: Any, doc: Doc) -> list[Any]:
                value = node.get(attr)
                return [] if value is None else [value]

            def first(node: Any, doc: Doc) -> str | None:
                return node.get(attr)
        elif one is not None:
            def select(node: Any, doc: Doc) -> list[Any]:
                return [v for v in (e.get(attr) for e in elements(node)) if v is not None]

            def first(node: Any, doc: Doc) -> str | None:
                for e in node:  # the first child of that name with the attribute, no list
                    if e.tag == one:
                        value = e.get(attr)
                        if value is not None:
                            return value
                return None
        else:
            def select(node: Any, doc: Doc) -> list[Any]:
                return [v for v in (e.get(attr) for e in elements(node)) if v is not None]

            def first(node: Any, doc: Doc) -> str | None:
                for e in elements(node):
                    value = e.get(attr)
                    if value is not None:
                        return value
                return None
    elif text is not None:
        def select(node: Any, doc: Doc) -> list[Any]:
            out = []
            for e in elements(node):
                if e.text is not None:
                    out.append(e.text)
                out.extend(c.tail for c in e if c.tail is not None)
            return out

        def first(node: Any, doc: Doc) -> str | None:
            for e in (node if one is not None else elements(node)):
                if one is not None and e.tag != one:
                    continue
                if e.text is not None:
                    return e.text
                for c in e:
                    if c.tail is not None:
                        return c.tail
            return None
    else:
        def select(node: Any, doc: Doc) -> list[Any]:
            return elements(node)

        def first(node: Any, doc: Doc) -> str | None:
            found = elements(node)
            return _STRING_VALUE(found[0]) if found else None

    if attr is None and text is None:
        def boolean(node: Any, doc: Doc) -> bool:
            return bool(elements(node))
    elif one is not None and attr is not None:
        def boolean(node: Any, doc: Doc) -> bool:  # ``first`` without the call (isnull rules)
            for e in node:  # noqa: SIM110 - any() of a generator costs a frame per call
                if e.tag == one and e.get(attr) is not None:
                    return True
            return False
    else:
        def boolean(node: Any, doc: Doc) -> bool:
            return first(node, doc) is not None
    return select, boolean, first


def _children(nodes: list[Any], names: list[str]) -> list[Any]:
    for name in names:
        nodes = [child for node in nodes for child in node if child.tag == name]
    return nodes


def _context_node(node: Any, doc: Doc) -> list[Any]:
    return [node]


def _true(node: Any, doc: Doc) -> bool:
    return True


def _lxml_engine(compiled: etree.XPath) -> tuple[Callable[[Any, Doc], list[Any]],
                                                 Callable[[Any, Doc], bool]]:
    def select(node: Any, doc: Doc) -> list[Any]:
        result = compiled(node)
        if isinstance(result, list):
            return result
        return _Atomic((result,))

    def boolean(node: Any, doc: Doc) -> bool:
        result = compiled(node)
        if isinstance(result, list):
            return bool(result)
        return _atom_boolean(result)
    return select, boolean


def _elementpath_engine(text: str, path: str, where: str, ns: dict[str, str],
                        lxml_error: Exception | None) -> tuple[Callable[[Any, Doc], list[Any]],
                                                               Callable[[Any, Doc], bool]]:
    from elementpath import ElementPathError, XPathContext
    from elementpath.xpath31 import XPath31Parser

    try:
        token = XPath31Parser(namespaces=ns).parse(path)
    except ElementPathError as exc:
        reason = str(exc) if lxml_error is None else f"{exc} (XPath 1.0: {lxml_error})"
        raise PropertyError(f"invalid XPath {text!r}: {reason}", prop=where) from exc

    def select(node: Any, doc: Doc) -> list[Any]:
        result = token.get_results(XPathContext(doc.ep_tree(), namespaces=ns, item=node))
        if isinstance(result, list):
            return result
        if result is None:
            return []
        return _Atomic((result,))

    def boolean(node: Any, doc: Doc) -> bool:
        context = XPathContext(doc.ep_tree(), namespaces=ns, item=node)
        return bool(token.boolean_value(token.evaluate(context)))
    return select, boolean


# -- hardened parsing ------------------------------------------------------------------------------

DEFAULT_MAXBYTES = 10_485_760
DEFAULT_MAXDEPTH = 256
_LIBXML_DEPTH = 256  # libxml2's own nesting limit without XML_PARSE_HUGE


class SafeXml:
    """Parses untrusted message bodies: no DTD, no entities, no network, bounded size and depth."""

    __slots__ = ("_bytes_parser", "_text_parser", "_too_deep", "maxbytes", "maxdepth")

    def __init__(self, maxbytes: int = DEFAULT_MAXBYTES, maxdepth: int = DEFAULT_MAXDEPTH) -> None:
        self.maxbytes, self.maxdepth = maxbytes, maxdepth
        # Not collect_ids=False: with it libxml2 reads a document's external DTD (file or URL).
        options: dict[str, Any] = {
            "resolve_entities": False, "no_network": True, "load_dtd": False,
            "dtd_validation": False, "attribute_defaults": False,
            "huge_tree": maxdepth > _LIBXML_DEPTH, "strip_cdata": True}
        self._bytes_parser = etree.XMLParser(**options)
        # A text body is Unicode whatever its declaration says: encode it and force UTF-8.
        self._text_parser = etree.XMLParser(encoding="utf-8", **options)
        self._too_deep = etree.XPath("boolean(/" + "/".join(["*"] * (maxdepth + 1)) + ")")

    def parse(self, body: str | bytes) -> Doc:
        """The document of one message body; refusals and syntax errors are MessageErrors."""
        if isinstance(body, str):
            if len(body) > self.maxbytes:  # UTF-8 takes at least a byte per character
                raise MessageError(f"XML document of more than {self.maxbytes} bytes exceeds "
                                   f"xml.maxbytes={self.maxbytes}", position="xml.maxbytes")
            data, parser = body.encode("utf-8"), self._text_parser
        else:
            data, parser = bytes(body), self._bytes_parser
        if len(data) > self.maxbytes:
            raise MessageError(f"XML document of {len(data)} bytes exceeds "
                               f"xml.maxbytes={self.maxbytes}", position="xml.maxbytes")
        try:
            root = etree.fromstring(data, parser)
        except etree.XMLSyntaxError as exc:
            raise _syntax_error(exc, self.maxdepth) from None
        if root is None:
            raise MessageError("empty XML document", position="line 1")
        tree = root.getroottree()
        # Cheap byte tests spare the exact checks for documents that start with "<" (ASCII-
        # compatible): a DOCTYPE is spelled "<!DOCTYPE", and depth n needs n "<".
        plain = data[:1] == b"<"
        if (not plain or b"<!DOCTYPE" in data) and (
                tree.docinfo.doctype or tree.docinfo.internalDTD is not None):
            raise MessageError("DTD not allowed in messages (DOCTYPE declaration found)",
                               position="DOCTYPE")
        if (not plain or data.count(b"<") > self.maxdepth) and self._too_deep(tree):
            raise MessageError(f"XML document nested deeper than xml.maxdepth={self.maxdepth}",
                               position="xml.maxdepth")
        return Doc(tree)


def _syntax_error(exc: etree.XMLSyntaxError, maxdepth: int) -> MessageError:
    line, column = exc.position if exc.position else (None, None)
    msg = re.sub(r",? line \d+, column \d+$", "", exc.msg or str(exc))
    if "depth" in msg.lower():
        return MessageError(f"XML document nested deeper than xml.maxdepth={maxdepth} ({msg})",
                            position="xml.maxdepth")
    if "entity" in msg.lower():
        msg += " (entities are not expanded)"
    where = f"line {line}, column {column}" if line else None
    return MessageError(f"malformed XML: {msg}", position=where)
