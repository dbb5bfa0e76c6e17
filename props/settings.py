"""Typed, validated settings: the one frozen object every later layer is built from.

``props.loader.load_settings`` reads a properties file (properties.md), checks every property
and returns a ``Settings``; nothing later re-reads property text. Errors are PropertyError naming
file:line and property. Expressions are already parsed (props.expr); ``None`` for an item means
"not configured": the parser applies the default source of §3.2, since only it knows the header
fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from props.errors import PropertyError
from props.expr import Expr, XPath
from props.text import redact_urls

_NOWHERE = 0

# The enumerated settings: the loader accepts these values only (case-insensitively) and
# stores them as spelt here.
ParserType = Literal["fixed", "delim", "xml"]
SchemaType = Literal["copybook", "sourcedefs"]
# COBOL's TRUNC compiler option, as the producer of fixed-width messages was compiled with it
Trunc = Literal["std", "opt", "bin"]
IdKind = Literal["ogg", "time", "activemq", "header", "callable"]
ReportOutput = Literal["report", "log", "both"]
SyncMode = Literal["transaction", "batch", "none"]
ByteOrder = Literal["big", "little"]
ErrorPolicy = Literal["abend", "discard"]
LogLevel = Literal["ERROR", "WARN", "INFO", "DEBUG"]
AckMode = Literal["client", "client-individual"]

# What jms.url accepts, as its errors say it (properties.md §8).
URL_FORMS = ("stomp://host:port, stomp+ssl://host:port, amqp://host:port, amqps://host:port "
             "or dir:PATH")
URL_REQUIRED = f"required: {URL_FORMS}"


@dataclass(frozen=True, slots=True)
class OptypeValues:
    """Operation codes (§3.3); ``truncate`` is None where truncates are not supported."""

    insert: str = "I"
    update: str = "U"
    delete: str = "D"
    truncate: str | None = "T"


@dataclass(frozen=True, slots=True)
class TxindValues:
    """Transaction-indicator value sets (§3.4); a configured ``*val`` replaces one set."""

    begin: tuple[str, ...] = ("B", "0")
    middle: tuple[str, ...] = ("M", "1")
    end: tuple[str, ...] = ("E", "2")
    whole: tuple[str, ...] = ("W", "3")


@dataclass(frozen=True, slots=True)
class DateFormats:
    """DATETIME column formats: global, per table, per column (§4, §5, §6.1).

    ``by_name`` keys are the upper-cased suffixes ``T`` or ``T.C`` (T is a qualified name).
    """

    default: str | None = None
    by_name: dict[str, str] = field(default_factory=dict)

    def lookup(self, table: str, column: str) -> str | None:
        """Column format first, then table, then global; names case-insensitive."""
        table = table.upper()
        found = self.by_name.get(f"{table}.{column.upper()}")
        if found is None:
            found = self.by_name.get(table)
        return found if found is not None else self.default


@dataclass(frozen=True, slots=True)
class UserColumn:
    """One user-defined column (§7): ``length`` is n, or the precision p of ``number p,s``."""

    name: str
    kind: str  # 'vchar' | 'char' | 'number' | 'datetime'
    length: int
    scale: int = 0
    key: bool = False


@dataclass(frozen=True, slots=True)
class UserTable:
    """A table defined in properties (``<p>.userdefs.*``)."""

    name: str
    columns: tuple[UserColumn, ...]
    file: str = "<string>"
    line: int = _NOWHERE


@dataclass(frozen=True, slots=True, kw_only=True)
class ParserCommon:
    """Items shared by the fixed and delimited parsers (§3, §4, §5)."""

    optype: Expr | None = None
    optype_values: OptypeValues = OptypeValues(truncate=None)
    txind: Expr | None = None
    txind_values: TxindValues = TxindValues()
    timestamp: Expr | None = None
    timestamp_format: str | None = None
    seqid: Expr | None = None
    txid: Expr | None = None
    txname: Expr | None = None
    txowner: Expr | None = None
    schema: Expr | None = None
    table: tuple[Expr, ...] = ()
    schemaandtable: Expr | None = None
    dateformats: DateFormats = DateFormats()
    userdefs: tuple[UserTable, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FixedSettings(ParserCommon):
    """``fixed.*`` (§4). ``table`` holds one or more sources, concatenated by the parser."""

    schematype: SchemaType = "copybook"
    copybook: str | None = None
    sourcedefs: str | None = None
    header: str = ""
    encoding: str = "ascii"
    trunc: Trunc = "std"


@dataclass(frozen=True, slots=True, kw_only=True)
class DelimSettings(ParserCommon):
    """``delim.*`` (§5); delimiter values are decoded (``\\xhh`` applied)."""

    sourcedefs: str | None = None
    header: tuple[str, ...] = ()
    fielddelim: str = ","
    linedelim: str = "\n"
    quote: str = '"'
    nullindicator: str | None = None
    fielddelim_escaped: str | None = None
    linedelim_escaped: str | None = None
    quote_escaped: str | None = None  # None: the quote doubled
    nullindicator_escaped: str | None = None
    hasbefores: bool = False
    hasnames: bool = False
    afterfirst: bool = False
    isgrouped: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One XML rule (§6.2) with its subrules resolved into a tree.

    ``lines`` maps each configured attribute (``match``, ``before.value``, …) to its line, so
    later layers can name it in errors via ``where``.
    """

    name: str
    type: str  # 'tx' | 'op' | 'col'
    match: XPath | None = None
    subrules: tuple[Rule, ...] = ()
    file: str = "<string>"
    line: int = _NOWHERE
    lines: dict[str, int] = field(default_factory=dict)
    # tx and op rules
    timestamp: Expr | None = None
    timestamp_format: str | None = None
    seqid: Expr | None = None
    txid: Expr | None = None
    txname: Expr | None = None
    txowner: Expr | None = None
    # op rules
    schema: Expr | None = None
    table: Expr | None = None
    schemaandtable: Expr | None = None
    optype: Expr | None = None
    optype_values: OptypeValues = OptypeValues(truncate=None)
    txind: Expr | None = None
    txind_values: TxindValues = TxindValues()
    # col rules
    column_name: Expr | None = None  # <colrule>.name (``name`` is the rule's own name)
    index: Expr | None = None
    value: Expr | None = None
    isnull: Expr | None = None
    ismissing: Expr | None = None
    before_value: Expr | None = None
    before_isnull: Expr | None = None
    before_ismissing: Expr | None = None
    after_value: Expr | None = None
    after_isnull: Expr | None = None
    after_ismissing: Expr | None = None

    def __repr__(self) -> str:
        """Only the configured items: a rule tree's full repr would be mostly defaults."""
        shown = []
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name in ("name", "type") or (
                    item.name not in ("file", "line", "lines") and value != item.default
                    and not (item.name == "subrules" and not value)):
                shown.append(f"{item.name}={value!r}")
        return f"Rule({', '.join(shown)})"

    def where(self, attr: str | None = None) -> str:
        """``file:line`` of ``<rule>.<attr>`` (of ``<rule>.type`` without attr)."""
        line = self.lines.get(attr, self.line) if attr else self.line
        return f"{self.file}:{line}" if line else self.file

    def prop(self, attr: str) -> str:
        """The property name ``<rule>.<attr>``, for error messages."""
        return f"{self.name}.{attr}"


