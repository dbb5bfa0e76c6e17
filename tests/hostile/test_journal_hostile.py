"""Hostile conditions around the spill journal of long transactions and the archive (issue 24):
a kill -9 right after a spill's acknowledgement, a journal left with a cut last line by a failed
write, a damaged journal line, broker redeliveries, and the memory a journal's replay takes."""

from __future__ import annotations

import json
import os
import signal
import time
import tracemalloc
from pathlib import Path

import pytest

from msgcap.archive import Archive
from msgcap.dumps import entry_line
from parsers.model import Message
from tests.live.conftest import Work
from tests.live.test_long_transactions import (
    Crash,
    Run,
    ScriptedSource,
    home,  # noqa: F401 - fixture
    ids,
    seqids,
    spanning,
    whole,
)
from tests.live.test_lost_acks import LosingSource

SPILL_AT = 1000  # msgcap run's threshold on a spool directory (no broker window)


def archived(directory: Path) -> list[str]:
    """The raw ids in the archive files; a last line cut by the kill is not an entry."""
    found = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            try:
                found.append(json.loads(line)["id"])
            except ValueError:
                continue  # the empty piece after the last newline, or a cut last line
    return found


def test_a_kill_after_a_spill_leaves_every_moved_message_in_the_archive(work) -> None:
    spool = work.spool(archive_dir="dirarc")
    names = [f"{seq:05d}.msg" for seq in range(1, SPILL_AT + 11)]
    for seq, name in enumerate(names, 1):  # one transaction, still open after the last file
        (spool / name).write_text(work.body(seq, "B" if seq == 1 else "M"))
    proc = work.start("run", "--prop", str(work.prop))
    done = spool / ".done"
    deadline = time.monotonic() + 120
    try:
        while not (done.is_dir() and any(done.iterdir())):
            assert proc.poll() is None, (work.root / "run.out").read_text()
            assert time.monotonic() < deadline, "the spill never acknowledged a message"
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    moved = {p.name for p in done.iterdir()}
    assert moved and moved <= set(names)
    assert moved <= set(archived(work.root / "dirarc"))
    # and the next run neither loses nor repeats them: the journal holds the transaction
    (spool / f"{SPILL_AT + 11:05d}.msg").write_text(work.body(SPILL_AT + 11, "E"))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert work.seqids() == ids(1, SPILL_AT + 11)
    assert sorted(archived(work.root / "dirarc")) == sorted({*names, f"{SPILL_AT + 11:05d}.msg"})


def journal(work: Work) -> Path:
    return work.root / "dirchk" / "SALES.spill.jsonl"


@pytest.mark.parametrize("kept", ["half", "all but its newline"])
def test_a_cut_journal_tail_is_truncated_before_the_next_spill(home, caplog,  # noqa: F811
                                                               kept) -> None:
    bodies = whole(home, 1) + spanning(home, 2, 300)
    source = ScriptedSource(bodies, crash_after=100)
    with pytest.raises(Crash):
        Run(home, source, stream_at=20)()  # spills of 40: messages 2..81 journaled and acknowledged
    good = journal(home).read_bytes()
    assert good.count(b"\n") == 80
    # the next spill's write failed half-way (checkpoint.dir full): a cut line, not acknowledged
    cut = entry_line(Message("m000081", {}, bodies[81]), id="m000081").encode()
    journal(home).write_bytes(good + (cut[: len(cut) // 2] if kept == "half" else cut[:-1]))
    # a run that replays it, spills more (acknowledged), then is killed inside the transaction
    source.crash_after, source.epoch, source.pos = source.delivered + 120, source.epoch + 1, 0
    with caplog.at_level("WARNING", logger="msgcap.capture"), pytest.raises(Crash):
        Run(home, source, stream_at=20)()
    assert "cut last entry ignored" in caplog.text
    lines = journal(home).read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])
    assert len(lines) - 1 > 80 and "m000120" in source.acked
    # the last run: the journal and the queue supply the transaction, every message once
    source.crash_after, source.epoch, source.pos = None, source.epoch + 1, 0
    Run(home, source, stream_at=20)()
    assert seqids(home) == ids(1, 300)
    assert not journal(home).exists()
    assert source.acked == {ident for ident, _ in source.items}


def test_a_damaged_journal_line_is_one_line_naming_it(work) -> None:
    spool = work.spool()
    (work.root / "dirchk").mkdir()
    good = [entry_line(Message(f"{i:04d}.msg", {}, work.body(i, "B" if i == 1 else "M")))
            for i in (1, 2, 3)]
    journal(work).write_text(good[0] + '{"id": "0002.msg", "bo\n' + good[2])
    (spool / "0004.msg").write_text(work.body(4, "E"))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and "dirchk/SALES.spill.jsonl:2: not a JSON object" in errors[0]
    assert (spool / "0004.msg").exists()  # nothing was consumed


def test_a_redelivered_message_is_archived_once(home) -> None:  # noqa: F811
    # acks of the first transactions are lost, the connection drops inside a long transaction:
    # the broker redelivers both the acknowledged-but-lost and the unacknowledged messages
    bodies = whole(home, 1, 2, 3) + spanning(home, 4, 200) + whole(home, 201)
    source = LosingSource(bodies, {"m000000", "m000001"}, reconnect_after=150)
    run = Run(home, source, stream_at=20)
    archive = Archive(str(home.root / "dirarc"), "SALES", sync="none")
    run.capture.archive = archive
    try:
        run()
    finally:
        archive.close()
    assert run.capture.redeliveries == 1
    assert seqids(home) == ids(1, 201)
    got = archived(home.root / "dirarc")
    assert sorted(got) == [ident for ident, _ in source.items]


def test_replaying_a_journal_takes_memory_bounded_by_its_size(home) -> None:  # noqa: F811
    pad = {"note": "x" * 2000}  # ~2 KB per entry: the journal is mostly what it carries
    bodies = spanning(home, 1, 3000)
    lines = [entry_line(Message(f"m{i:06d}", pad, b), id=f"m{i:06d}") for i, b in enumerate(bodies)]
    os.makedirs(home.root / "dirchk", exist_ok=True)
    journal(home).write_text("".join(lines[:-1]))
    size = journal(home).stat().st_size
    run = Run(home, ScriptedSource([]), stream_at=100)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        assert run.capture.recover_spill() == len(bodies) - 1
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        run.writer.close()
    print(f"peak {peak / 1e6:.2f} MB for a {size / 1e6:.1f} MB journal")
    assert peak < size // 4, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB journal"
