"""Pass 1: copybook text → tokens that keep their original line and column (fixed format:
sequence area 1–6 and everything after column 72 dropped, column 7 the indicator; or free format),
with comment lines kept for the KEY and date-format directives."""

from __future__ import annotations

import re
from dataclasses import dataclass

from props.errors import CopybookError


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    line: int
    column: int  # 1-based, in the original line
    first: bool = False  # the first word of its line: where an entry missing its '.' may end


@dataclass(slots=True)
class Comment:
    text: str
    line: int


def is_free_format(lines: list[str]) -> bool:
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
        if re.match(r"^ *\t\s*\d{1,2}\s+\S", raw):  # indented with tabs: no columns to count
            return True
    return False


def tokenize(text: str, file: str | None = None) -> list[Token | Comment]:
    """Tokens with original positions; comment lines kept (they carry KEY / date directives).

    In fixed format a literal may continue on a line with ``-`` in column 7 (the continuation
    starts after its first quote); VALUE literals are ignored, so only their extent matters.
    """
    lines = text.splitlines()
    free = is_free_format(lines)
    out: list[Token | Comment] = []
    open_literal: Token | None = None  # a literal left open at the end of the last code line
    for lineno, raw in enumerate(lines, 1):
        resume: str | None = None
        if free:
            stripped = raw.lstrip()
            if stripped.startswith(">>"):
                continue
            if stripped.startswith("*"):
                out.append(Comment(stripped.lstrip("*>").strip(), lineno))
                continue
            cut = raw.find("*>")
            code, start = (raw if cut < 0 else raw[:cut]), 0
        else:
            if len(raw) >= 7 and raw[6] in "*/":
                out.append(Comment(raw[7:72].strip(), lineno))
                continue
            if raw[:6].lstrip().startswith("*") and raw[6:7] != " ":
                # '*' in the sequence area and text over column 7: a comment with its '*'
                # misplaced (it belongs in column 7); read as one, so that a KEY or date
                # format in it is not lost or cut into code
                out.append(Comment(raw[:72].lstrip().lstrip("*>").strip(), lineno))
                continue
            lead = len(raw) - len(raw.lstrip())
            if lead < min(6, len(raw)) and "\t" in raw[:lead]:
                raise CopybookError(
                    "a tab in columns 1-6 (the sequence area): fixed format counts columns, "
                    "code starts in column 8; indent with spaces, or every level line with tabs "
                    "(free format)", file=file, line=lineno, column=raw.index("\t") + 1)
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
                    out.append(Comment(code.lstrip().lstrip("*>").strip(), lineno))
                    continue
                cut = code.find("*>")
                if cut >= 0:
                    code = code[:cut]
        if open_literal is not None and code.strip():
            raise CopybookError("unterminated literal", file=file, line=open_literal.line,
                                column=open_literal.column)
        open_literal = split_words(code, start, lineno, out, resume)
    if open_literal is not None:
        raise CopybookError("unterminated literal", file=file, line=open_literal.line,
                            column=open_literal.column)
    return out


def split_words(code: str, start: int, lineno: int, out: list, resume: str | None
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
    first_at = len(code) - len(code.lstrip(" \t\f,;")) if resume is None else -1
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
        first = i == first_at
        if len(word) > 1 and word.endswith("."):
            out.append(Token(word[:-1], lineno, start + i + 1, first))
            out.append(Token(".", lineno, start + j))
        else:
            out.append(Token(word, lineno, start + i + 1, first))
        i = j
    return None