@dataclass(frozen=True, slots=True, kw_only=True)
class XmlSettings:
    """``xml.*`` and the rule tree (§6)."""

    sourcedefs: str | None = None
    rules: tuple[Rule, ...] = ()
    namespaces: dict[str, str] = field(default_factory=dict)
    maxbytes: int = 10485760
    maxdepth: int = 256
    dateformats: DateFormats = DateFormats()
    userdefs: tuple[UserTable, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class JvmProvider:
    """A JMS provider reached through its own client jars in a JVM inside msgcap (§8.2), as
    Oracle's adapter reaches it: ``jvm.bootoptions`` (``classpath`` and the other ``options``),
    the JNDI ``environment`` (every ``java.naming.*`` property and the provider's entries
    written in the file; values may be secrets: never in repr), and the JNDI names of the
    connection factory and the destination."""

    factory: str  # java.naming.factory.initial
    environment: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    connection_factory: str = ""
    destination: str = ""
    classpath: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """How logs and errors name it: the JNDI provider URL, else the URL of the connection
        factory's own entry (Artemis: ``connectionFactory.NAME``), without its query and its
        user information (which may hold a password), else the factory class."""
        environment = dict(self.environment)
        url = next((environment[key] for key in (
            "java.naming.provider.url", f"connectionFactory.{self.connection_factory}",
            f"connectionfactory.{self.connection_factory}") if environment.get(key)), "")
        url = redact_urls(url.partition("?")[0])
        return f"jndi:{url}" if url else f"jndi:{self.factory}"


@dataclass(frozen=True, slots=True, kw_only=True)
class JmsSettings:
    """``jms.*`` (§8, §9.1, §11). ``password`` never appears in repr."""

    url: tuple[str, ...] = ()
    destination: str | None = None  # normalised: a bare name becomes /queue/NAME
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    prefetch: int = 1000
    heartbeat: tuple[int, int] = (10000, 10000)
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    vhost: str = "/"  # STOMP CONNECT's host header, AMQP open's hostname ``vhost:NAME``
    selector: str | None = None  # JMS selector (ActiveMQ over STOMP; AMQP's selector filter)
    sasl_mechanisms: tuple[str, ...] = ()  # AMQP only; empty: derived from the credentials
    ack: AckMode = "client"  # cumulative; "client-individual": one ACK per message
    ack_batch: int | None = None  # most messages per commit group; None: the broker's default
    id: str = "time"  # 'ogg' | 'time' | 'activemq' | a header name | 'module:function'
    id_kind: IdKind = "time"
    report_output: ReportOutput = "report"
    report_time: float | None = None  # seconds
    report_records: int | None = None
    spool_minage: float = 0.0  # seconds a spool file must be unchanged before it is read
    maxbytes: int = 16777216  # largest message body, from any source (a larger one is refused)
    # Why jms.url is unset although the file speaks of JNDI, and what to set: one whole line
    # (file:line: property: reason), said instead of "jms.url: required" (props.jndi).
    url_missing: str | None = None
    provider: JvmProvider | None = None  # a JMS provider's own client (jms.url unset)
    # The first unset ``${NAME}`` of a setting only a broker connection reads (file:line:
    # property: environment variable NAME is not set); those settings are then left out.
    unset_env: str | None = None

    def require_env(self) -> None:
        """For the commands that connect (run, send, check): every ``${NAME}`` of the
        connection settings set, else the one line naming the first that is not."""
        if self.unset_env is not None:
            raise PropertyError(self.unset_env)

    def url_required(self, reason: str = URL_REQUIRED) -> PropertyError:
        """The error of a command that needs a broker and finds no ``jms.url``: the JNDI line
        when there is one (it says what to set), else ``reason``."""
        if self.url_missing is not None:
            return PropertyError(self.url_missing)
        return PropertyError(reason, prop="jms.url")

    @property
    def is_dir(self) -> bool:
        """True for the spool-directory source ``dir:PATH``."""
        return len(self.url) == 1 and self.url[0].startswith("dir:")

    @property
    def spool_dir(self) -> str | None:
        """PATH of ``dir:PATH``, else None."""
        return self.url[0][4:] if self.is_dir else None


@dataclass(frozen=True, slots=True, kw_only=True)
class PurgeSettings:
    """``trail.purge.*`` (§10.1.1): which old trail files a running capture removes, in the
    spirit of GoldenGate's PURGEOLDEXTRACTS. All unset: none (GoldenGate's default too)."""

    minkeepfiles: int | None = None  # keep at least the newest N files (the current one included)
    minkeephours: int | None = None  # keep every file modified less than N hours ago
    maxmegabytes: int | None = None  # remove finished files only while the trail is larger
    readers: tuple[str, ...] = ()  # position files of downstream readers

    @property
    def enabled(self) -> bool:
        return bool(self.minkeepfiles or self.minkeephours or self.maxmegabytes or self.readers)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrailSettings:
    """``trail.*`` (§10.1)."""

    path: str = "dirdat/aa"
    seqlen: int = 9
    megabytes: int = 100
    sync: SyncMode = "batch"
    byteorder: ByteOrder = "big"
    compressupdates: bool = True
    getupdatebefores: bool = False
    compressdeletes: bool = True
    defs: str | None = None
    extract: str = "MSGCAP"
    uri: str | None = None
    purge: PurgeSettings = PurgeSettings()

    @property
    def directory(self) -> str:
        """Directory part of ``path`` ('.' when the path is only the prefix)."""
        head, _, _ = self.path.rpartition("/")
        return head or ("/" if self.path.startswith("/") else ".")

    @property
    def prefix(self) -> str:
        """The two-character file prefix."""
        return self.path.rpartition("/")[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorSettings:
    """``error.*`` (§10.4)."""

    policy: ErrorPolicy = "abend"
    file: str = "dirrpt/msgcap.dsc"
    destination: str | None = None  # discard to this STOMP destination instead of the file


@dataclass(frozen=True, slots=True, kw_only=True)
class LogSettings:
    """``gg.log*`` (§11). ``file`` None means ``dirrpt/<trail.extract>.log``."""

    level: LogLevel = "INFO"
    file: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything one properties file configures; only the selected parser's section is set."""

    file: str = "<string>"
    parser_type: ParserType = "delim"
    fixed: FixedSettings | None = None
    delim: DelimSettings | None = None
    xml: XmlSettings | None = None
    jms: JmsSettings = JmsSettings()
    trail: TrailSettings = TrailSettings()
    checkpoint_dir: str = "dirchk"
    archive_dir: str | None = None
    error: ErrorSettings = ErrorSettings()
    log: LogSettings = LogSettings()
    report_http: tuple[str, int] | None = None
    report_heartbeat: float | None = None  # seconds between heartbeats of msgcap run
    partition: int | None = None  # what ${PARTITION} stands for (props.partition); None: unpartitioned
    lines: dict[str, int] = field(default_factory=dict)  # canonical property -> line

    def where(self, prop: str) -> str:
        """``file:line`` of a property (just the file when it was not set)."""
        line = self.lines.get(prop)
        return f"{self.file}:{line}" if line else self.file

    @property
    def parser(self) -> FixedSettings | DelimSettings | XmlSettings:
        """The section of the selected parser."""
        section = {"fixed": self.fixed, "delim": self.delim, "xml": self.xml}[self.parser_type]
        assert section is not None, "settings built without their parser section"
        return section

    @property
    def log_file(self) -> str:
        """The log file of ``msgcap run``: ``gg.log.file`` or ``dirrpt/<trail.extract>.log``."""
        return self.log.file or f"dirrpt/{self.trail.extract}.log"
