"""The compiled path (``Assembler.encode_whole``, taken by ``Pipeline.consume`` and
``complete``) writes exactly what the general path writes.

Random messages of every parser — delimited, fixed-width in copybook and sourcedefs mode, XML —
over columns of every type the definitions allow, go through two replays of one configuration:
one with the compiled path, one with ``Pipeline.compiled`` off. The trail's records, the
statistics, the error that stops an ``abend`` run and the discard file of a ``discard`` run must
be the same. The mix holds messages the compiled path must leave to the general path: several
records, before images, compressed and uncompressed updates and deletes, primary-key updates,
txind spans, duplicates, truncates, bad values, unknown tables.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.build import build_definitions
from gendef.defgen import format_defs
from gendef.model import (
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
    varchar_column,
)
from msgcap.commands.replay import Progress, replay_messages
from msgcap.pipeline import build_pipeline
from msgcap.trail.reader import TrailFile, sequence_files
from msgcap.trail.writer import TrailWriter
from parsers.base import build_parser
from parsers.model import Message
from props.errors import MsgcapError
from props.loader import settings_from_text

RUNS = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
Spec = tuple[str, dict[str, str], str | bytes]  # id, headers, body


def replay(work: Path, props: str, messages: list[Spec], compiled: bool
           ) -> tuple[list[bytes], str, str | None, list[dict]]:
    """One replay of ``messages`` in ``work`` (``WORK/`` in ``props`` names it): the trail's record
    bytes (file headers left out: they hold the time), the summary, the error that stopped
    it, the discard records (without their time). ``compiled``: as ``msgcap replay`` runs it,
    a batch at a time; else message by message (``Pipeline.process_many``), all by the
    general path."""
    config = settings_from_text(props.replace("WORK/", f"{work}/"), str(work / "test.properties"),
                                env={})
    definitions = build_definitions(config)
    trail = config.trail
    writer = TrailWriter(trail.path, byteorder=trail.byteorder, megabytes=trail.megabytes,
                         sync=trail.sync)
    pipeline = build_pipeline(config, writer, writer.open(), definitions=definitions,
                              parser=build_parser(config, definitions))
    assert pipeline.compiled  # (the trail writer's pipeline takes it by default)
    pipeline.compiled = compiled
    error = None
    inputs = (Message(i, dict(h), b, None, f"d:{n + 1}") for n, (i, h, b) in enumerate(messages))
    try:
        if compiled:  # as ``msgcap replay`` runs: ``Pipeline.consume``
            replay_messages(pipeline, inputs, Progress(io.StringIO(), -1))
        else:  # message by message, as the capture does
            for _ in pipeline.process_many(inputs):
                pass
            pipeline.finish()
    except MsgcapError as exc:
        error = str(exc)
    finally:
        writer.close()
        if pipeline.discard is not None:
            pipeline.discard.close()
    records = []
    for _, path in sequence_files(trail.path, trail.seqlen):
        with TrailFile(path) as tf:
            records.append(Path(path).read_bytes()[tf.data_start:])
    discarded = []
    if config.error.policy == "discard" and Path(config.error.file).exists():
        for line in Path(config.error.file).read_text().splitlines():
            record = json.loads(line)
            del record["time"]
            discarded.append(record)
    summary = pipeline.stats.summary().replace(str(work), "")
    return records, summary, error and error.replace(str(work), ""), discarded


def same_either_way(props: str, messages: list[Spec], **files: str | bytes
                    ) -> tuple[list[bytes], str, str | None, list[dict]]:
    """Replays of ``messages`` with and without the compiled path, each in a directory of
    its own holding ``files``, give the same trail, summary, error and discard records
    (returned)."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for compiled in (True, False):
            work = Path(tmp) / ("c" if compiled else "g")  # (one length: the same RBAs)
            work.mkdir()
            for name, content in files.items():
                path = work / name
                if isinstance(content, bytes):
                    path.write_bytes(content)
                else:
                    path.write_text(content)
            results.append(replay(work, props, messages, compiled))
    assert results[0] == results[1]
    return results[0]


def policy_props(policy: str) -> str:
    return f"error.policy={policy}\nerror.file=WORK/discard.dsc\n"


