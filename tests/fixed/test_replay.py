"""Both fixed-width examples end to end: ``msgcap replay`` → trail → ``msgcap dump --json``,
error.policy on bad records, and ``gendef`` writing definitions from the copybook."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msgcap.cli import main

from .conftest import EXAMPLES, REPO, RETAIL_MESSAGES

PROP = "dirprm/jmsvam.properties"
GOOD = RETAIL_MESSAGES


def cli(*args: str, module: str = "msgcap.cli") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          env=env, check=False, timeout=120)


def dump(trail: str, defs: str) -> list[dict]:
    done = cli("dump", "--json", "--defs", defs, trail)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return [r for r in rows if r["kind"] == "record"]


def image(rec: dict) -> dict:
    return {c["name"]: c["value"] for c in rec["columns"] if not c.get("missing")}


def copy_example(name: str, tmp_path: Path, monkeypatch) -> Path:
    shutil.copytree(EXAMPLES / name, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def copybook(tmp_path, monkeypatch) -> Path:
    return copy_example("copybook", tmp_path, monkeypatch)


@pytest.fixture
def sourcedefs(tmp_path, monkeypatch) -> Path:
    return copy_example("sourcedefs", tmp_path, monkeypatch)


def test_copybook_example(copybook):
    done = cli("replay", "--prop", PROP, "messages.jsonl")
    assert done.returncode == 0, done.stderr
    assert "messages 4  duplicates 0  discarded 0  transactions 4  operations 4" in done.stdout
    assert "RETAIL.CUSTOMER  insert 1  update 1" in done.stdout
    assert "RETAIL.ORDERS    insert 1  delete 1" in done.stdout
    recs = dump("dirdat/rt000000000", "dirdat/retail.def")
    got = [(r["op"], r["table"], r["io_time"], r["transind"], r["tokens"]["TRANID"])
           for r in recs]
    assert got == [
        ("INSERT", "RETAIL.CUSTOMER", "2024-03-01T10:15:30.123456Z", 3, "1"),
        ("INSERT", "RETAIL.ORDERS", "2024-03-01T10:15:31.000000Z", 3, "2"),
        ("FIELDCOMP", "RETAIL.CUSTOMER", "2024-03-02T09:00:00.000000Z", 3, "3"),
        ("DELETE", "RETAIL.ORDERS", "2024-03-02T09:30:00.000000Z", 3, "4"),
    ]
    # seqid = $jmsid = the ActiveMQ id reformatted to 64 digits
    assert recs[0]["tokens"]["VAMSEQID"] == "17092881000000000100000000010000000001" \
        "00000000010000000000000001"
    assert image(recs[0]) == {"HDR_SOURCE": "POS1", "CUST_ID": "1001",
                              "CUST_NAME": "ACME TRADING".ljust(30), "BALANCE": "1250.00",
                              "OPENED": "2024-03-01"}
    assert image(recs[1]) == {"HDR_SOURCE": "POS1", "ORDER_ID": "5001", "CUST_ID": "1001",
                              "AMOUNT": "1250.00", "STATUS": "N"}
    # the update has no before values: every column is written
    assert image(recs[2])["BALANCE"] == "999.50" and len(image(recs[2])) == 5
    # the short delete record: key only (the other columns were missing anyway)
    assert image(recs[3]) == {"ORDER_ID": "5001"}
    assert (copybook / "dirdat" / "retail.def").read_text() \
        .startswith("*+- Defgen version 4.0")


def test_sourcedefs_example_one_message_per_file(sourcedefs):
    done = cli("replay", "--prop", PROP, "messages")
    assert done.returncode == 0, done.stderr
    assert "messages 2  duplicates 0  discarded 0  transactions 2  operations 2" in done.stdout
    recs = dump("dirdat/tc000000000", "dirdat/tcustmer.def")
    assert [(r["op"], r["table"], r["tokens"]["VAMSEQID"]) for r in recs] == [
        ("INSERT", "GG.JMSCAP_TCUSTMER", "0001.msg"),
        ("FIELDCOMP", "GG.JMSCAP_TCUSTMER", "0002.msg")]
    assert image(recs[0]) == {"CUST_CODE": "WILL", "NAME": "BG SOFTWARE CO.",
                              "CITY": "SEATTLE", "STATE": "WA"}
    assert image(recs[1]) == {"CUST_CODE": "ANN", "NAME": "ANN'S BOATS", "CITY": "NEW YORK",
                              "STATE": "NY"}
    # replaying again writes nothing: the file names are the seqids
    again = cli("replay", "--prop", PROP, "messages")
    assert "messages 2  duplicates 2" in again.stdout


def test_gendef_writes_the_copybook_definitions(copybook):
    done = cli("-prop", PROP, "-out", "dirdef/retail.def", module="gendef.cli")
    assert done.returncode == 0, done.stderr
    written = (copybook / "dirdef" / "retail.def").read_text()
    expected = (REPO / "tests" / "gendef" / "data" / "retail_expected.txt").read_text()
    body = written[written.index("Definition for table"):]
    assert body.strip() == expected[expected.index("Definition for table"):].strip()


def test_gendef_sourcedefs_example_leaves_the_header_out(sourcedefs):
    done = cli("-prop", PROP, module="gendef.cli")
    assert done.returncode == 0, done.stderr
    assert "Definition for table GG.JMSCAP_TCUSTMER" in done.stdout
    assert "HEADER" not in done.stdout


def bad_jsonl(*bodies: str) -> str:
    with open("in.jsonl", "w") as out:
        out.writelines(json.dumps({"id": f"ID:mq1-40507-1709288100000-1:1:1:1:{i}",
                                  "body": body}) + "\n" for i, body in enumerate(bodies, 1))
    return "in.jsonl"


BAD = [
    (GOOD[1][:30], "header", "30 characters, shorter than the 39 of header HEADER"),
    (GOOD[1].replace("ORDERS  ", "RETURNS "), "field HDR-REC-ID",
     "unknown table RETAIL.RETURNS (no such 01 record)"),
    (GOOD[1][:39 + 10 + 8] + "0000012x000N", "field AMOUNT (offset 57, length 11)",
     "invalid number '0000012x000'"),
    (GOOD[1][:39 + 5], "field ORDER-ID (offset 39, length 10)", "inside the field"),
    (GOOD[1] + "junk", "offset 69", "4 non-blank characters after the 69-character record"),
]


def set_policy(policy: str) -> None:
    path = Path(PROP)
    path.write_text(path.read_text().replace("error.policy=abend", f"error.policy={policy}"))


@pytest.mark.parametrize("body,position,reason", BAD)
def test_abend_names_message_and_field(copybook, capsys, body, position, reason):
    assert main(["replay", "--prop", PROP, bad_jsonl(GOOD[0], body, GOOD[2])]) == 2
    _out, err = capsys.readouterr()
    (error,) = [e for e in err.splitlines() if "error" in e]
    assert error.startswith("msgcap replay: error: message in.jsonl:2: ")
    assert f": {position}: " in error and reason in error
    recs = dump("dirdat/rt000000000", "dirdat/retail.def")
    assert [image(r)["CUST_ID"] for r in recs] == ["1001"]


@pytest.mark.parametrize("body,position,reason", BAD)
def test_discard_goes_on(copybook, capsys, body, position, reason):
    set_policy("discard")
    assert main(["replay", "--prop", PROP, bad_jsonl(GOOD[0], body, GOOD[2])]) == 0
    out, _err = capsys.readouterr()
    assert "messages 3  duplicates 0  discarded 1  transactions 2" in out
    (rec,) = [json.loads(x) for x in Path("dirrpt/msgcap.dsc").read_text().splitlines()]
    assert rec["position"] == position and reason in rec["error"]
    assert rec["message"]["body"] == body
    assert len(dump("dirdat/rt000000000", "dirdat/retail.def")) == 2


EBCDIC_CPY = """\
       01  HDR.
           05  H-OP        PIC X.
           05  H-TABLE     PIC X(8).
       01  ACCOUNT.
      * KEY
           05  ACCT-NO     PIC S9(9) COMP.
           05  ACCT-NAME   PIC X(10).
           05  BAL         PIC S9(7)V99 COMP-3.
           05  LIMIT-AMT   PIC S9(5)V99.
