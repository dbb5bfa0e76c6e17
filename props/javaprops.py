"""Java ``.properties`` syntax with msgcap's rules (properties.md §1) and ``${ENV}`` substitution.

Java semantics: ``=``, ``:`` or whitespace separate key and value; ``#``/``!`` comment lines; a
line ending in an odd number of backslashes continues (leading blanks of the next line dropped);
``\\t \\n \\r \\f \\uXXXX`` escapes. msgcap differs in two documented ways: a backslash before a
character without a listed meaning is kept (``\\x0a`` and ``\\'`` reach §2.3 as written), and
trailing whitespace is removed from values with a warning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from props import partition
from props.errors import PropertyError

log = logging.getLogger("msgcap.props")

SECRET_KEYS = frozenset({"jms.password"})

_WHITESPACE = " \t\f"
_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "\\": "\\", "=": "=", ":": ":",
                   "#": "#", "!": "!", " ": " "}
_HEX = frozenset("0123456789abcdefABCDEF")
# key, separator, value of a line without backslashes whose value ends in no whitespace
_SIMPLE_ENTRY = re.compile("[ \t\f]*([^=: \t\f#!][^=: \t\f]*)[ \t\f]*(?:[=:][ \t\f]*)?"
                           "(|.*[^ \t\f])\\Z", re.DOTALL)
_KEY_END = re.compile("[=: \t\f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``key=value`` entry; ``line`` is the first physical line of the entry (1-based)."""

    key: str
    value: str
    file: str
    line: int

    def __repr__(self) -> str:
        value = "***" if self.key in SECRET_KEYS else repr(self.value)
        return f"Entry(key={self.key!r}, value={value}, file={self.file!r}, line={self.line})"

    @property
    def where(self) -> str:
        """``file:line`` for messages."""
        return f"{self.file}:{self.line}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _odd_backslashes(text: str, end: int) -> bool:
    """True if the backslashes right before ``end`` are odd in number (the char at end escaped)."""
    count = 0
    i = end - 1
    while i >= 0 and text[i] == "\\":
        count += 1
        i -= 1
    return count % 2 == 1


def _unescape(text: str, *, prop: str | None, file: str, line: int) -> str:
    if "\\" not in text:
        return text  # nothing to replace (most values): no walk per character
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not set(digits) <= _HEX:
                raise PropertyError(f"malformed \\uXXXX escape {text[i:i + 6]!r}", prop=prop,
                                    file=file, line=line)
            out.append(chr(int(digits, 16)))
            i += 6
        elif nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch + nxt)  # msgcap keeps unknown escapes (§1 "Other backslashes")
            i += 2
    result = "".join(out)
    if _SURROGATE.search(result):
        try:
            result = result.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            raise PropertyError("\\uXXXX escapes form an unpaired surrogate", prop=prop,
                                file=file, line=line) from None
    return result


def _split_key(logical: str) -> tuple[str, str]:
    """Split a logical line into raw key and raw value (Java's rules)."""
    i, n = 0, len(logical)
    if "\\" not in logical:  # no escaped separator: the first one ends the key
        found = _KEY_END.search(logical)
        i = found.start() if found else n
    while i < n:
        ch = logical[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WHITESPACE:
            break
        i += 1
    key = logical[:min(i, n)]
    j = i
    while j < n and logical[j] in _WHITESPACE:
        j += 1
    if j < n and logical[j] in "=:":
        j += 1
        while j < n and logical[j] in _WHITESPACE:
            j += 1
    return key, logical[j:]


def _strip_trailing(raw: str) -> str:
    """Drop unescaped trailing whitespace (an escaped ``\\ `` stays)."""
    end = len(raw)
    while end > 0 and raw[end - 1] in _WHITESPACE:
        if raw[end - 1] == " " and _odd_backslashes(raw, end - 1):
            break
        end -= 1
    return raw[:end]


def parse_properties(text: str, file: str = "<string>") -> list[Entry]:
    """Parse properties text into entries in file order (duplicates kept; see settings)."""
    return list(iter_properties(_LINE_SPLIT.split(text), file))


def iter_properties(physical: Iterable[str], file: str) -> Iterator[Entry]:
    """The entries of physical lines (without their line ends), one at a time: a large file
    (a JNDI file of millions of keys) is read without holding all its entries."""
    lines = iter(physical)
    number = 0  # 1-based number of the last physical line taken
    for raw in lines:
        number += 1
        if number == 1:
            raw = raw.removeprefix("\ufeff")
        if "\\" not in raw:  # no escape, no continuation: one match (most lines)
            simple = _SIMPLE_ENTRY.match(raw)
            if simple is not None:
                yield Entry(simple.group(1), simple.group(2), file, number)
                continue
        first = raw.lstrip(_WHITESPACE)
        if not first or first[0] in "#!":
            continue
        start = number
        parts: list[str] = []
        current = first
        while _odd_backslashes(current, len(current)):
            parts.append(current[:-1])
            following = next(lines, None)
            if following is None:
                current = ""
                break
            number += 1
            current = following.lstrip(_WHITESPACE)
        else:
            parts.append(current)
        raw_key, raw_value = _split_key("".join(parts))
        key = _unescape(raw_key, prop=None, file=file, line=start)
        stripped = _strip_trailing(raw_value)
        if stripped != raw_value:
            log.warning("%s:%d: %s: trailing whitespace removed from the value "
                        "(write \\x20 for a space in a delimiter or *val)", file, number, key)
        value = _unescape(stripped, prop=key, file=file, line=start)
        yield Entry(key, value, file, start)


class UnsetVariable(PropertyError):
    """``${NAME}`` of a variable the environment does not hold (``name``)."""

    def __init__(self, name: str, *, prop: str, file: str, line: int) -> None:
        self.name = name
        reason = (partition.unset_error(prop, file, line).reason if name == partition.VARIABLE
                  else f"environment variable {name} is not set")
        super().__init__(reason, prop=prop, file=file, line=line)


def substitute_env(value: str, env: Mapping[str, str], *, prop: str, file: str,
                   line: int, unset: list[UnsetVariable] | None = None) -> str:
    """Replace ``${NAME}`` by the environment variable; ``$${`` is a literal ``${``.

    An unset variable is an error naming it; the value itself is never quoted in errors,
    since it may be a secret. With ``unset``, the error is appended there instead and
    ``${NAME}`` left as written: a setting only a broker connection reads is resolved by the
    commands that connect (``props.loader``).
    """
    if "$" not in value:
        return value
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        if value.startswith("$${", i):
            out.append("${")
            i += 3
        elif value.startswith("${", i):
            close = value.find("}", i + 2)
            if close < 0:
                raise PropertyError("unterminated ${ (write $${ for a literal ${)", prop=prop,
                                    file=file, line=line)
            name = value[i + 2:close]
            if not _ENV_NAME.match(name):
                raise PropertyError(f"bad environment variable name ${{{name}}}", prop=prop,
                                    file=file, line=line)
            if name in env:
                out.append(env[name])
            elif unset is None:
                raise UnsetVariable(name, prop=prop, file=file, line=line)
            else:
                unset.append(UnsetVariable(name, prop=prop, file=file, line=line))
                out.append(value[i:close + 1])
            i = close + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out)