def ids(data: st.DataObject, count: int) -> list[str]:
    """Message ids (``jms.id=SEQNO``, the seqids): increasing, now and then one again (a
    duplicate) or one of another width (which stops the run)."""
    out, n = [], 100
    for _ in range(count):
        kind = data.draw(st.sampled_from(["next"] * 37 + ["again"] * 2 + ["wide"]))
        if kind == "next":
            n += data.draw(st.integers(1, 3))
        out.append(f"{n:012d}" if kind != "wide" else f"{n:014d}")
    return out


# -- delimited ---------------------------------------------------------------------------------

DELIM_TABLE = Table.build("S.ALL", [
    number_column("ID", 9, key=True), char_column("CODE", 4), varchar_column("NAME", 8),
    number_column("AMOUNT", 9, 2), number_column("QTY", 4), number_text_column("BIG", 24),
    datetime_column("DAY", 10), datetime_column("AT", 19), datetime_column("PRECISE", 26)])
DELIM_DEFS = format_defs(Definitions((DELIM_TABLE,)), created="2024-03-01 00:00:00")

# per column: common values, then values that are errors or need the general converter
DELIM_VALUES = [
    (["1", "2", "77", "123456789"], ["-5", "x", ""]),  # ID: a bad number, an empty key
    (["AB", "ABCD", "é", '"a,b"', "NULL"], ["ABCDEFG", ""]),  # CODE: CHAR(4)
    (["n", "name", "nämé", '"x, y"', '"say ""hi"""', "NULL", ""], ["123456789"]),  # NAME
    (["1", "1.5", "-12.25", "1234567.89", "NULL"], ["12.345", "abc"]),  # AMOUNT(9,2)
    (["0", "9999", "-1", "NULL"], ["1.0", "1.5"]),  # QTY
    (["12345678901234567890", "-1.50", "007", "NULL"], ["1e3"]),  # BIG: NUMBER as text
    (["01/03/2024", "31/12/1999", "NULL"], ["32/01/2024"]),  # DAY: DD/MM/YYYY
    (["01/03/2024", "NULL"], ["2024-03-01"]),  # AT: a date in a DATETIME(19)
    (["29/02/2024", "NULL"], ["29/02/2023"]),  # PRECISE
]


def value(data: st.DrawFn, choices: tuple[list[str], list[str]]) -> str:
    """A common value, or now and then (one in 40) one of the others."""
    good, other = choices
    return data(st.sampled_from(other if data(st.integers(0, 39)) == 0 else good))


def delim_props(policy: str, variant: str) -> str:
    header = "optype,schemaandtable,timestamp" + (",txind" if variant == "txind" else "")
    out = (f"parser.type=delim\ndelim.sourcedefs=WORK/all.def\ndelim.header={header}\n"
           "delim.nullindicator=NULL\ndelim.dateformat=DD/MM/YYYY\ntrail.path=WORK/dirdat/dl\n"
           "jms.id=SEQNO\n" + policy_props(policy))
    if variant == "befores":
        out += ("delim.hasbefores=true\ntrail.compressupdates=false\n"
                "trail.getupdatebefores=true\ntrail.compressdeletes=false\n")
    return out


@st.composite
def delim_record(draw: st.DrawFn, variant: str) -> str:
    head = [value(draw, (list("IIIIUUDDT"), ["X"])), value(draw, (["S.ALL"], ["S.NONE"])),
            value(draw, (["2024-03-01 10:15:30", "2024-03-02 01:00:00"], ["bad time"]))]
    if variant == "txind":
        head.append(value(draw, (list("WWWBME"), ["X"])))
    count = draw(st.sampled_from([9] * 12 + [5, 1, 10]))  # fewer: MISSING columns
    values = [value(draw, DELIM_VALUES[i]) if i < 9 else "extra" for i in range(count)]
    if variant == "befores":  # a before and an after value per column
        values = [v for value in values for v in (
            draw(st.sampled_from([value, value, "1"])), value)]
    return ",".join(head + values)


def delim_messages(data: st.DataObject, variant: str) -> list[Spec]:
    count = data.draw(st.integers(1, 12))
    bodies = [data.draw(st.lists(delim_record(variant), min_size=1, max_size=3)
                        .map("\n".join)) for _ in range(count)]
    return [(f"m{n}", {"SEQNO": i}, b) for n, (i, b) in enumerate(zip(ids(data, count), bodies,
                                                                       strict=True))]


