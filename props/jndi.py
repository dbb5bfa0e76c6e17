"""JNDI as Oracle's adapter reads it (properties.md §8.2): Qpid JMS's configuration resolved into
msgcap's own AMQP client, any other provider left to its own client in a JVM.

The Java adapter found its broker through JNDI: ``jms.connectionFactory`` and ``jms.destination``
name objects of the provider ``java.naming.factory.initial`` names. Qpid JMS's provider keeps
them as properties (``connectionfactory.NAME = amqp://…``, ``queue.NAME``, ``topic.NAME``), in
the properties file itself or in the file ``java.naming.provider.url`` names, so they are
resolved here into ``jms.url``, ``jms.destination`` and the settings the URL's options carry
(each an entry the section builders read like any other, naming the JNDI entry in errors).
Other providers keep their objects where only their own client reads them (a broker, a
``.bindings`` file): without ``jms.url`` they are reached through that client
(``msgcap.sources.jms``; ``props.sections.jms`` builds its ``JvmProvider``). Values are never
printed: they may hold credentials; names are.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit
from urllib.request import url2pathname

from props.errors import PropertyError
from props.inputs import open_input
from props.javaprops import UnsetVariable, iter_properties, substitute_env
from props.keys import JNDI_HEADS, is_connection_key
from props.reader import Pending
from props.settings import URL_FORMS, JmsSettings
from props.text import LISTED, listed

log = logging.getLogger("msgcap.props")

QPID_FACTORY = "org.apache.qpid.jms.jndi.JmsInitialContextFactory"
FACTORY = "java.naming.factory.initial"
PROVIDER_URL = "java.naming.provider.url"
CONNECTION_FACTORY = "jms.connectionFactory"

CLIENT = "jms.client"  # jvm: a provider's own client in a JVM; native: msgcap's AMQP client
NATIVE_UNUSED = ("not used by msgcap's own AMQP client (a provider's own client in a JVM reads "
                 "them: jms.client=jvm); the user and password are jms.user and jms.password")

_FAILOVER = re.compile(r"failover:(?://)?\((.*)\)(?:\?(.*))?\Z", re.IGNORECASE | re.DOTALL)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_SEND_MS = JmsSettings().heartbeat[0]
_FACTORY_HEAD = "connectionfactory."
# URL options whose unset ${NAME} waits for a command that connects (jms.user, jms.password,
# jms.vhost: props.keys.CONNECTION_KEYS)
_LOGIN_OPTIONS = ("jms.username", "jms.password", "amqp.vhost")

# Qpid JMS URL options that are msgcap settings (a property set in the file wins).
_MAPPED = {"jms.username": "jms.user", "jms.password": "jms.password",
           "amqp.vhost": "jms.vhost", "amqp.saslMechanisms": "jms.sasl.mechanisms",
           "amqp.idleTimeout": "jms.heartbeat"}
# Prefetch options, the destination's own before ``all``.
_PREFETCH = {"/queue/": "jms.prefetchPolicy.queuePrefetch",
             "/topic/": "jms.prefetchPolicy.durableTopicPrefetch"}
_PREFETCH_ALL = "jms.prefetchPolicy.all"
# Java key stores, which msgcap cannot read, and the PEM properties to set instead.
_KEY_STORES = {"transport.trustStoreLocation": ("jms.ssl.ca", "jms.ssl.ca to a PEM CA file"),
               "transport.keyStoreLocation": ("jms.ssl.cert", ("jms.ssl.cert and jms.ssl.key to "
                                              "PEM files"))}
_KEY_STORE_DETAILS = frozenset({"transport.trustStorePassword", "transport.keyStorePassword",
                                "transport.trustStoreType", "transport.keyStoreType",
                                "transport.storeType", "transport.keyAlias"})


@dataclass(frozen=True, slots=True)
class Resolved:
    """What the JNDI configuration gives: entries to add (``jms.url`` …, each naming its JNDI
    entry), and why jms.url is still unset when the file speaks of JNDI (``JmsSettings``)."""

    items: dict[str, Pending]
    url_missing: str | None = None
    jvm: bool = False  # jms.url unset: the provider's own JMS client in a JVM (JvmProvider)


def resolve(items: Mapping[str, Pending], file: str, env: Mapping[str, str],
            unset: list[UnsetVariable] | None = None) -> Resolved:
    """Resolve the JNDI entries of a load's canonical ``items`` (``${ENV}`` already applied):
    without ``jms.url``, a provider other than Qpid JMS (or ``jms.client=jvm``) is reached
    through its own client (``jvm``); Qpid JMS's entries are read here. ``unset``: the unset
    variables of connection settings (props.loader), a connection factory's among them (its
    value kept as written); those of the JNDI file are added."""
    unset = [] if unset is None else unset
    entries = {key: p for key, p in items.items() if key.partition(".")[0] in JNDI_HEADS}
    factory, provider = items.get(FACTORY), items.get(PROVIDER_URL)
    client = _client(items.get(CLIENT))
    if client == "jvm" and factory is None:
        raise PropertyError(f"jvm needs {FACTORY} (the JMS provider's JNDI factory class)",
                            prop=CLIENT, file=file, line=items[CLIENT].entry.line)
    if factory is None and provider is None and not entries \
            and CONNECTION_FACTORY not in items:
        return Resolved({})
    foreign = factory is not None and factory.value.strip() != QPID_FACTORY
    if "jms.url" in items:
        if foreign or client == "jvm":
            assert factory is not None
            log.warning("%s: %s names a JMS provider reached through its own client when "
                        "jms.url is unset; jms.url is set and is used", factory.entry.where,
                        FACTORY)
            return Resolved({})
    elif client == "jvm" or (foreign and client is None):
        return Resolved({}, jvm=True)
    elif foreign:
        assert factory is not None
        return Resolved({}, f"{factory.entry.where}: {FACTORY}: {factory.value.strip()} is "
                            f"reached through its own client only (jms.client=jvm), not "
                            f"jms.client=native: set {CLIENT}=jvm or jms.url")
    _warn_unused_naming(items, file)
    factories = {k for k in entries if k.startswith(_FACTORY_HEAD)}
    provider_path = _provider_path(provider, file) if provider else None
    if provider is not None and provider_path is None:
        if "jms.url" in items:
            log.warning("%s: %s names a provider's server, not a Qpid JMS JNDI file; jms.url "
                        "is set and is used", provider.entry.where, PROVIDER_URL)
            return Resolved({})
        return Resolved({}, f"{provider.entry.where}: {PROVIDER_URL}: names a provider's "
                            f"server, not a Qpid JMS JNDI file: set {FACTORY} to the "
                            f"provider's JNDI factory (its jars in jvm.bootoptions), or jms.url")
    if provider is not None and provider_path is not None:
        if factory is None and _ibm_bindings(provider_path):
            return Resolved({}, f"{provider.entry.where}: {PROVIDER_URL}: a file-system "
                                f"context (.bindings) is read by its provider's own client: "
                                f"set {FACTORY}=com.sun.jndi.fscontext.RefFSContextFactory "
                                f"and its jars in jvm.bootoptions, or jms.url")
        try:
            provided, provided_factories = _provider_entries(
                provider, provider_path, env, _wanted(items), unset)
        except PropertyError as exc:  # said by the commands that need a broker, as a
            if "jms.url" not in items:  # missing jms.url would be
                return Resolved({}, str(exc))
            log.warning("%s; jms.url is used", exc)
            provided, provided_factories = {}, set()
        named = provided.get(FACTORY)
        if named is not None and named.value.strip() != QPID_FACTORY \
                and "jms.url" not in items:
            return Resolved({}, f"{named.entry.where}: {FACTORY}: names "
                                f"{named.value.strip()}: set it in the properties file, "
                                f"where the provider's own client is reached from")
        entries = {**{k: p for k, p in provided.items()
                      if k.partition(".")[0] in JNDI_HEADS}, **entries}
        factories |= provided_factories
    return _Qpid(items, entries, factories, file, unset).resolve()


def _client(entry: Pending | None) -> str | None:
    """``jms.client``: ``jvm`` or ``native`` (None when unset)."""
    if entry is None:
        return None
    value = entry.value.strip().lower()
    if value not in ("jvm", "native"):
        raise PropertyError(f"{entry.value.strip()!r} is not jvm or native", prop=CLIENT,
                            file=entry.entry.file, line=entry.entry.line)
    return value


def _warn_unused_naming(items: Mapping[str, Pending], file: str) -> None:
    """On msgcap's own AMQP client: the JNDI environment beyond the two keys it reads, and
    ``jvm.bootoptions``, are unused (one warning naming them, never their values)."""
    unused = [f"{key} (line {p.entry.line})" for key, p in items.items()
              if (key.startswith("java.naming.") and key not in (FACTORY, PROVIDER_URL))
              or key == "jvm.bootoptions"]
    if unused:
        log.warning("%s: ignored: %s: %s", file, listed(unused), NATIVE_UNUSED)


def _provider_path(provider: Pending, file: str) -> str | None:
    """The file ``java.naming.provider.url`` names (a path, relative to the properties file, or a
    ``file:`` URL); None when it is another kind of URL (a broker's)."""
    value = provider.value.strip()
    scheme = _SCHEME.match(value)
    if scheme and scheme.group(1).lower() == "file":
        path = url2pathname(urlsplit(value).path)
    elif scheme and len(scheme.group(1)) > 1:  # (a one-letter scheme is a Windows drive)
        return None
    else:
        path = value
    return os.path.join(os.path.dirname(provider.entry.file), path)


def _ibm_bindings(path: str) -> bool:
    """A file-system context: a directory holding IBM MQ's ``.bindings``, or that file."""
    return os.path.isdir(path) or path.endswith(".bindings")


def _wanted(items: Mapping[str, Pending]) -> frozenset[str]:
    """The keys of the JNDI file msgcap reads: the factory class, and the entries
    ``jms.connectionFactory`` and ``jms.destination`` name."""
    wanted = {FACTORY}
    named = items.get(CONNECTION_FACTORY)
    if named is not None:
        wanted.add(f"{_FACTORY_HEAD}{named.value.strip()}")
    destination = items.get("jms.destination")
    if destination is not None:
        wanted |= {f"queue.{destination.value.strip()}", f"topic.{destination.value.strip()}"}
    return frozenset(wanted)


def _provider_entries(provider: Pending, path: str, env: Mapping[str, str],
                      wanted: frozenset[str], unset: list[UnsetVariable]
                      ) -> tuple[dict[str, Pending], set[str]]:
    """The ``wanted`` entries of the file ``java.naming.provider.url`` names, by key (the last
    wins), and the keys of all its connection factories (for the messages that name them). The
    file is read a line at a time and every other entry dropped as it is read: a JNDI file of
    millions of keys is not held in memory."""
    _refuse_remote(provider)
    out: dict[str, Pending] = {}
    waits: dict[str, list[UnsetVariable]] = {}  # of the entry that wins
    factories: set[str] = set()
    ignored: list[str] = []
    ignored_count = 0
    try:
        with open_input(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as text:
            lines = (line.removesuffix("\n") for line in text)
            for entry in iter_properties(lines, path):
                key = entry.key
                if key.startswith(_FACTORY_HEAD):
                    factories.add(key)
                elif key != FACTORY and key.partition(".")[0] not in JNDI_HEADS:
                    ignored_count += 1
                    if len(ignored) < LISTED:
                        ignored.append(f"{key} (line {entry.line})")
                    continue
                if key not in wanted:
                    continue
                waiting: list[UnsetVariable] | None = [] if is_connection_key(key) else None
                value = substitute_env(entry.value, env, prop=key, file=path, line=entry.line,
                                       unset=waiting)
                waits[key] = waiting or []
                out[key] = Pending(key, entry, value)
    except OSError as exc:
        raise PropertyError(f"cannot read the JNDI file {path}: {exc.strerror or exc}",
                            prop=PROVIDER_URL, file=provider.entry.file,
                            line=provider.entry.line) from None
    except UnicodeDecodeError:
        raise PropertyError(f"the JNDI file {path} is not valid UTF-8", prop=PROVIDER_URL,
                            file=provider.entry.file, line=provider.entry.line) from None
    unset += [error for errors in waits.values() for error in errors]
    if ignored:
        log.warning("%s: ignored (not a Qpid JMS JNDI entry msgcap reads): %s", path,
                    listed(ignored, ignored_count))
    return out, factories


def _refuse_remote(provider: Pending) -> None:
    """A ``file://HOST/…`` URL names a file of another host, which msgcap cannot read (a local
    file of the same path would be another file)."""
    value = provider.value.strip()
    scheme = _SCHEME.match(value)
    if not scheme or scheme.group(1).lower() != "file":
        return
    host = urlsplit(value).hostname
    if host and host.lower() != "localhost":
        raise PropertyError(f"file://{host}/… names a file on host {host}: msgcap reads a "
                            "local JNDI file only (file:/PATH, file:///PATH or "
                            "file://localhost/PATH)", prop=PROVIDER_URL,
                            file=provider.entry.file, line=provider.entry.line)


class _Qpid:
    """Qpid JMS JNDI entries resolved into msgcap's properties."""

    def __init__(self, items: Mapping[str, Pending], entries: dict[str, Pending],
                 factories: set[str], file: str, unset: list[UnsetVariable]) -> None:
        self.items, self.entries, self.file = items, entries, file
        self.factories = sorted(factories)  # every connectionfactory.NAME key, for messages
        self.unset = unset
        self.out: dict[str, Pending] = {}

    def resolve(self) -> Resolved:
        self.destination()
        return Resolved(self.out, self.connection())

    def destination(self) -> None:
        """``jms.destination=NAME`` naming a ``queue.NAME`` or ``topic.NAME`` entry."""
        named = self.items.get("jms.destination")
        if named is None:
            return
        name = named.value.strip()
        found = [p for p in (self.entries.get(f"queue.{name}"), self.entries.get(f"topic.{name}"))
                 if p is not None]
        if len(found) > 1:
            raise PropertyError(f"both queue.{name} and topic.{name} are defined",
                                prop="jms.destination", file=named.entry.file,
                                line=named.entry.line)
        if found:
            entry = found[0]
            kind = entry.key.partition(".")[0]
            self.out["jms.destination"] = Pending("jms.destination", entry.entry,
                                                  f"/{kind}/{entry.value.strip()}", via=entry.key)

    def connection(self) -> str | None:
        """``jms.connectionFactory=NAME`` → jms.url and the URL's options; the line to say
        instead of ``jms.url: required`` when there is none."""
        named = self.items.get(CONNECTION_FACTORY)
        factories = self.factories
        if "jms.url" in self.items:
            if named is not None:
                log.warning("%s: %s: jms.url is set too and wins: the connection factory is "
                            "not used", named.entry.where, CONNECTION_FACTORY)
            return None
        if named is None:
            if not factories:
                return None
            return (f"{self.file}: {CONNECTION_FACTORY}: not set: name one of "
                    f"{listed([k.partition('.')[2] for k in factories])} (or set jms.url)")
        key = f"connectionfactory.{named.value.strip()}"
        entry = self.entries.get(key)
        if entry is None:
            have = f" (there are {listed(factories)})" if factories else ""
            return (f"{named.entry.where}: {CONNECTION_FACTORY}: no {key} entry{have}: add it, "
                    f"or set jms.url ({URL_FORMS})")
        urls, options = _parse_connection(entry)
        self.wait_for_env(entry, urls, options)
        self.out["jms.url"] = Pending("jms.url", entry.entry, ",".join(urls), via=key)
        self.options(entry, options)
        return None

    def wait_for_env(self, entry: Pending, urls: list[str], options: dict[str, str]) -> None:
        """An unset ``${NAME}`` in the factory's login or virtual host options waits for a
        command that connects (the option is dropped; ``unset`` says it); anywhere else in the
        URL it is the error now: the broker's address and options are read at load."""
        mine = [u for u in self.unset if u.prop == entry.key and u.file == entry.entry.file]
        for error in mine:
            reference = f"${{{error.name}}}"
            if any(reference in url for url in urls) or any(
                    reference in value for option, value in options.items()
                    if option not in _LOGIN_OPTIONS):
                raise error
        for option in _LOGIN_OPTIONS:
            if any(f"${{{u.name}}}" in options.get(option, "") for u in mine):
                del options[option]

    def options(self, entry: Pending, options: dict[str, str]) -> None:
        """The URL's options that are msgcap settings, unless the file sets them itself."""
        mapped = {target: (option, options[option]) for option, target in _MAPPED.items()
                  if option in options}
        if "amqp.idleTimeout" in options:
            mapped["jms.heartbeat"] = ("amqp.idleTimeout",
                                       f"{_SEND_MS},{options['amqp.idleTimeout']}")
        destination = self.out.get("jms.destination") or self.items.get("jms.destination")
        kind = next((k for k in _PREFETCH if destination and destination.value.startswith(k)),
                    "/queue/")
        for option in (_PREFETCH[kind], _PREFETCH_ALL):
            if option in options:
                mapped["jms.prefetch"] = (option, options[option])
                break
        for target, (option, value) in mapped.items():
            if target not in self.items:
                self.out[target] = Pending(target, entry.entry, value,
                                           via=f"{entry.key} {option}")
        for option, (target, instead) in _KEY_STORES.items():
            if option not in options:
                continue
            if target not in self.items:
                raise PropertyError(f"{option}: msgcap cannot read Java key stores: set "
                                    f"{instead}", prop=entry.key, file=entry.entry.file,
                                    line=entry.entry.line)
            log.warning("%s: %s: %s ignored: %s is used", entry.entry.where, entry.key, option,
                        target)
        used = {*_MAPPED, _PREFETCH[kind], _PREFETCH_ALL, *_KEY_STORES, *_KEY_STORE_DETAILS}
        unused = sorted(option for option in options if option not in used)
        if unused:
            log.warning("%s: %s: URL options msgcap does not use: %s", entry.entry.where,
                        entry.key, listed(unused))


def _parse_connection(entry: Pending) -> tuple[list[str], dict[str, str]]:
    """The broker URLs of a ``connectionfactory`` entry (``amqp[s]://host:port[?options]`` or
    ``failover:(url,…)?options``) without their options, and the options by name."""
    value = entry.value.strip()

    def error(reason: str) -> PropertyError:
        return PropertyError(reason, prop=entry.key, file=entry.entry.file,
                             line=entry.entry.line)

    failover = _FAILOVER.match(value)
    if failover:
        inner, outer = [u.strip() for u in failover.group(1).split(",")], failover.group(2)
    elif value.lower().startswith("failover:"):
        raise error("is not failover:(amqp://host:port,…)?options")
    else:
        inner, outer = [value], None
    options: dict[str, str] = {}
    urls = []
    for url in inner:
        base, _, query = url.partition("?")
        scheme = base.partition("://")[0].lower()
        if scheme in ("amqpws", "amqpwss"):
            raise error(f"{scheme}:// (AMQP over WebSocket) is not supported: use amqp:// or "
                        "amqps://")
        if scheme not in ("amqp", "amqps"):
            raise error("a Qpid JMS connection factory names amqp:// or amqps:// brokers")
        urls.append(base)
        _merge(options, _query(query), error)
    for name, option in _query(outer or "").items():
        nested = name.removeprefix("failover.nested.")
        if nested != name or not name.startswith("failover."):
            _merge(options, {nested: option}, error)
        else:
            options[name] = option  # the reconnection policy: msgcap has its own
    return urls, options


def _query(query: str) -> dict[str, str]:
    """``a=1&b=2`` by name (percent-escapes decoded, as Qpid JMS decodes them)."""
    return dict(parse_qsl(query, keep_blank_values=True)) if query else {}


def _merge(options: dict[str, str], more: dict[str, str],
           error: Callable[[str], PropertyError]) -> None:
    """Options of several brokers: msgcap has one setting each, so they must agree."""
    for name, value in more.items():
        if options.setdefault(name, value) != value:
            raise error(f"option {name} differs between the brokers of the list: msgcap "
                        "uses one value for all")
