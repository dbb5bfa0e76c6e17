"""Build a validated ``Settings`` from properties entries (properties.md §1–§12, §14).

Steps: parse (javaprops) → reject ``xmlparser.*`` → drop ignored properties → map aliases to
canonical keys → drop duplicates (last wins) → substitute ``${ENV}`` (an unset variable in a
setting only a broker connection reads waits for a command that connects: ``JmsSettings.
unset_env``) → resolve a Qpid JMS JNDI
configuration (props.jndi) → classify every key (an unknown one is an error with a
suggestion) → build each section, checking values.

The key tables are in ``props.keys``, the typed reading of one value in ``props.reader``, and
each section's builder in ``props.sections``; this module puts them together.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import Literal

from props.errors import PropertyError
from props.inputs import read_input
from props.javaprops import Entry, UnsetVariable, parse_properties, substitute_env
from props.jndi import Resolved
from props.jndi import resolve as resolve_jndi
from props.keys import (
    ALIASES,
    GLOBAL_KEYS,
    IGNORED_QUIET,
    JNDI_HEADS,
    JNDI_PREFIX,
    PARSERS,
    RESERVED,
    RULE_ALIASES,
    RULE_ATTRS,
    SECTION_KEYS,
    is_connection_key,
    is_rule_key,
)
from props.kinds import PROPERTIES, misplaced
from props.partition import check_partitioned, first_use, given_partition, unset_error, variables
from props.reader import (
    Pending,
    Reader,
    check_format,
    host_problem,
    is_loopback,
    path_problem,
    split_host_port,
)
from props.sections.delim import delim_settings
from props.sections.error import error_settings
from props.sections.fixed import fixed_settings
from props.sections.jms import jms_settings
from props.sections.log import log_settings
from props.sections.report import report_heartbeat, report_http
from props.sections.trail import trail_settings
from props.sections.xml import declared_rules, xml_settings
from props.settings import ParserType, Rule, Settings
from props.text import listed, quoted

# What other modules import from here, where it has always been.
__all__ = [
    "ALIASES", "GLOBAL_KEYS", "IGNORED_QUIET", "PARSERS", "RESERVED", "RULE_ALIASES", "RULE_ATTRS", "SECTION_KEYS",
    "check_format", "host_problem", "is_loopback", "load_settings", "path_problem",
    "settings_from_text", "split_host_port",
]

log = logging.getLogger("msgcap.props")

_SETTINGS = Settings()  # the defaults of unset properties
_NCNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def load_settings(path: str, env: Mapping[str, str] | None = None,
                  partition: int | None = None) -> Settings:
    """Read and validate a properties file (UTF-8); ``env`` defaults to ``os.environ``;
    ``partition`` (``--partition``) is what ``${PARTITION}`` stands for (``props.partition``)."""
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
    if (reason := misplaced(text, path, PROPERTIES)) is not None:
        raise PropertyError(reason, file=path)
    return settings_from_text(text, path, env, partition)


def settings_from_text(text: str, file: str = "<string>",
                       env: Mapping[str, str] | None = None,
                       partition: int | None = None) -> Settings:
    """Validate properties given as text (tests, embedded configurations); ``env`` defaults
    to ``os.environ``; ``partition`` (else ``MSGCAP_PARTITION``) is ``${PARTITION}``."""
    env = os.environ if env is None else env
    partition = given_partition(partition, env, file)
    entries = parse_properties(text, file)
    if partition is None and (use := first_use((e.key, e.value, e.line) for e in entries)):
        raise unset_error(use[0], file, use[1])
    env = variables(env, partition)
    unset: list[UnsetVariable] = []
    items = _canonical_items(entries, file, env, unset)
    jndi = resolve_jndi(items, file, env, unset)
    settings = _build(Reader({**items, **jndi.items}, file, unset), jndi)
    if partition is None:
        return settings
    error = settings.error
    check_partitioned({key: (p.entry.value, p.entry.line) for key, p in items.items()
                       if p.entry.file == file}, file, partition,
                      http_port=settings.report_http[1] if settings.report_http else None,
                      discards_to_file=error.policy == "discard" and not error.destination)
    return dataclasses.replace(settings, partition=partition)


# ---- collection -------------------------------------------------------------------------

def _canonical_items(entries: list[Entry], file: str, env: Mapping[str, str],
                     unset: list[UnsetVariable]) -> dict[str, Pending]:
    """The entries by canonical key, the last of a key winning, ``${ENV}`` substituted. An
    unset variable of a connection setting (``is_connection_key``) goes to ``unset``: the
    setting is left out, or kept as written for a connection factory (``props.jndi``)."""
    items: dict[str, Pending] = {}
    for entry in entries:
        key = entry.key
        if key == "xmlparser" or key.startswith("xmlparser."):
            raise _xmlparser_error(entry, file)
        if key in IGNORED_QUIET:
            log.debug("%s: %s is accepted and ignored", entry.where, key)
            continue
        canonical = _canonical(entry)
        previous = items.get(canonical)
        if previous is not None:
            log.warning("%s:%d: %s is set again; line %d wins over line %d", file,
                        entry.line, canonical, entry.line, previous.entry.line)
        items[canonical] = Pending(canonical, entry, entry.value)
    for key, pending in list(items.items()):
        waiting: list[UnsetVariable] | None = [] if is_connection_key(key) else None
        pending.value = substitute_env(pending.value, env, prop=key, file=file,
                                       line=pending.entry.line, unset=waiting)
        if waiting:
            unset += waiting
            if not key.lower().startswith("connectionfactory."):
                del items[key]
    return items


def _xmlparser_error(entry: Entry, file: str) -> PropertyError:
    parts = entry.key.split(".")
    if len(parts) >= 4 and parts[1] == "rules":
        rule, attr = parts[2], ".".join(parts[3:])
        hint = f"write `xml.rules={rule}` and `{rule}.{attr}={entry.value}`"
    else:
        rule = entry.value.strip() or "genericrule"
        hint = f"write `xml.rules={rule}` and `{rule}.type=tx`"
    return PropertyError(f"the xmlparser.rules form is not supported: {hint}",
                         prop=entry.key, file=file, line=entry.line)


def _canonical(entry: Entry) -> str:
    key = entry.key
    canonical = ALIASES.get(key)
    if canonical is None and is_rule_key(key):
        rule, _, attr = key.partition(".")
        if attr in RULE_ALIASES:
            canonical = f"{rule}.{RULE_ALIASES[attr]}"
    if canonical is None:
        return key
    log.warning("%s: %s is an alias of %s; write %s", entry.where, key, canonical, canonical)
    return canonical


# ---- classification ---------------------------------------------------------------------

def _classify(r: Reader, rules: dict[str, Rule], parser_type: str) -> None:
    """Every key must be known; keys of other parsers' sections are ignored with a warning."""
    candidates = _candidates(rules)
    ignored: dict[str, list[str]] = {}
    for key, pending in r.items.items():
        section = _section_of(r, rules, key, candidates)
        if section != "global" and section != parser_type:
            ignored.setdefault(section, []).append(f"{key} (line {pending.entry.line})")
    for section, keys in ignored.items():
        what = "XML rule" if section == "xml" else f"{section}.*"
        log.warning("%s: %s properties are ignored because parser.type=%s: %s", r.file,
                    what, parser_type, listed(keys))