@RUNS
@given(st.data(), st.sampled_from(["abend", "discard"]),
       st.sampled_from(["plain", "plain", "befores", "txind"]))
def test_delimited(data, policy, variant):
    same_either_way(delim_props(policy, variant), delim_messages(data, variant),
                    **{"all.def": DELIM_DEFS})


# -- fixed-width, copybook mode: EBCDIC bytes with zoned, COMP-3 and COMP fields ----------------

COPYBOOK = """\
       01  HEADER.
           05  HDR-FUNCTION    PIC X.
           05  HDR-REC-ID      PIC X(8).
      * DATEFORMAT YYYYMMDDHHMISS
           05  HDR-TIMESTAMP   PIC 9(14).
       01  ACCOUNT.
      * KEY
           05  ACCT-NO         PIC 9(6).
           05  CUST-NAME       PIC X(10).
           05  BALANCE         PIC S9(7)V99.
           05  QTY             PIC S9(3).
           05  AMOUNT          PIC S9(7)V99 COMP-3.
           05  FEE             PIC 9(3) COMP-3.
           05  TERM            PIC S9(4) COMP.
           05  LIMIT-CNT       PIC 9(9) COMP.
           05  TXN-COUNT       PIC S9(18) COMP.
      * YYYYMMDD
           05  OPENED          PIC 9(8).
"""


def copybook_props(policy: str, seqid: str) -> str:
    return ("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=WORK/bench.cpy\n"
            "fixed.header=HEADER\nfixed.timestamp=HDR-TIMESTAMP\nfixed.optype=HDR-FUNCTION\n"
            'fixed.table=HDR-REC-ID\nfixed.schema="BENCH"\nfixed.encoding=cp037\n'
            f"fixed.seqid={seqid}\ntrail.path=WORK/dirdat/fx\njms.id=SEQNO\n"
            + policy_props(policy))


def zoned(n: int, width: int, signed: bool) -> bytes:
    digits = str(abs(n)).zfill(width)[-width:].encode("cp037")
    if not signed:
        return digits
    return digits[:-1] + bytes([(0xD0 if n < 0 else 0xC0) | (digits[-1] & 0x0F)])


def packed(n: int, length: int, signed: bool = True) -> bytes:
    sign = ("d" if n < 0 else "c") if signed else "f"
    return bytes.fromhex(str(abs(n)).zfill(2 * length - 1)[-(2 * length - 1):] + sign)


@st.composite
def copybook_record(draw: st.DrawFn) -> bytes:
    head = (value(draw, (list("IIIUD"), ["X"])) + value(draw, (["ACCOUNT "], ["NOSUCH  "]))
            + value(draw, (["20240301101530", "20241231235959"], ["20241301000000"])))
    name = draw(st.sampled_from(["ACME", "ÄBC CO", "", "X" * 10]))
    data = (head.encode("cp037") + zoned(draw(st.integers(0, 999_999)), 6, False)
            + name.ljust(10).encode("cp037")
            + zoned(draw(st.integers(-10**9 + 1, 10**9 - 1)), 9, True)
            + zoned(draw(st.integers(-999, 999)), 3, True)
            + packed(draw(st.integers(-10**9 + 1, 10**9 - 1)), 5)
            + packed(draw(st.integers(0, 999)), 2, False)
            + draw(st.integers(-9999, 9999)).to_bytes(2, "big", signed=True)
            + draw(st.integers(0, 10**9 - 1)).to_bytes(4, "big")
            + draw(st.integers(-10**18 + 1, 10**18 - 1)).to_bytes(8, "big", signed=True)
            + value(draw, (["20240301", "19991231"], ["20240231"])).encode("cp037"))
    bad = draw(st.integers(0, 29))
    if bad == 0:  # a byte no number or text holds
        at = draw(st.integers(23, len(data) - 1))
        data = data[:at] + b"\xff" + data[at + 1:]
    elif bad == 1:  # a short record
        data = data[:draw(st.integers(23, len(data) - 1))]
    return data


