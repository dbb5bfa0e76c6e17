"""Text columns hold n characters of their code page, whatever the characters (issue 33).

Through the whole pipeline: copybook or DEFGEN file -> gendef's definitions -> parser -> trail
-> ``msgcap dump``. Every value comes back as the characters sent, and every column entry of the
trail fits the bytes the definitions gendef writes give its column (source-definitions.md, text
columns; trail-format.md §9.2). The trail's text is UTF-8 whatever the input's code page.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.cli import main as gendef_main
from gendef.defgen import read_defs
from gendef.model import Definitions
from msgcap.cli import main as msgcap_main
from props.codepages import UNDEFINED, code_page

PAGES = ("latin-1", "cp1252", "cp037", "cp273", "cp500", "cp1047", "cp1140")
NATIONAL = "ÄÖÜäöüßéèà"  # the ten Latin-1 letters: 20 bytes in UTF-8

COPYBOOK = """\
       01  HEADER.
           05  HDR-FUNCTION   PIC X.
           05  HDR-REC-ID     PIC X(8).
       01  PEOPLE.
           05  NAME           PIC X(10).
           05  INITIAL        PIC X.
           05  NOTE           PIC X(40).
"""
WIDTHS = {"NAME": 10, "INITIAL": 1, "NOTE": 40}

FIXED_PROPS = """\
jms.url=dir:{work}/spool
jms.id=JMSMessageID
trail.path={work}/dirdat/na
trail.defs={work}/dirdat/trail.def
error.policy=abend
parser.type=fixed
fixed.schematype=copybook
fixed.copybook={work}/people.cpy
fixed.header=HEADER
fixed.optype=HDR-FUNCTION
fixed.optype.insertval=I
fixed.table=HDR-REC-ID
fixed.schema="NAT"
fixed.txid=*txid
fixed.encoding={page}
"""

# a DEFGEN file (fixed-width sourcedefs mode, and the delimited parser): CHAR and VARCHAR
PEOPLE_DEF = """\
Definition for table NAT.PEOPLE
Record length: 64
Syskey: 0
Columns: 3
NAME     0     10        0  0  0 1 0     10     10      0 0 0 0 0 1    0 0   0   96       -1      0 0 0
INITIAL  0      1       14  0  0 1 0      1      1      0 0 0 0 0 1    0 0   0   96       -1      0 0 0
NOTE    64     40       18  0  0 1 0     40     40      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
End of definition
"""

SOURCEDEFS_PROPS = """\
jms.url=dir:{work}/spool
jms.id=JMSMessageID
trail.path={work}/dirdat/na
trail.defs={work}/dirdat/trail.def
error.policy=abend
parser.type=fixed
fixed.schematype=sourcedefs
fixed.sourcedefs={work}/people.def
fixed.userdefs.tables=Q.HEADER
fixed.userdefs.Q.HEADER.columns=optype,schemaandtable
fixed.userdefs.Q.HEADER.optype=char 1
fixed.userdefs.Q.HEADER.schemaandtable=char 10
fixed.header=Q.HEADER
fixed.txid=*txid
fixed.encoding={page}
"""

DELIM_PROPS = """\
jms.url=dir:{work}/spool
jms.id=JMSMessageID
trail.path={work}/dirdat/na
trail.defs={work}/dirdat/trail.def
error.policy=abend
parser.type=delim
delim.sourcedefs={work}/people.def
delim.header=optype,schemaandtable
delim.txid=*txid
delim.fielddelim=,
delim.linedelim=\\x0a
delim.quote="
delim.nullindicator=\\x01
"""

XML_PROPS = """\
jms.url=dir:{work}/spool
jms.id=JMSMessageID
trail.path={work}/dirdat/na
trail.defs={work}/dirdat/trail.def
error.policy=abend
parser.type=xml
xml.sourcedefs={work}/people.def
xml.rules=txrule
txrule.type=tx
txrule.match=/People
txrule.subrules=oprule
oprule.type=op
oprule.match=./Person
oprule.schemaandtable="NAT.PEOPLE"
oprule.optype="I"
oprule.timestamp=./At/text()
oprule.subrules=namerule, initialrule, noterule
namerule.type=col
namerule.match=./Name
namerule.name="name"
namerule.value=./text()
initialrule.type=col
initialrule.match=./Initial
initialrule.name="initial"
initialrule.value=./text()
noterule.type=col
noterule.match=./Note
noterule.name="note"
noterule.value=./text()
"""


def page_text(page: str) -> st.SearchStrategy[str]:
    """One character of ``page`` (any of its bytes that has one)."""
    return st.sampled_from(sorted({c for c in code_page(page).table if c != UNDEFINED}))


def exactly(chars: st.SearchStrategy[str], n: int) -> st.SearchStrategy[str]:
    return st.lists(chars, min_size=n, max_size=n).map("".join)


@contextlib.contextmanager
def quiet() -> Iterator[io.StringIO]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        yield out


def run(work: Path, props: str, messages: list[str | bytes]) -> tuple[Definitions, list[dict],
                                                                       list[dict]]:
    """gendef's definitions, and the trail's records dumped with and without them, after
    ``msgcap replay`` of ``messages`` (text or byte bodies)."""
    (work / "dirprm.properties").write_text(props)
    with (work / "messages.jsonl").open("w") as out:
        for i, body in enumerate(messages):
            entry = {"id": f"ID:{i}", "headers": {"timestamp": "1709288130001"}}
            if isinstance(body, bytes):
                entry["body_b64"] = base64.b64encode(body).decode()
            else:
                entry["body"] = body
            out.write(json.dumps(entry) + "\n")
    prop = str(work / "dirprm.properties")
    defs_file = str(work / "gendef.def")
    with quiet():
        assert gendef_main(["-prop", prop, "-out", defs_file]) == 0
        assert msgcap_main(["replay", "--prop", prop, "--progress-interval", "-1",
                            str(work / "messages.jsonl")]) == 0
    trail = str(work / "dirdat" / "na000000000")
    rows = []
    for args in (["--defs", defs_file], []):
        with quiet() as out:
            assert msgcap_main(["dump", "--json", *args, trail]) == 0
        rows.append([r for r in map(json.loads, out.getvalue().split("\n")[:-1])
                     if r["kind"] == "record"])
    return read_defs(defs_file), rows[0], rows[1]


def check(definitions: Definitions, named: list[dict], raw: list[dict],
          sent: list[dict[str, str]]) -> None:
    """Values as sent; every span within its column's bytes in gendef's definitions."""
    table = definitions.get("NAT.PEOPLE")
    assert table is not None
    assert [{c["name"]: c["value"] for c in r["columns"]} for r in named] == sent
    for record in raw:
        for entry in record["columns"]:
            col = table.columns[entry["index"]]
            data = bytes.fromhex(entry["value"])[2:]  # after the null indicator
            if col.type_code == 64:
                data = data[2:]
            assert len(data) <= col.internal_length == col.external_length
            assert len(data.decode()) == col.characters or col.type_code == 64


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "people.cpy").write_text(COPYBOOK)
    (tmp_path / "people.def").write_text(PEOPLE_DEF)
    return tmp_path


# -- the case, on every page ----------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_ten_national_letters_fill_pic_x_10(work: Path, page: str) -> None:
    """Refused before: "20 bytes do not fit CHAR(10)"."""
    encode = code_page(page).encode
    body = encode("IPEOPLE  " + NATIONAL + "ß" + "é" * 40)[0]
    defs, named, raw = run(work, FIXED_PROPS.format(work=work, page=page), [body])
    check(defs, named, raw, [{"NAME": NATIONAL, "INITIAL": "ß", "NOTE": "é" * 40}])
    name = defs.tables[0].columns[0]
    width = code_page(page).utf8_width()
    assert (name.external_length, name.character_length) == (10 * width, 10)
    assert (work / "dirdat" / "trail.def").read_text().split("*\n", 2)[2] == \
        (work / "gendef.def").read_text().split("*\n", 2)[2]  # trail.defs: gendef's tables


def test_ascii_definitions_and_trails_keep_their_bytes(work: Path) -> None:
    """fixed.encoding=ascii (the default): one byte a character, nothing is sized again."""
    body = b"IPEOPLE  " + b"WILL      " + b"W" + b"x" * 40
    defs, named, raw = run(work, FIXED_PROPS.format(work=work, page="ascii"), [body])
    check(defs, named, raw, [{"NAME": "WILL      ", "INITIAL": "W", "NOTE": "x" * 40}])
    assert [(c.external_length, c.character_length) for c in defs.tables[0].columns] == [
        (10, 0), (1, 0), (40, 0)]
    assert raw[0]["columns"][0]["value"] == "0000" + b"WILL      ".hex()


# -- any characters of the page, at full width ------------------------------------------------------

@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_copybook_fields_hold_any_characters_of_their_page(data, work: Path) -> None:
    page = data.draw(st.sampled_from(PAGES), label="page")
    chars = page_text(page)
    sent = [{name: data.draw(exactly(chars, n)) for name, n in WIDTHS.items()}
            for _ in range(data.draw(st.integers(1, 3)))]
    encode = code_page(page).encode
    bodies: list[str | bytes] = [
        encode("IPEOPLE  " + "".join(values.values()))[0] for values in sent]
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        here = Path(tmp)
        (here / "people.cpy").write_text(COPYBOOK)
        check(*run(here, FIXED_PROPS.format(work=here, page=page), bodies), sent)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_sourcedefs_columns_hold_any_characters_of_their_page(data, work: Path) -> None:
    """fixed.schematype=sourcedefs: a DEFGEN file's CHAR and VARCHAR; a VARCHAR drops its
    trailing blanks."""
    page = data.draw(st.sampled_from(PAGES), label="page")
    chars = page_text(page)
    sent = [{name: data.draw(exactly(chars, n)) for name, n in WIDTHS.items()}
            for _ in range(data.draw(st.integers(1, 3)))]
    encode = code_page(page).encode
    bodies: list[str | bytes] = [  # at the file's offsets: 0, 14 and 18
        encode(f"INAT.PEOPLE{v['NAME']}    {v['INITIAL']}   {v['NOTE']}")[0] for v in sent]
    want = [{**values, "NOTE": values["NOTE"].rstrip(" ")} for values in sent]
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        here = Path(tmp)
        (here / "people.def").write_text(PEOPLE_DEF)
        defs, named, raw = run(here, SOURCEDEFS_PROPS.format(work=here, page=page), bodies)
        for values, record in zip(want, named, strict=True):  # a blank VARCHAR is NULL or ""
            record["columns"] = [c if c["value"] is not None else {**c, "value": ""}
                                 for c in record["columns"]]
            assert {c["name"]: c["value"] for c in record["columns"]} == values
        check(defs, named, raw, want)


@pytest.mark.parametrize("page", ["latin-1", "cp037"])
def test_a_byte_record_ending_in_a_line_feed_keeps_it(work: Path, page: str) -> None:
    """Sourcedefs mode decodes a byte body whole: its last byte is data even when it is LF
    (0x0A, or 0x25 in EBCDIC); only a text body's line end is dropped. Was cut, "the message
    ends ... inside the field"."""
    note = "y" * 39 + "\n"
    body = code_page(page).encode(f"INAT.PEOPLEÄÖÜäöüßéèà    ß   {note}")[0]
    assert body[-1:] == (b"\x25" if page == "cp037" else b"\x0a")
    defs, named, raw = run(work, SOURCEDEFS_PROPS.format(work=work, page=page), [body])
    check(defs, named, raw, [{"NAME": NATIONAL, "INITIAL": "ß", "NOTE": note}])


