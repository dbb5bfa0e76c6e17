"""The ``jms.*`` section (properties.md §8, §9): where messages come from and how they are taken."""

from __future__ import annotations

import logging
import os
import re
import shlex
from typing import TYPE_CHECKING

from props.keys import JNDI_HEADS, JNDI_PREFIX
from props.reader import UNSIGNED, Reader, path_problem, split_host_port, split_list
from props.settings import URL_FORMS, IdKind, JmsSettings, JvmProvider
from props.text import listed, quoted

if TYPE_CHECKING:
    from props.jndi import Resolved

log = logging.getLogger("msgcap.props")

_JMS = JmsSettings()  # the defaults of unset properties
_PROTOCOLS = {"stomp": "STOMP", "stomp+ssl": "STOMP", "amqp": "AMQP", "amqps": "AMQP"}
AMQP_PORTS = {"amqp": 5672, "amqps": 5671}  # when an amqp[s]:// URL names none
# RFC 4422: upper-case letters, digits, '-' and '_', at most 20 characters.
_SASL_MECHANISM = re.compile(r"[A-Z0-9_\-]{1,20}\Z")
_NAMED_ID_KINDS: dict[str, IdKind] = {"ogg": "ogg", "time": "time", "activemq": "activemq"}
_CALLABLE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*\Z")


# What msgcap's own clients use and a JMS provider's own client sets its own way.
_NOT_ON_JVM = ("jms.heartbeat", "jms.ssl.ca", "jms.ssl.cert", "jms.ssl.key", "jms.vhost",
               "jms.sasl.mechanisms")
# ActiveMQ pages 200 messages at a time to a consumer: a larger commit group would wait for a
# receive to time out.
JVM_ACK_BATCH = 100


def jms_settings(r: Reader, jndi: Resolved | None = None) -> JmsSettings:
    """``jndi``: what props.jndi made of the JNDI properties (the line for a file that speaks of
    JNDI but gives no jms.url; whether a provider's own client is used)."""
    if jndi is not None and jndi.jvm:
        return _jvm_settings(r)
    url_missing = jndi.url_missing if jndi is not None else None
    urls: tuple[str, ...] = ()
    url_text = r.text("jms.url")
    if url_text is not None:
        urls = tuple(_url(r, item) for item in split_list(url_text))
        if len(urls) > 1 and any(u.startswith("dir:") for u in urls):
            raise r.error("jms.url", "dir:PATH cannot be part of a failover list")
        if len({protocol(u) for u in urls}) > 1:
            raise r.error("jms.url", "a failover list cannot mix STOMP and AMQP brokers")
    destination = r.text("jms.destination")
    if destination is not None:
        destination = broker_destination(r, destination)
    elif any(not u.startswith("dir:") for u in urls):
        raise r.error("jms.url", "a broker source needs jms.destination")
    ssl_cert, ssl_key = r.path("jms.ssl.cert"), r.path("jms.ssl.key")
    if ssl_cert and not ssl_key and not r.waiting("jms.ssl.key"):
        raise r.error("jms.ssl.cert", "requires jms.ssl.key")
    if ssl_key and not ssl_cert and not r.waiting("jms.ssl.cert"):
        raise r.error("jms.ssl.key", "requires jms.ssl.cert")
    id_text, id_kind = _jms_id(r)
    records = r.integer("jms.report.records", None, 1)
    return JmsSettings(
        url=urls, destination=destination,
        user=r.raw("jms.user"), password=r.raw("jms.password"),
        prefetch=r.integer("jms.prefetch", None, 1) or _JMS.prefetch,
        heartbeat=_heartbeat(r),
        ssl_ca=r.path("jms.ssl.ca"), ssl_cert=ssl_cert, ssl_key=ssl_key,
        vhost=r.text("jms.vhost") or _JMS.vhost, selector=r.text("jms.selector") or None,
        sasl_mechanisms=_sasl_mechanisms(r, urls),
        ack=r.choice("jms.ack", ("client", "client-individual"), _JMS.ack),
        ack_batch=r.integer("jms.ack.batch", None, 1),
        id=id_text, id_kind=id_kind,
        report_output=r.choice("jms.report.output", ("report", "log", "both"),
                               _JMS.report_output),
        report_time=r.duration("jms.report.time"), report_records=records,
        spool_minage=r.duration("jms.spool.minage") or _JMS.spool_minage,
        maxbytes=r.integer("jms.maxbytes", None, 1) or _JMS.maxbytes,
        url_missing=url_missing, unset_env=_unset_env(r),
    )