@RUNS
@given(st.data(), st.sampled_from(["abend", "discard"]), st.sampled_from(["$jmsid", "*seqid"]))
def test_fixed_copybook(data, policy, seqid):
    count = data.draw(st.integers(1, 12))
    bodies = [data.draw(copybook_record()) for _ in range(count)]
    messages = [(f"m{n}", {"SEQNO": i}, b)
                for n, (i, b) in enumerate(zip(ids(data, count), bodies, strict=True))]
    same_either_way(copybook_props(policy, seqid), messages, **{"bench.cpy": COPYBOOK})


# -- fixed-width, sourcedefs mode: text records of DEFGEN columns ---------------------------------

SOURCEDEFS_TABLE = Table.build("GG.CUST", [
    char_column("CUST_CODE", 4, key=True), varchar_column("NAME", 12), number_column("QTY", 5),
    number_column("PRICE", 7, 2), number_text_column("BIG", 22),
    datetime_column("SINCE", 19)])
SOURCEDEFS_DEFS = format_defs(Definitions((SOURCEDEFS_TABLE,)), created="2024-03-01 00:00:00")
SOURCEDEFS_PROPS = """\
parser.type=fixed
fixed.schematype=sourcedefs
fixed.sourcedefs=WORK/cust.def
fixed.userdefs.tables=qasource.HEADER
fixed.userdefs.qasource.HEADER.columns=optype,schemaandtable,timestamp
fixed.userdefs.qasource.HEADER.optype=vchar 3
fixed.userdefs.qasource.HEADER.schemaandtable=vchar 20
fixed.userdefs.qasource.HEADER.timestamp=vchar 19
fixed.header=qasource.HEADER
trail.path=WORK/dirdat/sd
jms.id=SEQNO
"""


@st.composite
def sourcedefs_record(draw: st.DrawFn) -> str:
    text = (value(draw, (list("IIIUD"), ["T", "X"])).ljust(3)
            + value(draw, (["GG.CUST"], ["GG.NONE"])).ljust(20)
            + value(draw, (["2024-03-01 10:15:30"], ["2024-13-01 10:15:30"])))
    columns = [
        value(draw, (["WILL", "ANN", "ÅSA"], ["", "JÖRG"])),  # JÖRG: 5 bytes, no CHAR(4)
        draw(st.sampled_from(["BG SOFTWARE", "", "Ünïcode"])),
        value(draw, (["12", "00007", "-3", ""], ["1.5", "x"])),
        value(draw, (["12.50", "-0.01", "3", ""], ["1.234"])),
        value(draw, (["12345678901234567890", "-1.5", ""], ["1e5"])),
        value(draw, (["2024-03-01:10:15:30", ""], ["2024-02-30:00:00:00"]))]
    for col, text_value in zip(SOURCEDEFS_TABLE.columns, columns, strict=True):
        text = text.ljust(42 + col.fetch_offset) + text_value.ljust(col.external_length)
    return text[:draw(st.integers(30, len(text)))] if draw(st.integers(0, 29)) == 0 else text


@RUNS
@given(st.data(), st.sampled_from(["abend", "discard"]))
def test_fixed_sourcedefs(data, policy):
    count = data.draw(st.integers(1, 12))
    bodies = [data.draw(sourcedefs_record()) for _ in range(count)]
    messages = [(f"m{n}", {"SEQNO": i}, b)
                for n, (i, b) in enumerate(zip(ids(data, count), bodies, strict=True))]
    same_either_way(SOURCEDEFS_PROPS + policy_props(policy), messages,
                    **{"cust.def": SOURCEDEFS_DEFS})


# -- XML: dynamic rules, one to three operations a message, before values, nulls ----------------

XML_TABLES = (
    Table.build("X.SMALL", [number_column("ID", 10, key=True), varchar_column("NAME", 12),
                            number_column("AMOUNT", 12, 2), datetime_column("CREATED", 19)]),
    Table.build("X.WIDE", [number_column("ID", 10, key=True), char_column("CODE", 3, key=True),
                           varchar_column("C1", 8), number_column("N1", 5),
                           number_text_column("BIG", 22), datetime_column("D1", 10)]))
