"""``fixed.trunc`` (issue 35, item 8): COBOL's TRUNC option decides what a binary field may
hold, and the definitions and the values written always agree. Under STD (the default, as IBM
Enterprise COBOL's) and OPT a COMP field holds at most its PICTURE's digits: a wider value is
refused, naming the message, field, record and value, never cut or written as is; under BIN
(and for COMP-5 always) its whole halfword / fullword / doubleword range is valid and the
definitions declare that width."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from gendef.build import build_definitions
from gendef.model import NUMBER, VARCHAR
from props.errors import PropertyError
from props.loader import settings_from_text

from .test_copybook_mode import error_of, msg
from .test_replay import PROP, cli, copy_example, dump, image

CPY = """\
       01  HDR.
           05  H-OP        PIC X.
           05  H-TABLE     PIC X(8).
       01  WIDE.
      * KEY
           05  W-ID        PIC 9(4).
           05  SMALL       PIC S9(4) COMP.
           05  BIG         PIC 9(9) COMP.
           05  RATE        PIC S9(2)V99 COMP.
           05  LONG        PIC S9(18) COMP.
           05  NATIVE      PIC S9(9) COMP-5.
"""
PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=t.cpy
fixed.header=HDR
fixed.optype=H-OP
fixed.table=H-TABLE
fixed.schema="S"
fixed.seqid=$jmsid
"""


def body(small: int = 1, big: int = 2, rate: int = 3, long: int = 4, native: int = 5) -> bytes:
    return b"IWIDE    0001" + struct.pack(">hIhqi", small, big, rate, long, native)


Columns = Callable[[str | None], dict[str, tuple[int, int]]]


@pytest.fixture
def columns(tmp_path, monkeypatch) -> Columns:
    """(type code, external length) of each column of S.WIDE under ``fixed.trunc``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.cpy").write_text(CPY)

    def defined(trunc: str | None) -> dict[str, tuple[int, int]]:
        extra = f"fixed.trunc={trunc}\n" if trunc else ""
        settings = settings_from_text(PROPS + extra, "t.properties", env={})
        table = build_definitions(settings).get("S.WIDE")
        assert table is not None
        return {c.name: (c.type_code, c.external_length) for c in table.columns}
    return defined


def test_std_is_the_default_and_refuses_values_beyond_the_picture(make) -> None:
    parser = make(PROPS, t__cpy=CPY)
    assert parser.parse(msg(body(9999, 999_999_999, -9999, -(10**18) + 1)))[0].after == [
        1, 9999, 999_999_999, -9999, -(10**18) + 1, 5]
    for fields, field, value in (({"small": 32767}, "SMALL", 32767),
                                 ({"small": -10000}, "SMALL", -10000),
                                 ({"big": 4_000_000_000}, "BIG", 4_000_000_000),
                                 ({"rate": 10000}, "RATE", 10000),
                                 ({"long": 10**18}, "LONG", 10**18)):
        data = body(**fields)
        # byte bodies take the generated whole-record path, text bodies the general one
        for message in (data, data.decode("latin-1")):
            error = error_of(parser, message, id="m7")
            assert error.source == "m7" and error.position.startswith(f"field {field} ")
            assert error.reason.startswith(f"binary value {value} of record WIDE has more than "
                                           "the ") and "set fixed.trunc=bin" in error.reason


def test_std_definitions_declare_the_picture_and_comp5_its_whole_range(columns) -> None:
    assert columns(None) == columns("std") == columns("opt")
    std = columns("std")
    assert std["BIG"] == (NUMBER, 10)  # 9 digits and a sign
    assert std["LONG"] == (NUMBER, 19)
    assert std["NATIVE"] == (NUMBER, 11)  # COMP-5: ±2,147,483,648, 10 digits, whatever TRUNC


def test_opt_checks_values_as_std(make) -> None:
    parser = make(PROPS + "fixed.trunc=OPT\n", t__cpy=CPY)
    assert "binary value 32767 of record WIDE" in error_of(parser, body(small=32767)).reason


def test_bin_takes_the_whole_binary_range_and_declares_it(make, columns) -> None:
    parser = make(PROPS + "fixed.trunc=bin\n", t__cpy=CPY)
    data = body(32767, 4_000_000_000, -32768, -(1 << 63), -(1 << 31))
    for message in (data, data.decode("latin-1")):
        (op,) = parser.parse(msg(message))
        assert op.after == [1, 32767, 4_000_000_000, -32768, str(-(1 << 63)), -(1 << 31)]
    wide = columns("bin")
    assert wide["BIG"] == (NUMBER, 11)  # 4,294,967,295: 10 digits
    assert wide["LONG"] == (VARCHAR, 20)  # ±9,223,372,036,854,775,808: NUMBER as text
    assert wide["NATIVE"] == columns("std")["NATIVE"]


def test_an_unknown_trunc_is_a_property_error() -> None:
    with pytest.raises(PropertyError) as info:
        settings_from_text(PROPS + "fixed.trunc=binary\n", "t.properties", env={})
    assert str(info.value) == ("t.properties:9: fixed.trunc: 'binary' is not one of std, opt, "
                               "bin")


def test_replay_refuses_then_writes_with_trunc_bin(tmp_path, monkeypatch) -> None:
    """End to end: one error line and nothing written under the default; with
    ``fixed.trunc=bin`` the values and definitions that hold them."""
    copy_example("copybook", tmp_path, monkeypatch)
    Path("dirdef/wide.cpy").write_text(CPY)
    props = Path(PROP).read_text()
    cut = props.index("parser.type=fixed")
    Path(PROP).write_text(props[:cut] + PROPS.replace("t.cpy", "dirdef/wide.cpy"))
    entry = {"id": "ID:mq1-40507-1709288100000-1:1:1:1:1",
             "body_b64": base64.b64encode(body(32767, 4_000_000_000)).decode()}
    Path("wide.jsonl").write_text(json.dumps(entry) + "\n")
    done = cli("replay", "--prop", PROP, "wide.jsonl")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("msgcap replay: error: message wide.jsonl:1: field SMALL (offset 13, "
                           "length 2): binary value 32767 of record WIDE has more than the 4 "
                           "digits of its PICTURE")
    assert not Path("dirdat/rt000000000").exists() or not dump(
        "dirdat/rt000000000", "dirdat/retail.def")

    Path(PROP).write_text(Path(PROP).read_text() + "fixed.trunc=bin\n")
    done = cli("replay", "--prop", PROP, "wide.jsonl")
    assert done.returncode == 0, done.stderr
    (rec,) = dump("dirdat/rt000000000", "dirdat/retail.def")
    assert image(rec) == {"W_ID": "1", "SMALL": "32767", "BIG": "4000000000", "RATE": "0.03",
                          "LONG": "4", "NATIVE": "5"}
    declared = {line.split()[0]: line.split()[1:3] for line in
                Path("dirdat/retail.def").read_text().splitlines()
                if line.split()[:1] in (["BIG"], ["LONG"])}
    assert declared == {"BIG": ["134", "11"], "LONG": ["64", "20"]}