def _jvm_settings(r: Reader) -> JmsSettings:
    """A JMS provider's own client (§8.2): JNDI names as they are, the JVM's options, and the
    jms.* settings that keep their meaning there."""
    unused = [f"{key} (line {r.items[key].entry.line})" for key in _NOT_ON_JVM if key in r.items]
    if unused:
        log.warning("%s: ignored: %s: a JMS provider's own client sets these its own way "
                    "(its JNDI entries, URL options and jvm.bootoptions)", r.file,
                    listed(unused))
    if r.text("jms.ack") == "client-individual":
        raise r.error("jms.ack", "client-individual is not on a JMS provider's own client: "
                      "JMS acknowledges every message the session received at once")
    factory = r.text("java.naming.factory.initial") or ""
    names = {}
    for key in ("jms.connectionFactory", "jms.destination"):
        value = r.text(key)
        if not value:
            raise r.error(key, f"required: the JNDI name of the {key[4:]} "
                          f"({factory} is reached through JNDI)")
        names[key] = value
    environment = tuple((key, p.value) for key, p in r.items.items()
                        if key.startswith(JNDI_PREFIX) or key == "connectionFactoryNames"
                        or key.partition(".")[0] in JNDI_HEADS)
    classpath, options = _bootoptions(r)
    provider = JvmProvider(factory=factory, environment=environment,
                           connection_factory=names["jms.connectionFactory"],
                           destination=names["jms.destination"], classpath=classpath,
                           options=options)
    id_text, id_kind = _jms_id(r)
    return JmsSettings(
        destination=provider.destination, user=r.raw("jms.user"),
        password=r.raw("jms.password"),
        prefetch=r.integer("jms.prefetch", None, 1) or _JMS.prefetch,
        selector=r.text("jms.selector") or None,
        ack_batch=r.integer("jms.ack.batch", None, 1) or JVM_ACK_BATCH,
        id=id_text, id_kind=id_kind,
        report_output=r.choice("jms.report.output", ("report", "log", "both"),
                               _JMS.report_output),
        report_time=r.duration("jms.report.time"),
        report_records=r.integer("jms.report.records", None, 1),
        maxbytes=r.integer("jms.maxbytes", None, 1) or _JMS.maxbytes,
        provider=provider, unset_env=_unset_env(r),
    )


def _unset_env(r: Reader) -> str | None:
    """The line a command that connects says for the first unset variable of a connection
    setting (the others never read those settings)."""
    return str(r.unset[0]) if r.unset else None


