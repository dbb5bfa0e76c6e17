"""Typed settings: defaults, validation and error texts of every section (properties §3–§14)."""

from __future__ import annotations

import logging
import pickle

import pytest

from props.errors import PropertyError
from props.expr import Const, Field, JmsId, JmsProp, SysSeqid, SysTs
from props.loader import load_settings, settings_from_text
from props.settings import (
    DateFormats,
    DelimSettings,
    ErrorSettings,
    FixedSettings,
    JmsSettings,
    LogSettings,
    OptypeValues,
    Settings,
    TrailSettings,
    TxindValues,
    UserColumn,
    XmlSettings,
)

FILE = "t.properties"
DELIM = "parser.type=delim\ndelim.sourcedefs=dirdef/x.def\ndelim.header=optype,schemaandtable\n"
FIXED = ("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=dirdef/x.cpy\n"
         "fixed.header=HEADER\n")
XML = ("parser.type=xml\nxml.sourcedefs=dirdef/x.def\nxml.rules=tx\ntx.type=tx\n"
       "tx.subrules=op\nop.type=op\nop.optype=@optype\nop.table=@table\n")


def load(text: str, env: dict[str, str] | None = None) -> Settings:
    return settings_from_text(text, FILE, env or {})


def fail(text: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(PropertyError) as err:
        load(text, env)
    message = str(err.value)
    assert "\n" not in message
    assert err.value.exit_code == 2
    return message


def line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith((key + "=", key + " ")):
            return number
    raise AssertionError(key)


# ---- global defaults -----------------------------------------------------------------------

def test_defaults():
    s = load(DELIM)
    assert s.file == FILE and s.parser_type == "delim" and s.parser is s.delim
    assert s.fixed is None and s.xml is None
    assert s.jms.url == () and s.jms.destination is None and s.jms.user is None
    assert s.jms.password is None and s.jms.prefetch == 1000
    assert s.jms.heartbeat == (10000, 10000) and s.jms.id == "time" and s.jms.id_kind == "time"
    assert s.jms.report_output == "report" and s.jms.report_time is None
    assert s.jms.report_records is None and not s.jms.is_dir
    t = s.trail
    assert (t.path, t.seqlen, t.megabytes, t.sync, t.byteorder) == (
        "dirdat/aa", 9, 100, "batch", "big")
    assert (t.compressupdates, t.getupdatebefores, t.compressdeletes) == (True, False, True)
    assert (t.defs, t.extract, t.uri, t.directory, t.prefix) == (
        None, "MSGCAP", None, "dirdat", "aa")
    assert s.checkpoint_dir == "dirchk" and s.archive_dir is None
    assert (s.error.policy, s.error.file) == ("abend", "dirrpt/msgcap.dsc")
    assert (s.log.level, s.log.file, s.log_file) == ("INFO", None, "dirrpt/MSGCAP.log")
    assert s.report_http is None


def test_unset_properties_take_the_dataclass_defaults():
    """The defaults are written once, in props.settings: the loader takes them from there."""
    s = load(DELIM)
    assert (s.jms, s.trail, s.error, s.log) == (
        JmsSettings(), TrailSettings(), ErrorSettings(), LogSettings())
    assert s.checkpoint_dir == Settings().checkpoint_dir
    for name in ("fielddelim", "linedelim", "quote", "hasbefores", "hasnames", "afterfirst",
                 "isgrouped"):
        assert getattr(s.delim, name) == getattr(DelimSettings(), name), name
    codes = OptypeValues()
    assert s.delim.optype_values.insert == codes.insert and s.delim.txind_values == TxindValues()
    assert (s.delim.optype_values.update, s.delim.optype_values.delete) == (codes.update,
                                                                         codes.delete)
    assert load(FIXED).fixed.encoding == FixedSettings().encoding
    xml = load(XML).xml
    assert (xml.maxbytes, xml.maxdepth) == (XmlSettings().maxbytes, XmlSettings().maxdepth)


def test_all_global_settings():
    s = load(DELIM + """
jms.url=stomp+ssl://mq1:61614, stomp+ssl://[::1]:61615
jms.destination=/topic/changes
jms.user=${U}
jms.password=${P}
jms.prefetch=200
jms.heartbeat=5000, 0
jms.ssl.ca=dirprm/ca.pem
jms.ssl.cert=dirprm/c.pem
jms.ssl.key=dirprm/c.key
jms.id=ActiveMQ
jms.report.output=both
jms.report.time=2min
jms.report.records=1000
trail.path=/var/gg/dirdat/id
trail.seqlen=6
trail.megabytes=2000
trail.sync=TRANSACTION
trail.byteorder=little
trail.compressupdates=false
trail.getupdatebefores=TRUE
trail.compressdeletes=False
trail.defs=dirdef/jmsvam.def
trail.extract=jmsvam
trail.uri=uri:etl1::opt:gg:JMSVAM
checkpoint.dir=chk
archive.dir=dirarc
error.policy=discard
error.file=dirrpt/J.dsc
gg.log=log4j
gg.log.level=trace
gg.log.file=dirrpt/J.log
report.http=127.0.0.1:9464
""", {"U": "app", "P": "pw"})
    j = s.jms
    assert j.url == ("stomp+ssl://mq1:61614", "stomp+ssl://[::1]:61615")
    assert (j.destination, j.user, j.password, j.prefetch, j.heartbeat) == (
        "/topic/changes", "app", "pw", 200, (5000, 0))
    assert (j.ssl_ca, j.ssl_cert, j.ssl_key) == ("dirprm/ca.pem", "dirprm/c.pem", "dirprm/c.key")
    assert (j.id, j.id_kind, j.report_output, j.report_time, j.report_records) == (
        "activemq", "activemq", "both", 120.0, 1000)
    t = s.trail
    assert (t.path, t.directory, t.prefix, t.seqlen, t.megabytes, t.sync, t.byteorder) == (
        "/var/gg/dirdat/id", "/var/gg/dirdat", "id", 6, 2000, "transaction", "little")
    assert (t.compressupdates, t.getupdatebefores, t.compressdeletes) == (False, True, False)
    assert (t.defs, t.extract, t.uri) == ("dirdef/jmsvam.def", "JMSVAM", "uri:etl1::opt:gg:JMSVAM")
    assert (s.checkpoint_dir, s.archive_dir, s.error.policy, s.error.file) == (
        "chk", "dirarc", "discard", "dirrpt/J.dsc")
    assert (s.log.level, s.log_file, s.report_http) == ("DEBUG", "dirrpt/J.log",
                                                       ("127.0.0.1", 9464))


def test_where_names_file_and_line():
    s = load(DELIM + "trail.path=dirdat/zz\n")
    assert s.where("trail.path") == f"{FILE}:4"
    assert s.where("delim.header") == f"{FILE}:3"
    assert s.where("trail.extract") == FILE


def test_settings_pickle_and_compare():
    s = load(DELIM + "jms.password=pw\n")
    assert pickle.loads(pickle.dumps(s)) == s


def test_load_settings_reads_a_file(tmp_path):
    path = tmp_path / "x.properties"
    path.write_text(DELIM + "trail.sync=none\n")
    s = load_settings(str(path), {})
    assert s.trail.sync == "none" and s.file == str(path)


def test_load_settings_missing_file(tmp_path):
    with pytest.raises(PropertyError, match="cannot read properties file"):
        load_settings(str(tmp_path / "nope.properties"), {})


def test_load_settings_not_utf8(tmp_path):
    path = tmp_path / "x.properties"
    path.write_bytes(b"parser.type=delim\n# \xff\n")
    with pytest.raises(PropertyError) as err:
        load_settings(str(path), {})
    assert str(err.value) == f"{path}:2: not valid UTF-8"


def test_env_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("MSGCAP_TEST_EXTRACT", "envx")
    s = settings_from_text(DELIM + "trail.extract=${MSGCAP_TEST_EXTRACT}\n")
    assert s.trail.extract == "ENVX"


def test_env_substitution_in_any_value():
    s = load(DELIM + "trail.path=${D}/aa\ndelim.fielddelim=${SEP}\n", {"D": "dd", "SEP": "|"})
    assert s.trail.path == "dd/aa" and s.delim.fielddelim == "|"


def test_unset_env_names_variable_file_and_line():
    assert fail(DELIM + "trail.extract=${EXTRACT}\n") == (
        f"{FILE}:4: trail.extract: environment variable EXTRACT is not set")


@pytest.mark.parametrize("key", ["jms.user", "jms.password", "jms.vhost", "jms.ssl.ca",
                                 "java.naming.security.credentials"])
def test_an_unset_variable_of_a_connection_setting_waits_for_a_connection(key):
    jms = load(DELIM + f"jms.url=stomp://mq1:61613\njms.destination=q\n{key}=${{MQ_X}}\n").jms
    assert (jms.user, jms.password, jms.vhost, jms.ssl_ca) == (None, None, "/", None)
    with pytest.raises(PropertyError) as info:
        jms.require_env()
    assert str(info.value) == f"{FILE}:6: {key}: environment variable MQ_X is not set"


def test_a_tls_pair_with_one_unset_variable_waits_too():
    jms = load(DELIM + "jms.ssl.cert=c.pem\njms.ssl.key=${KEY_FILE}\n").jms
    assert str(jms.unset_env) == f"{FILE}:5: jms.ssl.key: environment variable KEY_FILE is not set"
    assert fail(DELIM + "jms.ssl.cert=c.pem\n") == f"{FILE}:4: jms.ssl.cert: requires jms.ssl.key"


def test_a_connection_setting_s_bad_reference_is_still_refused_at_once():
    assert fail(DELIM + "jms.password=${MQ_PASSWORD\n") == (
        f"{FILE}:4: jms.password: unterminated ${{ (write $${{ for a literal ${{)")


def test_dollar_escape():
    s = load(DELIM + "jms.user=a$${B}\n")
    assert s.jms.user == "a${B}"


# ---- secrets -------------------------------------------------------------------------------

def test_password_never_in_repr():
    s = load(DELIM + "jms.password=${P}\n", {"P": "TopSecret99"})
    assert s.jms.password == "TopSecret99"
    assert "TopSecret99" not in repr(s) and "TopSecret99" not in repr(s.jms)
    assert "TopSecret99" not in str(s)


def test_password_never_in_errors_or_warnings(caplog):
    text = DELIM + "jms.password=TopSecret99  \njms.password=TopSecret99\n"
    with caplog.at_level(logging.DEBUG, logger="msgcap.props"):
        load(text)
        message = fail(text + "jms.pasword=TopSecret99\n")
    assert "did you mean jms.password" in message and "TopSecret99" not in message
    assert caplog.records and not any("TopSecret99" in r.getMessage() for r in caplog.records)


def test_jndi_credentials_never_printed(caplog):
    text = DELIM + ("java.naming.security.credentials=TopSecret99\n"
                    "java.naming.provider.url=tcp://x\njms.connectionFactory=cf\n")
    with caplog.at_level(logging.DEBUG, logger="msgcap.props"):
        settings = load(text)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [(f"{FILE}: ignored: java.naming.security.credentials (line 4): not used "
                        "by msgcap's own AMQP client (a provider's own client in a JVM reads "
                        "them: jms.client=jvm); the user and password are jms.user and "
                        "jms.password")]
    assert not any("TopSecret99" in r.getMessage() for r in caplog.records)
    assert "TopSecret99" not in str(settings.jms.url_required())


def test_ignored_quietly(caplog):
    # jvm.bootoptions without a JMS provider's JNDI: unused, as in every Oracle file (quiet)
    with caplog.at_level(logging.DEBUG, logger="msgcap.props"):
        load(DELIM + "jvm.bootoptions=-Xmx512m\ngg.log.classpath=x.jar\n")
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


# ---- global validation ---------------------------------------------------------------------

@pytest.mark.parametrize("extra, fragment", [
    ("jms.url=http://x:1", ("'http://x:1' is not stomp://host:port, stomp+ssl://host:port, "
                           "amqp://host:port, amqps://host:port or dir:PATH")),
    ("jms.url=stomp://host", "is not stomp://host:port"),
    ("jms.url=stomp://host:0", "port 0 out of range"),
    ("jms.url=stomp://h:1,,stomp://h:2", "empty entry"),
    ("jms.url=dir:a,stomp://h:1", "dir:PATH cannot be part of a failover list"),
    ("jms.url=dir:", "dir: needs a directory"),
    ("jms.destination=/queue/", "names no queue"),
    ("jms.destination=/other/x", "is not NAME, /queue/NAME or /topic/NAME"),
    ("jms.prefetch=0", "0 is out of range (≥ 1)"),
    ("jms.prefetch=ten", "'ten' is not an integer"),
    ("jms.heartbeat=5000", "is not send_ms,recv_ms"),
    ("jms.heartbeat=-1,5", "is not send_ms,recv_ms"),
    ("jms.id=wmq", ("WebSphere MQ ids are not available over STOMP; use a header or "
                   "module:function")),
    ("jms.id=a b", "is not a header name"),
    ("jms.id=mod:fn:x", "is not module:function"),
    ("jms.report.output=screen", "'screen' is not one of report, log, both"),
    ("jms.report.time=30", "is not <n>sec, <n>min, <n>hr or <n>ms"),
    ("jms.report.time=0sec", "is not <n>sec"),
    ("jms.report.time=5days", "is not <n>sec"),
    ("jms.report.records=0", "out of range"),
    ("trail.path=dirdat/abc", "is not DIR/XX"),
    ("trail.path=dirdat/1a", "is not DIR/XX"),
    ("trail.path=dirdat/", "is not DIR/XX"),
    ("trail.seqlen=8", "'8' is not 9 or 6"),
    ("trail.megabytes=2001", "2001 is out of range (1–2000)"),
    ("trail.megabytes=0", "out of range"),
    ("trail.sync=always", "is not one of transaction, batch, none"),
    ("trail.byteorder=middle", "is not one of big, little"),
    ("trail.compressupdates=yes", "'yes' is not a boolean (true or false)"),
    ("trail.extract=TOOLONGNAME", "is not 1–8 characters"),
    ("trail.extract=1ABC", "is not 1–8 characters"),
    ("trail.extract=AB-C", "is not 1–8 characters"),
    ("error.policy=ignore", "is not one of abend, discard"),
    ("jms.ack=auto", "'auto' is not one of client, client-individual"),
    ("jms.selector= ", "empty value"),
    ("jms.ack.batch=0", "out of range"),
    ("gg.log=slf4j", "is not one of JDK, log4j, logback"),
    ("gg.log.level=LOUD", "is not ERROR, WARN, INFO or DEBUG"),
    ("report.http=9464", "'9464' is not host:port"),
    ("report.http=host:99999", "is not host:port"),
    ("report.http=:80", "is not host:port"),
    ("archive.dir=", "empty value"),
])
def test_global_value_errors(extra, fragment):
    text = DELIM + extra + "\n"
    key = extra.partition("=")[0]
    message = fail(text)
    assert message.startswith(f"{FILE}:4: {key}: "), message
    assert fragment in message, message


def test_stomp_needs_destination():
    assert fail(DELIM + "jms.url=stomp://h:61613\n") == (
        f"{FILE}:4: jms.url: a broker source needs jms.destination")


STOMP = DELIM + "jms.url=stomp://h:61613\njms.destination=q\n"


def test_broker_options_and_their_defaults():
    s = load(STOMP)
    assert (s.jms.vhost, s.jms.selector, s.jms.ack, s.jms.ack_batch, s.error.destination) == (
        "/", None, "client", None, None)
    s = load(STOMP + "jms.vhost=/sales\njms.selector=region = 'EU'\njms.ack=Client-Individual\n"
             "error.policy=discard\nerror.destination=dead\n")
    assert (s.jms.vhost, s.jms.selector, s.jms.ack, s.error.destination) == (
        "/sales", "region = 'EU'", "client-individual", "/queue/dead")


@pytest.mark.parametrize("extra, fragment", [
    ("error.policy=discard\nerror.destination=/topic/dead",
     "error.destination: a topic keeps a message only for the subscribers"),
    ("error.policy=discard\nerror.destination=/other/dead", "is not NAME, /queue/NAME"),
    ("error.destination=dead", "error.destination: needs error.policy=discard"),
])
def test_dead_letter_destination_errors(extra, fragment):
    assert fragment in fail(STOMP + extra + "\n")


def test_dead_letter_destination_needs_a_broker():
    text = DELIM + "jms.url=dir:spool\nerror.policy=discard\nerror.destination=dead\n"
    assert "error.destination: needs a broker in jms.url" in fail(text)


def test_dir_url_needs_no_destination():
    s = load(DELIM + "jms.url=dir:dirspool\n")
    assert s.jms.url == ("dir:dirspool",) and s.jms.is_dir and s.jms.spool_dir == "dirspool"


def test_bare_destination_is_a_queue():
    assert load(DELIM + "jms.destination=sampleQ\n").jms.destination == "/queue/sampleQ"
    assert load(DELIM + "jms.destination=/queue/a.b\n").jms.destination == "/queue/a.b"


def test_ssl_cert_and_key_go_together():
    assert "requires jms.ssl.key" in fail(DELIM + "jms.ssl.cert=c.pem\n")
    assert "requires jms.ssl.cert" in fail(DELIM + "jms.ssl.key=c.key\n")


@pytest.mark.parametrize("value, kind, text", [
    ("ogg", "ogg", "ogg"), ("TIME", "time", "time"), ("JMSMessageID", "header", "JMSMessageID"),
    ("SEQNO", "header", "SEQNO"), ("my.mod:make_id", "callable", "my.mod:make_id"),
])
def test_jms_id_kinds(value, kind, text):
    s = load(DELIM + f"jms.id={value}\n")
    assert (s.jms.id, s.jms.id_kind) == (text, kind)


@pytest.mark.parametrize("value, seconds", [
    ("30sec", 30.0), ("30s", 30.0), ("5min", 300.0), ("5m", 300.0), ("1hr", 3600.0),
    ("2h", 7200.0), ("10 sec", 10.0), ("3HR", 10800.0),
])
def test_report_time_units(value, seconds):
    assert load(DELIM + f"jms.report.time={value}\n").jms.report_time == seconds


@pytest.mark.parametrize("value, level", [
    ("error", "ERROR"), ("WARN", "WARN"), ("warning", "WARN"), ("Info", "INFO"),
    ("DEBUG", "DEBUG"), ("TRACE", "DEBUG"),
])
def test_log_levels(value, level):
    assert load(DELIM + f"gg.log.level={value}\n").log.level == level


def test_report_http_ipv6():
    assert load(DELIM + "report.http=[::1]:0\n").report_http == ("::1", 0)


def test_trail_path_prefix_only():
    t = load(DELIM + "trail.path=Z9\n").trail
    assert (t.directory, t.prefix) == (".", "Z9")


def test_parser_type_required_and_checked():
    assert fail("jms.url=dir:x\n") == f"{FILE}: parser.type: required (fixed, delim or xml)"
    assert fail("parser.type=json\n") == (
        f"{FILE}:1: parser.type: 'json' is not one of fixed, delim, xml")
    assert load(DELIM.replace("delim\n", "DELIM\n", 1)).parser_type == "delim"


# ---- keys: unknown, duplicates, aliases ----------------------------------------------------

@pytest.mark.parametrize("key, suggestion", [
    ("delim.fieldelim", "delim.fielddelim"), ("jms.destinaton", "jms.destination"),
    ("trail.megabyte", "trail.megabytes"), ("Parser.Type", "parser.type"),
    ("checkpoint.directory", "checkpoint.dir"), ("delim.hasbefore", "delim.hasbefores"),
])
def test_unknown_key_suggests(key, suggestion):
    assert fail(DELIM + f"{key}=x\n") == (
        f"{FILE}:4: {key}: unknown property; did you mean {suggestion}?")


def test_unknown_key_without_suggestion():
    assert fail(DELIM + "zzzzzz=1\n") == f"{FILE}:4: zzzzzz: unknown property"


def test_unknown_key_in_file_order():
    message = fail(DELIM + "aaaa.bbbb=1\ntrail.pth=x\n")
    assert message.startswith(f"{FILE}:4: aaaa.bbbb: unknown property")


def test_fixed_has_no_schemaandtable():
    assert "unknown property" in fail(FIXED + "fixed.schemaandtable=x\n")


def test_duplicate_last_wins_with_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(DELIM + "trail.sync=none\n# x\ntrail.sync=transaction\n")
    assert s.trail.sync == "transaction" and s.where("trail.sync") == f"{FILE}:6"
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [f"{FILE}:6: trail.sync is set again; line 6 wins over line 4"]


def test_duplicate_unset_env_in_overridden_entry_is_ignored():
    assert load(DELIM + "jms.user=${NOPE}\njms.user=x\n").jms.user == "x"


@pytest.mark.parametrize("alias, canonical, attr, expected", [
    ("fixed.header.optype", "fixed.optype", "optype", Field("FUNCTION")),
])
def test_fixed_header_optype_alias(alias, canonical, attr, expected, caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(FIXED + f"{alias}=FUNCTION\n")
    assert getattr(s.fixed, attr) == expected
    assert s.where(canonical) == f"{FILE}:5"
    assert [r.getMessage() for r in caplog.records] == [
        f"{FILE}:5: {alias} is an alias of {canonical}; write {canonical}"]


def test_optype_value_aliases(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(DELIM + "delim.optype.insert=A\ndelim.optype.update=C\ndelim.optype.delete=X\n"
                 "delim.optype.truncate=Z\n")
        f = load(FIXED + "fixed.optype.insert=A\n")
    assert s.delim.optype_values == OptypeValues("A", "C", "X", "Z")
    assert f.fixed.optype_values == OptypeValues("A", "U", "D", None)
    assert len(caplog.records) == 5
    assert all("is an alias of" in r.getMessage() for r in caplog.records)


def test_recorddelim_aliases(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(DELIM + "delim.recorddelim=||\ndelim.recorddelim.escaped=%/%\n")
    assert (s.delim.linedelim, s.delim.linedelim_escaped) == ("||", "%/%")
    assert len(caplog.records) == 2


def test_dateformat_default_alias(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(DELIM + "delim.dateformat.default=YYYYMMDD\n")
    assert s.delim.dateformats.default == "YYYYMMDD"
    assert "delim.dateformat.default is an alias of delim.dateformat" in caplog.text


def test_alias_and_canonical_together_last_wins(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(DELIM + "delim.linedelim=a\ndelim.recorddelim=b\n")
    assert s.delim.linedelim == "b"
    assert "line 5 wins over line 4" in caplog.text


def test_xmlparser_form_is_an_error():
    assert fail(DELIM + "xmlparser.rules=genericrule\n") == (
        f"{FILE}:4: xmlparser.rules: the xmlparser.rules form is not supported: "
        "write `xml.rules=genericrule` and `genericrule.type=tx`")
    message = fail(DELIM + "xmlparser.rules.genericrule.type=tx\n")
    assert message == (f"{FILE}:4: xmlparser.rules.genericrule.type: the xmlparser.rules form "
                       "is not supported: write `xml.rules=genericrule` and "
                       "`genericrule.type=tx`")


def test_other_parsers_properties_ignored_with_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = load(DELIM + "fixed.header=H\nfixed.encoding=bogus\n")
    assert s.fixed is None
    assert "fixed.* properties are ignored because parser.type=delim" in caplog.text
    assert "fixed.header (line 4)" in caplog.text


# ---- common parser items -------------------------------------------------------------------

def test_delim_items():
    s = load("""parser.type=delim
delim.sourcedefs=dirdef/hrdemo.def
delim.header=optype, tablename , ts,txind,id,owner
delim.seqid=id
delim.timestamp=ts
delim.timestamp.format=YYYY-MM-DD:HH:MI:SS.FFF
delim.txid=$JMSTxId
delim.txowner=owner
delim.txname="fixedtx"
delim.optype=optype
delim.optype.deleteval=R
delim.optype.truncateval=\\x58
delim.schema="OGG"
delim.table=tablename
delim.txind=txind
delim.txind.wholeval=S
""")
    d = s.delim
    assert d.header == ("optype", "tablename", "ts", "txind", "id", "owner")
    assert (d.seqid, d.timestamp, d.txid) == (Field("id"), Field("ts"), JmsProp("JMSTxId"))
    assert d.timestamp_format == "YYYY-MM-DD:HH:MI:SS.FFF"
    assert (d.txowner, d.txname, d.optype) == (Field("owner"), Const("fixedtx"), Field("optype"))
    assert d.optype_values == OptypeValues("I", "U", "R", "X")
    assert (d.schema, d.table, d.schemaandtable) == (Const("OGG"), (Field("tablename"),), None)
    assert d.txind == Field("txind")
    assert d.txind_values == TxindValues(whole=("S",))


def test_delim_unset_items_are_none():
    d = load(DELIM).delim
    assert d.optype is None and d.txind is None and d.timestamp is None and d.seqid is None
    assert d.txid is None and d.txname is None and d.txowner is None and d.schema is None
    assert d.table == () and d.schemaandtable is None and d.timestamp_format is None


@pytest.mark.parametrize("key, value, allowed", [
    ("delim.seqid", "*ts", "$jmsid or *seqid"),
    ("delim.timestamp", "*seqid", "$property or *ts"),
    ("delim.txid", "$jmsid", "$property or *txid"),
    ("delim.optype", '"I"', "a header field name or $property"),
    ("delim.table", "*txid", "a header field name or $property"),
    ("delim.schemaandtable", '"A.B"', "a header field name or $property"),
    ("delim.txind", "*ts", "a header field name or $property"),
    ("delim.txname", "*ts", '$property or "value"'),
])
def test_delim_expression_forms(key, value, allowed):
    message = fail(DELIM + f"{key}={value}\n")
    assert message.startswith(f"{FILE}:4: {key}: {value!r} is not an accepted form; expected ")
    assert message.endswith(allowed)


def test_delim_field_must_be_in_header():
    assert fail(DELIM + "delim.timestamp=ts\n") == (
        f"{FILE}:4: delim.timestamp: field ts is not in delim.header")
    assert load(DELIM + "delim.table=SchemaAndTable\n").delim.table == (
        Field("SchemaAndTable"),)


@pytest.mark.parametrize("extra, key, fragment", [
    ("delim.optype.updateval=I", "delim.optype.updateval", ("value 'I' is both the insert and "
                                                            "the update value")),
    ("delim.optype.truncateval=D", "delim.optype.truncateval", "both the delete and the truncate"),
    ("delim.txind.beginval=1", "delim.txind.beginval", ("value '1' is in both the begin and the "
                                                        "middle set")),
    ("delim.txind.wholeval=B", "delim.txind.wholeval", "in both the begin and the whole set"),
    ("delim.optype.insertval=", "delim.optype.insertval", "empty value"),
])
def test_value_collisions(extra, key, fragment):
    message = fail(DELIM + extra + "\n")
    assert message.startswith(f"{FILE}:4: {key}: ") and fragment in message, message


def test_collision_between_two_configured_values_names_the_later():
    message = fail(DELIM + "delim.txind.endval=X\ndelim.txind.wholeval=X\n")
    assert message.startswith(f"{FILE}:5: delim.txind.wholeval: ")


def test_replacing_a_set_frees_its_values():
    s = load(DELIM + "delim.txind.beginval=1\ndelim.txind.middleval=B\n")
    assert s.delim.txind_values.begin == ("1",) and s.delim.txind_values.middle == ("B",)


def test_timestamp_format_checked():
    assert "bad fraction 'F0'" in fail(DELIM + "delim.timestamp.format=HH:MI:SS.F0\n")
    assert "fraction of 10 digits" in fail(DELIM + "delim.timestamp.format=SS.FFFFFFFFFF\n")
    assert load(DELIM + "delim.timestamp.format=SS.F6\n").delim.timestamp_format == "SS.F6"


# ---- delimiters ----------------------------------------------------------------------------

def test_delim_defaults():
    d = load(DELIM).delim
    assert (d.fielddelim, d.linedelim, d.quote, d.nullindicator) == (",", "\n", '"', None)
    assert (d.fielddelim_escaped, d.linedelim_escaped, d.quote_escaped,
            d.nullindicator_escaped) == (None, None, None, None)
    assert (d.hasbefores, d.hasnames, d.afterfirst, d.isgrouped) == (False, False, False, False)
    assert d.optype_values == OptypeValues("I", "U", "D", "T")
    assert d.txind_values == TxindValues()


def test_delimiters_decoded():
    d = load(DELIM + """delim.fielddelim=\\xc7
delim.linedelim=\\x0d\\x0a
delim.quote='
delim.nullindicator=NULL
delim.fielddelim.escaped=$#$
delim.linedelim.escaped=%/%
delim.quote.escaped=\\'
delim.nullindicator.escaped=$NULL$
delim.hasbefores=true
delim.hasnames=true
delim.afterfirst=true
delim.isgrouped=true
""").delim
    assert (d.fielddelim, d.linedelim, d.quote, d.nullindicator) == ("\u00c7", "\r\n", "'", "NULL")
    assert (d.fielddelim_escaped, d.linedelim_escaped, d.quote_escaped,
            d.nullindicator_escaped) == ("$#$", "%/%", "\\'", "$NULL$")
    assert (d.hasbefores, d.hasnames, d.afterfirst, d.isgrouped) == (True, True, True, True)


def test_trailing_space_in_delimiter_needs_x20(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        assert load(DELIM + "delim.fielddelim=; \n").delim.fielddelim == ";"
        assert load(DELIM + "delim.fielddelim=;\\x20\n").delim.fielddelim == "; "
    assert "trailing whitespace removed" in caplog.text


@pytest.mark.parametrize("extra, key, fragment", [
    ("delim.fielddelim=\\x0a", "delim.fielddelim", ("delim.fielddelim and delim.linedelim are "
                                                   "both '\\n'")),
    ("delim.quote=,", "delim.quote", "delim.quote and delim.fielddelim are both ','"),
    ("delim.fielddelim=\\xZ1", "delim.fielddelim", "\\x needs two hex digits"),
    ("delim.hasnames=1", "delim.hasnames", "'1' is not a boolean"),
    ("delim.fielddelim.escaped=,", "delim.fielddelim.escaped", "is the same as delim.fielddelim"),
    ("delim.quote.escaped=\\x22", "delim.quote.escaped", "is the same as delim.quote"),
])
def test_delimiter_errors(extra, key, fragment):
    message = fail(DELIM + extra + "\n")
    assert message.startswith(f"{FILE}:4: {key}: ") and fragment in message, message


@pytest.mark.parametrize("header, fragment", [
    ("a,,b", "empty name in the list"), ("a,B,b", "name b is listed twice"),
])
def test_delim_header_errors(header, fragment):
    text = f"parser.type=delim\ndelim.sourcedefs=x.def\ndelim.header={header}\n"
    assert fail(text) == f"{FILE}:3: delim.header: {fragment}"


def test_delim_required():
    assert fail("parser.type=delim\ndelim.sourcedefs=x\n") == f"{FILE}: delim.header: required"
    assert fail("parser.type=delim\ndelim.header=a\n") == (
        f"{FILE}: delim.sourcedefs: required (unless every table is user-defined with "
        "delim.userdefs.*)")


# ---- fixed ---------------------------------------------------------------------------------

def test_fixed_items():
    f = load(FIXED + """fixed.timestamp=$JMSTimeStamp
fixed.timestamp.format=YYYY-MM-DD-HH.MI.SS
fixed.seqid=*seqid
fixed.txid=$JMSTxId
fixed.txowner="jsmith"
fixed.txname=Hdr-Tx
fixed.optype=Hdr-Source-DB-Function
fixed.table=Hdr-Source-DB-Rec-Id, $Version
fixed.schema=MYSCHEMA
fixed.txind=$TX_IND
fixed.txind.beginval=0
fixed.encoding=cp037
""").fixed
    assert (f.schematype, f.copybook, f.sourcedefs, f.header) == (
        "copybook", "dirdef/x.cpy", None, "HEADER")
    assert (f.timestamp, f.timestamp_format) == (JmsProp("JMSTimeStamp"), "YYYY-MM-DD-HH.MI.SS")
    assert (f.seqid, f.txid, f.txowner, f.txname) == (
        SysSeqid(), JmsProp("JMSTxId"), Const("jsmith"), Field("Hdr-Tx"))
    assert f.optype == Field("Hdr-Source-DB-Function")
    assert f.table == (Field("Hdr-Source-DB-Rec-Id"), JmsProp("Version"))
    assert f.schema == Const("MYSCHEMA") and f.schemaandtable is None
    assert f.txind == JmsProp("TX_IND") and f.txind_values.begin == ("0",)
    assert f.encoding == "cp037" and f.optype_values.truncate is None


def test_fixed_quoted_schema_and_defaults():
    f = load(FIXED + 'fixed.schema="OGG"\nfixed.seqid=$jmsid\nfixed.timestamp=*ts\n').fixed
    assert (f.schema, f.seqid, f.timestamp, f.encoding) == (
        Const("OGG"), JmsId(), SysTs(), "ascii")


@pytest.mark.parametrize("extra, key, fragment", [
    ("fixed.schematype=cobol", "fixed.schematype", "is not one of copybook, sourcedefs"),
    ("fixed.encoding=utf-8", "fixed.encoding", "'utf-8' is not a single-byte character set"),
    ("fixed.encoding=shift_jis", "fixed.encoding", "not a single-byte character set"),
    ("fixed.encoding=nope", "fixed.encoding", "unknown encoding 'nope'"),
    ("fixed.table=a,,b", "fixed.table", "empty value"),
    ("fixed.table=*txid", "fixed.table", "expected a header field name or $property"),
    ("fixed.schema=\"\"", "fixed.schema", "empty schema name"),
    ("fixed.schema=$SCHEMA", "fixed.schema", "expected \"value\" (a constant schema name)"),
    ("fixed.schema=\"OGG", "fixed.schema", "expected \"value\""),
    ("fixed.optype=*ts", "fixed.optype", "expected a header field name or $property"),
    ("fixed.txid=*seqid", "fixed.txid", "expected a header field name, $property or *txid"),
    ("fixed.dateformat.ORDERS=YYMMDD", "fixed.dateformat.ORDERS",
     "needs a qualified table name"),
])
def test_fixed_errors(extra, key, fragment):
    message = fail(FIXED + extra + "\n")
    assert message.startswith(f"{FILE}:5: {key}: ") and fragment in message, message


@pytest.mark.parametrize("encoding", ["cp1047", "CP1047", "cp500", "latin-1", "cp273", "cp1140"])
def test_fixed_single_byte_encodings(encoding):
    assert load(FIXED + f"fixed.encoding={encoding}\n").fixed.encoding == encoding.replace(
        "CP", "cp")


def test_fixed_required():
    assert fail("parser.type=fixed\nfixed.header=H\n") == (
        f"{FILE}: fixed.schematype: required (copybook or sourcedefs)")
    assert fail("parser.type=fixed\nfixed.schematype=copybook\nfixed.header=H\n") == (
        f"{FILE}: fixed.copybook: required with fixed.schematype=copybook")
    assert fail("parser.type=fixed\nfixed.schematype=sourcedefs\nfixed.header=H\n") == (
        f"{FILE}: fixed.sourcedefs: required (unless every table is user-defined with "
        "fixed.userdefs.*)")
    assert fail("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=c\n") == (
        f"{FILE}: fixed.header: required")


# ---- date formats --------------------------------------------------------------------------

def test_dateformats_precedence():
    d = load(DELIM + """delim.dateformat=DD/MM/YYYY
delim.dateformat.MY.TABLE=YYMM
delim.dateformat.MY.TABLE.EXP_DATE=YYYYMMDD
delim.dateformat.cat.my.other=YYYY
""").delim.dateformats
    assert d.default == "DD/MM/YYYY"
    assert d.by_name == {"MY.TABLE": "YYMM", "MY.TABLE.EXP_DATE": "YYYYMMDD",
                         "CAT.MY.OTHER": "YYYY"}
    assert d.lookup("my.table", "exp_date") == "YYYYMMDD"
    assert d.lookup("MY.TABLE", "OTHER") == "YYMM"
    assert d.lookup("X.Y", "Z") == "DD/MM/YYYY"
    assert d.lookup("CAT.MY.OTHER", "C") == "YYYY"
    assert DateFormats().lookup("A.B", "C") is None


def test_dateformat_case_duplicate():
    message = fail(DELIM + "delim.dateformat.A.B=YY\ndelim.dateformat.a.b=YY\n")
    assert message.startswith(f"{FILE}:5: delim.dateformat.a.b: set twice")


# ---- user-defined tables -------------------------------------------------------------------

USERDEFS = """parser.type=fixed
fixed.schematype=sourcedefs
fixed.header=qasource.HEADER
fixed.userdefs.tables=qasource.HEADER, Q.T2
fixed.userdefs.qasource.HEADER.columns=optype,schemaandtable
fixed.userdefs.qasource.HEADER.optype=vchar 3
fixed.userdefs.qasource.HEADER.schemaandtable=vchar 30
fixed.userdefs.Q.T2.columns=ID, NAME, AMT, BIG, TS, D
fixed.userdefs.Q.T2.ID=number 10 key
fixed.userdefs.Q.T2.NAME=CHAR 20
fixed.userdefs.Q.T2.AMT=number 9,2
fixed.userdefs.Q.T2.BIG=number 30
fixed.userdefs.Q.T2.TS=datetime 26 KEY
fixed.userdefs.Q.T2.D=datetime  10
"""


def test_userdefs():
    f = load(USERDEFS).fixed
    assert f.sourcedefs is None
    header, t2 = f.userdefs
    assert header.name == "qasource.HEADER" and header.line == 4 and header.file == FILE
    assert header.columns == (UserColumn("optype", "vchar", 3), UserColumn("schemaandtable",
                                                                           "vchar", 30))
    assert t2.columns == (
        UserColumn("ID", "number", 10, 0, True), UserColumn("NAME", "char", 20),
        UserColumn("AMT", "number", 9, 2), UserColumn("BIG", "number", 30),
        UserColumn("TS", "datetime", 26, 0, True), UserColumn("D", "datetime", 10))


@pytest.mark.parametrize("old, new, key, fragment", [
    ("Q.T2.NAME=CHAR 20", "Q.T2.NAME=text 20", "fixed.userdefs.Q.T2.NAME",
     "'text 20' is not vchar n, char n, number p[,s] or datetime n"),
    ("Q.T2.NAME=CHAR 20", "Q.T2.NAME=char 2,1", "fixed.userdefs.Q.T2.NAME",
     "char takes one length"),
    ("Q.T2.NAME=CHAR 20", "Q.T2.NAME=char 0", "fixed.userdefs.Q.T2.NAME", "at least 1"),
    ("Q.T2.AMT=number 9,2", "Q.T2.AMT=number 2,3", "fixed.userdefs.Q.T2.AMT",
     "scale 3 exceeds precision 2"),
    ("Q.T2.D=datetime  10", "Q.T2.D=datetime 20", "fixed.userdefs.Q.T2.D",
     "datetime length 20 is not 10, 19 or 20+n"),
    ("tables=qasource.HEADER, Q.T2", "tables=qasource.HEADER, T2", "fixed.userdefs.tables",
     "'T2' is not a qualified table name"),
    ("tables=qasource.HEADER, Q.T2", "tables=qasource.HEADER, q.t2, Q.T2",
     "fixed.userdefs.tables", "table Q.T2 is listed twice"),
    ("Q.T2.columns=ID, NAME,", "Q.T2.columns=ID, NAME, id,", "fixed.userdefs.Q.T2.columns",
     "column id is listed twice"),
])
def test_userdefs_errors(old, new, key, fragment):
    text = USERDEFS.replace(old, new)
    assert text != USERDEFS
    message = fail(text)
    assert f": {key}: " in message and fragment in message, message
    assert message.startswith(f"{FILE}:{line_of(text, key)}: ")


def test_userdefs_missing_parts():
    text = USERDEFS.replace("fixed.userdefs.Q.T2.D=datetime  10\n", "")
    assert fail(text) == (f"{FILE}:8: fixed.userdefs.Q.T2.columns: column D needs its type in "
                          "fixed.userdefs.Q.T2.D")
    text = USERDEFS.replace("fixed.userdefs.Q.T2.columns=ID, NAME, AMT, BIG, TS, D\n", "")
    assert fail(text).startswith(f"{FILE}:4: fixed.userdefs.tables: table Q.T2 needs "
                                 "fixed.userdefs.Q.T2.columns")
    text = USERDEFS.replace("fixed.userdefs.tables=qasource.HEADER, Q.T2\n", "")
    assert fail(text).startswith(f"{FILE}:4: fixed.userdefs.qasource.HEADER.columns: "
                                 "user-defined tables need fixed.userdefs.tables")


def test_userdefs_unknown_key_suggests():
    message = fail(USERDEFS + "fixed.userdefs.Q.T2.NAM=char 2\n")
    assert message == (f"{FILE}:15: fixed.userdefs.Q.T2.NAM: unknown property (not a declared "
                       "user-defined table or column); did you mean fixed.userdefs.Q.T2.NAME?")


def test_userdefs_for_delim_and_xml():
    d = load("parser.type=delim\ndelim.header=a\ndelim.userdefs.tables=S.T\n"
             "delim.userdefs.S.T.columns=C\ndelim.userdefs.S.T.C=vchar 5 key\n").delim
    assert d.sourcedefs is None and d.userdefs[0].columns == (UserColumn("C", "vchar", 5, 0,
                                                                         True),)
    x = load(XML.replace("xml.sourcedefs=dirdef/x.def\n", "") + "xml.userdefs.tables=S.T\n"
             "xml.userdefs.S.T.columns=C\nxml.userdefs.S.T.C=char 1\n").xml
    assert x.sourcedefs is None and x.userdefs[0].name == "S.T"
