"""Value expressions (properties.md §2.1) parsed once at load time into small immutable objects.

Parsers dispatch on the class of an expression instead of re-reading property text per message.
Every class is a frozen, slotted dataclass: hashable, comparable and picklable (Spark tasks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from props.errors import PropertyError
from props.text import quoted

# Expression kinds a property may allow (the ``allowed`` argument of parse_expr).
FIELD, JMSPROP, JMSID, TS, SEQID, TXID, CONST, XPATH = (
    "field", "jmsprop", "jmsid", "ts", "seqid", "txid", "const", "xpath")
KINDS = frozenset({FIELD, JMSPROP, JMSID, TS, SEQID, TXID, CONST, XPATH})

_FORM_TEXT = {
    FIELD: "a header field name", JMSPROP: "$property", JMSID: "$jmsid", TS: "*ts",
    SEQID: "*seqid", TXID: "*txid", CONST: '"value"', XPATH: "an XPath expression",
}
_FORM_ORDER = (FIELD, XPATH, JMSPROP, JMSID, TS, SEQID, TXID, CONST)


_FIELD_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-.#$@]*\Z")
_JMSPROP_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_.\-:]*)\Z")
_SYSTEM = {"*ts": TS, "*seqid": SEQID, "*txid": TXID}


@dataclass(frozen=True, slots=True)
class Expr:
    """Base of all value expressions; ``kind`` is one of KINDS."""

    kind: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class Field(Expr):
    """A header field (fixed header record or delim.header name), matched case-insensitively."""

    kind: ClassVar[str] = FIELD
    name: str

    @property
    def key(self) -> str:
        """Normalised name: upper case, ``-`` read as ``_`` (copybook names, §14 #17)."""
        return normalize_field(self.name)


@dataclass(frozen=True, slots=True)
class JmsProp(Expr):
    """``$NAME``: a JMS property / STOMP header of the message."""

    kind: ClassVar[str] = JMSPROP
    name: str


@dataclass(frozen=True, slots=True)
class JmsId(Expr):
    """``$jmsid``: the message id produced by ``jms.id``."""

    kind: ClassVar[str] = JMSID


@dataclass(frozen=True, slots=True)
class SysTs(Expr):
    """``*ts``: system time when the message is parsed."""

    kind: ClassVar[str] = TS


@dataclass(frozen=True, slots=True)
class SysSeqid(Expr):
    """``*seqid``: the system operation sequence."""

    kind: ClassVar[str] = SEQID


@dataclass(frozen=True, slots=True)
class SysTxid(Expr):
    """``*txid``: the system transaction counter."""

    kind: ClassVar[str] = TXID


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A constant: the text between the outer double quotes, verbatim."""

    kind: ClassVar[str] = CONST
    text: str


@dataclass(frozen=True, slots=True)
class XPath(Expr):
    """An XPath expression of an XML rule, compiled by the XML parser when it is built."""

    kind: ClassVar[str] = XPATH
    text: str


def normalize_field(name: str) -> str:
    """Header-field key: case-insensitive, ``-`` and ``_`` equivalent."""
    return name.upper().replace("-", "_")


def forms_text(allowed: frozenset[str]) -> str:
    """The accepted forms, for error messages: ``a header field name, $property or *ts``."""
    forms = [_FORM_TEXT[k] for k in _FORM_ORDER if k in allowed]
    return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]


def parse_expr(value: str, allowed: frozenset[str], *, prop: str, file: str | None = None,
               line: int | None = None) -> Expr:
    """Parse one value expression, accepting only the ``allowed`` kinds of its property.

    Forms are tried in a fixed order — ``"const"``, ``$jmsid``, ``$NAME``, ``*ts``/``*seqid``/
    ``*txid``, bare field name — and anything else is XPath where XPath is allowed.
    """
    unknown = allowed - KINDS
    if unknown:
        raise ValueError(f"unknown expression kinds {sorted(unknown)}")
    text = value.strip()

    def bad(reason: str) -> PropertyError:
        return PropertyError(reason, prop=prop, file=file, line=line)

    def expected() -> PropertyError:
        return bad(f"{quoted(text)} is not an accepted form; expected {forms_text(allowed)}")

    if not text:
        raise bad(f"empty value; expected {forms_text(allowed)}")
    if text.startswith('"'):
        if len(text) >= 2 and text.endswith('"'):
            if CONST in allowed:
                return Const(text[1:-1])
            if XPATH in allowed:
                return XPath(text)  # an XPath string literal
            raise expected()
        if XPATH not in allowed:
            raise bad(f"unterminated constant {quoted(text)}: a constant is written \"value\"")
    if text.startswith("$"):
        if text.lower() == "$jmsid":
            if JMSID in allowed:
                return JmsId()
            raise expected()
        match = _JMSPROP_RE.match(text)
        if match:
            if JMSPROP in allowed:
                return JmsProp(match.group(1))
            raise expected()
        if XPATH not in allowed:
            raise bad(f"{quoted(text)} is not a valid JMS property name")
    system = _SYSTEM.get(text.lower())
    if system is not None:
        if system in allowed:
            return {TS: SysTs, SEQID: SysSeqid, TXID: SysTxid}[system]()
        raise expected()
    if XPATH in allowed:
        return XPath(text)
    if FIELD in allowed and _FIELD_RE.match(text):
        return Field(text)
    raise expected()


def parse_delim_value(value: str, *, prop: str, file: str | None = None,
                      line: int | None = None) -> str:
    """Decode a ``{value|\\xhh}`` value (§2.3): ``\\xhh`` is the character with code hh.

    Surrounding whitespace is dropped (write ``\\x20`` for a space); other backslashes are
    literal, so ``\\'`` stays two characters.
    """
    text = value.strip()
    if not text:
        raise PropertyError("empty value; write \\x20 for a space", prop=prop, file=file,
                            line=line)
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == "x":
            digits = text[i + 2:i + 4]
            if len(digits) != 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertyError(f"bad escape {quoted(text[i:i + 4])}: \\x needs two hex digits",
                                    prop=prop, file=file, line=line)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(ch)
            i += 1
    return "".join(out)
