"""``msgcap run`` on the spool-directory source (no broker), end to end through the real CLI:
durable-then-move, restart without duplicates, checkpoint, archive, abend and discard, send."""

from __future__ import annotations

import base64
import json
import re
import signal
import time


def spool(work, **extra):
    (work.root / "dirspool").mkdir(exist_ok=True)
    work.properties(jms_url="dir:dirspool", **extra)
    return work.root / "dirspool"


def put(directory, name, text):
    (directory / name).write_text(text)


def test_run_consumes_spool_in_name_order_and_moves_files_to_done(work) -> None:
    d = spool(work)
    for seq in (3, 1, 2):
        put(d, f"{seq:04d}.msg", work.body(seq))
    put(d, ".hidden", "x")
    put(d, "0000.msg.tmp", "x")
    put(d, "0000.msg.part", "x")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 3" in done.stdout and "transactions 3" in done.stdout
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]
    assert sorted(p.name for p in (d / ".done").iterdir()) == ["0001.msg", "0002.msg", "0003.msg"]
    assert sorted(p.name for p in d.iterdir() if p.is_file()) == [
        ".hidden", "0000.msg.part", "0000.msg.tmp"]
    cp = json.loads((work.root / "dirchk" / "SALES.cpj").read_text())
    assert cp["last_seqid"] == "0000000003" and cp["txnum"] == 3
    assert cp["rba"] == (work.root / "dirdat" / "sa000000000").stat().st_size


def test_restart_skips_messages_already_in_the_trail(work) -> None:
    d = spool(work)
    put(d, "0001.msg", work.body(1))
    put(d, "0002.msg", work.body(2))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    # a crash before the move: the same files come back, plus a new one
    for name in ("0001.msg", "0002.msg"):
        (d / ".done" / name).rename(d / name)
    put(d, "0003.msg", work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "duplicates 2" in done.stdout
    assert "skipped 2 duplicates (messages already in the trail)" in done.stderr
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]
    assert len(list((d / ".done").iterdir())) == 3


def test_a_trail_ahead_of_its_checkpoint_is_checkpointed_at_start(work) -> None:
    """A run that died after writing transactions but before checkpointing them: the next run
    checkpoints what it recovered at once, so that while only redeliveries (duplicates) come,
    ``msgcap status`` shows the trail's true end (issue 36: a partition's standby took over)."""
    d = spool(work)
    put(d, "0001.msg", work.body(1))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    checkpoint = work.root / "dirchk" / "SALES.cpj"
    behind = checkpoint.read_bytes()
    put(d, "0002.msg", work.body(2))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    checkpoint.write_bytes(behind)  # as if it had died between the trail's fsync and this
    (d / ".done" / "0002.msg").rename(d / "0002.msg")  # ... and the message came back
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "duplicates 1" in done.stdout
    cp = json.loads(checkpoint.read_text())
    assert (cp["last_seqid"], cp["txnum"]) == ("0000000002", 2)
    assert cp["rba"] == (work.root / "dirdat" / "sa000000000").stat().st_size
    shown = json.loads(work.msgcap("status", "--prop", str(work.prop), "--json").stdout)
    assert shown["checkpoint"]["last_seqid"] == "0000000002"


def test_many_duplicates_are_counted_in_one_line_not_one_warning_each(work) -> None:
    """A broker restart that redelivered 2,601 messages gave 2,601 WARNING lines (issue 35):
    now the first is named at INFO and one WARNING says how many (once a minute, and when the
    run ends)."""
    d = spool(work)
    for seq in range(1, 121):
        put(d, f"{seq:04d}.msg", work.body(seq))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    for path in (d / ".done").iterdir():  # they all come again, as after a crash
        path.rename(d / path.name)
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "duplicates 120" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, warnings
    assert re.fullmatch(r"msgcap run: WARNING: skipped 120 duplicates \(messages already in the "
                        r"trail\) in the last \d+\.\d s, the last: dirspool/0120\.msg",
                        warnings[0]), warnings
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    assert log.count("duplicate (already in the trail)") == 1
    assert (" INFO    msgcap.capture: message dirspool/0001.msg: duplicate (already in the "
            "trail), skipped; duplicates are counted, one line a minute") in log


def test_msg_json_files_keep_their_id_and_headers(work) -> None:
    d = spool(work, jms_id="SEQNO")
    put(d, "a.msg.json", json.dumps({"id": "X-1", "headers": {"SEQNO": "0000000007"},
                                     "body": work.body(7)}))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert [s for s, _, _ in work.trail()] == ["0000000007"]


def test_send_to_a_spool_url_writes_msg_json_files_that_run_reads(work) -> None:
    spool(work)
    dump = work.dump("in.jsonl", [work.body(i) for i in range(1, 6)])
    sent = work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    assert "sent 5 messages to dir:dirspool" in sent.stdout
    names = sorted(p.name for p in (work.root / "dirspool").iterdir() if p.is_file())
    assert len(names) == 5 and all(n.endswith(".msg.json") for n in names)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert [s for s, _, _ in work.trail()] == [f"{i:010d}" for i in range(1, 6)]


