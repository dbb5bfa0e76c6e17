"""Results for people and for scripts (issue 26): lag in words wherever text shows it, and
``msgcap replay --json``'s one JSON object on the examples, also when an error stops it."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msgcap.pipeline import Stats
from msgcap.report import Reporter, lag_words

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
HOUR = 3600.0
DAY = 24 * HOUR


@pytest.mark.parametrize("seconds, words", [
    (None, "n/a"),
    (0.0, "0.0 s"),
    (0.412, "0.4 s"),
    (4.002, "4.0 s"),
    (9.96, "10 s"),
    (45.2, "45 s"),
    (59.6, "1 min 00 s"),
    (192.4, "3 min 12 s"),
    (3599.6, "1 h 00 min"),
    (2 * HOUR + 5 * 60 + 10, "2 h 05 min"),
    (DAY - 20, "1 d 0 h"),
    (4 * DAY + 3 * HOUR + 100, "4 d 3 h"),
    (-45.0, "-45 s"),  # the source's clock ahead of this host's
])
def test_lag_in_words(seconds, words):
    assert lag_words(seconds) == words


def test_reports_show_lag_in_words():
    commit_us = 1_700_000_000_000_000
    stats = Stats(last_commit_us=commit_us)
    reporter = Reporter(stats, out=io.StringIO(), clock=lambda: 0.0,
                        now_us=lambda: commit_us + int((2 * HOUR + 5 * 60) * 1e6))
    assert reporter.report("summary").splitlines()[-1] == "lag: 2 h 05 min"


def replay(cwd: Path, *args: str) -> tuple[int, dict, str]:
    """``msgcap replay --json`` as a user runs it: (exit status, stdout parsed whole, stderr)."""
    done = subprocess.run([sys.executable, "-m", "msgcap.cli", "replay", "--json", *args],
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)), text=True,
                          capture_output=True, check=False, timeout=120)
    return done.returncode, json.loads(done.stdout), done.stderr


def ops(*items: tuple[str, str, int]) -> list[dict]:
    return [{"table": t, "op": o, "count": n} for t, o, n in items]


@pytest.mark.parametrize("example, prop, dump, expected", [
    ("delimited", "dirprm/jmsvam.properties", "messages.jsonl", {
        "messages": 5, "transactions": 6, "operations_total": 8,
        "operations": ops(("SALES.CUSTOMER", "insert", 2), ("SALES.CUSTOMER", "update", 1),
                          ("SALES.ORDERS", "delete", 1), ("SALES.ORDERS", "insert", 1),
                          ("SALES.ORDERS", "update", 1), ("SALES.PRODUCT", "insert", 2)),
        "trail_file": "dirdat/sa000000000", "definitions": "dirdat/sales.def"}),
    ("xml", "dirprm/orders.properties", "messages/orders.jsonl", {
        "messages": 2, "transactions": 3, "operations_total": 5,
        "operations": ops(("SALES.CUSTOMER", "insert", 1), ("SALES.CUSTOMER", "update", 1),
                          ("SALES.ORDERS", "delete", 1), ("SALES.ORDERS", "insert", 1),
                          ("SALES.ORDERS", "update", 1)),
        "trail_file": "dirdat/or000000000", "definitions": None}),
])
def test_replay_json_on_the_examples(tmp_path, example, prop, dump, expected):
    shutil.copytree(EXAMPLES / example, tmp_path, dirs_exist_ok=True)
    code, got, err = replay(tmp_path, "--prop", prop, "--progress-interval", "0", dump)
    assert code == 0, err
    trail_file = expected["trail_file"]
    size = (tmp_path / trail_file).stat().st_size
    position = {"file": trail_file, "seqno": 0, "rba": size}
    assert got == got | {
        "version": 1, "command": "replay", "exit_reason": "end-of-input", "error": None,
        "messages": expected["messages"], "duplicates": 0, "discarded": 0,
        "transactions": expected["transactions"],
        "durable_transactions": expected["transactions"],
        "operations": expected["operations"], "operations_total": expected["operations_total"],
        "trail": {"files": [trail_file], "written": position, "durable": position},
        "discarded_to": None, "definitions": expected["definitions"], "outputs": {}}
    assert got["lag_seconds"] > 0 and got["last_commit"].endswith("Z")
    assert got["elapsed_seconds"] >= 0
    assert "replay: " in err  # progress stays on stderr


def test_replay_json_says_which_error_stopped_it_and_where_discards_went(tmp_path):
    shutil.copytree(EXAMPLES / "delimited", tmp_path, dirs_exist_ok=True)
    good = ("I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,{seq:010d},NULL,{seq},NULL,ACME,NULL,"
            "Boston,NULL,2024-03-01 10:15:30")
    bad = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,0000000002,1"
    (tmp_path / "in.txt").write_text(f"{good.format(seq=1)}\n{bad}\n{good.format(seq=3)}\n")
    prop = tmp_path / "dirprm" / "jmsvam.properties"

    code, got, err = replay(tmp_path, "--prop", str(prop), "--lines", "in.txt")
    assert code == 0, err
    assert (got["messages"], got["discarded"], got["transactions"]) == (3, 1, 2)
    assert got["discarded_to"] == "dirrpt/SALES.dsc" and got["exit_reason"] == "end-of-input"

    prop.write_text(prop.read_text().replace("error.policy=discard", "error.policy=abend"))
    shutil.rmtree(tmp_path / "dirdat")
    code, got, err = replay(tmp_path, "--prop", str(prop), "--lines", "in.txt")
    assert code == 2
    (line,) = err.splitlines()[-1:]
    assert got["exit_reason"] == "error" and line == f"msgcap replay: error: {got['error']}"
    assert got["error"].startswith("message in.txt:2: ")
    # what was written before the bad message is durable, and said so
    assert (got["messages"], got["transactions"], got["durable_transactions"]) == (2, 1, 1)
    assert got["trail"]["durable"]["rba"] == (tmp_path / "dirdat/sa000000000").stat().st_size
