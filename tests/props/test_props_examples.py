"""The example property files of properties.md §15 all load, with the values they document."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from props.errors import PropertyError
from props.expr import Const, Field, JmsId, SysTxid, XPath
from props.loader import load_settings
from props.settings import OptypeValues, Settings, UserColumn

EXAMPLES = Path(__file__).parent / "examples"
ENV = {"MQ_USER": "capture", "MQ_PASSWORD": "Pa55-w0rd"}


def example(name: str, env: dict[str, str] | None = None) -> Settings:
    return load_settings(str(EXAMPLES / name), ENV if env is None else env)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.properties")))
def test_every_example_loads_without_warnings(name, caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        s = example(name)
    assert not caplog.records, caplog.text
    assert s.parser is not None


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.properties")))
def test_every_example_runs_from_a_spool_directory(name, tmp_path):
    text = (EXAMPLES / name).read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith(("jms.url", "jms.destination"))]
    path = tmp_path / name
    path.write_text("\n".join([*lines, "jms.url=dir:dirspool", ""]))
    s = load_settings(str(path), ENV)
    assert s.jms.is_dir and s.jms.spool_dir == "dirspool"


def test_fixed_copybook():
    s = example("fixed_copybook.properties")
    assert s.parser_type == "fixed" and s.log.level == "INFO"
    assert s.jms.url == ("stomp://127.0.0.1:61613",)
    assert s.jms.destination == "/queue/retail.changes"
    assert (s.jms.user, s.jms.password) == ("capture", "Pa55-w0rd")
    assert (s.jms.id, s.trail.path, s.trail.extract, s.trail.defs) == (
        "activemq", "dirdat/rt", "RETAIL", "dirdef/retail.def")
    f = s.fixed
    assert (f.schematype, f.copybook, f.header) == ("copybook", "dirdef/retail.cpy", "HEADER")
    assert (f.timestamp, f.optype, f.table) == (
        Field("HDR-TIMESTAMP"), Field("HDR-FUNCTION"), (Field("HDR-REC-ID"),))
    assert f.optype_values == OptypeValues("A", "C", "D", None)
    assert (f.schema, f.seqid, f.txid) == (Const("RETAIL"), JmsId(), SysTxid())
    assert f.txind is None and f.timestamp_format is None
    assert "Pa55-w0rd" not in repr(s)


def test_fixed_copybook_needs_its_env_vars():
    jms = example("fixed_copybook.properties", {"MQ_USER": "u"}).jms  # said when connecting
    assert jms.user == "u" and jms.password is None
    with pytest.raises(PropertyError) as err:
        jms.require_env()
    assert str(err.value) == (f"{EXAMPLES / 'fixed_copybook.properties'}:6: jms.password: "
                              "environment variable MQ_PASSWORD is not set")


def test_fixed_sourcedefs_user_header():
    s = example("fixed_sourcedefs.properties", {})
    assert s.jms.is_dir and (s.jms.id, s.jms.id_kind) == ("JMSMessageID", "header")
    f = s.fixed
    assert (f.schematype, f.sourcedefs, f.header) == (
        "sourcedefs", "dirdef/tcustmer.def", "qasource.HEADER")
    (header,) = f.userdefs
    assert header.name == "qasource.HEADER"
    assert header.columns == (UserColumn("optype", "vchar", 3),
                              UserColumn("schemaandtable", "vchar", 30))
    assert sum(c.length for c in header.columns) == 33
    # optype, table, timestamp, seqid, txid: the parser's defaults (§3.2)
    assert (f.optype, f.table, f.timestamp, f.seqid, f.txid) == (None, (), None, None, None)


def test_delim():
    s = example("delim.properties", {})
    assert s.jms.destination == "/queue/sales.changes" and s.jms.id == "time"
    assert (s.trail.path, s.trail.compressupdates, s.error.policy) == (
        "dirdat/sa", True, "discard")
    d = s.delim
    assert d.sourcedefs == "dirdef/sales.def"
    assert d.header == ("optype", "schemaandtable", "timestamp", "txind", "id")
    assert (d.txid, d.fielddelim, d.linedelim, d.quote, d.nullindicator) == (
        SysTxid(), ",", "\n", '"', "NULL")
    assert d.dateformats.lookup("SALES.ORDERS", "UPDATED") == "YYYY-MM-DD HH:MI:SS.FFFFFF"
    assert d.dateformats.lookup("SALES.CUSTOMER", "CREATED") is None
    assert d.optype_values.truncate == "T"


def test_xml():
    s = example("xml.properties", {})
    assert (s.jms.id, s.jms.id_kind, s.jms.destination) == ("SEQNO", "header", "/queue/xmlQ")
    x = s.xml
    assert x.sourcedefs == "dirdef/mytable.def"
    dyn, stat = x.rules
    assert (dyn.name, dyn.type, dyn.match, dyn.timestamp) == (
        "dyntxrule", "tx", XPath("/transaction"), XPath("@ts"))
    (dynop,) = dyn.subrules
    assert (dynop.type, dynop.match, dynop.schemaandtable, dynop.optype) == (
        "op", XPath("./operation"), XPath("@table"), XPath("@optype"))
    (dyncol,) = dynop.subrules
    assert (dyncol.type, dyncol.column_name, dyncol.index) == ("col", XPath("@name"),
                                                               XPath("@index"))
    assert dyncol.before_value == XPath("./beforevalue/text()")
    assert dyncol.after_isnull == XPath("./aftervalue/@isnull")
    (statop,) = stat.subrules
    assert (statop.schemaandtable, statop.optype, statop.timestamp) == (
        Const("MY.TABLE"), Const("I"), XPath("./CreateTime/text()"))
    assert [c.name for c in statop.subrules] == ["statkeycolrule", "statcol1rule"]
    assert [c.column_name for c in statop.subrules] == [Const("keycol"), Const("col1")]
    assert statop.subrules[0].value == XPath("./text()")


def test_section_7_userdefs_example():
    text = (EXAMPLES / "fixed_sourcedefs.properties").read_text()
    assert "fixed.userdefs.qasource.HEADER.optype=vchar 3" in text
