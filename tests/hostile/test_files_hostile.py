"""Hostile files, directories and names around a capture (issue 24): the spool's ``.done``
removed or replaced while ``msgcap run`` runs, file names that are not valid UTF-8, inputs that
are not regular files, a full file system, and trails cut in the middle of their sequence."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest


def wait_for(path: Path, proc, seconds: float = 60) -> None:
    """Poll until ``path`` exists; the capture must still be running meanwhile."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, "msgcap stopped"
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def put(directory: Path, name: str | bytes, text: str) -> None:
    """A spool file as producers write it: a temporary name, then a rename."""
    target = os.path.join(os.fsencode(directory), os.fsencode(name))
    tmp = target + b".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.rename(tmp, target)


# ---- 1. the spool's .done removed or replaced while msgcap runs -------------------------------

def test_a_removed_done_directory_is_created_again_and_nothing_is_captured_twice(work) -> None:
    d = work.spool()
    put(d, "0001.msg", work.body(1))
    proc = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(d / ".done" / "0001.msg", proc)
        shutil.rmtree(d / ".done")  # a clean-up job
        put(d, "0002.msg", work.body(2))
        wait_for(d / ".done" / "0002.msg", proc)
        put(d, "0003.msg", work.body(3))
        wait_for(d / ".done" / "0003.msg", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    out = (work.root / "run.out").read_text()
    assert ".done was removed while msgcap ran; created again" in out
    assert work.seqids() == ["0000000001", "0000000002", "0000000003"]
    assert sorted(p.name for p in (d / ".done").iterdir()) == ["0002.msg", "0003.msg"]
    assert not [p for p in d.iterdir() if not p.name.startswith(".")]


def test_a_done_replaced_by_a_file_stops_the_run_with_one_line(work) -> None:
    d = work.spool()
    put(d, "0001.msg", work.body(1))
    proc = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(d / ".done" / "0001.msg", proc)
        shutil.rmtree(d / ".done")
        (d / ".done").write_text("not a directory")
        put(d, "0002.msg", work.body(2))
        assert proc.wait(timeout=60) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
    out = (work.root / "run.out").read_text()
    assert "Traceback" not in out
    (line,) = [ln for ln in out.splitlines() if "error:" in ln]
    assert ".done is not a directory" in line
    assert work.seqids() == ["0000000001", "0000000002"]
    assert (d / "0002.msg").exists()  # it stays, and is not captured again:
    (d / ".done").unlink()
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "duplicates 1" in done.stdout
    assert work.seqids() == ["0000000001", "0000000002"]
    assert (d / ".done" / "0002.msg").exists()


# ---- 9. spool file names that are not valid UTF-8 ---------------------------------------------

def test_names_that_are_not_utf8_are_escaped_and_captured(work) -> None:
    d = work.spool(jms_id="JMSMessageID", delim_seqid="$jmsid", archive_dir="dirarc",
                   error_policy="discard", error_file="dirrpt/SALES.dsc")
    put(d, "0001-Mxxxxller.msg", work.body(1))  # as wide as the escaped names below
    put(d, b"0002-M\xfcller.msg", work.body(2))  # Latin-1 "ü"
    put(d, b"0003-M\xe9ller.msg", "not a change record")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "Traceback" not in done.stderr and "discarded 1" in done.stdout
    trail = work.msgcap("dump", "--json", "dirdat/sa", check=True)
    seqids = [r["tokens"]["VAMSEQID"] for r in map(json.loads, trail.stdout.splitlines())
              if r["kind"] == "record"]
    assert seqids == ["0001-Mxxxxller.msg", "0002-M\\xfcller.msg"]
    (archive,) = (work.root / "dirarc").iterdir()
    assert [json.loads(x)["id"] for x in archive.read_text().splitlines()] == [
        "0001-Mxxxxller.msg", "0002-M\\xfcller.msg", "0003-M\\xe9ller.msg"]
    (record,) = map(json.loads, (work.root / "dirrpt" / "SALES.dsc").read_text().splitlines())
    assert record["message"]["id"] == record["message"]["headers"]["message-id"] == (
        "0003-M\\xe9ller.msg")
    # moved by their real names, so that a restart finds nothing to capture again
    assert sorted(os.listdir(os.fsencode(d / ".done"))) == [b"0001-Mxxxxller.msg",
                                                             b"0002-M\xfcller.msg"]
    assert os.listdir(os.fsencode(d / ".error")) == [b"0003-M\xe9ller.msg"]
    assert not [p for p in d.iterdir() if not p.name.startswith(".")]


def test_replay_inputs_named_in_latin1_get_escaped_ids(work) -> None:
    work.properties(error_policy="discard", error_file="dirrpt/SALES.dsc")
    name = os.fsdecode(b"lines-M\xfcller.txt")
    (work.root / name).write_text(work.body(1) + "not a change record\n")
    done = work.msgcap("replay", "--lines", "--prop", str(work.prop), name, check=True)
    assert "discarded 1" in done.stdout and work.seqids() == ["0000000001"]
    (record,) = map(json.loads, (work.root / "dirrpt" / "SALES.dsc").read_text().splitlines())
    assert record["message"]["id"] == record["source"] == "lines-M\\xfcller.txt:2"


def test_a_msg_json_with_lone_surrogates_is_a_discardable_message(work) -> None:
    d = work.spool(archive_dir="dirarc", error_policy="discard",
                   error_file="dirrpt/SALES.dsc")
    # JSON's "\udcfc" escapes decode to lone surrogates, which are not text
    put(d, "0001.msg.json", json.dumps({"id": "0001-M\udcfcller", "headers": {"h": "\udcfc"},
                                        "body": work.body(1).replace("Customer", "M\udcfcller")}))
    put(d, "0002.msg", work.body(2))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "discarded 1" in done.stdout and work.seqids() == ["0000000002"]
    (record,) = map(json.loads, (work.root / "dirrpt" / "SALES.dsc").read_text().splitlines())
    assert "lone surrogate" in record["error"]
    assert os.listdir(d / ".error") == ["0001.msg.json"]


# ---- 6. inputs that are not regular files -----------------------------------------------------

@pytest.fixture(params=["/dev/zero", "fifo"])
def special(request, work) -> tuple[str, str]:
    """A path that is not a regular file, and what msgcap calls it: /dev/zero would be read
    until memory runs out, a FIFO without a writer blocks its reader forever."""
    if request.param == "fifo":
        os.mkfifo(work.root / "fifo")
        return str(work.root / "fifo"), "a FIFO"
    return request.param, "a character device"


@pytest.mark.parametrize("command", ["prop", "sourcedefs", "replay", "dump", "dump-defs",
                                     "copybook"])
def test_inputs_that_are_not_regular_files_are_refused_with_one_line(work, special,
                                                                     command) -> None:
    path, kind = special
    work.spool()
    args = {"prop": ["run", "--prop", path],
            "sourcedefs": ["run", "--prop", str(work.prop)],
            "replay": ["replay", "--prop", str(work.prop), path],
            "dump": ["dump", "--json", path],
            "dump-defs": ["dump", "--defs", path, path],
            "copybook": ["run", "--prop", str(work.prop)]}[command]
    if command == "sourcedefs":
        work.prop.write_text(work.prop.read_text().replace("dirdef/sales.def", path))
    if command == "copybook":
        work.prop.write_text("trail.path=dirdat/sa\ntrail.extract=SALES\nparser.type=fixed\n"
                             f"fixed.schematype=copybook\nfixed.copybook={path}\n"
                             "fixed.header=HEADER\njms.url=dir:dirspool\n")
    done = work.msgcap(*args, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "error:" in ln]
    assert f"{path}: " in line and f"not a regular file ({kind})" in line


# ---- 7. a full file system --------------------------------------------------------------------

@pytest.mark.parametrize("prop", ["checkpoint.dir", "trail.path", "archive.dir", "error.file"])
def test_a_full_file_system_stops_the_run_with_one_line(work, full_fs, prop) -> None:
    where = {"checkpoint.dir": "dirchk", "trail.path": "dirdat/sa", "archive.dir": "dirarc",
             "error.file": "dirrpt/SALES.dsc"}[prop]
    d = work.spool(error_policy="discard", **{prop.replace(".", "_"): full_fs / where})
    put(d, "0001.msg", work.body(1))
    put(d, "0002.msg", "not a change record")  # for the discard file
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "error:" in ln]
    assert f"{full_fs}/" in line and "No space left on device" in line


