"""Reading one property's value as a checked type: the primitives every section builder uses.

A ``Reader`` holds the canonical entries of one load (``props.loader`` collects them) and turns
a key into text, a choice, an integer, a path, a duration, an expression…, raising a
``PropertyError`` that names the file, the line and the property. The limits of what the trail
and the definitions can hold, and the checks of paths, hosts and formats, live here too.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TypeVar

from props.errors import PropertyError
from props.expr import Const, Expr, parse_delim_value, parse_expr
from props.javaprops import Entry, UnsetVariable
from props.text import quoted

_Choice = TypeVar("_Choice", bound=str)  # one of a choice's values (a Literal type)

_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_\-]{1,63}(?<!-)\Z")
_DURATION = re.compile(r"([0-9]+)\s*(ms|sec|secs|second|seconds|s|min|mins|minute|minutes|m|"
                       r"hr|hrs|hour|hours|h)\Z", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
_FRACTION = re.compile(r"F+(\d*)")
INTEGER = re.compile(r"[+-]?[0-9]+\Z")  # an integer literal
UNSIGNED = re.compile(r"[0-9]+\Z")  # digits only

# Limits of what the trail and the definitions can hold (trail-format.md §12).
MAX_DIGITS = 18  # integers in properties: int64 range (Python refuses more than 4300 digits)
MAX_COLUMN_LENGTH = 65000  # a trail record, its column and its D token hold ≤ 65,535 bytes
MAX_COLUMNS = 65536  # column indexes are u16
MAX_NAME = 128  # a table-name part or column name (GoldenGate's object-name limit)
MAX_FORMAT = 256  # a date or timestamp format
MAX_DELIM = 256  # a delimiter, quote, null indicator or *val value
MAX_TX_TOKEN = 4000  # bytes of a constant TXNAME / TXOWNER (user tokens of every record)
MAX_URI_BYTES = 4096  # trail.uri, in the file header beside the file name
MAX_PATH_BYTES = 4095  # PATH_MAX less its NUL
MAX_PATH_PART = 240  # NAME_MAX (255) less room for the temporary suffixes msgcap adds


def check_format(fmt: str, *, prop: str, file: str, line: int | None) -> str:
    """Check a timestamp/date format (§2.4): only the fraction token can be malformed."""
    if not fmt.strip():
        raise PropertyError("empty format", prop=prop, file=file, line=line)
    if len(fmt) > MAX_FORMAT:
        raise PropertyError(f"a format of {len(fmt)} characters (at most {MAX_FORMAT})",
                            prop=prop, file=file, line=line)
    for match in _FRACTION.finditer(fmt):
        run, digits = len(match.group(0)) - len(match.group(1)), match.group(1)
        if digits:
            if run != 1 or not 1 <= int(digits) <= 9:
                raise PropertyError(f"bad fraction {quoted(match.group(0))} in format "
                                    f"{quoted(fmt)}: "
                                    "write Fn (n = 1..9) or F…F", prop=prop, file=file,
                                    line=line)
        elif run > 9:
            raise PropertyError(f"fraction of {run} digits in format {quoted(fmt)}: at most 9",
                                prop=prop, file=file, line=line)
    return fmt


def split_list(value: str) -> list[str]:
    """The stripped items of a comma-separated list (empty items kept, for their own error)."""
    return [part.strip() for part in value.split(",")]


def to_int(text: str) -> int | None:
    """``int(text)`` of an integer literal; None beyond MAX_DIGITS significant digits."""
    return int(text) if len(text.lstrip("+-").lstrip("0")) <= MAX_DIGITS else None


def path_problem(path: str) -> str | None:
    """Why no file system can hold ``path`` (None when it can): NUL, or names too long."""
    data = path.encode("utf-8", "surrogateescape")
    if b"\0" in data:
        return "a path cannot contain a NUL character"
    if len(data) > MAX_PATH_BYTES:
        return f"a path of {len(data)} bytes (at most {MAX_PATH_BYTES})"
    longest = max(len(part) for part in data.split(b"/"))
    if longest > MAX_PATH_PART:
        return f"a file or directory name of {longest} bytes (at most {MAX_PATH_PART})"
    return None


def host_problem(host: str) -> str | None:
    """Why ``host`` is neither an IP address nor a DNS host name (None when it is one)."""
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if len(host) > 253:
        return f"a host name of {len(host)} characters (at most 253)"
    if not all(_HOST_LABEL.match(label) for label in host.split(".")):
        return f"{quoted(host)} is not a host name or IP address"
    return None


def split_host_port(text: str) -> tuple[str, str]:
    """``host:port`` or ``[v6]:port`` → (host, port text); ValueError names what is wrong."""
    if text.startswith("["):
        end = text.find("]")
        host, rest = text[1:end], text[end + 1:] if end > 0 else ""
        if end < 0 or not rest.startswith(":"):
            raise ValueError(f"{quoted(text)} is not [IPv6-address]:port")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{quoted(host)} is not an IPv6 address") from None
        port = rest[1:]
    else:
        host, sep, port = text.rpartition(":")
        if not sep or not host:
            raise ValueError(f"{quoted(text)} is not host:port")
        if ":" in host:
            raise ValueError(f"{quoted(text)}: write an IPv6 address in brackets, "
                             "[::1]:port")
        problem = host_problem(host)
        if problem:
            raise ValueError(problem)
    if not UNSIGNED.match(port) or len(port) > 5 or int(port) > 65535:
        raise ValueError(f"{quoted(text)} is not host:port (port 0–65535)")
    return host, port


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1, IPv4-mapped 127.x)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


@dataclass(slots=True)
class Pending:
    """The canonical entry of a key during loading. ``via`` names the JNDI entry (or URL
    option) a value was resolved from (props.jndi): ``entry`` is then that entry, maybe of
    another file, and errors name both."""

    key: str
    entry: Entry
    value: str
    via: str | None = None


class Reader:
    """The canonical entries of one load, read key by key as checked values. ``unset``: the
    unset variables of connection settings, which are left out of ``items`` (props.loader)."""

    def __init__(self, items: dict[str, Pending], file: str,
                 unset: list[UnsetVariable] | None = None) -> None:
        self.items = items
        self.file = file
        self.unset = unset or []

    def waiting(self, key: str) -> bool:
        """True when ``key`` is left out for an unset variable (read by the commands that
        connect only)."""
        return any(u.prop == key for u in self.unset)

    def line(self, key: str) -> int | None:
        pending = self.items.get(key)
        return pending.entry.line if pending else None

    def where(self, key: str) -> str:
        """``file:line`` of a key, for a warning (the file alone when the key is unset)."""
        pending = self.items.get(key)
        return pending.entry.where if pending else self.file

    def error(self, key: str, reason: str) -> PropertyError:
        pending = self.items.get(key)
        if pending is None:
            return PropertyError(reason, prop=key, file=self.file)
        prop = f"{key} ({pending.via})" if pending.via else key
        return PropertyError(reason, prop=prop, file=pending.entry.file, line=pending.entry.line)

    def raw(self, key: str) -> str | None:
        pending = self.items.get(key)
        return None if pending is None else pending.value

    def text(self, key: str, default: str | None = None) -> str | None:
        """A non-empty stripped value, or ``default`` when unset."""
        value = self.raw(key)
        if value is None:
            return default
        value = value.strip()
        if not value:
            raise self.error(key, "empty value")
        return value

    def required(self, key: str, why: str = "") -> str:
        value = self.text(key)
        if value is None:
            raise PropertyError(f"required{why}", prop=key, file=self.file)
        return value

    def choice(self, key: str, choices: tuple[_Choice, ...], default: _Choice) -> _Choice:
        value = self.text(key)
        if value is None:
            return default
        for choice in choices:
            if value.lower() == choice.lower():
                return choice
        raise self.error(key, f"{quoted(value)} is not one of {', '.join(choices)}")

    def boolean(self, key: str, default: bool) -> bool:
        value = self.text(key)
        if value is None:
            return default
        if value.lower() == "true":
            return True
        if value.lower() == "false":
            return False
        raise self.error(key, f"{quoted(value)} is not a boolean (true or false)")

    def integer(self, key: str, default: int | None, low: int, high: int | None = None
                ) -> int | None:
        value = self.text(key)
        if value is None:
            return default
        if not INTEGER.match(value):
            raise self.error(key, f"{quoted(value)} is not an integer")
        number = to_int(value)
        if number is None or number < low or (high is not None and number > high):
            span = f"{low}–{high}" if high is not None else f"≥ {low}"
            shown = number if number is not None else quoted(value)
            raise self.error(key, f"{shown} is out of range ({span})")
        return number

    def path(self, key: str, default: str | None = None) -> str | None:
        """A file or directory path that a file system can hold."""
        value = self.text(key, default)
        if value is not None:
            problem = path_problem(value)
            if problem:
                raise self.error(key, problem)
        return value

    def duration(self, key: str) -> float | None:
        """``<n>ms``, ``<n>sec``, ``<n>min`` or ``<n>hr`` (n ≥ 1) in seconds; None when unset."""
        value = self.text(key)
        if value is None:
            return None
        match = _DURATION.match(value)
        number = to_int(match.group(1)) if match else None
        if match is None or number is None or number < 1:
            raise self.error(key, f"{quoted(value)} is not <n>sec, <n>min, <n>hr or <n>ms "
                             f"(n = 1 to {10 ** MAX_DIGITS - 1})")
        unit = match.group(2).lower()
        return number * _UNIT_SECONDS["ms" if unit == "ms" else unit[0]]

    def expr(self, key: str, allowed: frozenset[str]) -> Expr | None:
        value = self.raw(key)
        if value is None:
            return None
        return self.held(key, parse_expr(value, allowed, prop=key, file=self.file,
                                         line=self.line(key)))

    def held(self, key: str, expr: Expr) -> Expr:
        """A constant the trail holds must fit: names of tables and schemas, the TXNAME and
        TXOWNER user tokens."""
        if isinstance(expr, Const):
            attr = key.rpartition(".")[2]
            if attr in ("txname", "txowner") and len(expr.text.encode()) > MAX_TX_TOKEN:
                raise self.error(key, f"a constant of {len(expr.text.encode())} bytes (at most "
                                 f"{MAX_TX_TOKEN}: every record of a transaction holds it)")
            if attr in ("schema", "table", "schemaandtable") and max(
                    len(part) for part in expr.text.split(".")) > MAX_NAME:
                raise self.error(key, f"a name part of more than {MAX_NAME} characters")
        return expr

    def delim(self, key: str, default: str | None) -> str | None:
        """A delimiter, quote, null indicator or ``*val`` value (§2.3), at most MAX_DELIM long:
        parsers compile them into patterns at start."""
        value = self.raw(key)
        if value is None:
            return default
        if len(value) > 4 * MAX_DELIM:  # ``\xhh`` takes four characters per one
            raise self.error(key, f"a value of {len(value)} characters (at most {MAX_DELIM})")
        decoded = parse_delim_value(value, prop=key, file=self.file, line=self.line(key))
        if len(decoded) > MAX_DELIM:
            raise self.error(key, f"a value of {len(decoded)} characters (at most {MAX_DELIM})")
        return decoded

    def fmt(self, key: str) -> str | None:
        value = self.text(key)
        if value is None:
            return None
        return check_format(value, prop=key, file=self.file, line=self.line(key))