def _section_of(r: Reader, rules: dict[str, Rule], key: str, candidates: list[str]) -> str:
    if key in GLOBAL_KEYS:
        return "global"
    if key.startswith(JNDI_PREFIX) and key != JNDI_PREFIX:
        return "global"  # a JMS provider's JNDI environment (props.jndi)
    head = key.partition(".")[0]
    if head in JNDI_HEADS:
        if not key[len(head) + 1:]:
            raise r.error(key, f"names no entry: {head}.NAME")
        return "global"  # read by props.jndi
    if head in SECTION_KEYS:
        if key in SECTION_KEYS[head]:
            return head
        rest = key[len(head) + 1:]
        if rest.startswith("userdefs."):
            return head  # checked against the declared tables when the section is built
        if rest.startswith("dateformat."):
            suffix = rest[len("dateformat."):]
            if "." not in suffix or "" in suffix.split("."):
                raise r.error(key, "needs a qualified table name: "
                              f"{head}.dateformat.SCHEMA.TABLE[.COLUMN]")
            return head
        if head == "xml" and rest.startswith("namespace."):
            prefix = rest[len("namespace."):]
            if not _NCNAME.match(prefix) or ":" in prefix:
                raise r.error(key, f"{quoted(prefix)} is not a valid namespace prefix")
            return head
    if head in rules and "." in key:
        rule = rules[head]
        attr = key[len(head) + 1:]
        if attr in RULE_ATTRS[rule.type]:
            return "xml"
        if any(attr in attrs for attrs in RULE_ATTRS.values()):
            raise r.error(key, f"not a property of a {rule.type} rule")
        guess = difflib.get_close_matches(attr, sorted(RULE_ATTRS[rule.type]), n=1)
        hint = f"; did you mean {head}.{guess[0]}?" if guess else ""
        raise r.error(key, f"unknown attribute of {rule.type} rule {head}{hint}")
    attr = key[len(head) + 1:]
    if head not in RESERVED and any(attr in attrs for attrs in RULE_ATTRS.values()):
        raise r.error(key, f"unknown property (XML rule {head} is not reachable from "
                      "xml.rules)")
    guess = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    hint = f"; did you mean {guess[0]}?" if guess else ""
    raise r.error(key, f"unknown property{hint}")


def _candidates(rules: dict[str, Rule]) -> list[str]:
    names = set(GLOBAL_KEYS)
    for keys in SECTION_KEYS.values():
        names |= keys
    names |= set(ALIASES)
    for name, rule in rules.items():
        names |= {f"{name}.{attr}" for attr in RULE_ATTRS[rule.type]}
    return sorted(names)


# ---- build ------------------------------------------------------------------------------

def _build(r: Reader, jndi: Resolved) -> Settings:
    parser_type: ParserType | Literal[""] = r.choice("parser.type", PARSERS, "")
    if not parser_type:
        raise PropertyError("required (fixed, delim or xml)", prop="parser.type",
                            file=r.file)
    rules = declared_rules(r)
    _classify(r, rules, parser_type)
    trail = trail_settings(r)
    sections: dict[str, object] = {"fixed": None, "delim": None, "xml": None}
    builders: dict[str, Callable[[], object]] = {
        "fixed": lambda: fixed_settings(r), "delim": lambda: delim_settings(r),
        "xml": lambda: xml_settings(r, rules)}
    sections[parser_type] = builders[parser_type]()
    return Settings(
        file=r.file,
        parser_type=parser_type,
        fixed=sections["fixed"],  # type: ignore[arg-type]
        delim=sections["delim"],  # type: ignore[arg-type]
        xml=sections["xml"],  # type: ignore[arg-type]
        jms=jms_settings(r, jndi),
        trail=trail,
        checkpoint_dir=r.path("checkpoint.dir") or _SETTINGS.checkpoint_dir,
        archive_dir=r.path("archive.dir"),
        error=error_settings(r, jvm=jndi.jvm),
        log=log_settings(r),
        report_http=report_http(r),
        report_heartbeat=report_heartbeat(r),
        lines={key: p.entry.line for key, p in r.items.items() if p.entry.file == r.file},
    )
