"""``msgcap dump``: the §17.2 JSON Lines exactly, the text view, options and error handling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gendef.model import Table, number_column, varchar_column
from msgcap.cli import main
from msgcap.trail.layout import layout_for
from msgcap.trail.records import (
    IOTYPE_DELETE,
    IOTYPE_INSERT,
    IOTYPE_PKUPDATE,
    IOTYPE_TRUNCATE,
    TrailRecord,
    TrailTransaction,
)
from msgcap.trail.writer import TrailWriter
from parsers.model import MISSING

from .conftest import TCUSTMER_DEFS

REPO = Path(__file__).resolve().parents[2]

SPEC_RECORD = (
    '{"file": "dirdat/aa000000000", "rba": RBA, "kind": "record", "iotype": 5, "op": "INSERT", '
    '"before_after": "A", "transind": 3, "io_time": "2010-02-05T10:11:21.000000Z", '
    '"table": "GG.JMSCAP_TCUSTMER", "columns": [{"index": 0, "name": "CUST_CODE", "null": false, '
    '"value": "WILL"}, {"index": 1, "name": "NAME", "null": false, "value": "BG SOFTWARE CO."}, '
    '{"index": 2, "name": "CITY", "null": false, "value": "SEATTLE"}, {"index": 3, '
    '"name": "STATE", "null": false, "value": "WA"}], "tokens": {"TRANID": "1", '
    '"VAMSEQID": "00000000000000000001"}}')


@pytest.fixture
def home(tmp_path, monkeypatch, tcustmer: Table, example_time: int) -> Path:
    """A working directory with dirdef/tcust.def and a trail dirdat/aa of four transactions."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dirdef").mkdir()
    (tmp_path / "dirdef" / "tcust.def").write_text(TCUSTMER_DEFS)
    w = TrailWriter("dirdat/aa", sync="none")
    w.open()
    will = ["WILL", "BG SOFTWARE CO.", "SEATTLE", "WA"]
    w.write_transaction(TrailTransaction("1", [TrailRecord(
        tcustmer, IOTYPE_INSERT, "A", example_time, "00000000000000000001", 0, will)]))
    w.write_transaction(TrailTransaction("2", [
        TrailRecord(tcustmer, IOTYPE_DELETE, "B", example_time, "00000000000000000002", 0,
                    ["WILL", MISSING, MISSING, MISSING]),
        TrailRecord(tcustmer, IOTYPE_PKUPDATE, "A", example_time, "00000000000000000002", 1,
                    ["BILL", MISSING, None, MISSING],
                    key_before=["WILL", MISSING, MISSING, MISSING]),
        TrailRecord(tcustmer, IOTYPE_TRUNCATE, "A", example_time, "00000000000000000002", 2,
                    [MISSING] * 4)], txname="batch-7", txowner="ETL"))
    w.close()
    return tmp_path