def _bootoptions(r: Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``jvm.bootoptions``: the class path of ``-Djava.class.path=A:B`` (each entry as the JVM
    reads it, relative to the current directory; ``DIR/*`` every jar of DIR), and every other
    ``-D``/``-X`` option as it is. An entry that does not exist is a warning: Oracle's files
    name GoldenGate's own jars, which msgcap does not need."""
    value = r.text("jvm.bootoptions") or ""
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise r.error("jvm.bootoptions", f"cannot be split into options: {exc}") from None
    classpath: list[str] = []
    options: list[str] = []
    for word in words:
        if word.startswith("-Djava.class.path="):
            classpath += [e for e in word.partition("=")[2].split(os.pathsep) if e]
        elif word.startswith(("-D", "-X")):
            options.append(word)
        else:
            raise r.error("jvm.bootoptions", f"{quoted(word)} is not a JVM option (-Dname=value, "
                          "-X…); the class path is -Djava.class.path=A:B")
    missing = [e for e in classpath
               if not os.path.exists(e[:-2] if e.endswith(("/*", os.sep + "*")) else e)]
    if missing:
        log.warning("%s: jvm.bootoptions: class path entries that do not exist: %s", r.file,
                    listed(missing))
    return tuple(classpath), tuple(options)


def protocol(url: str) -> str:
    """``STOMP``, ``AMQP`` or ``dir`` for a checked ``jms.url`` entry."""
    return _PROTOCOLS.get(url.partition("://")[0].lower(), "dir")


def broker_destination(r: Reader, value: str, prop: str = "jms.destination") -> str:
    """``NAME`` (a queue), ``/queue/NAME`` or ``/topic/NAME``, as the broker names it."""
    for kind in ("/queue/", "/topic/"):
        if value.startswith(kind):
            if not value[len(kind):]:
                raise r.error(prop, f"{quoted(value)} names no {kind[1:-1]}")
            return value
    if value.startswith("/") or any(c.isspace() for c in value):
        raise r.error(prop, f"{quoted(value)} is not NAME, /queue/NAME or /topic/NAME")
    return f"/queue/{value}"


def _url(r: Reader, item: str) -> str:
    if not item:
        raise r.error("jms.url", "empty entry in the URL list")
    if item.startswith("dir:"):
        if not item[4:].strip():
            raise r.error("jms.url", "dir: needs a directory (dir:PATH)")
        problem = path_problem(item[4:])
        if problem:
            raise r.error("jms.url", problem)
        return item
    scheme, sep, rest = item.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _PROTOCOLS:
        raise r.error("jms.url", f"{quoted(item)} is not {URL_FORMS}")
    authority = rest.removesuffix("/")
    if "@" in authority:  # the error line shows the URL redacted (MsgcapError)
        raise r.error("jms.url", f"{quoted(item)}: user information in the URL is not "
                      "used; set jms.user and jms.password")
    if scheme in AMQP_PORTS:
        if "?" in authority:  # not quoted: the options may hold a password
            raise r.error("jms.url", f"{scheme}:// URL options (?…) are read from a Qpid JMS "
                          "connectionfactory entry only (§8.2): set the jms.* properties")
        if authority.endswith("]") or (":" not in authority and authority):
            authority = f"{authority}:{AMQP_PORTS[scheme]}"
    try:
        _, port = split_host_port(authority)
    except ValueError as exc:
        raise r.error("jms.url", f"{quoted(item)} is not {URL_FORMS}: {exc}") from None
    if int(port) == 0:
        raise r.error("jms.url", f"port 0 out of range in {quoted(item)}")
    return f"{scheme}://{authority}" if scheme in AMQP_PORTS else item


def _sasl_mechanisms(r: Reader, urls: tuple[str, ...]) -> tuple[str, ...]:
    """``jms.sasl.mechanisms``: names, space- or comma-separated, for an AMQP broker only
    (refused beside another jms.url, as ``error.destination`` is beside ``dir:``)."""
    value = r.text("jms.sasl.mechanisms")
    if value is None:
        return ()
    if urls and protocol(urls[0]) != "AMQP":
        raise r.error("jms.sasl.mechanisms", "applies to amqp:// and amqps:// only")
    names = [name for name in re.split(r"[\s,]+", value) if name]
    for name in names:
        if not _SASL_MECHANISM.match(name):
            raise r.error("jms.sasl.mechanisms", f"{quoted(name)} is not a SASL mechanism name "
                          "(upper-case letters, digits, - and _: PLAIN, ANONYMOUS, EXTERNAL, "
                          "SCRAM-SHA-256, …)")
    return tuple(dict.fromkeys(names))


def _jms_id(r: Reader) -> tuple[str, IdKind]:
    value = r.text("jms.id")
    if value is None:
        return _JMS.id, _JMS.id_kind
    lower = value.lower()
    kind = _NAMED_ID_KINDS.get(lower)
    if kind is not None:
        return kind, kind
    if lower == "wmq":
        raise r.error("jms.id", "WebSphere MQ ids are not available over STOMP; "
                      "use a header or module:function")
    if ":" in value:
        if not _CALLABLE_ID.match(value):
            raise r.error("jms.id", f"{quoted(value)} is not module:function")
        return value, "callable"
    if any(c.isspace() for c in value):
        raise r.error("jms.id", f"{quoted(value)} is not a header name")
    return value, "header"


def _heartbeat(r: Reader) -> tuple[int, int]:
    value = r.text("jms.heartbeat")
    if value is None:
        return _JMS.heartbeat
    parts = split_list(value)
    if len(parts) != 2 or not all(UNSIGNED.match(p) and len(p) <= 10 and int(p) < 2 ** 31
                                  for p in parts):
        raise r.error("jms.heartbeat", f"{quoted(value)} is not send_ms,recv_ms "
                      "(two integers, 0 to 2147483647)")
    return int(parts[0]), int(parts[1])