def test_abend_stops_with_one_line_and_leaves_the_bad_message(work) -> None:
    d = spool(work, error_policy="abend")
    put(d, "0001.msg", work.body(1))
    put(d, "0002.msg", "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,0000000002,1\n")
    put(d, "0003.msg", work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "5")
    assert done.returncode == 2
    errors = [ln for ln in done.stderr.splitlines() if "error:" in ln]
    assert len(errors) == 1 and "0002.msg" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert [s for s, _, _ in work.trail()] == ["0000000001"]
    assert sorted(p.name for p in d.iterdir() if p.is_file()) == ["0002.msg", "0003.msg"]
    assert [p.name for p in (d / ".done").iterdir()] == ["0001.msg"]


def test_discard_writes_the_discard_file_moves_to_error_and_goes_on(work) -> None:
    d = spool(work, error_policy="discard", error_file="dirrpt/SALES.dsc")
    put(d, "0001.msg", work.body(1))
    put(d, "0002.msg", "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,0000000002,1\n")
    put(d, "0003.msg", work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "discarded 1" in done.stdout
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000003"]
    assert [p.name for p in (d / ".error").iterdir()] == ["0002.msg"]
    records = [json.loads(x) for x in (work.root / "dirrpt" / "SALES.dsc").read_text().splitlines()]
    assert len(records) == 1 and "NOSUCH" in records[0]["error"]
    # a spool file is bytes: kept as they were (Base64), not turned into text
    assert base64.b64decode(records[0]["message"]["body_b64"]).startswith(b"I,SALES.NOSUCH")


def test_archive_keeps_every_consumed_message_for_replay(work) -> None:
    d = spool(work, archive_dir="dirarc")
    for seq in (1, 2, 3):
        put(d, f"{seq:04d}.msg", work.body(seq))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    files = sorted((work.root / "dirarc").iterdir())
    assert len(files) == 1 and files[0].name.startswith("SALES-")
    entries = [json.loads(x) for x in files[0].read_text().splitlines()]
    assert [e["id"] for e in entries] == ["0001.msg", "0002.msg", "0003.msg"]
    assert all(e["received"].endswith("Z") for e in entries)
    # replayed into the same trail, the archive holds exactly what the trail holds
    done = work.msgcap("replay", "--prop", str(work.prop), str(files[0]), check=True)
    assert "duplicates 3" in done.stdout and "transactions 0" in done.stdout


def test_sigterm_stops_cleanly_with_a_summary(work) -> None:
    d = spool(work)
    put(d, "0001.msg", work.body(1))
    proc = work.start("run", "--prop", str(work.prop))
    deadline = time.monotonic() + 60
    while not (d / ".done" / "0001.msg").exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    out = (work.root / "run.out").read_text()
    assert "msgcap summary" in out and "messages 1" in out


def test_report_records_prints_periodic_reports(work) -> None:
    d = spool(work, jms_report_records=2)
    for seq in range(1, 6):
        put(d, f"{seq:04d}.msg", work.body(seq))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert done.stdout.count("msgcap report at") == 2
    assert "SALES.CUSTOMER  insert 5" in done.stdout


def test_a_changed_id_width_stops_capture_even_under_discard(work) -> None:
    d = spool(work, jms_id="SEQNO", error_policy="discard")
    put(d, "a.msg.json", json.dumps({"id": "a", "headers": {"SEQNO": "01"},
                                     "body": work.body(1)}))
    put(d, "b.msg.json", json.dumps({"id": "b", "headers": {"SEQNO": "002"},
                                     "body": work.body(2)}))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "3")
    assert done.returncode == 2 and "width changed" in done.stderr
    assert [s for s, _, _ in work.trail()] == ["0000000001"]
    assert (d / "b.msg.json").exists()


def test_a_trail_shorter_than_the_checkpoint_is_an_error_and_is_left_alone(work) -> None:
    d = spool(work)
    put(d, "0001.msg", work.body(1))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    trail = work.root / "dirdat" / "sa000000000"
    data = trail.read_bytes()
    trail.write_bytes(data[:-40])  # durable data damaged
    put(d, "0002.msg", work.body(2))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert trail.read_bytes() == data[:-40]
    assert (d / "0002.msg").exists()


def test_sigterm_inside_a_transaction_waits_for_its_end(work) -> None:
    d = spool(work)
    put(d, "0001.msg", work.body(1, "B"))
    put(d, "0002.msg", work.body(2, "M"))
    proc = work.start("run", "--prop", str(work.prop), "--stop-grace", "60")
    log = work.root / "dirrpt" / "SALES.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and "msgcap run SALES" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.5)  # both files consumed (polled once per second), the transaction open
    proc.send_signal(signal.SIGTERM)
    while "stopping after transaction" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    assert work.trail() == []
    put(d, "0003.msg", work.body(3, "E"))
    assert proc.wait(timeout=60) == 0
    assert [(s, t) for s, t, _ in work.trail()] == [
        ("0000000001", 0), ("0000000002", 1), ("0000000003", 2)]
    assert len(list((d / ".done").iterdir())) == 3
