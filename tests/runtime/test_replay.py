"""``msgcap replay`` end to end on examples/delimited, checked through ``msgcap dump --json``."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msgcap.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "delimited"
PROP = "dirprm/jmsvam.properties"
TRAIL = "dirdat/sa000000000"
HEAD = "{op},SALES.{table},2024-03-01 10:15:30.000000,{txind},{seq:010d}"
CUSTOMER = HEAD + ",NULL,{key},NULL,ACME,NULL,Boston,NULL,2024-03-01 10:15:30"


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A copy of the example as the working directory."""
    shutil.copytree(EXAMPLE, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "msgcap.cli", *args], capture_output=True,
                          text=True, env=env, check=False, timeout=120)


def dump() -> list[dict]:
    """The data records of the trail, through ``msgcap dump --json``."""
    done = cli("dump", "--json", "--defs", "dirdat/sales.def", TRAIL)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return [r for r in rows if r["kind"] == "record"]


def image(rec: dict, key: str = "columns") -> dict:
    return {c["name"]: c["value"] for c in rec[key] if not c.get("missing")}


def set_policy(policy: str) -> None:
    path = Path(PROP)
    text = path.read_text().replace("error.policy=discard", f"error.policy={policy}")
    path.write_text(text)


def write_lines(name: str, *lines: str) -> str:
    Path(name).write_text("".join(line + "\n" for line in lines))
    return name


def test_example_replay_and_dump(work):
    done = cli("replay", "--prop", PROP, "messages.jsonl")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "messages 5  duplicates 0  discarded 0  transactions 6  operations 8" in out
    assert "SALES.ORDERS    insert 1  update 1  delete 1" in out
    assert f"trail files: {TRAIL}" in out
    assert (work / "dirdat" / "sales.def").read_text().startswith("*+- Defgen version 4.0")

    recs = dump()
    got = [(r["op"], r["before_after"], r["transind"], r["table"], r["tokens"]["TRANID"],
            r["tokens"]["VAMSEQID"]) for r in recs]
    assert got == [
        ("INSERT", "A", 0, "SALES.CUSTOMER", "1", "0000000001"),
        ("INSERT", "A", 1, "SALES.PRODUCT", "1", "0000000002"),
        ("INSERT", "A", 2, "SALES.ORDERS", "1", "0000000003"),
        ("FIELDCOMP", "A", 3, "SALES.CUSTOMER", "2", "0000000004"),
        ("FIELDCOMP", "A", 3, "SALES.ORDERS", "3", "0000000005"),
        ("DELETE", "B", 3, "SALES.ORDERS", "4", "0000000006"),
        ("INSERT", "A", 3, "SALES.PRODUCT", "5", "0000000007"),
        ("INSERT", "A", 3, "SALES.CUSTOMER", "6", "0000000008"),
    ]
    assert image(recs[0]) == {"CUST_ID": "1001", "NAME": "ACME, Inc.", "CITY": "Boston",
                              "CREATED": "2024-03-01:10:15:30"}
    assert image(recs[1])["DESCRIPTION"] == '12" pipe, "heavy"'
    assert image(recs[2])["AMOUNT"] == "1250.00"
    assert recs[0]["io_time"] == "2024-03-01T10:15:30.000000Z"
    # updates with before images: keys plus the changed columns only
    assert image(recs[3]) == {"CUST_ID": "1001", "CITY": None}
    assert image(recs[4]) == {"ORDER_ID": "5001", "AMOUNT": "1300.00", "STATUS": "S",
                              "UPDATED": "2024-03-01:11:00:00.000000"}
    assert image(recs[5]) == {"ORDER_ID": "5001"}
    assert image(recs[6]) == {"SKU": "VALVE-3", "DESCRIPTION": "NULL", "PRICE": None}
    assert image(recs[7])["NAME"] == "O'Brien \"Big Al\" Ltd"


def test_replay_again_skips_duplicates(work, capsys):
    assert main(["replay", "--prop", PROP, "messages.jsonl"]) == 0
    capsys.readouterr()
    assert main(["replay", "--prop", PROP, "messages.jsonl"]) == 0
    out, err = capsys.readouterr()
    assert "messages 5  duplicates 5  discarded 0  transactions 0" in out
    assert err.count("duplicate (already in the trail)") == 5
    assert len(dump()) == 8