def test_a_log_file_on_a_full_file_system_is_one_warning(work, full_fs) -> None:
    d = work.spool(gg_log_file=full_fs / "dirrpt" / "SALES.log")
    put(d, "0001.msg", work.body(1))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "Traceback" not in done.stderr and "Logging error" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert "SALES.log: cannot write the log file: No space left on device" in line
    assert work.seqids() == ["0000000001"]  # the log holds no data: capture goes on


def test_batch_refuses_a_local_input_that_is_not_a_regular_file(tmp_path) -> None:
    from msgcap.batch.inputs import local_inputs
    from props.errors import SourceError

    os.mkfifo(tmp_path / "in.jsonl")
    with pytest.raises(SourceError, match=r"in\.jsonl: not a regular file \(a FIFO\)"):
        local_inputs([str(tmp_path / "in.jsonl")])


# ---- issue 35, 5: files named like trail files with digits that are not ASCII ----------------

@pytest.mark.parametrize("stray", ["sa" + "\u0660" * 8 + "\u0667", "sa00000000\u00b2"],
                         ids=["arabic-indic", "superscript"])
def test_stray_names_in_the_trail_directory_are_ignored_with_a_warning(work, stray) -> None:
    """An empty file named ``sa`` + nine characters Python takes for digits (``int`` reads
    ``٠٠٠٠٠٠٠٠٧`` as 7; ``²`` passes ``isdigit`` but not ``int``) in a fresh trail directory:
    ``run`` starts the trail at seqno 0 and ``status``, ``check`` and ``dump`` read it, each
    without a traceback; run, check and dump name the stray file in a warning."""
    d = work.spool()
    put(d, "0000000001.msg", work.body(1))
    (work.root / "dirdat").mkdir()
    (work.root / "dirdat" / stray).write_bytes(b"")
    warning = (f"ignored dirdat/{stray}: not a trail file name (sa and 9 ASCII digits)")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.3")
    assert done.returncode == 0, done.stderr
    assert "trail durable: dirdat/sa000000000 RBA" in done.stdout
    assert f"msgcap run: WARNING: trail dirdat/sa: {warning}\n" in done.stderr, done.stderr
    assert sorted(os.listdir(work.root / "dirdat")) == sorted(["sa.lock", "sa000000000", stray])
    assert work.seqids() == ["0000000001"]
    status = work.msgcap("status", "--prop", str(work.prop), "--json")
    assert status.returncode == 3 and "Traceback" not in status.stderr, status.stderr  # stopped
    files = json.loads(status.stdout)["trail"]["files"]
    assert [f["file"] for f in files] == ["dirdat/sa000000000"]
    check = work.msgcap("check", "--prop", str(work.prop), "--no-connect")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "\ntrail dirdat/sa: 1 file, the last dirdat/sa000000000\n" in check.stdout
    assert f"\ntrail dirdat/sa: {warning}\n" in check.stdout
    dump = work.msgcap("dump", "--json", "dirdat/sa")
    assert dump.returncode == 0, dump.stderr
    assert [json.loads(line)["tokens"]["VAMSEQID"] for line in dump.stdout.splitlines()
            if '"VAMSEQID"' in line] == ["0000000001"]
    assert f"msgcap dump: WARNING: trail dirdat/sa: {warning}\n" in dump.stderr, dump.stderr
    assert "Traceback" not in status.stderr + check.stderr + dump.stderr