# Any character but a surrogate, the quote, the delimiters and the null indicator: in a
# delimited message every other character is text.
UNICODE = st.characters(blacklist_categories=("Cs",), blacklist_characters='",\n\r\x01')


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_delimited_columns_hold_any_characters(data, work: Path) -> None:
    """The delimited parser's text is Unicode: a CHAR(n) or VARCHAR(n) of its definitions holds
    n characters of any kind, 4 UTF-8 bytes each at most."""
    sent = [{name: data.draw(exactly(UNICODE, n)) for name, n in WIDTHS.items()}
            for _ in range(data.draw(st.integers(1, 3)))]
    body = "".join("I,NAT.PEOPLE," + ",".join(f'"{v}"' for v in values.values()) + "\n"
                   for values in sent)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        here = Path(tmp)
        (here / "people.def").write_text(PEOPLE_DEF)
        check(*run(here, DELIM_PROPS.format(work=here), [body]), sent)


# Any character an XML 1.0 document holds as text but the carriage return (read as a line feed)
XML_TEXT = st.characters(min_codepoint=0x20, blacklist_categories=("Cs",),
                         blacklist_characters="\ufffe\uffff")


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_xml_columns_hold_any_characters(data, work: Path) -> None:
    """The XML parser's text is Unicode too: n characters of any kind in a CHAR(n) or
    VARCHAR(n) of its definitions."""
    sent = [{name: data.draw(exactly(XML_TEXT, n)) for name, n in WIDTHS.items()}
            for _ in range(data.draw(st.integers(1, 3)))]
    people = "".join(
        f"<Person><At>2024-03-01:10:15:30</At><Name>{escape(v['NAME'])}</Name>"
        f"<Initial>{escape(v['INITIAL'])}</Initial><Note>{escape(v['NOTE'])}</Note></Person>"
        for v in sent)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        here = Path(tmp)
        (here / "people.def").write_text(PEOPLE_DEF)
        check(*run(here, XML_PROPS.format(work=here), [f"<People>{people}</People>"]), sent)