def run(capsys, *args: str) -> tuple[int, list[str], str]:
    code = main(["dump", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_json_record_is_the_spec_line(home, capsys) -> None:
    code, lines, _ = run(capsys, "--json", "--defs", "dirdef/tcust.def", "dirdat/aa000000000")
    assert code == 0
    header_len = Path("dirdat/aa000000000").read_bytes().index(b"G\x01")
    assert lines[1] == SPEC_RECORD.replace("RBA", str(header_len))


def test_json_file_header(home, capsys) -> None:
    _, lines, _ = run(capsys, "--json", "dirdat/aa000000000")
    header = json.loads(lines[0])
    assert list(header) == ["file", "rba", "kind", "byte_order", "trail", "machine", "database",
                            "producer", "continuity"]
    assert header["kind"] == "file-header" and header["rba"] == 0
    assert header["byte_order"] == "big"
    assert list(header["trail"]) == ["compatibility", "charset", "creation_time", "uri",
                                     "file_name", "multipart", "seqno"]
    assert header["trail"]["file_name"] == "./dirdat/aa000000000"
    assert header["trail"]["uri"].endswith(":MSGCAP")
    assert list(header["machine"]) == ["os", "node", "release", "version", "hardware"]
    assert header["database"] == {"vendor": 19, "name": "MSGCAP", "instance": "MSGCAP",
                                  "version": "msgcap 0.1.0 JMS message capture"}
    assert header["producer"] == {"name": "MSGCAP", "data_source": 3,
                                  "version": [0, 1, 0, 0, 0], "version_string": "msgcap 0.1.0"}
    assert header["continuity"] == {"recovery_mode": 1}
    first = json.loads(lines[1])
    assert first["rba"] == Path("dirdat/aa000000000").read_bytes().index(b"G\x01")


def test_json_images_missing_pk_before_truncate_and_user_tokens(home, capsys) -> None:
    _, lines, _ = run(capsys, "--json", "--defs", "dirdef/tcust.def", "dirdat/aa000000000")
    delete, pk, trunc = (json.loads(x) for x in lines[2:5])
    assert delete["op"] == "DELETE" and delete["before_after"] == "B"
    assert delete["transind"] == 0
    assert delete["columns"][0] == {"index": 0, "name": "CUST_CODE", "null": False,
                                    "value": "WILL"}
    assert delete["columns"][1] == {"index": 1, "name": "NAME", "missing": True, "null": False,
                                    "value": None}
    assert delete["tokens"] == {"TRANID": "2", "VAMSEQID": "00000000000000000002",
                                "TXNAME": "batch-7", "TXOWNER": "ETL"}
    assert list(pk) == ["file", "rba", "kind", "iotype", "op", "before_after", "transind",
                        "io_time", "table", "columns", "before", "tokens"]
    assert pk["op"] == "PKUPDATE" and pk["iotype"] == 115 and pk["transind"] == 1
    assert pk["before"] == [{"index": 0, "name": "CUST_CODE", "null": False, "value": "WILL"}]
    assert pk["columns"][2] == {"index": 2, "name": "CITY", "null": True, "value": None}
    assert trunc["op"] == "TRUNCATE" and trunc["columns"] == [] and trunc["transind"] == 2


def test_json_without_definitions_shows_raw_spans(home, capsys) -> None:
    _, lines, _ = run(capsys, "--json", "dirdat/aa000000000")
    rec = json.loads(lines[1])
    assert rec["columns"] == [
        {"index": 0, "name": None, "null": False, "value": "00000004" + b"WILL".hex()},
        {"index": 1, "name": None, "null": False, "value": "0000000f" + b"BG SOFTWARE CO.".hex()},
        {"index": 2, "name": None, "null": False, "value": "00000007" + b"SEATTLE".hex()},
        {"index": 3, "name": None, "null": False, "value": "0000" + b"WA".hex()}]
    pk = json.loads(lines[3])
    assert pk["before"] == [{"index": 0, "name": None, "null": False,
                             "value": "00000004" + b"WILL".hex()}]
    assert pk["columns"][1] == {"index": 2, "name": None, "null": True, "value": None}


def test_numbers_are_scaled_text(tmp_path, capsys) -> None:
    t = Table.build("S.N", [number_column("A", 10, 2), number_column("B", 10, 2),
                            number_column("C", 5), varchar_column("D", 5)])
    w = TrailWriter(str(tmp_path / "nn"), sync="none")
    w.open()
    w.write_transaction(TrailTransaction("1", [TrailRecord(t, IOTYPE_INSERT, "A", 0, "1", 0,
                                                           [123456, -5, 42, "x"])]))
    w.close()
    defs = tmp_path / "n.def"
    defs.write_text(
        "Definition for table S.N\nRecord length: 40\nSyskey: 0\nColumns: 4\n"
        "A 134 13 0 2 0 1 0 8 8 8 0 0 0 0 1 0 0 3\n"
        "B 134 13 12 2 0 1 0 8 8 8 0 0 0 0 1 0 0 3\n"
        "C 134 8 24 0 0 1 0 8 8 8 0 0 0 0 1 0 0 3\n"
        "D 64 5 36 0 0 1 0 5 5 0 0 0 0 0 1 0 0 0\n"
        "End of definition\n")
    _, lines, _ = run(capsys, "--json", "--defs", str(defs), str(tmp_path / "nn000000000"))
    values = [c["value"] for c in json.loads(lines[1])["columns"]]
    assert values == ["1234.56", "-0.05", "42", "x"]


def test_unknown_iotype_has_data_hex(home, capsys) -> None:
    path = home / "dirdat" / "aa000000000"
    data = bytearray(path.read_bytes())
    first = data.index(b"G\x01")
    data[first + 8 + 6] = 0xA0  # IOType
    path.write_bytes(bytes(data))
    _, lines, _ = run(capsys, "--json", "--count", "1", "dirdat/aa000000000")
    rec = json.loads(lines[1])
    assert rec["iotype"] == 0xA0 and rec["op"] is None and rec["columns"] == []
    assert rec["data_hex"].startswith("00000008")


def test_count_and_rba(home, capsys) -> None:
    _, lines, _ = run(capsys, "--json", "--count", "2", "dirdat/aa000000000")
    assert len(lines) == 3
    rba = json.loads(lines[2])["rba"]
    _, lines, _ = run(capsys, "--json", "--rba", str(rba), "dirdat/aa000000000")
    assert json.loads(lines[1])["rba"] == rba and len(lines) == 4


def test_text_view(home, capsys) -> None:
    code, lines, _ = run(capsys, "--defs", "dirdef/tcust.def", "dirdat/aa000000000")
    text = "\n".join(lines)
    assert code == 0
    assert lines[0] == "File dirdat/aa000000000  big-endian  compatibility 3"
    assert "Name: GG.JMSCAP_TCUSTMER" in text
    assert "Column     0 CUST_CODE : 'WILL'" in text
    assert "Column     2 CITY      : NULL" in text
    assert "2010-02-05T10:11:21.000000Z Insert               Len    58 RBA " in text
    assert "  VAMSEQID (x56) : 00000000000000000001" in text
    assert "  TXNAME   : batch-7" in text
    assert "G  s" in text and "G  b" in text and "G  e" in text
    assert "Key before image:" in text


def test_prefix_follows_rollover(home, capsys, tcustmer: Table) -> None:
    w = TrailWriter("dirdat/aa", sync="none")
    w.open()
    w._roll()
    w.write_transaction(TrailTransaction("3", [TrailRecord(tcustmer, IOTYPE_INSERT, "A", 0, "3",
                                                           0, ["X", "Y", "Z", "WA"])]))
    w.close()
    _, lines, _ = run(capsys, "--json", "dirdat/aa")
    kinds = [(json.loads(x)["file"], json.loads(x)["kind"]) for x in lines]
    assert kinds.count(("dirdat/aa000000001", "file-header")) == 1
    assert json.loads(lines[-1])["tokens"]["TRANID"] == "3"


def test_partial_tail_is_a_note(home, capsys) -> None:
    path = home / "dirdat" / "aa000000000"
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    code, lines, err = run(capsys, "--json", "dirdat/aa000000000")
    assert code == 0 and len(lines) == 4
    assert "end of data at RBA" in err and "bytes pending" in err
    code, lines, _ = run(capsys, "dirdat/aa000000000")
    assert code == 0 and "end of data at RBA" in lines[-1]


def test_corruption_is_one_error_line(home, capsys) -> None:
    path = home / "dirdat" / "aa000000000"
    data = bytearray(path.read_bytes())
    first = data.index(b"G\x01")
    second = first + layout_for("big").head.unpack_from(data, first)[2]
    data[second + 3] ^= 0x01
    path.write_bytes(bytes(data))
    code, lines, err = run(capsys, "--json", "dirdat/aa000000000")
    assert code == 2 and len(lines) == 2
    assert err.count("\n") == 1
    assert err.startswith(f"msgcap dump: error: dirdat/aa000000000: RBA {second}: ")


@pytest.mark.parametrize(("setup", "message"), [
    ("garbage", "not a trail file"),
    ("missing", "no such file or trail"),
    ("nodefs", "is not in the definitions"),
])
def test_bad_input_errors(home, capsys, setup: str, message: str) -> None:
    args = ["--json", "dirdat/aa000000000"]
    if setup == "garbage":
        (home / "junk").write_bytes(b"not a trail at all" * 10)
        args = ["junk"]
    elif setup == "missing":
        args = ["dirdat/zz"]
    else:
        (home / "other.def").write_text(TCUSTMER_DEFS.replace("JMSCAP_TCUSTMER", "OTHER"))
        args = ["--defs", "other.def", *args]
    code, _, err = run(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_console_entry_point(home) -> None:
    done = subprocess.run([sys.executable, "-m", "msgcap.cli", "dump", "--json", "--defs",
                           "dirdef/tcust.def", "dirdat/aa000000000"], capture_output=True,
                          text=True, check=False, cwd=home,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == SPEC_RECORD.replace("RBA", str(json.loads(lines[1])["rba"]))


def test_other_null_indicator_is_shown_raw(home, capsys, caplog) -> None:
    path = home / "dirdat" / "aa000000000"
    data = bytearray(path.read_bytes())
    first = data.index(b"G\x01")
    col0 = data.index(b"\x00\x00\x00\x08\x00\x00\x00\x04WILL", first) + 4  # CUST_CODE's span
    data[col0 + 1] = 0x01
    path.write_bytes(bytes(data))
    code, lines, _ = run(capsys, "--json", "--defs", "dirdef/tcust.def", "--count", "1",
                         "dirdat/aa000000000")
    assert code == 0
    assert json.loads(lines[1])["columns"][0] == {"index": 0, "name": "CUST_CODE",
                                                  "null": False, "value": "0001000457494c4c"}
    assert "null indicator 0001" in caplog.text


def test_a_gap_in_the_sequence_is_a_warning_and_dump_goes_on(home: Path, tcustmer: Table,
                                                             example_time: int, capsys) -> None:
    w = TrailWriter("dirdat/aa", sync="none")
    w.open()
    for seq in range(3, 6):  # files 1, 2 and 3 hold one transaction each
        w._roll()
        w.write_transaction(TrailTransaction(str(seq), [TrailRecord(
            tcustmer, IOTYPE_INSERT, "A", example_time, f"{seq:020d}", 0,
            ["C" + str(seq), "N", "C", "WA"])]))
    w.close()
    Path("dirdat/aa000000001").unlink()
    assert main(["dump", "--json", "dirdat/aa"]) == 2
    out, err = capsys.readouterr()
    txids = [json.loads(line)["tokens"]["TRANID"] for line in out.splitlines()
             if '"kind": "record"' in line]
    assert txids == ["1", "2", "2", "2", "4", "5"]  # file 0, then 2 and 3 after the gap
    assert err.splitlines() == [
        ("msgcap dump: WARNING: dirdat/aa000000001 is missing: the trail has a gap; going on "
         "with dirdat/aa000000002"),
        ("msgcap dump: error: dirdat/aa000000001: the trail has a gap: dirdat/aa000000001 "
         "missing (the files after it were shown)")]


def test_a_cut_record_before_the_last_file_fails_after_showing_everything(
        home: Path, tcustmer: Table, example_time: int, capsys) -> None:
    w = TrailWriter("dirdat/aa", sync="none")
    w.open()
    for seq in (3, 4):  # files 1 and 2 hold one transaction each
        w._roll()
        w.write_transaction(TrailTransaction(str(seq), [TrailRecord(
            tcustmer, IOTYPE_INSERT, "A", example_time, f"{seq:020d}", 0,
            ["C" + str(seq), "N", "C", "WA"])]))
    w.close()
    first = Path("dirdat/aa000000000")
    first.write_bytes(first.read_bytes()[:-10])  # its last record (the truncate) is cut
    for args in (["dirdat/aa"], ["dirdat/aa000000000", "dirdat/aa000000001",
                                 "dirdat/aa000000002"]):
        assert main(["dump", "--json", *args]) == 2
        out, err = capsys.readouterr()
        records = [json.loads(line) for line in out.splitlines() if '"kind": "record"' in line]
        assert [r["tokens"]["TRANID"] for r in records] == ["1", "2", "2", "3", "4"]
        warning, error = err.splitlines()
        assert warning.startswith("msgcap dump: WARNING: dirdat/aa000000000: end of data at RBA")
        assert "not the last of its trail, so that record is lost" in warning
        assert error.startswith("msgcap dump: error: dirdat/aa000000000: RBA ")
        assert "incomplete record (" in error and "not the last of its trail" in error
        rba = int(error.split("RBA ")[1].split(":")[0])  # where the cut record starts
        assert f"RBA {rba} (" in warning and rba > records[2]["rba"]
    # the last file of a trail cut at its end is a record being written: a note, exit 0
    last = Path("dirdat/aa000000002")
    last.write_bytes(last.read_bytes()[:-10])
    assert main(["dump", "--json", "dirdat/aa000000002"]) == 0
    assert "bytes pending" in capsys.readouterr().err
