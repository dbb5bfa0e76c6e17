"""``gendef`` end to end through the console script, on the property files of properties.md §15."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gendef.defgen import FIELD_NAMES

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
EPOCH = "1709288100"  # 2024-03-01 10:15 UTC

HEADER = "".join([
    "*+- Defgen version 4.0, Encoding UTF-8\n*\n",
    "* Definitions created/modified  2024-03-01 10:15\n*\n",
    "*  Field descriptions for each column entry:\n*\n",
    *(f"*{i:>6}    {name}\n" for i, name in enumerate(FIELD_NAMES, 1)),
    "*\nDatabase type: GENERIC\nCharacter set ID: UTF-8\nNational character set ID: UTF-16\n",
    "Locale: neutral\nCase sensitivity: 14 14 14 14 14 14 14 14 14 14 14 14 11 14 14 14\n",
    "TimeZone: GMT\n*\n",
])

COPYBOOK_PROPS = """\
# dirprm/jmsvam.properties
gg.log.level=INFO
jms.url=stomp://127.0.0.1:61613
jms.destination=retail.changes
jms.user=${MQ_USER}
jms.password=${MQ_PASSWORD}
jms.id=activemq
trail.path=dirdat/rt
trail.extract=RETAIL
trail.defs=dirdef/retail.def

parser.type=fixed
fixed.schematype=copybook
fixed.copybook=dirdef/retail.cpy
fixed.header=HEADER
fixed.timestamp=HDR-TIMESTAMP
fixed.optype=HDR-FUNCTION
fixed.optype.insertval=A
fixed.optype.updateval=C
fixed.optype.deleteval=D
fixed.table=HDR-REC-ID
fixed.schema="RETAIL"
fixed.seqid=$jmsid
fixed.txid=*txid
"""

SOURCEDEFS_PROPS = """\
jms.url=dir:dirspool
jms.id=JMSMessageID
parser.type=fixed
fixed.schematype=sourcedefs
fixed.sourcedefs=dirdef/tcustmer.def
fixed.userdefs.tables=qasource.HEADER
fixed.userdefs.qasource.HEADER.columns=optype,schemaandtable
fixed.userdefs.qasource.HEADER.optype=vchar 3
fixed.userdefs.qasource.HEADER.schemaandtable=vchar 30
fixed.header=qasource.HEADER
"""

DELIM_PROPS = """\
jms.url=stomp://127.0.0.1:61613
jms.destination=/queue/sales.changes
trail.path=dirdat/sa
parser.type=delim
delim.sourcedefs=dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.txid=*txid
delim.nullindicator=NULL
delim.dateformat.SALES.ORDERS.UPDATED=YYYY-MM-DD HH:MI:SS.FFFFFF
"""

XML_PROPS = """\
jms.url=stomp://127.0.0.1:61613
jms.destination=xmlQ
jms.id=SEQNO
parser.type=xml
xml.sourcedefs=dirdef/mytable.def
xml.rules=stattxrule
stattxrule.type=tx
stattxrule.match=/NewMyTableEntries
stattxrule.subrules=statoprule
statoprule.type=op
statoprule.match=./NewMyTableEntry
statoprule.schemaandtable="MY.TABLE"
statoprule.optype="I"
statoprule.timestamp=./CreateTime/text()
statoprule.subrules=statkeycolrule
statkeycolrule.type=col
statkeycolrule.match=./KeyCol
statkeycolrule.name="keycol"
statkeycolrule.value=./text()
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A GoldenGate-style working directory with dirprm/ and the spec's dirdef/ files."""
    (tmp_path / "dirprm").mkdir()
    dirdef = tmp_path / "dirdef"
    dirdef.mkdir()
    shutil.copy(DATA / "retail.cpy", dirdef / "retail.cpy")
    shutil.copy(DATA / "tcustmer_oracle.def", dirdef / "tcustmer.def")
    shutil.copy(DATA / "sales.def", dirdef / "sales.def")
    shutil.copy(DATA / "mytable.def", dirdef / "mytable.def")
    return tmp_path


def gendef(home: Path, *args: str, props: str | None = None, **env: str):
    if props is not None:
        (home / "dirprm" / "jmsvam.properties").write_text(props)
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": EPOCH,
                "MQ_USER": "u", "MQ_PASSWORD": "secret", **env}
    return subprocess.run([sys.executable, "-m", "gendef.cli", *args], cwd=home, env=full_env,
                          capture_output=True, text=True, timeout=60, check=False)


PROP = ("-prop", "dirprm/jmsvam.properties")