def test_update_options_change_the_images(work, capsys):
    path = Path(PROP)
    path.write_text(path.read_text().replace("trail.compressupdates=true",
                                             "trail.compressupdates=false\n"
                                             "trail.getupdatebefores=true")
                    .replace("trail.compressdeletes=true", "trail.compressdeletes=false"))
    assert main(["replay", "--prop", PROP, "messages.jsonl"]) == 0
    recs = dump()
    ops = [(r["op"], r["before_after"]) for r in recs]
    assert ops[3:7] == [("UPDATE", "B"), ("UPDATE", "A"), ("UPDATE", "B"), ("UPDATE", "A")]
    assert image(recs[3]) == {"CUST_ID": "1001", "NAME": "ACME, Inc.", "CITY": "Boston",
                              "CREATED": "2024-03-01:10:15:30"}
    assert image(recs[4])["CITY"] is None
    # full delete: every before value the message has (only the key here)
    assert ops[7] == ("DELETE", "B") and image(recs[7]) == {"ORDER_ID": "5001"}


BAD = [
    ("I,SALES.CUSTOMER,2024-03-01 10:15:30.000000", "record 1",
     "fewer than the 5 header fields"),
    ("I,SALES.NOPE,2024-03-01 10:15:30.000000,W,0000000002,NULL,1", "record 1",
     "unknown table SALES.NOPE"),
    ("D,SALES.ORDERS,2024-03-01 10:15:30.000000,W,0000000002", "record 1",
     "key column ORDER_ID is missing"),
    ("I,SALES.ORDERS,2024-03-01 10:15:30.000000,W,0000000002,NULL,5001,NULL,1001,NULL,12x",
     "AMOUNT", "'12x' is not a number"),
    ("I,SALES.ORDERS,2024-03-01 10:15:30.000000,E,0000000002,NULL,5001", "txind",
     "end without an open transaction"),
]


@pytest.mark.parametrize("line,position,reason", BAD)
def test_abend_names_message_field_and_reason(work, capsys, line, position, reason):
    set_policy("abend")
    good1 = CUSTOMER.format(op="I", table="CUSTOMER", txind="W", seq=1, key=1001)
    good3 = CUSTOMER.format(op="I", table="CUSTOMER", txind="W", seq=3, key=1003)
    write_lines("in.txt", good1, line, good3)
    assert main(["replay", "--prop", PROP, "--lines", "in.txt"]) == 2
    _out, err = capsys.readouterr()
    (error,) = [e for e in err.splitlines() if "error" in e]
    assert error.startswith("msgcap replay: error: message in.txt:2: ")
    assert position in error and reason in error
    recs = dump()  # exactly the transactions before the bad message
    assert [image(r)["CUST_ID"] for r in recs] == ["1001"]


@pytest.mark.parametrize("line,position,reason", BAD)
def test_discard_writes_the_message_and_goes_on(work, capsys, line, position, reason):
    good1 = CUSTOMER.format(op="I", table="CUSTOMER", txind="W", seq=1, key=1001)
    good3 = CUSTOMER.format(op="I", table="CUSTOMER", txind="W", seq=3, key=1003)
    write_lines("in.txt", good1, line, good3)
    assert main(["replay", "--prop", PROP, "--lines", "in.txt"]) == 0
    out, _err = capsys.readouterr()
    assert "messages 3  duplicates 0  discarded 1  transactions 2" in out
    assert [image(r)["CUST_ID"] for r in dump()] == ["1001", "1003"]
    (rec,) = [json.loads(x) for x in Path("dirrpt/SALES.dsc").read_text().splitlines()]
    assert rec["source"] == "in.txt:2" and reason in rec["error"]
    assert position in (rec["position"] or "") + rec["error"]
    assert rec["message"] == {"id": "in.txt:2", "headers": {}, "body": line}
    # the discard file replays as a dump
    Path(PROP).write_text(Path(PROP).read_text().replace("dirrpt/SALES.dsc", "dirrpt/again.dsc"))
    assert main(["replay", "--prop", PROP, "dirrpt/SALES.dsc"]) == 0
    assert json.loads(Path("dirrpt/again.dsc").read_text())["source"] == "dirrpt/SALES.dsc:1"


