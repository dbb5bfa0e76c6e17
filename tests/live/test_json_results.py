"""``msgcap run --json`` on a spool directory (no broker), through the real CLI (issue 26): one
JSON object on stdout however the run ends, reports on stderr meanwhile, and ``report.http`` on
port 0: the address printed on stderr answers ``/health`` and ``msgcap status`` shows it."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import Any

SERVING = re.compile(r"^serving /health and /metrics on (http://127\.0\.0\.1:(\d+))$",
                     re.MULTILINE)


def put(work, *seqs: int) -> None:
    for seq in seqs:
        (work.root / "dirspool" / f"{seq:06d}.msg").write_text(work.body(seq))


def poll(what: str, probe: Callable[[], Any], proc: subprocess.Popen) -> Any:
    """``probe``'s first true value (a deadline, not a timed assertion)."""
    deadline = time.monotonic() + 120
    while not (value := probe()):
        assert proc.poll() is None, f"msgcap run ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.1)
    return value


def health(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url + "/health", timeout=30) as answer:
            return json.loads(answer.read())
    except OSError:  # 503 until capturing and connected
        return None


def status(work) -> dict[str, Any]:
    done = work.msgcap("status", "--prop", str(work.prop), "--json")
    return json.loads(done.stdout)


def test_run_json_and_report_http_on_port_0(work) -> None:
    work.spool(report_http="127.0.0.1:0")
    put(work, 1, 2, 3)
    out, err = work.root / "run.json", work.root / "run.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop",
                                 str(work.prop), "--json"], cwd=work.root, env=work.env(),
                                stdout=stdout, stderr=stderr, text=True)
    try:
        url, port = poll("the address on stderr", lambda: SERVING.search(err.read_text()),
                         proc).groups()
        assert int(port) > 0
        poll("/health with 3 messages", lambda: (h := health(url)) and h["messages"] == 3,
             proc)
        st = poll("the address in status", lambda: (s := status(work))["http"] and s, proc)
        assert st["state"] == "running" and st["http"] == url
        text = work.msgcap("status", "--prop", str(work.prop)).stdout
        assert f"\nserving /health and /metrics on {url}\n" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    got = json.loads(out.read_text())  # the whole of stdout is the one object
    size = (work.root / "dirdat" / "sa000000000").stat().st_size
    assert got | {"exit_reason": "SIGTERM", "error": None, "command": "run", "messages": 3,
                  "transactions": 3, "durable_transactions": 3,
                  "operations": [{"table": "SALES.CUSTOMER", "op": "insert", "count": 3}],
                  "last_commit": "2024-03-01T10:15:30.000000Z"} == got
    assert got["trail"]["durable"] == {"file": "dirdat/sa000000000", "seqno": 0, "rba": size}
    assert got["lag_seconds"] > 0 and got["elapsed_seconds"] > 0
    assert status(work)["http"] is None  # stopped: nothing serves there any more


def test_run_json_after_max_idle_keeps_reports_off_stdout(work) -> None:
    work.spool(jms_report_records=1)
    put(work, 1, 2)
    done = work.msgcap("run", "--prop", str(work.prop), "--json", "--max-idle", "0.5",
                       check=True)
    got = json.loads(done.stdout)
    assert (got["exit_reason"], got["messages"], got["transactions"]) == ("max-idle", 2, 2)
    assert got["trail"]["files"] == ["dirdat/sa000000000"]
    assert "msgcap report at " in done.stderr and "serving" not in done.stderr
    # status text gives the lag in words (the test messages' commit is days old)
    text = work.msgcap("status", "--prop", str(work.prop)).stdout
    assert re.search(r"^last commit: 2024-03-01 10:15:30 UTC; lag \d+ d \d+ h$", text,
                     re.MULTILINE), text
