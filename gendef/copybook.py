"""The COBOL copybook compiler: copybook text → item tree → record layouts → table definitions.

It runs in passes, as Cobrix does (STYLE.md §1): the text is cut into tokens that keep their
original line and column (fixed format: sequence area 1–6 and everything after column 72 are
dropped, column 7 is the indicator; or free format); the entries are parsed into a tree of items;
sizes are computed bottom-up and offsets top-down; the result is frozen into ``Copybook`` with one
``RecordLayout`` per 01 record (a flat tuple of elementary fields, OCCURS expanded) from which
``copybook_definitions`` derives the DEFGEN tables of sourcedefs.md §7.1. Parsers never look at a
PIC string: every field carries its usage, digits, scale and sign rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from gendef.model import (
    Column,
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
)
from props.errors import CopybookError

DISPLAY, COMP, COMP3, COMP5, COMP1, COMP2 = "DISPLAY", "COMP", "COMP-3", "COMP-5", "COMP-1", "COMP-2"

_USAGES = {
    "DISPLAY": DISPLAY,
    "COMP": COMP, "COMP-0": COMP, "COMP-4": COMP, "BINARY": COMP,
    "COMPUTATIONAL": COMP, "COMPUTATIONAL-0": COMP, "COMPUTATIONAL-4": COMP,
    "COMP-5": COMP5, "COMPUTATIONAL-5": COMP5,
    "COMP-3": COMP3, "COMPUTATIONAL-3": COMP3, "PACKED-DECIMAL": COMP3,
    "COMP-1": COMP1, "COMPUTATIONAL-1": COMP1,
    "COMP-2": COMP2, "COMPUTATIONAL-2": COMP2,
}

_FIGURATIVE = frozenset({
    "ZERO", "ZEROS", "ZEROES", "SPACE", "SPACES", "HIGH-VALUE", "HIGH-VALUES", "LOW-VALUE",
    "LOW-VALUES", "QUOTE", "QUOTES", "NULL", "NULLS", "ALL", "THRU", "THROUGH", "IS", "ARE",
})
_IGNORED_WORDS = frozenset({"GLOBAL", "EXTERNAL"})
_LEVEL_RE = re.compile(r"^\d{1,2}$")
_NUMBER_RE = re.compile(r"^[+-]?\d*[.,]?\d+$")
_DATE_WORD_RE = re.compile(r"^[YMDHISFT0-9\-/.:_]+$")

MAX_BINARY_DIGITS = 38
# Limits checked as soon as the copybook is read, so that one line cannot make the compiler
# build an unbounded layout (a table holds at most 65,536 columns, sourcedefs.md).
MAX_OCCURS = 65_535  # OCCURS count (or OCCURS … TO maximum)
MAX_FIELDS = 65_536  # elementary fields of one record, every occurrence counted
MAX_RECORD_SIZE = 16 * 1024 * 1024  # bytes of one record
IMPLICIT_RECORD = "RECORD"  # name of the record that holds a copybook without a 01 level


# -- the frozen result -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Picture:
    """A parsed PIC string: what the decoders and the definition mapping need from it."""

    text: str
    kind: str  # 'alnum' | 'numeric'
    digits: int = 0  # digit positions (9, Z, *), without P
    scale: int = 0  # digits after V or '.'
    scale_factor: int = 0  # P positions: < 0 left of the digits, > 0 right of them
    signed: bool = False  # S, or an editing sign
    explicit_point: bool = False
    edit_sign: str | None = None  # 'leading' | 'trailing' for editing +/- symbols
    display_length: int = 0  # characters in DISPLAY usage, sign included when it is separate

    @property
    def precision(self) -> int:
        """Significant decimal digits including P scaling positions."""
        return self.digits + abs(self.scale_factor)

    @property
    def effective_scale(self) -> int:
        """Decimal places of the value (left P positions add to the scale, right ones do not)."""
        return self.scale - self.scale_factor if self.scale_factor < 0 else self.scale


@dataclass(frozen=True, slots=True)
class Odo:
    """One enclosing OCCURS … DEPENDING ON: the counter field and this occurrence (1-based)."""

    counter: str
    index: int


@dataclass(frozen=True, slots=True)
class FieldLayout:
    """One elementary item of a record, at one occurrence: where it is and how to read it."""

    name: str  # copybook name
    column: str  # flattened definition column name (sourcedefs.md §7.1)
    offset: int
    length: int
    usage: str
    kind: str  # 'alnum' | 'numeric' | 'float'
    digits: int = 0
    scale: int = 0
    scale_factor: int = 0
    signed: bool = False
    sign_leading: bool = False
    sign_separate: bool = False
    explicit_point: bool = False
    date_format: str | None = None
    key: bool = False
    redefined: bool = False  # this item (or an ancestor) is redefined by a later one
    redefining: bool = False  # this item (or an ancestor) REDEFINES an earlier one
    filler: bool = False
    depending_on: tuple[Odo, ...] = ()
    occurs_index: tuple[int, ...] = ()  # 1-based index in each enclosing OCCURS
    line: int = 0
    path: tuple[str, ...] = ()  # names of the enclosing groups, the 01 record first

    @property
    def precision(self) -> int:
        return self.digits + abs(self.scale_factor)

    @property
    def effective_scale(self) -> int:
        return self.scale - self.scale_factor if self.scale_factor < 0 else self.scale


@dataclass(frozen=True, slots=True)
class Item:
    """A node of the compiled tree: a group (``children``) or an elementary item (``picture``).

    ``offset`` is that of the first occurrence; ``size`` the bytes of one occurrence as the item
    itself declares them; ``actual_size`` the bytes its REDEFINES block takes (the largest
    member, as Cobrix reports it); an OCCURS item spans ``actual_size × occurs``.
    """

    level: int
    name: str
    line: int
    column: int
    offset: int = 0
    size: int = 0
    actual_size: int = 0
    picture: Picture | None = None
    usage: str = DISPLAY
    sign_leading: bool = False
    sign_separate: bool = False
    occurs: int | None = None
    occurs_min: int | None = None
    depending_on: str | None = None
    redefines: str | None = None
    redefined: bool = False
    filler: bool = False
    key: bool = False
    date_format: str | None = None
    children: tuple[Item, ...] = ()

    @property
    def is_group(self) -> bool:
        return self.picture is None and self.usage not in (COMP1, COMP2)

    @property
    def kind(self) -> str:
        if self.usage in (COMP1, COMP2):
            return "float"
        return self.picture.kind if self.picture else "group"

    @property
    def clean_name(self) -> str:
        """The name as Cobrix shows it: '-' → '_', ':' and quotes removed, case kept."""
        return clean_name(self.name)


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """One 01 record: its length and its elementary fields, flattened, OCCURS expanded."""

    name: str
    length: int
    fields: tuple[FieldLayout, ...]
    item: Item

    def field(self, name: str) -> FieldLayout | None:
        """The first field of this copybook or column name (case-insensitive, '-' = '_')."""
        key = normalize_name(name)
        for f in self.fields:
            if normalize_name(f.name) == key or f.column == key:
                return f
        return None


@dataclass(frozen=True, slots=True)
class Copybook:
    """A compiled copybook: its 01 records in order."""

    records: tuple[RecordLayout, ...]
    file: str | None = None

    def record(self, name: str) -> RecordLayout | None:
        """A record by name, case-insensitive, '-' equal to '_'."""
        key = normalize_name(name)
        for r in self.records:
            if normalize_name(r.name) == key:
                return r
        return None

    @property
    def roots(self) -> tuple[Item, ...]:
        return tuple(r.item for r in self.records)

    @property
    def length(self) -> int:
        """The longest record (01 records overlay the same bytes)."""
        return max((r.length for r in self.records), default=0)


def normalize_name(name: str) -> str:
    """Field and record names compare case-insensitively with '-' equal to '_'."""
    return name.upper().replace("-", "_")


def clean_name(name: str) -> str:
    return name.replace("-", "_").replace(":", "").replace("'", "").replace('"', "")


# -- pass 1: text → tokens ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Token:
    text: str
    line: int
    column: int  # 1-based, in the original line


@dataclass(slots=True)
class _Comment:
    text: str
    line: int


def _is_free_format(lines: list[str]) -> bool:
    """Free format when a directive says so, or code starts inside the sequence area."""
    for raw in lines:
        stripped = raw.strip()
        upper = stripped.upper()
        if upper.startswith(">>SOURCE") and "FREE" in upper:
            return True
        if not stripped or stripped.startswith("*>"):
            continue
        head = raw[:6]
        if head.strip() and re.match(r"^\s*\d{1,2}\s+\S", raw) and re.search(r"\S\s", head):
            return True
    return False


def tokenize(text: str, file: str | None = None) -> list[Token | _Comment]:
    """Tokens with original positions; comment lines kept (they carry KEY / date directives).

    In fixed format a literal may continue on a line with ``-`` in column 7 (the continuation
    starts after its first quote); VALUE literals are ignored, so only their extent matters.
    """
    lines = text.splitlines()
    free = _is_free_format(lines)
    out: list[Token | _Comment] = []
    open_literal: Token | None = None  # a literal left open at the end of the last code line
    for lineno, raw in enumerate(lines, 1):
        resume: str | None = None
        if free:
            stripped = raw.lstrip()
            if stripped.startswith(">>"):
                continue
            if stripped.startswith("*"):
                out.append(_Comment(stripped.lstrip("*>").strip(), lineno))
                continue
            cut = raw.find("*>")
            code, start = (raw if cut < 0 else raw[:cut]), 0
        else:
            if len(raw) >= 7 and raw[6] in "*/":
                out.append(_Comment(raw[7:72].strip(), lineno))
                continue
            if len(raw) >= 7 and raw[6] == "-" and open_literal is not None:
                code, start = raw[7:72], 7
                quote = code.find(open_literal.text[0])
                if quote < 0:
                    raise CopybookError("continuation line without a quote", file=file,
                                        line=lineno, column=8)
                code = " " * (quote + 1) + code[quote + 1:]
                resume, open_literal = open_literal.text[0], None
            else:
                # Column 7 is the indicator; like Cobrix, code that starts there is still read.
                code, start = raw[6:72], 6
                if code.lstrip().startswith("*"):
                    out.append(_Comment(code.lstrip().lstrip("*>").strip(), lineno))
                    continue
                cut = code.find("*>")
                if cut >= 0:
                    code = code[:cut]
        if open_literal is not None and code.strip():
            raise CopybookError("unterminated literal", file=file, line=open_literal.line,
                                column=open_literal.column)
        open_literal = _split_words(code, start, lineno, out, resume)
    if open_literal is not None:
        raise CopybookError("unterminated literal", file=file, line=open_literal.line,
                            column=open_literal.column)
    return out


def _split_words(code: str, start: int, lineno: int, out: list, resume: str | None
                 ) -> Token | None:
    """Append the words of one code line; return the literal left open at its end, if any.

    ``resume`` is the quote of a literal continued from the line before: the line starts
    inside it.
    """
    i, n = 0, len(code)
    if resume is not None:
        close = code.find(resume)
        if close < 0:
            return Token(resume, lineno, start + 1)
        i = close + 1
    while i < n:
        ch = code[i]
        if ch in " \t\f,;":
            i += 1
            continue
        j = i
        if ch in "'\"":
            j = code.find(ch, i + 1)
            if j < 0:
                tok = Token(code[i:].rstrip(), lineno, start + i + 1)
                out.append(tok)
                return tok
            j += 1
        else:
            while j < n and code[j] not in " \t\f" and not (code[j] in ",;" and (
                    j + 1 >= n or code[j + 1] in " \t")):
                j += 1
        word = code[i:j]
        if len(word) > 1 and word.endswith("."):
            out.append(Token(word[:-1], lineno, start + i + 1))
            out.append(Token(".", lineno, start + j))
        else:
            out.append(Token(word, lineno, start + i + 1))
        i = j
    return None


# -- pass 2: tokens → entries → tree -----------------------------------------------------------

@dataclass(slots=True)
class _Node:
    """A mutable item while the tree is built; frozen into ``Item`` by the layout pass."""

    level: int
    name: str
    line: int
    column: int
    picture: Picture | None = None
    pic_token: Token | None = None
    usage: str | None = None
    sign_leading: bool | None = None
    sign_separate: bool = False
    occurs: int | None = None
    occurs_min: int | None = None
    depending_on: str | None = None
    redefines: str | None = None
    redefines_token: Token | None = None
    redefined: bool = False
    key: bool = False
    date_format: str | None = None
    children: list[_Node] = field(default_factory=list)
    parent: _Node | None = None

    @property
    def filler(self) -> bool:
        return self.name.upper() == "FILLER"


class _Parser:
    def __init__(self, tokens: list[Token | _Comment], file: str | None) -> None:
        self.tokens = tokens
        self.file = file
        self.pos = 0
        self.pending_key = False
        self.pending_date: str | None = None
        self.last: Token | None = None  # the token read last, where an unexpected end is reported

    def error(self, reason: str, tok: Token | None = None, fld: str | None = None) -> CopybookError:
        if tok is None:
            tok = self.last
        return CopybookError(reason, file=self.file, line=tok.line if tok else None,
                             column=tok.column if tok else None, field=fld)

    def _next(self) -> Token | None:
        """The next code token; comments on the way set the pending directives."""
        while self.pos < len(self.tokens):
            t = self.tokens[self.pos]
            self.pos += 1
            if isinstance(t, _Comment):
                self._directive(t)
                continue
            self.last = t
            return t
        return None

    def _peek(self) -> Token | None:
        save = self.pos
        t = self._next()
        self.pos = save if t is None else self.pos - 1
        return t

    def _directive(self, c: _Comment) -> None:
        words = c.text.split()
        if not words:
            return
        head = words[0].upper()
        if head == "KEY" and len(words) == 1:
            self.pending_key = True
        elif head == "DATEFORMAT":
            if len(words) < 2:
                raise CopybookError("DATEFORMAT needs a format", file=self.file, line=c.line)
            self.pending_date = " ".join(words[1:])
        elif len(words) == 1 and _DATE_WORD_RE.match(head) and "YY" in head:
            self.pending_date = head

    def parse(self) -> list[_Node]:
        roots: list[_Node] = []
        stack: list[_Node] = []
        while True:
            tok = self._next()
            if tok is None:
                break
            if tok.text == ".":
                continue
            # Directives in the comments before an entry apply to it (KEY) or to the next
            # elementary item (date formats); comments inside an entry wait for the next one.
            key, date = self.pending_key, self.pending_date
            self.pending_key, self.pending_date = False, None
            node = self._entry(tok)
            if node is None or node.filler and not key:
                self.pending_key = self.pending_key or key
                self.pending_date = self.pending_date or date
                if node is None:
                    continue
            elif node.picture is not None or node.usage in (COMP1, COMP2):
                node.key = node.key or key
                node.date_format = date
            else:
                node.key = node.key or key
                self.pending_date = self.pending_date or date
            if node.level == 1 or node.level == 77:
                stack = [node]
                if node.level == 1:
                    roots.append(node)
                continue
            while stack and stack[-1].level >= node.level:
                stack.pop()
            if not stack:
                if roots and roots[-1].level != 0 or any(r.level == 1 for r in roots):
                    raise CopybookError(f"level {node.level:02d} item outside any 01 record",
                                        file=self.file, line=node.line, column=node.column,
                                        field=node.name)
                if not roots:
                    # A copybook of bare items (no 01 level) is one implicit record.
                    roots.append(_Node(0, IMPLICIT_RECORD, node.line, node.column))
                stack = [roots[-1]]
            parent = stack[-1]
            if parent.picture is not None or parent.usage in (COMP1, COMP2):
                raise CopybookError(f"elementary item {parent.name} cannot have subordinate items",
                                    file=self.file, line=node.line, column=node.column,
                                    field=node.name)
            if parent.children and parent.children[-1].level != node.level:
                raise CopybookError(
                    f"level {node.level:02d} does not match its siblings' level "
                    f"{parent.children[-1].level:02d}", file=self.file, line=node.line,
                    column=node.column, field=node.name)
            node.parent = parent
            if parent.key:
                node.key = True
            parent.children.append(node)
            stack.append(node)
        return roots

    def _skip_entry(self) -> None:
        while (t := self._next()) is not None and t.text != ".":
            pass

    def _entry(self, tok: Token) -> _Node | None:
        if not _LEVEL_RE.match(tok.text):
            raise self.error(f"expected a level number, found {tok.text!r}", tok)
        level = int(tok.text)
        if level in (66, 88):
            self._skip_entry()
            return None
        if not (1 <= level <= 49 or level == 77):
            raise self.error(f"invalid level number {tok.text}", tok)
        name_tok = self._next()
        if name_tok is None:
            raise self.error("unexpected end of copybook after level number", tok)
        if name_tok.text == "." or name_tok.text.upper() in _CLAUSE_WORDS:
            name, self.pos = "FILLER", self.pos - 1
        else:
            if not re.match(r"^[A-Za-z0-9_:'\"-]+$", name_tok.text):
                raise self.error(f"invalid data name {name_tok.text!r}", name_tok)
            name = name_tok.text
        node = _Node(level, name, tok.line, tok.column)
        self._clauses(node)
        return node

    def _clauses(self, node: _Node) -> None:
        while True:
            tok = self._next()
            if tok is None:
                raise self.error("unexpected end of copybook: missing '.' after this token",
                                 None, node.name)
            word = tok.text.upper()
            if word == ".":
                break
            if word in ("PIC", "PICTURE"):
                t = self._next()
                if t is not None and t.text.upper() == "IS":
                    t = self._next()
                if t is None or t.text == ".":
                    raise self.error("PIC without a picture string", tok, node.name)
                node.picture = parse_picture(t.text, file=self.file, line=t.line,
                                             column=t.column, fld=node.name)
                node.pic_token = t
            elif word == "USAGE":
                t = self._next()
                if t is not None and t.text.upper() == "IS":
                    t = self._next()
                if t is None or t.text.upper() not in _USAGES:
                    raise self.error(f"unknown USAGE {t.text if t else ''!r}", t, node.name)
                node.usage = _USAGES[t.text.upper()]
            elif word in _USAGES:
                node.usage = _USAGES[word]
            elif word == "REDEFINES":
                t = self._next()
                if t is None or t.text == ".":
                    raise self.error("REDEFINES without a name", tok, node.name)
                node.redefines, node.redefines_token = t.text, t
            elif word == "OCCURS":
                self._occurs(node, tok)
            elif word == "SIGN":
                t = self._next()
                if t is not None and t.text.upper() == "IS":
                    t = self._next()
                if t is None or t.text.upper() not in ("LEADING", "TRAILING"):
                    raise self.error("SIGN needs LEADING or TRAILING", t or tok, node.name)
                self._sign(node, t)
            elif word in ("LEADING", "TRAILING"):
                self._sign(node, tok)
            elif word in ("VALUE", "VALUES"):
                self._value(tok, node)
            elif word in ("JUST", "JUSTIFIED"):
                if (p := self._peek()) is not None and p.text.upper() == "RIGHT":
                    self._next()
            elif word == "BLANK":
                if (p := self._peek()) is not None and p.text.upper() == "WHEN":
                    self._next()
                t = self._next()
                if t is None or t.text.upper() not in ("ZERO", "ZEROS", "ZEROES"):
                    raise self.error("BLANK WHEN needs ZERO", t or tok, node.name)
            elif word in ("SYNC", "SYNCHRONIZED"):
                if (p := self._peek()) is not None and p.text.upper() in ("LEFT", "RIGHT"):
                    self._next()
            elif word in _IGNORED_WORDS:
                pass
            else:
                raise self.error(f"unexpected token {tok.text!r}", tok, node.name)

    def _sign(self, node: _Node, tok: Token) -> None:
        node.sign_leading = tok.text.upper() == "LEADING"
        if (p := self._peek()) is not None and p.text.upper() == "SEPARATE":
            self._next()
            node.sign_separate = True
            if (p := self._peek()) is not None and p.text.upper() == "CHARACTER":
                self._next()

    def _int(self, tok: Token | None, what: str, fld: str) -> int:
        if tok is None or not tok.text.isdigit():
            raise self.error(f"{what} needs an integer, found {tok.text if tok else 'end'!r}",
                             tok, fld)
        return int(tok.text)

    def _count(self, what: str, fld: str) -> int:
        """An OCCURS count, refused at its token when over ``MAX_OCCURS``."""
        tok = self._next()
        n = self._int(tok, what, fld)
        if n > MAX_OCCURS:
            raise self.error(f"{what} {tok.text}: more than {MAX_OCCURS:,} occurrences", tok, fld)
        return n

    def _occurs(self, node: _Node, tok: Token) -> None:
        n = self._count("OCCURS", node.name)
        p = self._peek()
        if p is not None and p.text.upper() == "TO":
            self._next()
            node.occurs_min, node.occurs = n, self._count("OCCURS TO", node.name)
            if node.occurs < n:
                raise self.error(f"OCCURS {n} TO {node.occurs}: maximum below minimum", tok,
                                 node.name)
        else:
            node.occurs = n
        while (p := self._peek()) is not None:
            word = p.text.upper()
            if word == "TIMES":
                self._next()
            elif word == "DEPENDING":
                self._next()
                t = self._next()
                if t is not None and t.text.upper() == "ON":
                    t = self._next()
                if t is None or t.text == ".":
                    raise self.error("DEPENDING ON without a field", p, node.name)
                node.depending_on = t.text
                if node.occurs_min is None:
                    node.occurs_min = 0
            elif word in ("ASCENDING", "DESCENDING"):
                self._next()
                for opt in ("KEY", "IS"):
                    if (q := self._peek()) is not None and q.text.upper() == opt:
                        self._next()
                self._names()
            elif word == "INDEXED":
                self._next()
                if (q := self._peek()) is not None and q.text.upper() == "BY":
                    self._next()
                self._names()
            else:
                break

    def _names(self) -> None:
        while (p := self._peek()) is not None and p.text != "." and (
                p.text.upper() not in _CLAUSE_WORDS):
            self._next()

    def _value(self, tok: Token, node: _Node) -> None:
        seen = False
        while (p := self._peek()) is not None and p.text != ".":
            word = p.text.upper()
            if (p.text[0] in "'\"" or word in _FIGURATIVE or _NUMBER_RE.match(p.text)
                    or (word[:2] in ("X'", 'X"', "N'", 'N"', "G'", 'G"'))):
                self._next()
                seen = True
            else:
                break
        if not seen:
            raise self.error("VALUE without a literal", tok, node.name)


_CLAUSE_WORDS = frozenset({
    "PIC", "PICTURE", "USAGE", "REDEFINES", "OCCURS", "SIGN", "LEADING", "TRAILING", "VALUE",
    "VALUES", "JUST", "JUSTIFIED", "BLANK", "SYNC", "SYNCHRONIZED", "TIMES", "DEPENDING",
    "INDEXED", "ASCENDING", "DESCENDING", *_USAGES, *_IGNORED_WORDS,
})


# -- PIC strings ---------------------------------------------------------------------------------

_PIC_RE = re.compile(r"([A-Za-z9+\-.,*/$0])(?:\((\d+)\))?")


def parse_picture(text: str, *, file: str | None = None, line: int | None = None,
                  column: int | None = None, fld: str | None = None) -> Picture:
    """Expand repetitions and classify a PIC string (Cobrix's size rules, STYLE.md §1.2)."""
    def bad(reason: str) -> CopybookError:
        return CopybookError(f"PIC {text}: {reason}", file=file, line=line, column=column,
                             field=fld)

    upper = text.upper()
    symbols: list[str] = []
    i = 0
    while i < len(upper):
        if upper.startswith(("CR", "DB"), i):
            symbols += ["-", "-"]
            i += 2
            continue
        m = _PIC_RE.match(upper, i)
        if not m:
            raise bad(f"invalid symbol {text[i]!r}")
        count = int(m.group(2)) if m.group(2) else 1
        if count < 1:
            raise bad("repetition count must be positive")
        symbols += [m.group(1)] * count
        i = m.end()
    if any(s not in "XA9SVP.+-Z*,B0/$" for s in symbols):
        raise bad(f"invalid symbol {next(s for s in symbols if s not in 'XA9SVP.+-Z*,B0/$')!r}")
    if "X" in symbols or "A" in symbols:
        if any(s in "9SVP.+-Z*" for s in symbols):
            raise bad("mixes alphanumeric and numeric symbols")
        return Picture(text, "alnum", display_length=len(symbols))
    if symbols.count("S") > 1 or ("S" in symbols and symbols[0] != "S"):
        raise bad("S must appear once, first")
    if symbols.count("V") + symbols.count(".") > 1:
        raise bad("more than one decimal point")
    digits = scale = left_p = right_p = 0
    after_point = seen_digit = False
    edit_sign: str | None = None
    explicit = False
    for pos, s in enumerate(symbols):
        if s in "9Z*":
            digits += 1
            seen_digit = True
            if after_point:
                scale += 1
        elif s == "P":
            if seen_digit and not after_point:
                right_p += 1
            else:
                left_p += 1
                after_point = True  # the implied point lies left of leading P positions
        elif s in "V.":
            after_point = True
            explicit = explicit or s == "."
        elif s in "+-":
            edit_sign = "leading" if pos == 0 or not seen_digit else "trailing"
    if digits == 0:
        raise bad("no digit positions")
    if left_p and right_p:
        raise bad("P on both sides of the digits")
    length = sum(1 for s in symbols if s not in "SVP")
    return Picture(text, "numeric", digits, scale, right_p if right_p else -left_p,
                   "S" in symbols or edit_sign is not None, explicit, edit_sign, length)


# -- pass 3: sizes bottom-up, offsets top-down ----------------------------------------------------

def binary_size(usage: str, precision: int) -> int:
    """Bytes of a COMP/COMP-5 (2/4/8 up to 18 digits, then enough bits), COMP-3, COMP-1/2."""
    if usage == COMP1:
        return 4
    if usage == COMP2:
        return 8
    if usage == COMP3:
        return precision // 2 + 1
    if precision <= 4:
        return 2
    if precision <= 9:
        return 4
    if precision <= 18:
        return 8
    return _wide_binary(precision)


def _wide_binary(precision: int) -> int:
    """Cobrix: ceil((log2(10) × digits + 1) / 8) bytes for more than 18 digits."""
    bits_x = precision * 3321928094887362 + 10**15  # log2(10) scaled by 10^15, plus one bit
    return -(-bits_x // (8 * 10**15))


def _elementary_size(n: _Node) -> int:
    usage = n.usage or DISPLAY
    if usage in (COMP1, COMP2):
        return binary_size(usage, 0)
    pic = n.picture
    assert pic is not None
    if pic.kind == "alnum":
        if usage != DISPLAY:
            raise CopybookError(f"USAGE {usage} needs a numeric PIC", line=n.line,
                                column=n.column, field=n.name)
        return pic.display_length
    if usage == DISPLAY:
        extra = 1 if n.sign_separate and pic.edit_sign is None else 0
        return pic.display_length + extra
    return binary_size(usage, pic.digits)


class _Builder:
    """Resolves usages, REDEFINES and DEPENDING ON names, sizes and offsets; freezes items."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self._sizes: dict[int, int] = {}

    def err(self, reason: str, n: _Node, tok: Token | None = None) -> CopybookError:
        return CopybookError(reason, file=self.file, line=tok.line if tok else n.line,
                             column=tok.column if tok else n.column, field=n.name)

    def check(self, n: _Node, inherited_usage: str | None, names: dict[str, _Node]) -> None:
        """Validate one subtree; usage of a group applies to its items."""
        usage = n.usage or inherited_usage
        if not n.children:  # a PIC or COMP-1/2 with subordinate items failed in the parser
            n.usage = usage or DISPLAY
            if n.picture is None and n.usage not in (COMP1, COMP2):
                raise self.err("elementary item without PIC", n)
            if n.usage in (COMP1, COMP2) and n.picture is not None and (
                    n.picture.kind != "numeric"):
                raise self.err(f"{n.usage} needs a numeric PIC or none", n, n.pic_token)
            if n.picture is not None and n.picture.kind == "numeric":
                if n.usage != DISPLAY and n.picture.explicit_point:
                    raise self.err(f"explicit decimal point with USAGE {n.usage}", n,
                                   n.pic_token)
                if n.usage in (COMP, COMP5) and n.picture.digits > MAX_BINARY_DIGITS:
                    raise self.err(f"more than {MAX_BINARY_DIGITS} digits", n, n.pic_token)
        if n.sign_leading is not None and (n.picture is None or n.picture.kind != "numeric"):
            raise self.err("SIGN clause on a non-numeric item", n)
        if not n.filler:
            names.setdefault(normalize_name(n.name), n)
        prev: _Node | None = None
        block_head: _Node | None = None
        for c in n.children:
            if c.redefines is not None:
                target = normalize_name(c.redefines)
                if block_head is None or prev is None or target not in (
                        normalize_name(block_head.name), normalize_name(prev.name)):
                    raise self.err(f"REDEFINES {c.redefines}: not the preceding item of level "
                                   f"{c.level:02d}", c, c.redefines_token)
                if c.occurs is not None and c.depending_on is not None:
                    raise self.err("REDEFINES with OCCURS DEPENDING ON", c)
                prev.redefined = True
            else:
                block_head = c
            prev = c
            self.check(c, usage, names)

    def check_limits(self, n: _Node) -> int:
        """Elementary fields of ``n``'s subtree, all occurrences counted; raises at the first
        item (innermost first) whose fields or bytes exceed ``MAX_FIELDS`` / ``MAX_RECORD_SIZE``,
        before anything is laid out."""
        fields = sum(self.check_limits(c) * (c.occurs or 1) for c in n.children) or 1
        if fields * (n.occurs or 1) > MAX_FIELDS:
            raise self.err(f"{fields * (n.occurs or 1):,} fields, more than the {MAX_FIELDS:,} "
                           "a record may have", n)
        size = self.size(n) * (n.occurs or 1)
        if size > MAX_RECORD_SIZE:
            raise self.err(f"{size:,} bytes, more than the {MAX_RECORD_SIZE:,} a record may have",
                           n)
        return fields

    def size(self, n: _Node) -> int:
        """Bytes of one occurrence; a REDEFINES block counts as its largest member."""
        known = self._sizes.get(id(n))
        if known is not None:
            return known
        if not n.children:
            n_size = _elementary_size(n)
        else:
            n_size = sum(max(self.size(c) * (c.occurs or 1) for c in block)
                         for block in _blocks(n.children))
        self._sizes[id(n)] = n_size
        return n_size

    def freeze(self, n: _Node, offset: int, actual: int | None = None) -> Item:
        own = self.size(n)
        children: list[Item] = []
        if n.children:
            pos = offset
            for block in _blocks(n.children):
                sizes = [self.size(c) for c in block]
                widest = max(sizes)
                for c in block:
                    children.append(self.freeze(c, pos, widest if len(block) > 1 else None))
                pos += max(s * (c.occurs or 1) for s, c in zip(sizes, block))
        return Item(
            level=n.level, name=n.name, line=n.line, column=n.column, offset=offset, size=own,
            actual_size=actual if actual is not None else own, picture=n.picture,
            usage=n.usage or DISPLAY, sign_leading=bool(n.sign_leading) if n.sign_leading
            is not None else bool(n.picture and n.picture.edit_sign == "leading"),
            sign_separate=n.sign_separate or bool(n.picture and n.picture.edit_sign),
            occurs=n.occurs, occurs_min=n.occurs_min, depending_on=n.depending_on,
            redefines=n.redefines, redefined=n.redefined, filler=n.filler, key=n.key,
            date_format=n.date_format, children=tuple(children))


def _blocks(children: list[_Node]) -> list[list[_Node]]:
    """Children grouped into REDEFINES blocks (an item followed by those redefining it)."""
    out: list[list[_Node]] = []
    for c in children:
        if c.redefines is not None and out:
            out[-1].append(c)
        else:
            out.append([c])
    return out


# -- pass 4: flatten into record layouts ------------------------------------------------------------

def item_field(item: Item) -> FieldLayout:
    """The field layout of one elementary item at its first occurrence (for its decoder)."""
    pic = item.picture
    return FieldLayout(
        name=item.name, column=normalize_name(item.name), offset=item.offset, length=item.size,
        usage=item.usage, kind=item.kind,
        digits=pic.digits if pic else 0, scale=pic.scale if pic else 0,
        scale_factor=pic.scale_factor if pic else 0,
        signed=bool(pic and (pic.signed or item.sign_separate)) or item.kind == "float",
        sign_leading=item.sign_leading, sign_separate=item.sign_separate,
        explicit_point=bool(pic and pic.explicit_point), date_format=item.date_format,
        key=item.key, redefined=item.redefined, redefining=item.redefines is not None,
        filler=item.filler, line=item.line)


def _flatten(root: Item, names: dict[str, _Node], file: str | None) -> tuple[FieldLayout, ...]:
    out: list[FieldLayout] = []

    def walk(item: Item, shift: int, path: tuple[str, ...], idx: tuple[int, ...],
             odo: tuple[Odo, ...], redefined: bool, redefining: bool, filler: bool) -> None:
        count = item.occurs or 1
        stride = item.actual_size if item.occurs else 0
        for k in range(count):
            sub_idx = idx + ((k + 1,) if item.occurs else ())
            sub_odo = odo + ((Odo(item.depending_on, k + 1),) if item.depending_on else ())
            base = shift + k * stride
            r1, r2 = redefined or item.redefined, redefining or item.redefines is not None
            if item.children:
                for c in item.children:
                    walk(c, base, path + (item.name,), sub_idx, sub_odo, r1, r2,
                         filler or item.filler)
                continue
            out.append(replace(
                item_field(item), offset=item.offset + base, redefined=r1, redefining=r2,
                filler=filler or item.filler, depending_on=sub_odo, occurs_index=sub_idx,
                path=path))

    for c in root.children:
        walk(c, 0, (root.name,), (), (), False, False, False)
    if not root.children:
        walk(root, 0, (), (), (), False, False, False)
    for f in out:
        for o in f.depending_on:
            target = names.get(normalize_name(o.counter))
            if target is None or target.children:
                raise CopybookError(f"DEPENDING ON {o.counter}: no such elementary item",
                                    file=file, line=f.line, field=f.name)
    return _name_columns(out)


def _name_columns(fields: list[FieldLayout]) -> tuple[FieldLayout, ...]:
    """Unique column names for the items that can be columns; FILLERs stay ``FILLER``."""
    named = [f for f in fields if not f.filler]
    columns = dict(zip(map(id, named), unique_columns(named)))
    return tuple(replace(f, column=columns.get(id(f), "FILLER")) for f in fields)


def unique_columns(fields: list[FieldLayout] | tuple[FieldLayout, ...]) -> list[str]:
    """Column names per §7.1: upper case, '-' → '_', parents prefixed until unique, then _n."""
    depth = [0] * len(fields)

    def base(i: int) -> str:
        f = fields[i]
        parts = list(f.path[len(f.path) - depth[i]:] if depth[i] else ()) + [f.name]
        name = "_".join(normalize_name(p) for p in parts)
        return name + "".join(f"_{k}" for k in f.occurs_index)

    names = [base(i) for i in range(len(fields))]
    for _ in range(64):
        seen: dict[str, list[int]] = {}
        for i, nm in enumerate(names):
            seen.setdefault(nm, []).append(i)
        clashes = [ix for ix in seen.values() if len(ix) > 1]
        if not clashes:
            break
        grown = False
        for ix in clashes:
            for i in ix:
                if depth[i] < len(fields[i].path):
                    depth[i] += 1
                    grown = True
                names[i] = base(i)
        if not grown:
            break
    return names


# -- entry points --------------------------------------------------------------------------------

def compile_copybook(text: str, *, file: str | None = None) -> Copybook:
    """Compile copybook text; ``file`` only names it in errors."""
    parser = _Parser(tokenize(text, file), file)
    roots = parser.parse()
    if not roots:
        raise CopybookError("no 01 record in copybook", file=file)
    builder = _Builder(file)
    records = []
    for root in roots:
        names: dict[str, _Node] = {}
        builder.check(root, None, names)
        if root.occurs is not None:
            raise builder.err("OCCURS on a 01 record", root)
        try:
            builder.check_limits(root)
            item = builder.freeze(root, 0)
        except CopybookError as e:
            if e.file is None and file is not None:
                raise CopybookError(e.reason, file=file, line=e.line, column=e.column,
                                    field=e.field) from None
            raise
        records.append(RecordLayout(root.name, item.actual_size, _flatten(item, names, file),
                                    item))
    seen: set[str] = set()
    for r in records:
        key = normalize_name(r.name)
        if key in seen:
            raise CopybookError(f"duplicate 01 record {r.name}", file=file, line=r.item.line,
                                field=r.name)
        seen.add(key)
    return Copybook(tuple(records), file)


def compile_copybook_file(path: str | Path) -> Copybook:
    """Compile a copybook file (UTF-8, or Latin-1 when it is not valid UTF-8)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise CopybookError(f"cannot read copybook: {e.strerror}", file=str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return compile_copybook(text, file=str(p))


# -- definitions (sourcedefs.md §7.1) --------------------------------------------------------------

def date_format_length(fmt: str) -> int:
    """DATETIME external length of a format: 10 (date), 19 (time), 20 + fraction digits."""
    upper = fmt.upper()
    m = re.search(r"F(\d)|(F+)", upper)
    if m:
        return 20 + (int(m.group(1)) if m.group(1) else len(m.group(2)))
    if "HH" in upper or "MI" in upper or "SS" in upper:
        return 19
    return 10


def field_column(f: FieldLayout, name: str | None = None) -> Column:
    """The definition column of one field (CHAR, NUMBER, NUMBER text or DATETIME)."""
    col = name or f.column
    if f.date_format:
        return datetime_column(col, date_format_length(f.date_format), f.key)
    if f.kind == "alnum":
        return char_column(col, f.length, f.key)
    if f.kind == "float":
        return number_text_column(col, 16 if f.usage == COMP1 else 24, f.key)
    precision, scale = f.precision, f.effective_scale
    return number_column(col, precision, scale, f.key) if precision <= 18 else \
        number_text_column(col, precision + 1 + (1 if scale > 0 else 0), f.key)


def column_fields(record: RecordLayout) -> tuple[FieldLayout, ...]:
    """The fields that become columns: no FILLER, no redefining alternatives."""
    return tuple(f for f in record.fields if not f.filler and not f.redefining)


def copybook_definitions(copybook: Copybook, *, schema: str, header: str | None = None,
                         used_header_fields: set[str] | frozenset[str] = frozenset()
                         ) -> Definitions:
    """Every 01 record except the header → table ``<schema>.<RECORD>``; header fields that no
    ``fixed.*`` item uses lead every table (sourcedefs.md §7.1)."""
    head_fields: tuple[FieldLayout, ...] = ()
    if header is not None:
        rec = copybook.record(header)
        if rec is None:
            raise CopybookError(f"header record {header} not found", file=copybook.file)
        used = {normalize_name(u) for u in used_header_fields}
        head_fields = tuple(f for f in column_fields(rec)
                            if normalize_name(f.name) not in used and f.column not in used)
    tables = []
    for rec in copybook.records:
        if header is not None and normalize_name(rec.name) == normalize_name(header):
            continue
        fields = head_fields + column_fields(rec)
        names = unique_columns(fields)
        seen: dict[str, FieldLayout] = {}
        for f, n in zip(fields, names):
            if n in seen:
                raise CopybookError(f"column {n} is defined twice (line {seen[n].line})",
                                    file=copybook.file, line=f.line, field=f.name)
            seen[n] = f
        columns = [field_column(f, n) for f, n in zip(fields, names)]
        tables.append(Table.build(f"{schema}.{normalize_name(rec.name)}", columns))
    return Definitions(tuple(tables))


# -- layout listing (Cobrix generateRecordLayoutPositions) -------------------------------------

LAYOUT_HEADER = "-------- FIELD LEVEL/NAME --------- --ATTRIBS--    FLD  START     END  LENGTH\n\n"


def layout_listing(copybook: Copybook, *, names=None, legacy_root: bool = False) -> str:
    """The record layout table in Cobrix's ``_layout.txt`` form (1-based START/END/LENGTH).

    ``names`` optionally maps an ``Item`` to the name shown (filler naming policies);
    ``legacy_root`` prints the 01 record as older Cobrix did (no level, not numbered).
    """
    show = names or (lambda it: it.clean_name)
    counter = 0
    parts = []

    def row(it: Item, indent: str) -> str:
        attribs = ("r" if it.redefined else "") + ("R" if it.redefines else "") + (
            "[]" if it.occurs else "")
        start = it.offset + 1
        length = it.actual_size * (it.occurs or 1) if it.children else it.actual_size
        return (f"{indent}{it.level} {show(it)}".ljust(39) + attribs.ljust(11)
                + f"{counter:>5}{start:>7}{start + length - 1:>7}{length:>7}")

    def group(it: Item, indent: str) -> None:
        nonlocal counter
        for c in it.children:
            counter += 1
            parts.append(row(c, indent))
            if c.children:
                group(c, indent + "  ")

    for rec in copybook.records:
        if legacy_root:
            counter = 0
            it = rec.item
            parts.append(f"{show(it):<55}{1:>7}{it.actual_size:>7}{it.actual_size:>7}")
        else:
            counter = 1
            parts.append(row(rec.item, ""))
        group(rec.item, "  ")
    return LAYOUT_HEADER + "\n".join(parts)