def test_discard_keeps_the_open_transaction(work, capsys):
    write_lines(
        "in.txt",
        CUSTOMER.format(op="I", table="CUSTOMER", txind="B", seq=1, key=1001),
        CUSTOMER.format(op="I", table="NOPE", txind="M", seq=2, key=1002),
        CUSTOMER.format(op="I", table="CUSTOMER", txind="E", seq=3, key=1003))
    assert main(["replay", "--prop", PROP, "--lines", "in.txt"]) == 0
    recs = dump()
    assert [(image(r)["CUST_ID"], r["transind"]) for r in recs] == [("1001", 0), ("1003", 2)]


def test_open_transaction_at_end_is_an_error(work, capsys):
    write_lines(
        "in.txt",
        CUSTOMER.format(op="I", table="CUSTOMER", txind="W", seq=1, key=1001),
        CUSTOMER.format(op="I", table="CUSTOMER", txind="B", seq=2, key=1002),
        CUSTOMER.format(op="I", table="CUSTOMER", txind="M", seq=3, key=1003))
    assert main(["replay", "--prop", PROP, "--lines", "in.txt"]) == 2
    err = capsys.readouterr().err
    assert "message in.txt:2: txind: transaction 2 begun here has no end record" in err
    assert [image(r)["CUST_ID"] for r in dump()] == ["1001"]


def test_interleaved_begin_is_an_error(work, capsys):
    set_policy("abend")
    write_lines(
        "in.txt",
        CUSTOMER.format(op="I", table="CUSTOMER", txind="B", seq=1, key=1001),
        CUSTOMER.format(op="I", table="CUSTOMER", txind="B", seq=2, key=1002))
    assert main(["replay", "--prop", PROP, "--lines", "in.txt"]) == 2
    err = capsys.readouterr().err
    assert "message in.txt:2: operation 1 (SALES.CUSTOMER), txind: txind begin while " \
           "transaction 1 (begun in in.txt:1) is open" in err
    assert not [r for r in dump()]


def test_progress_lines(work, capsys):
    assert main(["replay", "--prop", PROP, "--progress-interval", "0", "messages.jsonl"]) == 0
    err = capsys.readouterr().err
    assert "replay: 5 messages, 6 transactions, 8 operations, 0 discarded" in err


def test_progress_lines_at_most_one_per_interval(monkeypatch):
    """A line once the interval has passed, looked at every ``CLOCK_EVERY`` messages."""
    from msgcap.commands import replay
    from msgcap.pipeline import Stats

    clock = iter(range(1000))
    monkeypatch.setattr(replay.time, "monotonic", lambda: next(clock) * 0.5)
    out = io.StringIO()
    progress = replay.Progress(out, 1.0)  # started at 0.0
    stats = Stats(messages=7)
    for _ in range(replay.Progress.CLOCK_EVERY - 1):
        progress.tick(stats)
    assert out.getvalue() == ""  # not looked at yet
    progress.tick(stats)  # 0.5 s: too early
    for _ in range(replay.Progress.CLOCK_EVERY):
        progress.tick(stats)  # 1.0 s: a line
    assert out.getvalue().startswith("replay: 7 messages, 0 transactions")
    assert out.getvalue().count("\n") == 1


def test_missing_input_is_one_line_error(work, capsys):
    assert main(["replay", "--prop", PROP, "nope.jsonl"]) == 2
    assert capsys.readouterr().err.strip() == "msgcap replay: error: nope.jsonl: no such file"


def test_one_message_per_file_in_name_order(work, capsys):
    Path("spool").mkdir()
    Path("spool/b.msg").write_text(
        CUSTOMER.format(op="I", table="CUSTOMER", txind="E", seq=2, key=1002) + "\n")
    Path("spool/a.msg").write_text(
        CUSTOMER.format(op="I", table="CUSTOMER", txind="B", seq=1, key=1001) + "\n")
    assert main(["replay", "--prop", PROP, "spool/*.msg"]) == 0
    assert "messages 2  duplicates 0  discarded 0  transactions 1  operations 2" in (
        capsys.readouterr().out)
    assert [(image(r)["CUST_ID"], r["transind"]) for r in dump()] == [("1001", 0), ("1002", 2)]
