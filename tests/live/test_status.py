"""Honest status and clean failure of ``msgcap run`` (issue 11): the summary gives the durable
position after a full disk, the error that stops a run is in its log, an open transaction is
never waited for silently, trail gaps and foreign checkpoints stop start-up, a seqid width
change stops capture even under ``discard``, and the examples do not share a checkpoint."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from msgcap.pipeline import Pipeline
from props.loader import load_settings
from tests.live.test_long_transactions import (  # noqa: F401 - home: fixture
    Run,
    ScriptedSource,
    home,
    whole,
)

REPO = Path(__file__).resolve().parents[2]


def _limited(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_after_a_full_disk_the_summary_gives_the_durable_position(work) -> None:
    d = work.spool()
    for seq in range(1, 3001):
        (d / f"{seq:06d}.msg").write_text(work.body(seq))
    limit = 256 * 1024  # the trail file cannot grow past this: as on a full disk
    done = subprocess.run([sys.executable, "-m", "msgcap.cli", "run", "--prop", str(work.prop),
                           "--max-idle", "2"], cwd=work.root, env=work.env(), text=True,
                          capture_output=True, timeout=600, preexec_fn=_limited(limit),
                          check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert [ln for ln in done.stderr.splitlines() if "error:" in ln] == [
        "msgcap run: error: dirdat/sa000000000: RBA 262144: write failed: File too large"]
    cp = json.loads((work.root / "dirchk" / "SALES.cpj").read_text())
    durable = re.search(r"trail durable: (\S+) RBA (\d+) \((\d+) transactions\)", done.stdout)
    assert durable, done.stdout
    assert (durable[1], int(durable[2]), int(durable[3])) == (cp["file"], cp["rba"], cp["txnum"])
    assert cp["rba"] <= limit and "not durable: their messages were not acknowledged" in (
        done.stdout)
    written = re.search(r"transactions (\d+)", done.stdout)
    assert int(written[1]) > cp["txnum"]  # more was written than is durable, and it says so
    assert len(list((d / ".done").iterdir())) == cp["txnum"]  # acknowledged = durable
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    assert "ERROR   msgcap.run: stopped by an error: dirdat/sa000000000: RBA 262144" in log
    # the next run (disk space back) completes the trail: nothing lost, nothing twice
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == [f"{i:010d}" for i in range(1, 3001)]


def test_max_idle_inside_a_transaction_says_what_it_waits_for(work) -> None:
    d = work.spool()
    (d / "0001.msg").write_text(work.body(1, "B"))
    proc = work.start("run", "--prop", str(work.prop), "--max-idle", "1")
    out = work.root / "run.out"
    deadline = time.monotonic() + 120
    while "waiting for its end before stopping" not in out.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
        time.sleep(0.05)
    assert "the transaction begun in " in out.read_text() and "0001.msg is open" in (
        out.read_text())
    (d / "0002.msg").write_text(work.body(2, "E"))
    assert proc.wait(timeout=120) == 0
    assert work.seqids() == ["0000000001", "0000000002"]


def test_a_gap_in_the_trail_stops_run_at_start(work) -> None:
    d = work.spool(trail_megabytes=1)
    for seq in range(1, 4):
        (d / f"{seq:04d}.msg").write_text(work.body(seq))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    trail = work.root / "dirdat"
    for seqno in (1, 2):  # two more files, as roll-overs leave them
        (trail / f"sa00000000{seqno}").write_bytes((trail / "sa000000000").read_bytes())
    (trail / "sa000000001").unlink()
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("trail file dirdat/sa000000001 is missing before dirdat/sa000000002" in
            done.stderr)


def test_a_seqid_width_change_stops_capture_even_under_discard(work) -> None:
    d = work.spool(error_policy="discard")
    (d / "0001.msg").write_text(work.body(1))
    (d / "0002.msg").write_text(work.body(2).replace(",0000000002,", ",02,"))
    (d / "0003.msg").write_text(work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "seqids must be fixed-width, capture stops" in done.stderr
    assert work.seqids() == ["0000000001"]
    assert (d / "0002.msg").exists() and not (work.root / "dirrpt" / "msgcap.dsc").exists()


def test_a_checkpoint_of_another_trail_is_refused(work) -> None:
    d = work.spool()
    (d / "0001.msg").write_text(work.body(1))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    text = work.prop.read_text().replace("trail.path=dirdat/sa", "trail.path=dirdat/sb")
    work.prop.write_text(text)
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("dirchk/SALES.cpj: this checkpoint belongs to trail dirdat/sa, not to "
            "trail.path=dirdat/sb") in done.stderr


def test_every_example_has_its_own_extract(monkeypatch) -> None:
    """Two configurations with one trail.extract share a checkpoint (and a log)."""
    extracts = {}
    for prop in sorted(REPO.glob("examples/**/dirprm/*.properties")):
        monkeypatch.chdir(prop.parent.parent)
        monkeypatch.setenv("MQ_USER", "u")
        monkeypatch.setenv("MQ_PASSWORD", "p")
        extracts[str(prop.relative_to(REPO))] = load_settings(str(prop)).trail.extract
    assert len(extracts) >= 5 and len(set(extracts.values())) == len(extracts), extracts


def test_an_unusable_archive_directory_is_one_error_line(work) -> None:
    d = work.spool(archive_dir="dirarc")
    (work.root / "dirarc").write_text("a file, not a directory")
    (d / "0001.msg").write_text(work.body(1))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "msgcap run: error: dirarc: cannot use the archive directory" in done.stderr
    assert (d / "0001.msg").exists() and work.seqids() == []


def test_max_idle_counts_from_the_end_of_processing(home, monkeypatch) -> None:  # noqa: F811
    """A message that takes longer to process than --max-idle does not end the run."""
    now = [0.0]

    def clock() -> float:
        now[0] += 0.001
        return now[0]

    complete = Pipeline.complete

    def slow(self, message, raw_id, parsed):
        now[0] += 1.0  # each message takes a (fake) second, 20 times --max-idle
        return complete(self, message, raw_id, parsed)

    monkeypatch.setattr(Pipeline, "complete", slow)
    run = Run(home, ScriptedSource(whole(home, *range(1, 6))), stream_at=None)
    run.capture._clock = clock
    run()
    assert home.seqids() == [f"{i:010d}" for i in range(1, 6)]
