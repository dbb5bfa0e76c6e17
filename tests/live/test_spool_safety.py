"""The spool directory is outside input (issue 11): only regular files in it are read, never
through a link; names, ids and values from it cannot forge log lines or flood them; a malformed
``.msg.json`` is a discardable message; ``jms.spool.minage`` holds back files being written."""

from __future__ import annotations

import base64
import json
import os
import time

from msgcap.sources.spool import SpoolSource

FORGED = "0002\n2026-11-23 10:00:00.000Z ERROR   msgcap.run: FORGED LINE\x1b[31m.msg"


def test_links_and_special_files_are_never_read(work, tmp_path) -> None:
    d = work.spool(error_policy="discard")
    outside = tmp_path / "outside.msg"
    outside.write_text(work.body(7))  # a valid message, but not ours to read
    (d / "0001.msg").write_text(work.body(1))
    os.symlink("/etc/passwd", d / "0002.link")
    os.symlink(outside, d / "0003.msg")
    os.link(outside, d / "0004.msg")  # the same file under a second name: refused too
    os.mkfifo(d / "0005.fifo")  # would block a plain open() forever
    (d / "0006.msg").write_text(work.body(6))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5", check=True)
    assert work.seqids() == ["0000000001", "0000000006"]
    assert not (work.root / "dirrpt" / "msgcap.dsc").exists()  # nothing read, nothing discarded
    assert sorted(p.name for p in (d / ".done").iterdir()) == ["0001.msg", "0006.msg"]
    left = sorted(p.name for p in d.iterdir() if not p.name.startswith("."))
    assert left == ["0002.link", "0003.msg", "0004.msg", "0005.fifo"]
    for name, why in (("0002.link", "a symbolic link"), ("0003.msg", "a symbolic link"),
                      ("0004.msg", "2 hard links"), ("0005.fifo", "not a regular file")):
        assert any(name in line and why in line and "left in place, not read" in line
                   for line in done.stderr.splitlines()), (name, done.stderr)
    assert "root:" not in done.stderr + done.stdout


def test_done_and_error_must_be_real_directories(tmp_path) -> None:
    import pytest

    from props.errors import SourceError

    (tmp_path / "elsewhere").mkdir()
    d = tmp_path / "spool"
    d.mkdir()
    os.symlink(tmp_path / "elsewhere", d / ".done")
    with pytest.raises(SourceError, match=r"\.done is not a directory"):
        SpoolSource(f"dir:{d}").open()


def test_names_ids_and_values_cannot_forge_or_flood_the_log(work) -> None:
    d = work.spool(error_policy="discard", error_file="dirrpt/SALES.dsc")
    (d / "0001.msg").write_text(work.body(1))
    huge = "9" * 5_000_000  # one value of 5 MB that is not a valid customer id
    (d / FORGED).write_text(work.body(2).replace(",2,Customer", f",x{huge},Customer"))
    (d / "0003.msg").write_text(work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5", check=True)
    assert work.seqids() == ["0000000001", "0000000003"]
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    for text in (done.stderr, log):
        assert "\x1b" not in text and "FORGED LINE" in text
        assert not any(line.startswith("2026-11-23") for line in text.splitlines())
        assert max(len(line) for line in text.splitlines()) < 2200
    assert "0002\\n2026-11-23 10:00:00.000Z ERROR   msgcap.run: FORGED LINE\\x1b[31m.msg" in (
        done.stderr)
    assert "(5000001 characters)" in done.stderr  # the value is cut and its size stated
    record = (work.root / "dirrpt" / "SALES.dsc").read_text()
    kept = base64.b64decode(json.loads(record)["message"]["body_b64"])
    assert kept.count(huge.encode()) == 1  # the message, once (its bytes, as they came)
    assert len(record) < len(huge) * 4 // 3 + 5000
    assert json.loads(record)["message"]["id"] == FORGED  # kept exactly in the record


def test_a_forged_id_header_stays_on_its_line(work) -> None:
    d = work.spool(jms_id="SEQNO")
    for name, seq in (("a.msg.json", "0000000001"),
                      ("b.msg.json", "000000002\n2026-11-23 ERROR msgcap.run: FORGED\x1b[0m")):
        (d / name).write_text(json.dumps({"id": name, "headers": {"SEQNO": seq},
                                          "body": work.body(int(seq[:10].strip()[:9]))}))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "3")
    assert done.returncode == 2 and "\x1b" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "error:" in ln]
    assert "id width changed" in line and "\\n2026-11-23 ERROR msgcap.run: FORGED\\x1b[0m" in line


def test_a_malformed_msg_json_is_discarded_and_capture_goes_on(work) -> None:
    d = work.spool(error_policy="discard", error_file="dirrpt/SALES.dsc")
    (d / "0001.msg").write_text(work.body(1))
    (d / "0002.msg.json").write_text('{"id": "x", "body": ')  # cut while written
    (d / "0003.msg").write_text(work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5", check=True)
    assert "discarded 1" in done.stdout and work.seqids() == ["0000000001", "0000000003"]
    assert [p.name for p in (d / ".error").iterdir()] == ["0002.msg.json"]
    (record,) = [json.loads(x) for x in (work.root / "dirrpt" / "SALES.dsc").read_text()
                 .splitlines()]
    assert record["error"].startswith("not a JSON message")
    assert record["message"] == {"id": "0002.msg.json", "headers": record["message"]["headers"],
                                 "body_b64": base64.b64encode(b'{"id": "x", "body": ')
                                 .decode()}
    # and a restart is not blocked by it any more
    (d / "0004.msg").write_text(work.body(4))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5", check=True)
    assert work.seqids()[-1] == "0000000004"


def test_a_malformed_msg_json_under_abend_stops_and_stays(work) -> None:
    d = work.spool()
    (d / "0001.msg.json").write_text("not json")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5")
    assert done.returncode == 2 and "not a JSON message" in done.stderr
    assert "Traceback" not in done.stderr and (d / "0001.msg.json").exists()


def test_minimum_age_holds_back_young_files_and_those_after_them(work) -> None:
    d = work.spool(jms_spool_minage="1hr")
    old = time.time() - 7200
    for seq in (1, 2, 3):
        (d / f"{seq:04d}.msg").write_text(work.body(seq))
    os.utime(d / "0001.msg", (old, old))
    os.utime(d / "0003.msg", (old, old))  # ready, but after the young 0002.msg in name order
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5", check=True)
    assert work.seqids() == ["0000000001"]
    os.utime(d / "0002.msg", (old, old))  # the producer is done with it
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1.5", check=True)
    assert work.seqids() == ["0000000001", "0000000002", "0000000003"]
