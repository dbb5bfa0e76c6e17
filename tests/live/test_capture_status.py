"""``msgcap status`` and the heartbeat (issue 14), end to end through the real CLI: against a
running ``msgcap run`` (spool source, and once fed by each real broker), after it stops, after
``kill -9``, after an error; damaged files; lag growing in /metrics, the report and the status
while idle with ``report.heartbeat``, and no heartbeat without it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from msgcap.commands.status import ABENDED, NOT_RUNNING, RUNNING
from tests.conftest import BROKERS

COMMIT = "2024-03-01T10:15:30.000000Z"  # the source timestamp of every test message


def status(work, *extra: str) -> tuple[int, dict[str, Any], str]:
    """(exit status, the parsed --json object, stderr)."""
    done = work.msgcap("status", "--prop", str(work.prop), "--json", *extra)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def wait_for(what: str, probe: Callable[[], Any], proc: subprocess.Popen | None = None,
             work=None) -> Any:
    """Poll ``probe`` until it returns something true (a deadline, not a timed assertion)."""
    deadline = time.monotonic() + 120
    while not (value := probe()):
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"msgcap run ended ({proc.returncode}) while waiting for "
                                 f"{what}:\n{(work.root / 'run.out').read_text()}")
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.1)
    return value


def put(work, *seqs: int) -> None:
    for seq in seqs:
        (work.root / "dirspool" / f"{seq:06d}.msg").write_text(work.body(seq))


def durable(work, transactions: int) -> Callable[[], dict[str, Any] | None]:
    """A probe: the status once the checkpoint holds ``transactions``."""
    def probe() -> dict[str, Any] | None:
        _, st, _ = status(work)
        cp = st["checkpoint"]
        return st if st["state"] == "running" and cp and cp["transactions"] == transactions \
            else None
    return probe


def metrics_url(work, proc) -> str:
    log = work.root / "dirrpt" / "SALES.log"
    found = wait_for("metrics URL in the log", lambda: log.exists() and re.search(
        r"serving /health and /metrics on (http://\S+)", log.read_text()), proc, work)
    return found[1] + "/metrics"


def scrape(url: str) -> tuple[str, dict[str, float]]:
    """/metrics: the text and its unlabelled samples."""
    with urllib.request.urlopen(url, timeout=30) as r:
        text = r.read().decode()
    samples = {m[1]: float(m[2]) for m in re.finditer(r"^(\w+) (\S+)$", text, re.MULTILINE)}
    return text, samples


def test_status_before_during_and_after_a_run_with_the_heartbeat(work) -> None:
    work.spool(report_http="127.0.0.1:0", report_heartbeat="1sec")
    code, st, _ = status(work)
    assert code == NOT_RUNNING and st["state"] == "never-started"
    assert st["checkpoint"] is None and st["report"] is None and st["lag_seconds"] is None
    assert st["trail"] == {"path": "dirdat/sa", "files": [], "bytes": 0, "writer_pid": None}

    put(work, 1, 2, 3)
    proc = work.start("run", "--prop", str(work.prop))
    try:
        st = wait_for("3 durable transactions", durable(work, 3), proc, work)
        trail_file = work.root / "dirdat" / "sa000000000"
        assert st["pid"] == proc.pid and st["error"] is None and st["problems"] == []
        assert st["checkpoint"]["file"] == "dirdat/sa000000000"
        assert st["checkpoint"]["rba"] == trail_file.stat().st_size
        assert st["checkpoint"]["last_seqid"] == "0000000003"
        assert st["trail"]["files"] == [{"file": "dirdat/sa000000000",
                                         "bytes": trail_file.stat().st_size}]
        assert st["last_commit"] == COMMIT and st["lag_seconds"] > 0
        assert st["heartbeat"]["every_seconds"] == 1.0

        # idle: the heartbeat advances and the lag grows, in the status and in /metrics
        url = metrics_url(work, proc)
        text, first = scrape(url)
        assert "# TYPE msgcap_lag_seconds gauge" in text
        assert "# TYPE msgcap_heartbeat_timestamp_seconds gauge" in text
        later = wait_for("a later heartbeat in /metrics", lambda: (
            s := scrape(url)[1])["msgcap_heartbeat_timestamp_seconds"] > first[
            "msgcap_heartbeat_timestamp_seconds"] and s, proc, work)
        assert later["msgcap_lag_seconds"] > first["msgcap_lag_seconds"]
        assert later["msgcap_messages_total"] == 3
        again = wait_for("a later heartbeat in the status", lambda: ((
            s := status(work)[1])["heartbeat"]["last"] or "") > (
            st["heartbeat"]["last"] or "") and s, proc, work)
        assert again["lag_seconds"] > st["lag_seconds"] and again["state"] == "running"
        assert again["report"]["messages"] == 3 and again["report"]["operations"] == [
            {"table": "SALES.CUSTOMER", "op": "insert", "count": 3}]
        # the lag in words (days since COMMIT): its growth is seen in the seconds above
        wait_for("two heartbeat lines", lambda: re.findall(
            r"^msgcap heartbeat at .*: idle \d+ s, lag \d+ d \d+ h, messages 3; source connected "
            r"since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; trail durable: "
            r"dirdat/sa000000000 RBA \d+ \(3 transactions\)$",
            (work.root / "run.out").read_text(), re.MULTILINE)[1:], proc, work)

        text_form = work.msgcap("status", "--prop", str(work.prop))
        assert text_form.returncode == RUNNING
        assert text_form.stdout.startswith(f"extract SALES: running (pid {proc.pid}), started ")
        for part in ("\ncheckpoint: dirdat/sa000000000 RBA ",
                     "\nlast commit: 2024-03-01 10:15:30 UTC; lag ", "\ntrail dirdat/sa: files 1, bytes ",
                     "\n  SALES.CUSTOMER  insert 3\n", "\nheartbeat: every 1 s; last "):
            assert part in text_form.stdout, text_form.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0

    code, st, _ = status(work)
    assert code == NOT_RUNNING and st["state"] == "stopped" and st["pid"] == proc.pid
    assert st["error"] is None and st["report"]["messages"] == 3
    assert st["checkpoint"]["transactions"] == 3


def test_a_restarted_capture_measures_lag_from_the_checkpoint(work) -> None:
    work.spool()
    put(work, 1)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert json.loads((work.root / "dirchk" / "SALES.cpj").read_text())["last_commit_us"] == (
        1709288130000000)
    idle = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "messages 0" in idle.stdout and re.search(r"^lag: \d+ d \d+ h$", idle.stdout,
                                                          re.MULTILINE)


def test_heartbeat_is_off_by_default(work) -> None:
    work.spool(report_http="127.0.0.1:0", jms_report_time="1sec")
    put(work, 1)
    proc = work.start("run", "--prop", str(work.prop))
    try:
        st = wait_for("a durable transaction", durable(work, 1), proc, work)
        assert st["heartbeat"] is None
        url = metrics_url(work, proc)
        text, first = scrape(url)
        assert "msgcap_heartbeat" not in text
        # lag is computed when it is shown: it grows without the heartbeat too
        later = wait_for("a growing lag", lambda: (s := scrape(url)[1])[
            "msgcap_lag_seconds"] > first["msgcap_lag_seconds"] and s, proc, work)
        assert later["msgcap_messages_total"] == 1
        # the periodic report is published to the status file
        wait_for("a report in the status", lambda: status(work)[1]["report"]["messages"] == 1,
                 proc, work)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    assert "heartbeat" not in (work.root / "run.out").read_text()


def test_after_kill_9_the_run_is_abended_and_holds_nothing(work) -> None:
    work.spool()
    put(work, 1, 2)
    proc = work.start("run", "--prop", str(work.prop))
    try:
        wait_for("2 durable transactions", durable(work, 2), proc, work)
    finally:
        proc.kill()
        proc.wait(timeout=120)
    code, st, _ = status(work)
    assert code == ABENDED and st["state"] == "abended" and st["pid"] == proc.pid
    assert st["error"] == f"process {proc.pid} ended without stopping (killed or crashed)"
    assert st["checkpoint"]["transactions"] == 2 and st["trail"]["writer_pid"] is None
    text = work.msgcap("status", "--prop", str(work.prop))
    assert text.returncode == ABENDED
    assert text.stdout.startswith(f"extract SALES: abended; the last run (pid {proc.pid}) ")
    assert f"\nerror: process {proc.pid} ended without stopping (killed or crashed)\n" in (
        text.stdout)
    # the next run takes over and says so
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert status(work)[1]["state"] == "stopped"


def test_a_run_stopped_by_an_error_is_abended_with_the_error(work) -> None:
    d = work.spool()
    put(work, 1)
    (d / "000002.msg").write_text("I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,0000000002,1\n")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "5")
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1].removeprefix("msgcap run: error: ")
    code, st, _ = status(work)
    assert code == ABENDED and st["state"] == "abended" and st["error"] == error
    assert st["report"]["transactions"] == 1 and st["checkpoint"]["transactions"] == 1


@pytest.mark.parametrize("damaged, line", [
    ("SALES.cpj", "msgcap status: error: dirchk/SALES.cpj: unreadable checkpoint: "),
    ("SALES.status", "msgcap status: error: dirchk/SALES.status: unreadable status file: "),
])
def test_a_damaged_file_is_one_line_naming_it(work, damaged, line) -> None:
    work.spool()
    put(work, 1)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    path = work.root / "dirchk" / damaged
    path.write_bytes(path.read_bytes()[:20])  # cut, as a broken disk leaves it
    code, st, err = status(work)
    assert code == 2 and err.startswith(line) and len(err.splitlines()) == 1, err
    assert st["problems"] == [err.strip().removeprefix("msgcap status: error: ")]
    assert st["trail"]["files"]  # what could be read is still shown
    text = work.msgcap("status", "--prop", str(work.prop))
    assert text.returncode == 2 and text.stdout.startswith("extract SALES: ")
    assert "Traceback" not in text.stderr and text.stderr.startswith(line)


def test_a_bad_properties_file_is_one_line(work) -> None:
    work.spool(report_heartbeat="500ms")
    done = work.msgcap("status", "--prop", str(work.prop))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("msgcap status: error: ") and "report.heartbeat: '500ms' is " \
        "less than 1sec" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_replay_writing_the_trail_is_named(work) -> None:
    work.spool()
    from msgcap.lock import Lock

    with Lock(str(work.root / "dirdat" / "sa.lock"), "trail"):
        code, st, _ = status(work)
    assert code == NOT_RUNNING and st["trail"]["writer_pid"] == os.getpid()


@pytest.mark.broker
@pytest.mark.parametrize("broker", BROKERS, indirect=True)
def test_status_of_a_capture_fed_by_a_broker(work, broker, queue) -> None:
    work.properties(jms_url=broker.url, jms_destination=queue, report_heartbeat="1sec")
    dump = work.dump("in.jsonl", [work.body(i) for i in range(1, 11)])
    work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    proc = work.start("run", "--prop", str(work.prop))
    try:
        st = wait_for("10 durable transactions", durable(work, 10), proc, work)
        assert st["pid"] == proc.pid and st["last_commit"] == COMMIT
        assert st["source"]["state"] == "connected"
        wait_for("a heartbeat", lambda: (status(work)[1]["heartbeat"]["last"] or "") > (
            st["heartbeat"]["last"] or ""), proc, work)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    code, st, _ = status(work)
    assert code == NOT_RUNNING and st["state"] == "stopped" and st["report"]["messages"] == 10