def test_a_value_over_its_bytes_is_never_written(work: Path) -> None:
    """Characters outside fixed.encoding (a text body) that do not fit the column's bytes are
    a message error naming the column; nothing is written that the definitions exclude."""
    props = FIXED_PROPS.format(work=work, page="latin-1").replace("abend", "discard")
    props += f"error.file={work}/discards.dsc\n"
    body = "IPEOPLE  " + "€" * 10 + "x" + "y" * 40  # 30 bytes: CHAR(10) of latin-1 has 20
    (work / "dirprm.properties").write_text(props)
    (work / "messages.jsonl").write_text(json.dumps({"id": "ID:0", "headers": {},
                                                     "body": body}) + "\n")
    with quiet():
        assert msgcap_main(["replay", "--prop", str(work / "dirprm.properties"),
                            "--progress-interval", "-1", str(work / "messages.jsonl")]) == 0
    discard = (work / "discards.dsc").read_text()
    assert "NAME" in discard and "30 bytes do not fit CHAR(10) of 20 bytes" in discard
    with quiet() as out:
        assert msgcap_main(["dump", "--json", str(work / "dirdat" / "na000000000")]) == 0
    assert [r for r in map(json.loads, out.getvalue().split("\n")[:-1]) if r["kind"] == "record"] == []