XML_DEFS = format_defs(Definitions(XML_TABLES), created="2024-03-01 00:00:00")
XML_PROPS = """\
parser.type=xml
xml.sourcedefs=WORK/x.def
xml.rules=txrule
trail.path=WORK/dirdat/xm
jms.id=SEQNO
txrule.type=tx
txrule.match=/batch/transaction
txrule.timestamp=@ts
txrule.subrules=oprule
oprule.type=op
oprule.match=./operation
oprule.schemaandtable=@table
oprule.optype=@optype
oprule.subrules=colrule
colrule.type=col
colrule.match=./column
colrule.name=@name
colrule.before.value=./beforevalue/text()
colrule.before.isnull=./beforevalue/@isnull
colrule.after.value=./aftervalue/text()
colrule.after.isnull=./aftervalue/@isnull
"""
XML_VALUES = {
    "ID": (["1", "42", "7"], ["x"]), "NAME": (["n", "a & b", "ünï", ""], ["much too long"]),
    "AMOUNT": (["1.50", "-3", "999999.99"], ["1.234"]),
    "CREATED": (["2024-03-01 10:15:30", "2024-03-01"], ["2024-02-30 00:00:00"]),
    "CODE": (["ABC", "A"], ["ABCD"]), "C1": (["x", ""], ["123456789"]),
    "N1": (["12", "-1"], ["1.5"]), "BIG": (["12345678901234567890", "-0.5"], ["z"]),
    "D1": (["2024-03-01"], ["2024-3-1"])}


def xml_text(draw: st.DrawFn, column: str) -> str:
    return value(draw, XML_VALUES[column]).replace("&", "&amp;").replace("<", "&lt;")


@st.composite
def xml_column(draw: st.DrawFn, column: str, key: bool, optype: str) -> str:
    """A column element; a key's before value, when there is one, may differ (a primary-key
    update)."""
    def image(side: str) -> str:
        kind = draw(st.sampled_from(["value"] * 12 + ["null", "absent"]))
        if key and side == "after":
            kind = "value"
        if kind == "null":
            return f'<{side}value isnull="true"/>'
        if kind == "absent":
            return ""
        return f"<{side}value>{xml_text(draw, column)}</{side}value>"
    before = image("before") if optype in "UD" and draw(st.booleans()) else ""
    return f'<column name="{column.lower()}">{before}{image("after")}</column>'


@st.composite
def xml_operation(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(XML_TABLES))
    name = value(draw, ([table.name], ["X.NONE"]))
    optype = value(draw, (list("IIIUUD"), ["Q"]))
    columns = [c for c in table.columns if c.key or draw(st.integers(0, 5))]
    body = "".join(draw(xml_column(c.name, c.key, optype)) for c in columns)
    return f'<operation table="{name}" optype="{optype}">{body}</operation>'


@st.composite
def xml_transaction(draw: st.DrawFn) -> str:
    ops = draw(st.lists(xml_operation(), min_size=1, max_size=3))
    ts = value(draw, (["2024-03-01:10:15:30", "2024-03-01:10:15:31"], ["never"]))
    return f'<transaction ts="{ts}">{"".join(ops)}</transaction>'


@st.composite
def xml_message(draw: st.DrawFn) -> str:
    """A transaction, now and then two in one message: the parser marks their boundaries
    with txind, and the message takes the general path."""
    transactions = draw(st.sampled_from([1] * 5 + [2]))
    return f"<batch>{''.join(draw(xml_transaction()) for _ in range(transactions))}</batch>"


@RUNS
@given(st.data(), st.sampled_from(["abend", "discard"]),
       st.sampled_from(["", "", "trail.compressupdates=false\ntrail.compressdeletes=false\n",
                        "trail.getupdatebefores=true\n"]))
def test_xml(data, policy, images):
    count = data.draw(st.integers(1, 10))
    bodies = [data.draw(xml_message()) for _ in range(count)]
    messages = [(f"m{n}", {"SEQNO": i}, b)
                for n, (i, b) in enumerate(zip(ids(data, count), bodies, strict=True))]
    same_either_way(XML_PROPS + images + policy_props(policy), messages, **{"x.def": XML_DEFS})


