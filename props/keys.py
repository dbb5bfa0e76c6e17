"""Every property name the loader knows: the keys of each section, aliases, ignored keys, XML
rule attributes, and the expression forms each key accepts (properties.md §1–§12, §14).

One table per concept, read by the loader (classification, aliases), by the section builders
(``props.sections``) and by ``props.catalog`` (the list the user reference documents).
"""

from __future__ import annotations

from props import expr as ex
from props.settings import ParserType

PARSERS: tuple[ParserType, ...] = ("fixed", "delim", "xml")

GLOBAL_KEYS = frozenset({
    "parser.type",
    "jms.url", "jms.destination", "jms.user", "jms.password", "jms.prefetch", "jms.heartbeat",
    "jms.ssl.ca", "jms.ssl.cert", "jms.ssl.key", "jms.id", "jms.vhost", "jms.selector",
    "jms.ack", "jms.ack.batch",
    "jms.report.output", "jms.report.time", "jms.report.records",
    "trail.path", "trail.seqlen", "trail.megabytes", "trail.sync", "trail.byteorder",
    "trail.compressupdates", "trail.getupdatebefores", "trail.compressdeletes", "trail.defs",
    "trail.extract", "trail.uri", "trail.purge.minkeepfiles", "trail.purge.minkeephours",
    "trail.purge.maxmegabytes", "trail.purge.readers",
    "checkpoint.dir", "archive.dir", "error.policy", "error.file", "error.destination",
    "gg.log", "gg.log.level", "gg.log.file", "report.http", "report.http.allowremote",
    "report.heartbeat", "jms.spool.minage", "jms.maxbytes", "jms.sasl.mechanisms",
    "jms.connectionFactory", "java.naming.factory.initial", "java.naming.provider.url",
    "jms.client", "jvm.bootoptions", "connectionFactoryNames",
})

# First key segments of JNDI entries written in the properties file: Qpid JMS's
# (``connectionfactory.NAME=amqp://…``, ``queue.NAME``, ``topic.NAME``), which props.jndi
# resolves, and Artemis's ``connectionFactory.NAME``; with ActiveMQ's ``connectionFactoryNames``
# they go to a JMS provider's own InitialContext too (§8.2).
JNDI_HEADS = ("connectionfactory", "connectionFactory", "queue", "topic")
# Every ``java.naming.*`` property is the JNDI environment of a JMS provider (§8.2).
JNDI_PREFIX = "java.naming."

# What only a broker connection reads: the login, TLS files, virtual host, the JNDI
# environment (its credentials) and the connection factories. An unset ``${NAME}`` in one is
# an error of the commands that connect (run, send, check) only: the others (gendef, replay,
# batch, status) work without the broker's credentials in their environment (props.loader).
CONNECTION_KEYS = frozenset({"jms.user", "jms.password", "jms.vhost", "jms.ssl.ca",
                             "jms.ssl.cert", "jms.ssl.key"})
_JNDI_LOOKUP = ("java.naming.factory.initial", "java.naming.provider.url")  # resolved at load


def is_connection_key(key: str) -> bool:
    """A key whose unset ``${NAME}`` waits for a command that connects (CONNECTION_KEYS)."""
    if key in CONNECTION_KEYS:
        return True
    if key.startswith(JNDI_PREFIX):
        return key not in _JNDI_LOOKUP
    return key.partition(".")[0] in ("connectionfactory", "connectionFactory")


_OPTYPE_VALS = ("optype.insertval", "optype.updateval", "optype.deleteval")
_TXIND_VALS = ("txind.beginval", "txind.middleval", "txind.endval", "txind.wholeval")
_COMMON_ATTRS = ("optype", *_OPTYPE_VALS, "txind", *_TXIND_VALS, "timestamp", "timestamp.format",
                 "seqid", "txid", "txname", "txowner", "schema", "table", "dateformat",
                 "userdefs.tables")
SECTION_KEYS: dict[str, frozenset[str]] = {
    "fixed": frozenset(f"fixed.{a}" for a in (
        *_COMMON_ATTRS, "schematype", "copybook", "sourcedefs", "header", "encoding", "trunc")),
    "delim": frozenset(f"delim.{a}" for a in (
        *_COMMON_ATTRS, "optype.truncateval", "schemaandtable", "sourcedefs", "header",
        "fielddelim", "linedelim", "quote", "nullindicator", "fielddelim.escaped",
        "linedelim.escaped", "quote.escaped", "nullindicator.escaped", "hasbefores",
        "hasnames", "afterfirst", "isgrouped")),
    "xml": frozenset(f"xml.{a}" for a in (
        "sourcedefs", "rules", "dateformat", "maxbytes", "maxdepth", "userdefs.tables")),
}

# Properties that are accepted and ignored (§12).
IGNORED_QUIET = frozenset({"gg.log.classpath"})

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
                      "checkpoint", "archive", "error", "report", "gg", "jvm", "java",
                      *JNDI_HEADS})

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

# Expression forms of the fixed/delim items (§4, §5): a field or a JMS property, and more.
FIELD_FORMS = _F({ex.FIELD, ex.JMSPROP})
COMMON_FORMS: dict[str, frozenset[str]] = {
    "timestamp": FIELD_FORMS | {ex.TS},
    "seqid": FIELD_FORMS | {ex.JMSID, ex.SEQID},
    "txid": FIELD_FORMS | {ex.TXID},
    "txname": FIELD_FORMS | {ex.CONST}, "txowner": FIELD_FORMS | {ex.CONST},
    "optype": FIELD_FORMS, "txind": FIELD_FORMS, "table": FIELD_FORMS,
    "schemaandtable": FIELD_FORMS,
}


def is_rule_key(key: str) -> bool:
    """A key whose first segment is not a section: an XML rule's attribute."""
    head = key.partition(".")[0]
    return "." in key and head not in RESERVED
