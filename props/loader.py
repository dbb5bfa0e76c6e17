"""Build a validated ``Settings`` from properties entries (properties.md §1–§12, §14).

Steps: parse (javaprops) → reject ``xmlparser.*`` → drop ignored properties → map aliases to
canonical keys → drop duplicates (last wins) → substitute ``${ENV}`` → classify every key (an
unknown one is an error with a suggestion) → build each section, checking values.
"""

from __future__ import annotations

import difflib
import ipaddress
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from props import expr as ex
from props.codepages import code_page
from props.errors import PropertyError
from props.expr import Const, Expr, XPath, parse_delim_value, parse_expr
from props.inputs import read_input
from props.javaprops import Entry, parse_properties, substitute_env
from props.settings import (
    DateFormats,
    DelimSettings,
    ErrorSettings,
    FixedSettings,
    IdKind,
    JmsSettings,
    LogLevel,
    LogSettings,
    OptypeValues,
    ParserType,
    Rule,
    SchemaType,
    Settings,
    TrailSettings,
    TxindValues,
    UserColumn,
    UserTable,
    XmlSettings,
)
from props.text import quoted

log = logging.getLogger("msgcap.props")

# The defaults of unset properties are the settings dataclasses' own: written once, there.
_SETTINGS, _JMS, _TRAIL, _ERROR, _LOG = (Settings(), JmsSettings(), TrailSettings(),
                                         ErrorSettings(), LogSettings())
_FIXED, _DELIM, _XML = FixedSettings(), DelimSettings(), XmlSettings()

PARSERS: tuple[ParserType, ...] = ("fixed", "delim", "xml")
_Choice = TypeVar("_Choice", bound=str)  # one of a choice's values (a Literal type)
_NAMED_ID_KINDS: dict[str, IdKind] = {"ogg": "ogg", "time": "time", "activemq": "activemq"}
_LOG_LEVELS: dict[str, LogLevel] = {"ERROR": "ERROR", "WARN": "WARN", "WARNING": "WARN",
                                    "INFO": "INFO", "DEBUG": "DEBUG", "TRACE": "DEBUG"}

GLOBAL_KEYS = frozenset({
    "parser.type",
    "jms.url", "jms.destination", "jms.user", "jms.password", "jms.prefetch", "jms.heartbeat",
    "jms.ssl.ca", "jms.ssl.cert", "jms.ssl.key", "jms.id", "jms.vhost", "jms.selector",
    "jms.ack", "jms.ack.batch",
    "jms.report.output", "jms.report.time", "jms.report.records",
    "trail.path", "trail.seqlen", "trail.megabytes", "trail.sync", "trail.byteorder",
    "trail.compressupdates", "trail.getupdatebefores", "trail.compressdeletes", "trail.defs",
    "trail.extract", "trail.uri",
    "checkpoint.dir", "archive.dir", "error.policy", "error.file", "error.destination",
    "gg.log", "gg.log.level", "gg.log.file", "report.http", "report.http.allowremote",
    "report.heartbeat", "jms.spool.minage", "jms.maxbytes",
})

_OPTYPE_VALS = ("optype.insertval", "optype.updateval", "optype.deleteval")
_TXIND_VALS = ("txind.beginval", "txind.middleval", "txind.endval", "txind.wholeval")
_COMMON_ATTRS = ("optype", *_OPTYPE_VALS, "txind", *_TXIND_VALS, "timestamp", "timestamp.format",
                 "seqid", "txid", "txname", "txowner", "schema", "table", "dateformat",
                 "userdefs.tables")
SECTION_KEYS: dict[str, frozenset[str]] = {
    "fixed": frozenset(f"fixed.{a}" for a in (
        *_COMMON_ATTRS, "schematype", "copybook", "sourcedefs", "header", "encoding")),
    "delim": frozenset(f"delim.{a}" for a in (
        *_COMMON_ATTRS, "optype.truncateval", "schemaandtable", "sourcedefs", "header",
        "fielddelim", "linedelim", "quote", "nullindicator", "fielddelim.escaped",
        "linedelim.escaped", "quote.escaped", "nullindicator.escaped", "hasbefores",
        "hasnames", "afterfirst", "isgrouped")),
    "xml": frozenset(f"xml.{a}" for a in (
        "sourcedefs", "rules", "dateformat", "maxbytes", "maxdepth", "userdefs.tables")),
}

# Properties that are accepted and ignored (§12): quietly, or with one JNDI warning per file.
IGNORED_QUIET = frozenset({"jvm.bootoptions", "gg.log.classpath"})
IGNORED_JNDI = frozenset({"jms.connectionFactory"})
IGNORED_JNDI_PREFIX = "java.naming."
JNDI_WARNING = "msgcap connects without JNDI; set jms.url"

# Documented alternative spellings (§14) → canonical property.
ALIASES: dict[str, str] = {
    "fixed.header.optype": "fixed.optype",
    "delim.recorddelim": "delim.linedelim",
    "delim.recorddelim.escaped": "delim.linedelim.escaped",
    "delim.dateformat.default": "delim.dateformat",
    "delim.optype.truncate": "delim.optype.truncateval",
}
for _p in ("fixed", "delim"):
    for _op in ("insert", "update", "delete"):
        ALIASES[f"{_p}.optype.{_op}"] = f"{_p}.optype.{_op}val"
RULE_ALIASES = {"schemandtable": "schemaandtable", "optype.insert": "optype.insertval",
                "optype.update": "optype.updateval", "optype.delete": "optype.deleteval"}

# First key segments that are sections, so not XML rule names.
RESERVED = frozenset({"parser", "fixed", "delim", "xml", "xmlparser", "jms", "trail",
                      "checkpoint", "archive", "error", "report", "gg", "jvm", "java"})