def test_common_messages_take_the_compiled_path(tmp_path):
    """Guards the comparisons above: inserts, updates and deletes of one record (without txind
    or with W), and an XML message of several, are written by the compiled path; a truncate, a
    message whose seqid is already in the trail and a txind span are not."""
    (tmp_path / "all.def").write_text(DELIM_DEFS)
    config = settings_from_text(delim_props("abend", "plain").replace("WORK/", f"{tmp_path}/"),
                                str(tmp_path / "test.properties"), env={})
    definitions = build_definitions(config)
    writer = TrailWriter(config.trail.path, sync="none")
    pipeline = build_pipeline(config, writer, writer.open(), definitions=definitions,
                              parser=build_parser(config, definitions))
    row = ",S.ALL,2024-03-01 10:15:30,1,AB,n,1.5,3,7,01/03/2024,NULL,NULL"
    bodies = [("001", "I" + row), ("002", "U" + row), ("003", "D" + row), ("004", "T" + row),
              ("004", "I" + row)]
    general = [message.origin for batch in pipeline.consume(
        Message(f"m{n}", {"SEQNO": seqid}, body, None, f"d:{n}")
        for n, (seqid, body) in enumerate(bodies)) for message, _ in batch]
    writer.close()
    assert general == ["d:3", "d:4"]
    assert pipeline.stats.duplicates == 1 and pipeline.stats.transactions == 4

    # with txind: a message of one W operation is a whole transaction too; B … E are not
    config = settings_from_text(delim_props("abend", "txind").replace("WORK/", f"{tmp_path}/")
                                .replace("dirdat/dl", "dirdat/dw"),
                                str(tmp_path / "test.properties"), env={})
    writer = TrailWriter(config.trail.path, sync="none")
    pipeline = build_pipeline(config, writer, writer.open(), definitions=definitions,
                              parser=build_parser(config, definitions))
    row = ",S.ALL,2024-03-01 10:15:30,{},1,AB,n,1.5,3,7,01/03/2024,NULL,NULL"
    bodies = [("001", "I" + row.format("W")), ("002", "I" + row.format("B")),
              ("003", "I" + row.format("E")), ("004", "I" + row.format("W"))]
    general = [message.origin for batch in pipeline.consume(
        Message(f"m{n}", {"SEQNO": seqid}, body, None, f"d:{n}")
        for n, (seqid, body) in enumerate(bodies)) for message, _ in batch]
    writer.close()
    assert general == ["d:1", "d:2"] and pipeline.stats.transactions == 3

    (tmp_path / "x.def").write_text(XML_DEFS)
    config = settings_from_text(XML_PROPS.replace("WORK/", f"{tmp_path}/"),
                                str(tmp_path / "test.properties"), env={})
    definitions = build_definitions(config)
    writer = TrailWriter(config.trail.path, sync="none")
    pipeline = build_pipeline(config, writer, writer.open(), definitions=definitions,
                              parser=build_parser(config, definitions))
    op = ('<operation table="X.SMALL" optype="{}"><column name="id"><beforevalue>1'
          '</beforevalue><aftervalue>1</aftervalue></column></operation>')
    body = (f'<batch><transaction ts="2024-03-01:10:15:30">{op.format("I")}{op.format("U")}'
            "</transaction></batch>")
    assert list(pipeline.consume([Message("x", {"SEQNO": "1"}, body)])) == [[]]
    writer.close()
    assert pipeline.stats.operations == {("X.SMALL", "I"): 1, ("X.SMALL", "U"): 1}


@pytest.mark.parametrize("trail_props", ["trail.megabytes=1\ntrail.sync=none\n",
                                         "trail.sync=transaction\n"])
def test_roll_over_and_sync_per_transaction(trail_props):
    """Transactions the compiled path encodes in a row go to the writer together: across a
    roll-over to the next file, and fsynced one by one with ``trail.sync=transaction``, they
    are the general path's records, files and summary."""
    count = 8000 if "megabytes" in trail_props else 40  # about 170 bytes a transaction
    row = ",S.ALL,2024-03-01 10:15:30,{},ABCD,nnnnnnnn,1.5,3,7,01/03/2024,NULL,NULL"
    messages = [(f"m{n}", {"SEQNO": f"{n + 1:06d}"}, "I" + row.format(n)) for n in range(count)]
    records, summary, error, _ = same_either_way(delim_props("abend", "plain") + trail_props,
                                                 messages, **{"all.def": DELIM_DEFS})
    assert error is None and f"transactions {count}" in summary
    assert len(records) == (2 if "megabytes" in trail_props else 1)
