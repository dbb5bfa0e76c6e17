"""Outside text made safe to print: the one helper for logs, errors, reports and discard reasons.

Message ids, file names, header and field values come from outside. Printed raw, a newline or
an ANSI escape in them forges log lines (``...\\n2026-11-23 ... ERROR msgcap.run: FORGED``), and
a 50 MB value makes a 50 MB line. ``shown`` escapes every control character (C0, DEL, C1, the
Unicode line separators and bidirectional overrides) and cuts the text to a bounded length that
states its full size; it is idempotent, so text shown twice stays the same. ``redact_urls``
hides the user information (``user:password@``) of every URL in a text.
"""

from __future__ import annotations

import os
import re

VALUE_CHARS = 200  # one id, name or value inside a line
LINE_CHARS = 2000  # a whole error or log line
LISTED = 10  # names a line lists before "… and N more"

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# scheme://userinfo@ — greedy up to the authority's last '@' (a password may hold one)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#]*@")


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` with every control character written as a backslash escape."""
    return _CONTROL.sub(_escape_char, text) if _CONTROL.search(text) else text


def shown(text: str | bytes, limit: int = VALUE_CHARS) -> str:
    """``text`` escaped and, when longer than ``limit``, cut to ``limit`` characters that end
    with its full size: ``abc… (52428800 characters)``. Bytes are shown as UTF-8 with the
    other bytes as ``\\xhh``."""
    unit = "characters"
    if isinstance(text, bytes):
        size, unit = len(text), "bytes"
        text = text[:limit * 4].decode("utf-8", "backslashreplace")
    else:
        size = len(text)
    if size <= limit:
        out = escape(text)
        if len(out) <= limit:
            return out
    suffix = f"… ({size} {unit})"
    keep = max(limit - len(suffix), 1)
    return escape(text[:keep])[:keep] + suffix


def name_text(name: str) -> str:
    """A file name as text: its bytes that are not UTF-8 written as ``\\xhh`` (as ``shown``
    writes bytes). ``os`` gives such names with surrogate escapes, which no text output takes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def quoted(value: str | bytes, limit: int = VALUE_CHARS) -> str:
    """A value inside an error message: ``shown`` between single quotes."""
    return f"'{shown(value, limit)}'"


def listed(names: list[str], total: int | None = None, limit: int = LISTED,
           sep: str = ", ") -> str:
    """The first ``limit`` of ``names``, separated by ``sep``, then ``… and N more`` when
    there are more (``total``: how many there are, when ``names`` holds only the first): a
    line names a bounded few of a million keys."""
    total = len(names) if total is None else total
    shown_names = names[:limit]
    more = total - len(shown_names)
    text = sep.join(shown_names)
    return f"{text} … and {more:,} more" if more > 0 else text


def redact_urls(text: str) -> str:
    """Every ``scheme://user:password@host`` in ``text`` as ``scheme://***@host``."""
    return _USERINFO.sub(r"\1***@", text) if "@" in text else text


def printable_line(text: str) -> str:
    """A whole error or log line: user information redacted, escaped, bounded."""
    return shown(redact_urls(text), LINE_CHARS)
