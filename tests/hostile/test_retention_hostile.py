"""Issue 26, item 3: a long-running capture removes the trail files it no longer needs
(``trail.purge.*``), never one the capture or a downstream reader still needs, logs each removal
and shows the last purge in ``msgcap status``; a reader position that cannot be read, a file
that cannot be removed and a bad property are each handled without losing a record."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from msgcap.trail.retention import Retention
from props.settings import PurgeSettings, TrailSettings
from tests.live.conftest import Work

MESSAGES, LINES = 4, 5000  # about 165 trail bytes a line: files sa000000000 to sa000000003
MIB = 1024 * 1024


def fill(spool: Path, first_seq: int, messages: int) -> int:
    """``messages`` spool files of LINES one-insert transactions each; the next seq."""
    seq = first_seq
    for _ in range(messages):
        (spool / f"{seq:010d}.msg").write_text("".join(Work.body(seq + i) for i in range(LINES)))
        seq += LINES
    return seq


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    """A home whose capture (1 MiB files, no purging) wrote four trail files and stopped."""
    work = Work(tmp_path_factory.mktemp("made") / "home")
    fill(work.spool(trail_megabytes=1), 1, MESSAGES)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.3", check=True)
    assert trail_files(work) == [f"sa00000000{i}" for i in range(4)]
    return work.root


@pytest.fixture
def work(captured, tmp_path) -> Work:
    """A copy of the captured home (modification times kept)."""
    shutil.copytree(captured, tmp_path / "home")
    return Work(tmp_path / "home")


def trail_files(work: Work) -> list[str]:
    return sorted(n for n in os.listdir(work.root / "dirdat") if n[2:].isdigit())


def run(work: Work, **purge: object) -> str:
    """``msgcap run`` over whatever is in the spool; the log lines it added."""
    log = work.root / "dirrpt" / "SALES.log"
    before = log.stat().st_size if log.exists() else 0
    work.spool(trail_megabytes=1, **purge)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.3", check=True)
    with open(log, encoding="utf-8") as fh:
        fh.seek(before)
        return fh.read()


def status(work: Work) -> dict:
    done = work.msgcap("status", "--prop", str(work.prop), "--json")
    assert done.returncode == 3, done.stderr  # stopped
    return json.loads(done.stdout)


def purged_lines(log: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in log.splitlines() if "purged trail file" in line]


def test_without_purge_properties_nothing_is_removed(work) -> None:
    fill(work.root / "dirspool", 1 + MESSAGES * LINES, 2)
    assert "purged" not in run(work)
    assert trail_files(work) == [f"sa00000000{i}" for i in range(5)]
    st = status(work)
    assert st["retention"] is None and st["last_purge"] is None
    text = work.msgcap("status", "--prop", str(work.prop)).stdout
    assert "\nretention: none (no trail.purge.* property: trail files are never removed)\n" in text


def test_minkeepfiles_purges_at_start_logs_each_file_and_status_shows_it(work) -> None:
    sizes = {n: (work.root / "dirdat" / n).stat().st_size for n in trail_files(work)}
    log = run(work, trail_purge_minkeepfiles=2)
    assert trail_files(work) == ["sa000000002", "sa000000003"]
    assert purged_lines(log) == [
        f"purged trail file dirdat/{name} ({sizes[name]} bytes): the checkpoint passed it; "
        "older than the newest trail.purge.minkeepfiles=2" for name in ("sa000000000",
                                                                      "sa000000001")]
    st = status(work)
    assert st["retention"] == {"minkeepfiles": 2, "minkeephours": None, "maxmegabytes": None,
                               "readers": []}
    purge = st["last_purge"]
    assert [f["file"] for f in purge["files"]] == ["dirdat/sa000000000", "dirdat/sa000000001"]
    assert purge["bytes"] == sizes["sa000000000"] + sizes["sa000000001"]
    assert purge["trail_bytes"] == st["trail"]["bytes"]
    text = work.msgcap("status", "--prop", str(work.prop)).stdout
    assert "\nretention: trail.purge.minkeepfiles=2\n" in text
    assert (f"\nlast purge: {purge['time'][:10]} " in text and f": 2 files, {purge['bytes']} "
            "bytes (dirdat/sa000000000 to dirdat/sa000000001)\n" in text), text
    dump = work.msgcap("dump", "--json", "dirdat/sa")  # a purged start is no gap
    assert dump.returncode == 0, dump.stderr


def test_purges_after_each_rollover_and_a_restart_continues_the_trail(work) -> None:
    seq = fill(work.root / "dirspool", 1 + MESSAGES * LINES, 3)
    log = run(work, trail_purge_minkeepfiles=1)
    files = trail_files(work)
    cp = json.loads((work.root / "dirchk" / "SALES.cpj").read_text())
    assert files == [Path(cp["file"]).name]  # only the checkpoint's file, the one written
    assert cp["seqno"] == 5 and len(purged_lines(log)) == 5
    fill(work.root / "dirspool", seq, 1)
    run(work, trail_purge_minkeepfiles=1)
    seqids = work.seqids()
    assert seqids[-1] == f"{seq + LINES - 1:010d}"
    assert [int(s) for s in seqids] == list(range(int(seqids[0]), seq + LINES))


def test_a_reader_holds_back_what_it_has_not_finished_over_max_megabytes(work) -> None:
    sizes = [(work.root / "dirdat" / n).stat().st_size for n in trail_files(work)]
    position = work.root / "dirchk" / "REP1.pos"
    position.write_text(json.dumps({"file": "dirdat/sa000000001", "rba": 1200}))
    log = run(work, trail_purge_readers="dirchk/REP1.pos", trail_purge_maxmegabytes=1)
    assert trail_files(work) == [f"sa00000000{i}" for i in range(1, 4)]
    assert purged_lines(log) == [
        (f"purged trail file dirdat/sa000000000 ({sizes[0]} bytes): the checkpoint and 1 "
         f"reader(s) passed it; the trail ({sum(sizes)} bytes) was over "
         "trail.purge.maxmegabytes=1")]
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and warnings[0].endswith(
        f"msgcap.trail: trail dirdat/sa: {sum(sizes[1:])} bytes, over "
        "trail.purge.maxmegabytes=1, but dirdat/sa000000001 is kept: reader dirchk/REP1.pos "
        "(at seqno 1) has not finished it"), log
    st = status(work)
    assert st["retention"]["readers"] == [{"path": "dirchk/REP1.pos", "seqno": 1,
                                           "error": None}]
    position.write_text(json.dumps({"seqno": 3, "rba": 0}))  # the reader moved on
    run(work, trail_purge_readers="dirchk/REP1.pos", trail_purge_maxmegabytes=1)
    assert trail_files(work) == ["sa000000003"]


def test_a_missing_reader_position_keeps_every_file(work) -> None:
    log = run(work, trail_purge_readers="dirchk/REP1.pos", trail_purge_minkeepfiles=1)
    assert trail_files(work) == [f"sa00000000{i}" for i in range(4)]
    assert ("WARNING msgcap.trail: dirchk/REP1.pos: cannot read the reader position: No such "
            "file or directory; keeping every trail file") in " ".join(log.split())
    text = work.msgcap("status", "--prop", str(work.prop)).stdout
    assert ("\nretention: trail.purge.minkeepfiles=1; reader dirchk/REP1.pos unreadable (every "
            "file kept)\nlast purge: none yet\n") in text


def test_minkeephours_keeps_files_modified_since(work) -> None:
    assert "purged" not in run(work, trail_purge_minkeephours=1)  # all written just now
    for name in ("sa000000000", "sa000000001"):
        then = time.time() - 2 * 3600
        os.utime(work.root / "dirdat" / name, (then, then))
    log = run(work, trail_purge_minkeephours=1)
    assert trail_files(work) == ["sa000000002", "sa000000003"]
    assert all(line.endswith("unchanged for trail.purge.minkeephours=1 hours")
               for line in purged_lines(log)) and len(purged_lines(log)) == 2


@pytest.mark.parametrize("item, message", [
    ("trail.purge.minkeepfiles=0", "trail.purge.minkeepfiles: 0 is out of range (≥ 1)"),
    ("trail.purge.minkeephours=-3", "trail.purge.minkeephours: -3 is out of range (≥ 1)"),
    ("trail.purge.maxmegabytes=0", "trail.purge.maxmegabytes: 0 is out of range (≥ 1)"),
    ("trail.megabytes=100\ntrail.purge.maxmegabytes=50",
     ("trail.purge.maxmegabytes: 50 is less than trail.megabytes=100: the file being written "
      "alone would exceed it")),
    ("trail.purge.readers=a.pos,,b.pos", "trail.purge.readers: an empty path in the list")])
def test_a_bad_purge_property_is_one_line_and_nothing_is_touched(work, item, message) -> None:
    work.spool()
    with open(work.prop, "a") as fh:
        fh.write(item + "\n")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.3")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = len(work.prop.read_text().splitlines())  # the item's last line ends the file
    assert done.stderr.strip().splitlines() == [f"msgcap run: error: {work.prop}:{line}: {message}"]
    assert trail_files(work) == [f"sa00000000{i}" for i in range(4)]


def test_a_file_that_cannot_be_removed_ends_the_purge_with_a_warning(tmp_path, caplog) -> None:
    """A directory where the oldest trail file should be: unlink fails (EISDIR, also as root)."""
    trail = TrailSettings(path=str(tmp_path / "sa"), extract="SALES",
                          purge=PurgeSettings(minkeepfiles=1))
    (tmp_path / "sa000000000").mkdir()
    for seqno in (1, 2):
        (tmp_path / f"sa00000000{seqno}").write_bytes(b"x")
    with caplog.at_level("INFO", logger="msgcap.trail"):
        assert Retention(trail, str(tmp_path)).purge(2, 2) == []
    assert sorted(os.listdir(tmp_path)) == ["sa000000000", "sa000000001", "sa000000002"]
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"trail file {tmp_path}/sa000000000: cannot purge it: ")
    assert warning.endswith("; trying again after the next rollover")
