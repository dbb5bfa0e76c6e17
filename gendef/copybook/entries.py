"""Pass 2: tokens → entries → a tree of mutable nodes (levels, clauses, directives).

Every unsupported or malformed clause is a ``CopybookError`` at its token; OCCURS counts are
checked against ``MAX_OCCURS`` as soon as read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gendef.copybook.model import (
    COMP,
    COMP1,
    COMP2,
    COMP3,
    COMP5,
    DISPLAY,
    IMPLICIT_RECORD,
    MAX_OCCURS,
    Picture,
)
from gendef.copybook.picture import parse_picture
from gendef.copybook.tokens import Comment, Token
from props.errors import CopybookError

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
_LEVEL_RE = re.compile(r"^[0-9]{1,2}$")
_DATA_NAME_RE = re.compile(r"^[A-Za-z0-9_:-]*[A-Za-z][A-Za-z0-9_:-]*$")  # a letter, no quote
_NUMBER_RE = re.compile(r"^[+-]?[0-9]*[.,]?[0-9]+$")
_DATE_WORD_RE = re.compile(r"^[YMDHISFT0-9\-/.:_]+$")


@dataclass(slots=True)
class Node:
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
    children: list[Node] = field(default_factory=list)
    parent: Node | None = None

    @property
    def filler(self) -> bool:
        return self.name.upper() == "FILLER"


class EntryParser:
    def __init__(self, tokens: list[Token | Comment], file: str | None) -> None:
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
            if isinstance(t, Comment):
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

    def _directive(self, c: Comment) -> None:
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

    def parse(self) -> list[Node]:
        roots: list[Node] = []
        stack: list[Node] = []
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
                    roots.append(Node(0, IMPLICIT_RECORD, node.line, node.column))
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
            if self._entry_follows(t):
                self.pos -= 1
                return

    def _entry_follows(self, tok: Token) -> bool:
        """Whether ``tok``, read where a clause or literal may come, starts the next entry
        although the one before lacks its ending '.' (copybooks printed in manuals): a level
        number first on its line, followed by a data name or a clause, never by a literal (a
        list of values going on)."""
        if not (tok.first and _LEVEL_RE.match(tok.text)):
            return False
        index = self.tokens.index(tok, self.pos - 1)
        after = next((t for t in self.tokens[index + 1:] if isinstance(t, Token)), None)
        if after is None:
            return False
        word = after.text.upper()
        return word == "." or word in _CLAUSE_WORDS or (
            _DATA_NAME_RE.match(after.text) is not None and word not in _FIGURATIVE)

    def _entry(self, tok: Token) -> Node | None:
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
        node = Node(level, name, tok.line, tok.column)
        self._clauses(node)
        return node

    def _clauses(self, node: Node) -> None:  # noqa: C901 - one branch per COBOL clause
        while True:
            tok = self._next()
            if tok is None or tok.text == ".":
                break  # the end of the text ends the last entry, as its '.' would
            if self._entry_follows(tok):
                self.pos -= 1
                break
            word = tok.text.upper()
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
            elif _LEVEL_RE.match(tok.text):
                raise self.error(f"unexpected token {tok.text!r}: a '.' missing before it? (a "
                                 "level number without one starts a line)", tok, node.name)
            else:
                raise self.error(f"unexpected token {tok.text!r}", tok, node.name)

    def _sign(self, node: Node, tok: Token) -> None:
        node.sign_leading = tok.text.upper() == "LEADING"
        if (p := self._peek()) is not None and p.text.upper() == "SEPARATE":
            self._next()
            node.sign_separate = True
            if (p := self._peek()) is not None and p.text.upper() == "CHARACTER":
                self._next()

    def _int(self, tok: Token | None, what: str, fld: str) -> int:
        if tok is None or not (tok.text.isascii() and tok.text.isdigit()):
            raise self.error(f"{what} needs an integer, found {tok.text if tok else 'end'!r}",
                             tok, fld)
        return int(tok.text)

    def _count(self, what: str, fld: str) -> int:
        """An OCCURS count, refused at its token when over ``MAX_OCCURS``."""
        tok = self._next()
        n = self._int(tok, what, fld)
        assert tok is not None  # _int refused the end of the text
        if n > MAX_OCCURS:
            raise self.error(f"{what} {tok.text}: more than {MAX_OCCURS:,} occurrences", tok, fld)
        return n

    def _occurs(self, node: Node, tok: Token) -> None:
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

    def _value(self, tok: Token, node: Node) -> None:
        seen = False
        while (p := self._peek()) is not None and p.text != "." and not self._entry_follows(p):
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