# XML rule attributes per rule type (§6.2) and the expression forms each accepts.
_TXOP = ("timestamp", "timestamp.format", "seqid", "txid", "txname", "txowner")
RULE_ATTRS: dict[str, frozenset[str]] = {
    "tx": frozenset(("type", "match", "subrules", *_TXOP)),
    "op": frozenset(("type", "match", "subrules", *_TXOP, "schemaandtable", "schema", "table",
                     "optype", *_OPTYPE_VALS, "txind", *_TXIND_VALS)),
    "col": frozenset(("type", "match", "subrules", "name", "index", "value", "isnull",
                      "ismissing", "before.value", "before.isnull", "before.ismissing",
                      "after.value", "after.isnull", "after.ismissing")),
}
_F = frozenset
_XP, _JP = ex.XPATH, ex.JMSPROP
RULE_FORMS: dict[str, frozenset[str]] = {
    "match": _F({_XP}),
    "timestamp": _F({_XP, _JP, ex.TS}),
    "seqid": _F({_XP, _JP, ex.JMSID, ex.SEQID}),
    "txid": _F({_XP, _JP, ex.TXID}),
    "txname": _F({_XP, _JP, ex.CONST}), "txowner": _F({_XP, _JP, ex.CONST}),
    "schemaandtable": _F({_XP, _JP, ex.CONST}), "schema": _F({_XP, _JP, ex.CONST}),
    "table": _F({_XP, _JP, ex.CONST}), "optype": _F({_XP, _JP, ex.CONST}),
    "txind": _F({_XP, _JP}),
    "name": _F({_XP, ex.CONST}), "index": _F({_XP, ex.CONST}),
    "value": _F({_XP, ex.CONST}), "before.value": _F({_XP, ex.CONST}),
    "after.value": _F({_XP, ex.CONST}),
    "isnull": _F({_XP}), "ismissing": _F({_XP}), "before.isnull": _F({_XP}),
    "before.ismissing": _F({_XP}), "after.isnull": _F({_XP}), "after.ismissing": _F({_XP}),
}
_RULE_FIELD = {"timestamp.format": "timestamp_format", "name": "column_name",
               "before.value": "before_value", "before.isnull": "before_isnull",
               "before.ismissing": "before_ismissing", "after.value": "after_value",
               "after.isnull": "after_isnull", "after.ismissing": "after_ismissing"}

# Expression forms of the fixed/delim items (§4, §5).
_FJ = _F({ex.FIELD, ex.JMSPROP})
COMMON_FORMS: dict[str, frozenset[str]] = {
    "timestamp": _FJ | {ex.TS},
    "seqid": _FJ | {ex.JMSID, ex.SEQID},
    "txid": _FJ | {ex.TXID},
    "txname": _FJ | {ex.CONST}, "txowner": _FJ | {ex.CONST},
    "optype": _FJ, "txind": _FJ, "table": _FJ, "schemaandtable": _FJ,
}

_RULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_NCNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_\-]{1,63}(?<!-)\Z")
_CALLABLE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*\Z")
_EXTRACT = re.compile(r"[A-Z][A-Z0-9_$]{0,7}\Z")
_TRAIL_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]\Z")
_DURATION = re.compile(r"([0-9]+)\s*(ms|sec|secs|second|seconds|s|min|mins|minute|minutes|m|"
                       r"hr|hrs|hour|hours|h)\Z", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
_USER_TYPE = re.compile(r"(vchar|char|number|datetime)\s+([0-9]+)(?:\s*,\s*([0-9]+))?"
                        r"(?:\s+(key))?\Z", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_UNSIGNED = re.compile(r"[0-9]+\Z")

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
_FRACTION = re.compile(r"F+(\d*)")


def load_settings(path: str, env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate a properties file (UTF-8); ``env`` defaults to ``os.environ``."""
    try:
        data = read_input(path)
    except OSError as exc:
        raise PropertyError(f"cannot read properties file: {exc.strerror or exc}",
                            file=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PropertyError("not valid UTF-8", file=path, line=line) from None
    return settings_from_text(text, path, env)


def settings_from_text(text: str, file: str = "<string>",
                       env: Mapping[str, str] | None = None) -> Settings:
    """Validate properties given as text (tests, embedded configurations); ``env`` defaults
    to ``os.environ``."""
    return _Loader(parse_properties(text, file), file,
                   os.environ if env is None else env).build()


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


def _split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",")]


def _to_int(text: str) -> int | None:
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
    if not _UNSIGNED.match(port) or len(port) > 5 or int(port) > 65535:
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


def _is_rule_key(key: str) -> bool:
    head = key.partition(".")[0]
    return "." in key and head not in RESERVED


@dataclass(slots=True)
class _Pending:
    """The canonical entry of a key during loading."""

    key: str
    entry: Entry
    value: str


class _Loader:
    """One load: holds the canonical entries and builds each section from them."""

    def __init__(self, entries: list[Entry], file: str, env: Mapping[str, str]) -> None:
        self.file = file
        self.env = env
        self.items: dict[str, _Pending] = {}
        self.rule_names: dict[str, Rule] = {}
        self._collect(entries)

    # ---- collection ---------------------------------------------------------------------

    def _collect(self, entries: list[Entry]) -> None:
        jndi_warned = False
        for entry in entries:
            key = entry.key
            if key == "xmlparser" or key.startswith("xmlparser."):
                raise self._xmlparser_error(entry)
            if key in IGNORED_QUIET:
                log.debug("%s: %s is accepted and ignored", entry.where, key)
                continue
            if key in IGNORED_JNDI or key.startswith(IGNORED_JNDI_PREFIX):
                if not jndi_warned:
                    log.warning("%s: %s: ignored: %s", entry.where, key, JNDI_WARNING)
                    jndi_warned = True
                continue
            canonical = self._canonical(entry)
            previous = self.items.get(canonical)
            if previous is not None:
                log.warning("%s:%d: %s is set again; line %d wins over line %d", self.file,
                            entry.line, canonical, entry.line, previous.entry.line)
            self.items[canonical] = _Pending(canonical, entry, entry.value)
        for pending in self.items.values():
            pending.value = substitute_env(pending.value, self.env, prop=pending.key,
                                           file=self.file, line=pending.entry.line)

    def _xmlparser_error(self, entry: Entry) -> PropertyError:
        parts = entry.key.split(".")
        if len(parts) >= 4 and parts[1] == "rules":
            rule, attr = parts[2], ".".join(parts[3:])
            hint = f"write `xml.rules={rule}` and `{rule}.{attr}={entry.value}`"
        else:
            rule = entry.value.strip() or "genericrule"
            hint = f"write `xml.rules={rule}` and `{rule}.type=tx`"
        return PropertyError(f"the xmlparser.rules form is not supported: {hint}",
                             prop=entry.key, file=self.file, line=entry.line)

    def _canonical(self, entry: Entry) -> str:
        key = entry.key
        canonical = ALIASES.get(key)
        if canonical is None and _is_rule_key(key):
            rule, _, attr = key.partition(".")
            if attr in RULE_ALIASES:
                canonical = f"{rule}.{RULE_ALIASES[attr]}"
        if canonical is None:
            return key
        log.warning("%s: %s is an alias of %s; write %s", entry.where, key, canonical, canonical)
        return canonical

    # ---- access -------------------------------------------------------------------------

    def line(self, key: str) -> int | None:
        pending = self.items.get(key)
        return pending.entry.line if pending else None

    def error(self, key: str, reason: str) -> PropertyError:
        return PropertyError(reason, prop=key, file=self.file, line=self.line(key))

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
        if not _INTEGER.match(value):
            raise self.error(key, f"{quoted(value)} is not an integer")
        number = _to_int(value)
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
        number = _to_int(match.group(1)) if match else None
        if match is None or number is None or number < 1:
            raise self.error(key, f"{quoted(value)} is not <n>sec, <n>min, <n>hr or <n>ms "
                             f"(n = 1 to {10 ** MAX_DIGITS - 1})")
        unit = match.group(2).lower()
        return number * _UNIT_SECONDS["ms" if unit == "ms" else unit[0]]

    def expr(self, key: str, allowed: frozenset[str]) -> Expr | None:
        value = self.raw(key)
        if value is None:
            return None
        return self._held(key, parse_expr(value, allowed, prop=key, file=self.file,
                                          line=self.line(key)))

    def _held(self, key: str, expr: Expr) -> Expr:
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

    # ---- classification -----------------------------------------------------------------

    def _classify(self, parser_type: str) -> None:
        """Every key must be known; keys of other parsers' sections are ignored with a warning."""
        candidates = self._candidates()
        ignored: dict[str, list[str]] = {}
        for key, pending in self.items.items():
            section = self._section_of(key, candidates)
            if section != "global" and section != parser_type:
                ignored.setdefault(section, []).append(f"{key} (line {pending.entry.line})")
        for section, keys in ignored.items():
            what = "XML rule" if section == "xml" else f"{section}.*"
            log.warning("%s: %s properties are ignored because parser.type=%s: %s", self.file,
                        what, parser_type, ", ".join(keys))

    def _section_of(self, key: str, candidates: list[str]) -> str:
        if key in GLOBAL_KEYS:
            return "global"
        head = key.partition(".")[0]
        if head in SECTION_KEYS:
            if key in SECTION_KEYS[head]:
                return head
            rest = key[len(head) + 1:]
            if rest.startswith("userdefs."):
                return head  # checked against the declared tables when the section is built
            if rest.startswith("dateformat."):
                suffix = rest[len("dateformat."):]
                if "." not in suffix or "" in suffix.split("."):
                    raise self.error(key, "needs a qualified table name: "
                                     f"{head}.dateformat.SCHEMA.TABLE[.COLUMN]")
                return head
            if head == "xml" and rest.startswith("namespace."):
                prefix = rest[len("namespace."):]
                if not _NCNAME.match(prefix) or ":" in prefix:
                    raise self.error(key, f"{quoted(prefix)} is not a valid namespace prefix")
                return head
        if head in self.rule_names and "." in key:
            rule = self.rule_names[head]
            attr = key[len(head) + 1:]
            if attr in RULE_ATTRS[rule.type]:
                return "xml"
            if any(attr in attrs for attrs in RULE_ATTRS.values()):
                raise self.error(key, f"not a property of a {rule.type} rule")
            guess = difflib.get_close_matches(attr, sorted(RULE_ATTRS[rule.type]), n=1)
            hint = f"; did you mean {head}.{guess[0]}?" if guess else ""
            raise self.error(key, f"unknown attribute of {rule.type} rule {head}{hint}")
        attr = key[len(head) + 1:]
        if head not in RESERVED and any(attr in attrs for attrs in RULE_ATTRS.values()):
            raise self.error(key, f"unknown property (XML rule {head} is not reachable from "
                             "xml.rules)")
        guess = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
        hint = f"; did you mean {guess[0]}?" if guess else ""
        raise self.error(key, f"unknown property{hint}")

    def _candidates(self) -> list[str]:
        names = set(GLOBAL_KEYS)
        for keys in SECTION_KEYS.values():
            names |= keys
        names |= set(ALIASES)
        for name, rule in self.rule_names.items():
            names |= {f"{name}.{attr}" for attr in RULE_ATTRS[rule.type]}
        return sorted(names)

    # ---- build --------------------------------------------------------------------------

    def build(self) -> Settings:
        parser_type: ParserType | Literal[""] = self.choice("parser.type", PARSERS, "")
        if not parser_type:
            raise PropertyError("required (fixed, delim or xml)", prop="parser.type",
                                file=self.file)
        self._declare_rules()
        self._classify(parser_type)
        trail = self._trail()
        sections: dict[str, object] = {"fixed": None, "delim": None, "xml": None}
        builders: dict[str, Callable[[], object]] = {
            "fixed": self._fixed, "delim": self._delim, "xml": self._xml}
        sections[parser_type] = builders[parser_type]()
        return Settings(
            file=self.file,
            parser_type=parser_type,
            fixed=sections["fixed"],  # type: ignore[arg-type]
            delim=sections["delim"],  # type: ignore[arg-type]
            xml=sections["xml"],  # type: ignore[arg-type]
            jms=self._jms(),
            trail=trail,
            checkpoint_dir=self.path("checkpoint.dir") or _SETTINGS.checkpoint_dir,
            archive_dir=self.path("archive.dir"),
            error=self._error(),
            log=self._log(),
            report_http=self._report_http(),
            report_heartbeat=self._report_heartbeat(),
            lines={key: p.entry.line for key, p in self.items.items()},
        )

    # ---- global sections ----------------------------------------------------------------

    def _jms(self) -> JmsSettings:
        urls: tuple[str, ...] = ()
        url_text = self.text("jms.url")
        if url_text is not None:
            urls = tuple(self._url(item) for item in _split_list(url_text))
            if len(urls) > 1 and any(u.startswith("dir:") for u in urls):
                raise self.error("jms.url", "dir:PATH cannot be part of a failover list")
        destination = self.text("jms.destination")
        if destination is not None:
            destination = self._destination(destination)
        elif any(not u.startswith("dir:") for u in urls):
            raise self.error("jms.url", "a STOMP source needs jms.destination")
        ssl_cert, ssl_key = self.path("jms.ssl.cert"), self.path("jms.ssl.key")
        if ssl_cert and not ssl_key:
            raise self.error("jms.ssl.cert", "requires jms.ssl.key")
        if ssl_key and not ssl_cert:
            raise self.error("jms.ssl.key", "requires jms.ssl.cert")
        id_text, id_kind = self._jms_id()
        records = self.integer("jms.report.records", None, 1)
        return JmsSettings(
            url=urls, destination=destination,
            user=self.raw("jms.user"), password=self.raw("jms.password"),
            prefetch=self.integer("jms.prefetch", None, 1) or _JMS.prefetch,
            heartbeat=self._heartbeat(),
            ssl_ca=self.path("jms.ssl.ca"), ssl_cert=ssl_cert, ssl_key=ssl_key,
            vhost=self.text("jms.vhost") or _JMS.vhost, selector=self.text("jms.selector") or None,
            ack=self.choice("jms.ack", ("client", "client-individual"), _JMS.ack),
            ack_batch=self.integer("jms.ack.batch", None, 1),
            id=id_text, id_kind=id_kind,
            report_output=self.choice("jms.report.output", ("report", "log", "both"),
                                      _JMS.report_output),
            report_time=self.duration("jms.report.time"), report_records=records,
            spool_minage=self.duration("jms.spool.minage") or _JMS.spool_minage,
            maxbytes=self.integer("jms.maxbytes", None, 1) or _JMS.maxbytes,
        )

    def _error(self) -> ErrorSettings:
        policy = self.choice("error.policy", ("abend", "discard"), _ERROR.policy)
        destination = self.text("error.destination")
        if destination is not None:
            destination = self._destination(destination, "error.destination")
            if destination.startswith("/topic/"):
                raise self.error("error.destination", "a topic keeps a message only for the "
                                 "subscribers it has at that moment: use a /queue/")
            if policy != "discard":
                raise self.error("error.destination", "needs error.policy=discard")
            url = self.text("jms.url") or ""
            if not url or url.startswith("dir:"):
                raise self.error("error.destination", "needs a STOMP broker in jms.url")
        return ErrorSettings(
            policy=policy, destination=destination,
            file=self.path("error.file") or _ERROR.file)

    def _url(self, item: str) -> str:
        if not item:
            raise self.error("jms.url", "empty entry in the URL list")
        if item.startswith("dir:"):
            if not item[4:].strip():
                raise self.error("jms.url", "dir: needs a directory (dir:PATH)")
            problem = path_problem(item[4:])
            if problem:
                raise self.error("jms.url", problem)
            return item
        scheme, sep, rest = item.partition("://")
        if not sep or scheme.lower() not in ("stomp", "stomp+ssl"):
            raise self.error("jms.url", f"{quoted(item)} is not stomp://host:port, "
                             "stomp+ssl://host:port or dir:PATH")
        authority = rest.removesuffix("/")
        if "@" in authority:  # the error line shows the URL redacted (MsgcapError)
            raise self.error("jms.url", f"{quoted(item)}: user information in the URL is not "
                             "used; set jms.user and jms.password")
        try:
            _, port = split_host_port(authority)
        except ValueError as exc:
            raise self.error("jms.url", f"{quoted(item)} is not stomp://host:port, "
                             f"stomp+ssl://host:port or dir:PATH: {exc}") from None
        if int(port) == 0:
            raise self.error("jms.url", f"port 0 out of range in {quoted(item)}")
        return item

    def _destination(self, value: str, prop: str = "jms.destination") -> str:
        for kind in ("/queue/", "/topic/"):
            if value.startswith(kind):
                if not value[len(kind):]:
                    raise self.error(prop, f"{quoted(value)} names no {kind[1:-1]}")
                return value
        if value.startswith("/") or any(c.isspace() for c in value):
            raise self.error(prop, f"{quoted(value)} is not NAME, /queue/NAME or /topic/NAME")
        return f"/queue/{value}"

    def _jms_id(self) -> tuple[str, IdKind]:
        value = self.text("jms.id")
        if value is None:
            return _JMS.id, _JMS.id_kind
        lower = value.lower()
        kind = _NAMED_ID_KINDS.get(lower)
        if kind is not None:
            return kind, kind
        if lower == "wmq":
            raise self.error("jms.id", "WebSphere MQ ids are not available over STOMP; "
                             "use a header or module:function")
        if ":" in value:
            if not _CALLABLE_ID.match(value):
                raise self.error("jms.id", f"{quoted(value)} is not module:function")
            return value, "callable"
        if any(c.isspace() for c in value):
            raise self.error("jms.id", f"{quoted(value)} is not a header name")
        return value, "header"

    def _heartbeat(self) -> tuple[int, int]:
        value = self.text("jms.heartbeat")
        if value is None:
            return _JMS.heartbeat
        parts = _split_list(value)
        if len(parts) != 2 or not all(_UNSIGNED.match(p) and len(p) <= 10 and int(p) < 2 ** 31
                                      for p in parts):
            raise self.error("jms.heartbeat", f"{quoted(value)} is not send_ms,recv_ms "
                             "(two integers, 0 to 2147483647)")
        return int(parts[0]), int(parts[1])

    def _report_http(self) -> tuple[str, int] | None:
        """``host:port`` or ``[v6]:port``; the endpoint has no authentication, so a host other
        than a loopback address needs ``report.http.allowremote=true``."""
        value = self.text("report.http")
        remote = self.boolean("report.http.allowremote", False)
        if value is None:
            return None
        try:
            host, port = split_host_port(value)
        except ValueError as exc:
            raise self.error("report.http", str(exc)) from None
        if not remote and not is_loopback(host):
            raise self.error("report.http", f"{quoted(host)} is not a loopback address; the "
                             "endpoint has no authentication: bind to 127.0.0.1 or [::1], or "
                             "set report.http.allowremote=true to serve other hosts")
        return host, int(port)

    def _report_heartbeat(self) -> float | None:
        """A duration of at least a second (each heartbeat replaces the status file)."""
        seconds = self.duration("report.heartbeat")
        if seconds is not None and seconds < 1:
            raise self.error("report.heartbeat", f"{quoted(self.text('report.heartbeat') or '')} is "
                             "less than 1sec")
        return seconds

    def _trail(self) -> TrailSettings:
        path = self.path("trail.path") or _TRAIL.path
        prefix = path.rpartition("/")[2]
        if not _TRAIL_PREFIX.match(prefix):
            raise self.error("trail.path", f"{quoted(path)} is not DIR/XX: the file prefix must be "
                             "two characters, a letter then a letter or digit")
        extract = (self.text("trail.extract") or _TRAIL.extract).upper()
        if not _EXTRACT.match(extract):
            raise self.error("trail.extract", f"{quoted(extract)} is not 1–8 characters of A-Z, "
                             "0-9, _ and $ starting with a letter")
        seqlen = self.text("trail.seqlen")
        if seqlen is not None and seqlen not in ("6", "9"):
            raise self.error("trail.seqlen", f"{quoted(seqlen)} is not 9 or 6")
        return TrailSettings(
            path=path,
            seqlen=int(seqlen) if seqlen is not None else _TRAIL.seqlen,
            megabytes=self.integer("trail.megabytes", None, 1, 2000) or _TRAIL.megabytes,
            sync=self.choice("trail.sync", ("transaction", "batch", "none"), _TRAIL.sync),
            byteorder=self.choice("trail.byteorder", ("big", "little"), _TRAIL.byteorder),
            compressupdates=self.boolean("trail.compressupdates", _TRAIL.compressupdates),
            getupdatebefores=self.boolean("trail.getupdatebefores", _TRAIL.getupdatebefores),
            compressdeletes=self.boolean("trail.compressdeletes", _TRAIL.compressdeletes),
            defs=self.path("trail.defs"),
            extract=extract,
            uri=self._uri(),
        )

    def _uri(self) -> str | None:
        value = self.text("trail.uri")
        if value is not None and len(value.encode("utf-8", "surrogateescape")) > MAX_URI_BYTES:
            raise self.error("trail.uri", f"{len(value.encode('utf-8', 'surrogateescape'))} "
                             f"bytes; the trail file header holds at most {MAX_URI_BYTES}")
        return value

    def _log(self) -> LogSettings:
        self.choice("gg.log", ("JDK", "log4j", "logback"), "JDK")
        text = self.text("gg.log.level")
        level: LogLevel = _LOG.level
        if text is not None:
            found = _LOG_LEVELS.get(text.upper())
            if found is None:
                raise self.error("gg.log.level",
                                 f"{quoted(text)} is not ERROR, WARN, INFO or DEBUG")
            level = found
        return LogSettings(level=level, file=self.path("gg.log.file"))

    # ---- parser sections ----------------------------------------------------------------

    def _common(self, p: str, *, truncate: bool) -> dict[str, object]:
        items: dict[str, object] = {}
        for attr in ("optype", "txind", "timestamp", "seqid", "txid", "txname", "txowner"):
            items[attr] = self.expr(f"{p}.{attr}", COMMON_FORMS[attr])
        items["timestamp_format"] = self.fmt(f"{p}.timestamp.format")
        items["optype_values"] = self._optype_values(p, truncate=truncate)
        items["txind_values"] = self._txind_values(p)
        items["dateformats"] = self._dateformats(p)
        items["userdefs"] = self._userdefs(p)
        return items

    def _optype_values(self, p: str, *, truncate: bool) -> OptypeValues:
        names = ["insert", "update", "delete"] + (["truncate"] if truncate else [])
        defaults = OptypeValues()
        values: dict[str, str] = {}
        seen: dict[str, str] = {}
        for name in names:
            key = f"{p}.optype.{name}val"
            value = self.delim(key, None) or getattr(defaults, name)
            other = seen.get(value)
            if other is not None:
                culprit = key if self.line(key) else f"{p}.optype.{other}val"
                raise self.error(culprit, f"value {quoted(value)} is both the {other} and the "
                                 f"{name} value; operation codes must differ")
            seen[value] = name
            values[name] = value
        return OptypeValues(insert=values["insert"], update=values["update"],
                            delete=values["delete"], truncate=values.get("truncate"))

    def _txind_values(self, p: str) -> TxindValues:
        defaults = TxindValues()
        sets: dict[str, tuple[str, ...]] = {}
        for name in ("begin", "middle", "end", "whole"):
            value = self.delim(f"{p}.txind.{name}val", None)
            sets[name] = (value,) if value is not None else getattr(defaults, name)
        owner: dict[str, str] = {}
        for name, values in sets.items():
            for value in values:
                other = owner.get(value)
                if other is not None:
                    key = f"{p}.txind.{name}val"
                    if not self.line(key):
                        key = f"{p}.txind.{other}val"
                    raise self.error(key, f"value {quoted(value)} is in both the {other} and the "
                                     f"{name} set")
                owner[value] = name
        return TxindValues(**sets)

    def _dateformats(self, p: str) -> DateFormats:
        default = self.fmt(f"{p}.dateformat")
        prefix = f"{p}.dateformat."
        by_name: dict[str, str] = {}
        for key in self.items:
            if key.startswith(prefix):
                suffix = key[len(prefix):].upper()
                if suffix in by_name:
                    raise self.error(key, "set twice (names are case-insensitive)")
                by_name[suffix] = self.fmt(key) or ""
        return DateFormats(default=default, by_name=by_name)

    def _userdefs(self, p: str) -> tuple[UserTable, ...]:
        prefix = f"{p}.userdefs."
        keys = [k for k in self.items if k.startswith(prefix)]
        if not keys:
            return ()
        tables_key = f"{prefix}tables"
        tables_text = self.text(tables_key)
        if tables_text is None:
            raise self.error(keys[0], f"user-defined tables need {tables_key}")
        declared: set[str] = {tables_key}
        tables: list[UserTable] = []
        names = _split_list(tables_text)
        seen_tables: set[str] = set()
        for name in names:
            if not name or "." not in name or "" in name.split("."):
                raise self.error(tables_key, f"{quoted(name)} is not a qualified table name "
                                 "(SCHEMA.TABLE)")
            if max(len(part) for part in name.split(".")) > MAX_NAME:
                raise self.error(tables_key, f"{quoted(name)}: a name part of more than "
                                 f"{MAX_NAME} characters")
            if name.upper() in seen_tables:
                raise self.error(tables_key, f"table {name} is listed twice")
            seen_tables.add(name.upper())
        for name in names:
            columns_key = f"{prefix}{name}.columns"
            declared.add(columns_key)
            columns_text = self.text(columns_key)
            if columns_text is None:
                raise self.error(tables_key, f"table {name} needs {columns_key}")
            columns: list[UserColumn] = []
            seen_columns: set[str] = set()
            column_names = _split_list(columns_text)
            if len(column_names) > MAX_COLUMNS:
                raise self.error(columns_key, f"{len(column_names)} columns (at most "
                                 f"{MAX_COLUMNS})")
            for column in column_names:
                if not column or any(c.isspace() or c in ".," for c in column):
                    raise self.error(columns_key, f"{quoted(column)} is not a column name")
                if len(column) > MAX_NAME:
                    raise self.error(columns_key, f"{quoted(column)}: a column name of more "
                                     f"than {MAX_NAME} characters")
                if column.upper() in seen_columns:
                    raise self.error(columns_key, f"column {column} is listed twice")
                seen_columns.add(column.upper())
                type_key = f"{prefix}{name}.{column}"
                declared.add(type_key)
                columns.append(self._user_column(column, type_key, columns_key))
            tables.append(UserTable(name, tuple(columns), self.file,
                                    self.line(tables_key) or 0))
        for key in keys:
            if key not in declared:
                guess = difflib.get_close_matches(key, sorted(declared), n=1)
                hint = f"; did you mean {guess[0]}?" if guess else ""
                raise self.error(key, f"unknown property (not a declared user-defined table "
                                 f"or column){hint}")
        return tuple(tables)

    def _user_column(self, column: str, key: str, columns_key: str) -> UserColumn:
        value = self.text(key)
        if value is None:
            raise self.error(columns_key, f"column {column} needs its type in {key}")
        match = _USER_TYPE.match(value)
        if not match:
            raise self.error(key, f"{quoted(value)} is not vchar n, char n, number p[,s] or "
                             "datetime n (optionally followed by key)")
        kind = match.group(1).lower()
        length, scale = _to_int(match.group(2)), _to_int(match.group(3) or "0")
        if length is None or length > MAX_COLUMN_LENGTH or scale is None:
            raise self.error(key, f"{quoted(value)}: a length of at most {MAX_COLUMN_LENGTH} "
                             "(a trail record holds at most 65,535 bytes)")
        if match.group(3) is not None and kind != "number":
            raise self.error(key, f"{kind} takes one length, not {length},{scale}")
        if length < 1:
            raise self.error(key, "length must be at least 1")
        if kind == "number" and scale > length:
            raise self.error(key, f"scale {scale} exceeds precision {length}")
        if kind == "datetime" and length not in (10, 19) and not 21 <= length <= 29:
            raise self.error(key, f"datetime length {length} is not 10, 19 or 20+n "
                             "(n = 1..9 fraction digits)")
        return UserColumn(column, kind, length, scale, match.group(4) is not None)

    def _sourcedefs(self, p: str, userdefs: tuple[UserTable, ...]) -> str | None:
        path = self.path(f"{p}.sourcedefs")
        if path is None and not userdefs:
            raise PropertyError("required (unless every table is user-defined with "
                                f"{p}.userdefs.*)", prop=f"{p}.sourcedefs", file=self.file)
        return path

    def _fixed(self) -> FixedSettings:
        items = self._common("fixed", truncate=False)
        schematype: SchemaType | Literal[""] = self.choice("fixed.schematype",
                                                           ("copybook", "sourcedefs"), "")
        if not schematype:
            raise PropertyError("required (copybook or sourcedefs)", prop="fixed.schematype",
                                file=self.file)
        copybook = sourcedefs = None
        if schematype == "copybook":
            copybook = self.required("fixed.copybook", " with fixed.schematype=copybook")
            self.path("fixed.copybook")
            sourcedefs = self.path("fixed.sourcedefs")
        else:
            sourcedefs = self._sourcedefs("fixed", items["userdefs"])  # type: ignore[arg-type]
        table: tuple[Expr, ...] = ()
        table_text = self.raw("fixed.table")
        if table_text is not None:
            table = tuple(parse_expr(part, COMMON_FORMS["table"], prop="fixed.table",
                                     file=self.file, line=self.line("fixed.table"))
                          for part in table_text.split(","))
        schema = self.text("fixed.schema")
        schema_expr: Expr | None = None
        if schema is not None:
            if len(schema) >= 2 and schema[0] == schema[-1] == '"':
                schema = schema[1:-1]
            elif schema[0] in "$*\"":
                raise self.error("fixed.schema", f"{quoted(schema)} is not an accepted form; "
                                 "expected \"value\" (a constant schema name)")
            if not schema:
                raise self.error("fixed.schema", "empty schema name")
            schema_expr = self._held("fixed.schema", Const(schema))
        return FixedSettings(
            **items,  # type: ignore[arg-type]
            table=table, schema=schema_expr,
            schematype=schematype, copybook=copybook, sourcedefs=sourcedefs,
            header=self.required("fixed.header"),
            encoding=self._encoding(),
        )

    def _encoding(self) -> str:
        value = self.text("fixed.encoding") or _FIXED.encoding
        try:
            return code_page(value).name
        except LookupError:
            raise self.error("fixed.encoding", f"unknown encoding {quoted(value)}") from None
        except ValueError:
            raise self.error("fixed.encoding",
                             f"{quoted(value)} is not a single-byte character set") from None

    def _delim(self) -> DelimSettings:
        items = self._common("delim", truncate=True)
        header_text = self.required("delim.header")
        header = tuple(_split_list(header_text))
        seen: set[str] = set()
        for name in header:
            if not name:
                raise self.error("delim.header", "empty name in the list")
            if name.lower() in seen:
                raise self.error("delim.header", f"name {name} is listed twice")
            seen.add(name.lower())
        for attr in ("schemaandtable", "table"):
            items[attr] = self.expr(f"delim.{attr}", COMMON_FORMS[attr])
        items["schema"] = self.expr("delim.schema", _FJ | {ex.CONST})
        items["table"] = (items["table"],) if items["table"] is not None else ()
        for attr in ("optype", "txind", "timestamp", "seqid", "txid", "txname", "txowner",
                     "schemaandtable", "schema"):
            self._check_header_field(f"delim.{attr}", items[attr], seen)
        for table_expr in items["table"]:  # type: ignore[attr-defined]
            self._check_header_field("delim.table", table_expr, seen)
        fielddelim = self.delim("delim.fielddelim", None) or _DELIM.fielddelim
        linedelim = self.delim("delim.linedelim", None) or _DELIM.linedelim
        quote = self.delim("delim.quote", None) or _DELIM.quote
        for a, b in (("fielddelim", "linedelim"), ("quote", "fielddelim"),
                     ("quote", "linedelim")):
            values = {"fielddelim": fielddelim, "linedelim": linedelim, "quote": quote}
            if values[a] == values[b]:
                culprit = f"delim.{a}" if self.line(f"delim.{a}") else f"delim.{b}"
                raise self.error(culprit, f"delim.{a} and delim.{b} are both {quoted(values[a])}")
        nullindicator = self.delim("delim.nullindicator", None)
        plain = {"fielddelim": fielddelim, "linedelim": linedelim, "quote": quote,
                 "nullindicator": nullindicator}
        escaped: dict[str, str | None] = {}
        for name, value in plain.items():
            key = f"delim.{name}.escaped"
            escaped[name] = self.delim(key, None)
            if escaped[name] is not None and escaped[name] == value:
                raise self.error(key, f"is the same as delim.{name}; an escape sequence must "
                                 "differ from what it stands for")
        return DelimSettings(
            **items,  # type: ignore[arg-type]
            sourcedefs=self._sourcedefs("delim", items["userdefs"]),  # type: ignore[arg-type]
            header=header,
            fielddelim=fielddelim, linedelim=linedelim, quote=quote,
            nullindicator=nullindicator,
            fielddelim_escaped=escaped["fielddelim"],
            linedelim_escaped=escaped["linedelim"],
            quote_escaped=escaped["quote"],
            nullindicator_escaped=escaped["nullindicator"],
            hasbefores=self.boolean("delim.hasbefores", _DELIM.hasbefores),
            hasnames=self.boolean("delim.hasnames", _DELIM.hasnames),
            afterfirst=self.boolean("delim.afterfirst", _DELIM.afterfirst),
            isgrouped=self.boolean("delim.isgrouped", _DELIM.isgrouped),
        )

    def _check_header_field(self, key: str, value: object, header: set[str]) -> None:
        if isinstance(value, ex.Field) and value.name.lower() not in header:
            raise self.error(key, f"field {value.name} is not in delim.header")

    # ---- XML ----------------------------------------------------------------------------

    def _declare_rules(self) -> None:
        """Find the rules reachable from ``xml.rules`` and their types (keys depend on them)."""
        rules_text = self.raw("xml.rules")
        if rules_text is None:
            return
        queue = [(name, "xml.rules") for name in self._rule_list("xml.rules")]
        while queue:
            name, referrer = queue.pop(0)
            if name in self.rule_names:
                continue
            type_key = f"{name}.type"
            rule_type = self.text(type_key)
            if rule_type is not None:
                rule_type = rule_type.lower()
            if rule_type is None:
                raise self.error(referrer, f"rule {name} has no {type_key} (tx, op or col)")
            if rule_type not in RULE_ATTRS:
                raise self.error(type_key, f"{quoted(rule_type)} is not tx, op or col")
            self.rule_names[name] = Rule(name=name, type=rule_type, file=self.file,
                                         line=self.line(type_key) or 0)
            subrules_key = f"{name}.subrules"
            if self.raw(subrules_key) is not None:
                queue.extend((sub, subrules_key) for sub in self._rule_list(subrules_key))

    def _rule_list(self, key: str) -> list[str]:
        names = _split_list(self.text(key) or "")
        seen: set[str] = set()
        for name in names:
            if not name:
                raise self.error(key, "empty rule name in the list")
            if not _RULE_NAME.match(name):
                raise self.error(key, f"{quoted(name)} is not a valid rule name")
            if name in RESERVED:
                raise self.error(key,
                                 f"{quoted(name)} is a reserved word, not usable as a rule name")
            if name in seen:
                raise self.error(key, f"rule {name} is listed twice")
            seen.add(name)
        return names

    def _xml(self) -> XmlSettings:
        self.required("xml.rules")
        userdefs = self._userdefs("xml")
        built: dict[str, Rule] = {}
        top = tuple(self._rule(name, built, (), top=True)
                    for name in self._rule_list("xml.rules"))
        namespaces = {key[len("xml.namespace."):]: self.text(key) or ""
                      for key in self.items if key.startswith("xml.namespace.")}
        return XmlSettings(
            sourcedefs=self._sourcedefs("xml", userdefs),
            rules=top,
            namespaces=namespaces,
            maxbytes=self.integer("xml.maxbytes", None, 1) or _XML.maxbytes,
            maxdepth=self.integer("xml.maxdepth", None, 1) or _XML.maxdepth,
            dateformats=self._dateformats("xml"),
            userdefs=userdefs,
        )

    def _rule(self, name: str, built: dict[str, Rule], path: tuple[str, ...], *,
              top: bool, parent: Rule | None = None) -> Rule:
        if name in path:
            cycle = " → ".join((*path[path.index(name):], name))
            raise self.error(f"{path[-1]}.subrules", f"rule cycle {cycle}")
        declared = self.rule_names[name]
        if top and declared.type == "col":
            raise self.error("xml.rules", f"rule {name} is a col rule; top-level rules must be "
                             "tx or op")
        if parent is not None:
            allowed = {"tx": ("op",), "op": ("op", "col"), "col": ()}[parent.type]
            if declared.type not in allowed:
                what = "no subrules" if not allowed else f"only {' or '.join(allowed)} subrules"
                raise self.error(f"{parent.name}.subrules", f"{parent.type} rule {parent.name} "
                                 f"may have {what}, not {declared.type} rule {name}")
        if name in built:
            if built[name].txind is not None and not top:
                raise self.error(f"{name}.txind", "txind is allowed only on top-level op rules")
            return built[name]
        fields: dict[str, object] = {}
        lines: dict[str, int] = {}
        prefix = f"{name}."
        for key, pending in self.items.items():
            if not key.startswith(prefix):
                continue
            attr = key[len(prefix):]
            lines[attr] = pending.entry.line
            if attr in RULE_FORMS:
                fields[_RULE_FIELD.get(attr, attr)] = self._rule_expr(key, attr)
        fields["timestamp_format"] = self.fmt(f"{name}.timestamp.format")
        rule_type = declared.type
        if rule_type == "op":
            fields["optype_values"] = self._optype_values(name, truncate=False)
            fields["txind_values"] = self._txind_values(name)
            if fields.get("txind") is not None and not top:
                raise self.error(f"{name}.txind", "txind is allowed only on top-level op rules")
        match = fields.pop("match", None)
        if isinstance(match, XPath) and not top and match.text.startswith("/"):
            log.warning("%s: %s.match: absolute XPath %r in a subrule is evaluated from the "
                        "document root; did you mean %r?", self._where(f"{name}.match"), name,
                        match.text, "./" + match.text.lstrip("/"))
        rule = Rule(name=name, type=rule_type, match=match,  # type: ignore[arg-type]
                    file=self.file, line=declared.line, lines=lines,
                    **fields)  # type: ignore[arg-type]
        subrule_names = (self._rule_list(f"{name}.subrules")
                         if self.raw(f"{name}.subrules") is not None else [])
        subrules = tuple(self._rule(sub, built, (*path, name), top=False, parent=rule)
                         for sub in subrule_names)
        rule = replace(rule, subrules=subrules)
        self._check_rule(rule)
        built[name] = rule
        return rule

    def _rule_expr(self, key: str, attr: str) -> Expr | None:
        value = self.raw(key)
        if value is None:
            return None
        if attr == "index":
            text = value.strip()
            if _INTEGER.match(text):
                index = _to_int(text)
                if index is not None and index < 0:
                    raise self.error(key, f"column index {text} is negative")
                if index is None or index >= MAX_COLUMNS:
                    raise self.error(key, f"column index {quoted(text)} is out of range "
                                     f"(0–{MAX_COLUMNS - 1})")
                return Const(str(index))
        return self._held(key, parse_expr(value, RULE_FORMS[attr], prop=key, file=self.file,
                                          line=self.line(key)))

    def _check_rule(self, rule: Rule) -> None:
        if rule.type == "col":
            if rule.column_name is None and rule.index is None:
                raise self.error(f"{rule.name}.type", f"col rule {rule.name} needs "
                                 f"{rule.name}.name or {rule.name}.index")
            return
        if rule.type == "op":
            grouping = bool(rule.subrules) and all(s.type == "op" for s in rule.subrules)
            if not grouping:
                if rule.optype is None:
                    raise self.error(f"{rule.name}.type",
                                     f"op rule {rule.name} needs {rule.name}.optype")
                if rule.schemaandtable is None and rule.table is None:
                    raise self.error(f"{rule.name}.type", f"op rule {rule.name} needs "
                                     f"{rule.name}.schemaandtable or {rule.name}.table")

    def _where(self, key: str) -> str:
        line = self.line(key)
        return f"{self.file}:{line}" if line else self.file