def assert_one_line_error(result, *words: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gendef: error: ")
    assert "Traceback" not in result.stderr
    for w in words:
        assert w in lines[0], lines[0]


# -- the four example configurations ------------------------------------------------------------

@pytest.mark.parametrize(("props", "expected"), [
    (COPYBOOK_PROPS, "retail_expected.txt"),
    (SOURCEDEFS_PROPS, "tcustmer_gendef.txt"),
    (DELIM_PROPS, "sales_gendef.txt"),
    (XML_PROPS, "mytable_gendef.txt"),
])
def test_examples_on_stdout(home: Path, props: str, expected: str) -> None:
    r = gendef(home, *PROP, props=props)
    assert r.returncode == 0, r.stderr
    assert r.stdout == HEADER + (DATA / expected).read_text()
    assert r.stderr == ""


def test_out_file_and_long_options(home: Path) -> None:
    r = gendef(home, "--prop", "dirprm/jmsvam.properties", "--out", "dirdef/msgdefs.def",
               props=COPYBOOK_PROPS)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert "wrote 2 table definitions to dirdef/msgdefs.def" in r.stderr
    out = (home / "dirdef" / "msgdefs.def").read_text()
    assert out == HEADER + (DATA / "retail_expected.txt").read_text()
    assert sorted(p.name for p in (home / "dirdef").iterdir()) == [
        "msgdefs.def", "mytable.def", "retail.cpy", "sales.def", "tcustmer.def"]


def test_gendef_output_fed_back_gives_the_same_bytes(home: Path) -> None:
    """Text columns already sized for their characters (field 22 set) are not sized again."""
    first = gendef(home, *PROP, "-out", "dirdef/gen1.def", props=DELIM_PROPS)
    assert first.returncode == 0, first.stderr
    assert "     30 0 0\n" in (home / "dirdef/gen1.def").read_text()
    again = gendef(home, *PROP, "-out", "dirdef/gen2.def",
                   props=DELIM_PROPS.replace("dirdef/sales.def", "dirdef/gen1.def"))
    assert again.returncode == 0, again.stderr
    assert (home / "dirdef/gen1.def").read_bytes() == (home / "dirdef/gen2.def").read_bytes()


def test_date_line_without_source_date_epoch(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    (home / "dirprm" / "jmsvam.properties").write_text(XML_PROPS)
    r = subprocess.run([sys.executable, "-m", "gendef.cli", *PROP], cwd=home,
                       env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert "* Definitions created/modified  20" in r.stdout
    assert "2024-03-01 10:15" not in r.stdout


def test_help(home: Path) -> None:
    r = gendef(home, "--help")
    assert r.returncode == 0
    assert "-prop FILE" in r.stdout and "-out FILE" in r.stdout and "SOURCE_DATE_EPOCH" in r.stdout


# -- logging ------------------------------------------------------------------------------------

def test_log_level_controls_info(home: Path) -> None:
    quiet = gendef(home, *PROP, "-out", "x.def", props="gg.log.level=WARN\n" + XML_PROPS)
    assert quiet.returncode == 0 and quiet.stderr == ""
    debug = gendef(home, *PROP, props="gg.log.level=TRACE\n" + XML_PROPS)
    assert debug.returncode == 0 and "gendef: DEBUG:" in debug.stderr


def test_warnings_go_to_stderr(home: Path) -> None:
    odd = (DATA / "tcustmer_oracle.def").read_text().replace("       46  ", "       44  ")
    (home / "dirdef" / "sales.def").write_text(odd)
    r = gendef(home, *PROP, props=DELIM_PROPS)
    assert r.returncode == 0, r.stderr
    assert "gendef: WARNING: dirdef/sales.def:" in r.stderr and "CITY" in r.stderr
    assert "      148  " in r.stdout  # output offsets follow the slot rule (text: 4 bytes each)


# -- errors -------------------------------------------------------------------------------------

def test_missing_arguments_and_files(home: Path) -> None:
    assert_one_line_error(gendef(home), "-prop")
    assert_one_line_error(gendef(home, "\u2013prop", "x"), "write -prop")
    assert_one_line_error(gendef(home, "-prop", "dirprm/none.properties"),
                          "dirprm/none.properties", "cannot read")
    assert_one_line_error(gendef(home, *PROP, props=DELIM_PROPS.replace("sales.def", "no.def")),
                          "delim.sourcedefs: dirdef/no.def: no such file (relative to the "
                          f"working directory {home}, not to the properties file)")


@pytest.mark.parametrize(("defs_text", "words"), [
    (lambda t: t.replace("CITY      64     20", "CITY      64     x0"),
     ["dirdef/sales.def:7:", "CITY", "not an integer"]),
    (lambda t: t.replace("Columns: 5", "Columns: 6"),
     ["dirdef/sales.def:", "Columns: 6", "5 column lines"]),
    (lambda t: t + "*\n" + t.split("*\n")[0],
     ["dirdef/sales.def:", "duplicate table SALES.CUSTOMER"]),
    (lambda t: t.replace(" 0 0 0\nCITY", " 0 0\nCITY"),
     ["dirdef/sales.def:6:", "NAME", "23 fields"]),
])
def test_bad_definitions_leave_out_untouched(home: Path, defs_text, words: list[str]) -> None:
    out = home / "dirdef" / "msgdefs.def"
    out.write_text("previous\n")
    sales = home / "dirdef" / "sales.def"
    sales.write_text(defs_text(sales.read_text()))
    assert_one_line_error(gendef(home, *PROP, "-out", str(out), props=DELIM_PROPS), *words)
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "msgdefs.def", "mytable.def", "retail.cpy", "sales.def", "tcustmer.def"]


def test_bad_property_values(home: Path) -> None:
    assert_one_line_error(gendef(home, *PROP, props="gg.log.level=LOUD\n" + XML_PROPS),
                          "jmsvam.properties:1:", "gg.log.level")
    bad_type = SOURCEDEFS_PROPS.replace("optype=vchar 3", "optype=varchar 3")
    assert_one_line_error(gendef(home, *PROP, props=bad_type),
                          "fixed.userdefs.qasource.HEADER.optype")
    clash = SOURCEDEFS_PROPS.replace("qasource.HEADER", "GG.JMSCAP_TCUSTMER")
    assert_one_line_error(gendef(home, *PROP, props=clash),
                          "fixed.userdefs.tables", "GG.JMSCAP_TCUSTMER")
    no_header = SOURCEDEFS_PROPS.replace("fixed.header=qasource.HEADER", "fixed.header=X.Y")
    assert_one_line_error(gendef(home, *PROP, props=no_header), "fixed.header", "X.Y")


def test_copybook_error_is_one_line(home: Path) -> None:
    (home / "dirdef" / "retail.cpy").write_text(
        (DATA / "retail.cpy").read_text().replace("PIC X(30).", "PIC X(30"))
    r = gendef(home, *PROP, props=COPYBOOK_PROPS)
    assert_one_line_error(r, "dirdef/retail.cpy:")


def test_huge_occurs_is_refused_at_once_in_one_line(home: Path) -> None:
    """``OCCURS 99999999`` used to grow gendef by ~24 MB/s until killed (issue 11, item 4)."""
    (home / "dirdef" / "retail.cpy").write_text(
        (DATA / "retail.cpy").read_text() + "           05  E2 PIC X OCCURS 99999999 TIMES.\n")
    r = gendef(home, *PROP, props=COPYBOOK_PROPS)
    assert_one_line_error(r, "dirdef/retail.cpy:", "field E2", "OCCURS 99999999",
                          "more than 65,535")


def test_copybook_without_schema_is_refused_in_one_line(home: Path) -> None:
    """Without fixed.schema the messages name the schemas, so gendef cannot name the tables."""
    r = gendef(home, *PROP, props=COPYBOOK_PROPS.replace('fixed.schema="RETAIL"\n', ""))
    assert_one_line_error(r, "fixed.schema: needed to write source definitions")


@pytest.mark.parametrize(("props", "typo", "words"), [
    (COPYBOOK_PROPS, ("fixed.optype=HDR-FUNCTION", "fixed.optype=H-OPP"),
     ["jmsvam.properties:17:", "fixed.optype", "no header field named H-OPP", "HDR-FUNCTION"]),
    (SOURCEDEFS_PROPS, ("fixed.header=", "fixed.txname=OPTYPES\nfixed.header="),
     ["fixed.txname", "no header field named OPTYPES", "optype, schemaandtable"]),
])
def test_an_item_naming_no_header_field_is_refused_as_run_refuses_it(
        home: Path, props: str, typo: tuple[str, str], words: list[str]) -> None:
    """``fixed.optype=H-OPP`` (a typo) passed gendef, which made the real optype field a
    column of every table, while ``msgcap run`` refused it (issue 26)."""
    r = gendef(home, *PROP, props=props.replace(*typo))
    assert_one_line_error(r, *words)
