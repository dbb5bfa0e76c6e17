"""End to end: ``msgcap replay`` of the XML examples writes the documented trail records."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "xml"


def msgcap(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=cwd, env=env,
                          check=False,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "xml")
    return tmp_path / "xml"


def records(home: Path, trail: str) -> list[dict]:
    done = msgcap(home, "dump", "--json", trail)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return [r for r in rows if r["kind"] == "record"]


def test_replay_mytable(home):
    done = msgcap(home, "replay", "--prop", "dirprm/mytable.properties",
                  "messages/mytable.jsonl")
    assert done.returncode == 0, done.stderr
    assert "transactions 2  operations 2" in done.stdout
    recs = records(home, "dirdat/my000000000")
    assert [(r["op"], r["table"], r["io_time"]) for r in recs] == [
        ("INSERT", "MY.TABLE", "2010-02-05T10:11:21.000000Z")] * 2
    # VARCHAR values: 2-byte null indicator, 2-byte length, then the text
    values = [[bytes.fromhex(c["value"])[4:].decode() for c in r["columns"]] for r in recs]
    assert values == [["keyval", "col1val"]] * 2
    assert [r["tokens"]["VAMSEQID"] for r in recs] == ["0000000001", "0000000002"]


def test_replay_orders(home):
    done = msgcap(home, "replay", "--prop", "dirprm/orders.properties", "messages/orders.jsonl")
    assert done.returncode == 0, done.stderr
    assert "transactions 3  operations 5" in done.stdout
    recs = records(home, "dirdat/or000000000")
    assert [(r["op"], r["table"], r["tokens"]["TRANID"]) for r in recs] == [
        ("INSERT", "SALES.CUSTOMER", "T1001"), ("INSERT", "SALES.ORDERS", "T1001"),
        ("FIELDCOMP", "SALES.ORDERS", "T1002"), ("FIELDCOMP", "SALES.CUSTOMER", "T1003"),
        ("DELETE", "SALES.ORDERS", "T1003")]
    assert [r["transind"] for r in recs] == [0, 2, 3, 0, 2]
    # the update leaves out the unchanged and missing columns
    assert [c["index"] for c in recs[2]["columns"]] == [0, 2, 3]


def test_replay_bad_message_abends_with_a_clear_error(home):
    bad = home / "messages" / "bad.jsonl"
    body = ('<transaction ts="2010-02-05:10:11:21"><operation table="MY.TABLE" optype="I">'
            '<column name="col1" index="0"><aftervalue>x</aftervalue></column>'
            "</operation></transaction>")
    bad.write_text(json.dumps({"id": "bad-1", "headers": {"SEQNO": "0000000009"},
                               "body": body}) + "\n")
    done = msgcap(home, "replay", "--prop", "dirprm/mytable.properties", "messages/bad.jsonl")
    assert done.returncode != 0
    assert "dyncolrule.index (@index)" in done.stderr
    assert "column 'col1' is index 1 of MY.TABLE, not 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_replay_discard_policy_writes_the_position(home):
    prop = home / "dirprm" / "mytable.properties"
    prop.write_text(prop.read_text() + "error.policy=discard\nerror.file=dirrpt/xml.dsc\n")
    good = (home / "messages" / "mytable.jsonl").read_text().splitlines()
    bad = json.dumps({"id": "bad-2", "headers": {"SEQNO": "0000000003"},
                      "body": "<transaction><operation"})
    (home / "messages" / "mixed.jsonl").write_text("\n".join([good[0], bad, good[1]]) + "\n")
    done = msgcap(home, "replay", "--prop", "dirprm/mytable.properties",
                  "messages/mixed.jsonl")
    assert done.returncode == 0, done.stderr
    assert "discarded 1" in done.stdout
    [entry] = [json.loads(line) for line in (home / "dirrpt" / "xml.dsc").read_text().splitlines()]
    assert entry["position"].startswith("line 1, column")
    assert "malformed XML" in entry["error"]
    assert entry["message"]["id"] == "bad-2"


def test_run_consumes_the_spool_directory(home):
    sent = msgcap(home, "send", "--prop", "dirprm/mytable.properties", "messages/mytable.jsonl")
    assert sent.returncode == 0, sent.stderr
    done = msgcap(home, "run", "--prop", "dirprm/mytable.properties", "--max-idle", "0.5")
    assert done.returncode == 0, done.stderr
    assert "transactions 2  operations 2" in done.stdout
    assert len(list((home / "dirspool" / "mytable" / ".done").iterdir())) == 2
    recs = records(home, "dirdat/my000000000")
    assert [r["tokens"]["VAMSEQID"] for r in recs] == ["0000000001", "0000000002"]