"""


def test_ebcdic_byte_messages_replay(copybook):
    Path("dirdef/bank.cpy").write_text(EBCDIC_CPY)
    props = Path(PROP).read_text()
    cut = props.index("parser.type=fixed")
    Path(PROP).write_text(props[:cut] + "parser.type=fixed\nfixed.schematype=copybook\n"
                          "fixed.copybook=dirdef/bank.cpy\nfixed.header=HDR\nfixed.optype=H-OP\n"
                          "fixed.table=H-TABLE\nfixed.schema=BANK\nfixed.encoding=cp037\n")
    body = ("IACCOUNT ".encode("cp037") + (-12345).to_bytes(4, "big", signed=True)
            + "Zoë".ljust(10).encode("cp037") + bytes.fromhex("000123456d")
            + b"\xf0\xf0\xf0\xf9\xf9\xf0\xd1")
    entry = {"id": "ID:mq1-40507-1709288100000-1:1:1:1:1",
             "body_b64": base64.b64encode(body).decode()}
    Path("bank.jsonl").write_text(json.dumps(entry) + "\n")
    done = cli("replay", "--prop", PROP, "bank.jsonl")
    assert done.returncode == 0, done.stderr
    (rec,) = dump("dirdat/rt000000000", "dirdat/retail.def")
    values = image(rec)
    # (the trail pads CHAR to its length in bytes: compare the text only)
    assert values.pop("ACCT_NAME").rstrip() == "Zoë"
    assert values == {"ACCT_NO": "-12345", "BAL": "-1234.56", "LIMIT_AMT": "-99.01"}
