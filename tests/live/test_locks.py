"""One writer per trail and per checkpoint (msgcap.lock), through the real CLI.

Before the locks, two ``msgcap run`` started at once on the same properties (3,000 spool files
of 5 records) both ran: one failed with ``cannot write the checkpoint`` after both had appended
to the trail, every file went to ``.done/``, and the trail lacked hundreds of records.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from msgcap.lock import Lock, LockedError, holder


def _spool_files(directory, files: int, records: int) -> int:
    """``files`` messages of ``records`` inserts each, ids 1, 2, ... in name order."""
    directory.mkdir(exist_ok=True)
    seq = 0
    for f in range(files):
        lines = []
        for _ in range(records):
            seq += 1
            lines.append(f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,{seq:010d},{seq},"
                         f"Customer {seq},City,2024-03-01 10:15:30")
        (directory / f"{f:06d}.msg").write_text("\n".join(lines) + "\n")
    return seq


def _wait_for(predicate, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_two_runs_on_the_same_properties_cannot_lose_records(work) -> None:
    work.properties(jms_url="dir:dirspool")
    total = _spool_files(work.root / "dirspool", 3000, 5)
    args = ("run", "--prop", str(work.prop), "--max-idle", "3")
    runs = [subprocess.Popen([sys.executable, "-m", "msgcap.cli", *args], cwd=work.root,
                             env=work.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    results = [(p.pid, p.wait(timeout=600), *p.communicate()) for p in runs]
    failed = [r for r in results if r[1] != 0]
    assert len(failed) == 1, results
    (_, code, _, err), other = failed[0], next(r[0] for r in results if r[1] == 0)
    assert code == 2 and "Traceback" not in err
    assert f"locked by process {other}" in err and len(err.strip().splitlines()) == 1
    assert work.seqids() == [f"{i:010d}" for i in range(1, total + 1)]
    assert len(os.listdir(work.root / "dirspool" / ".done")) == 3000


def test_replay_and_a_second_run_are_refused_while_a_run_holds_the_trail(work) -> None:
    work.properties(jms_url="dir:dirspool")
    (work.root / "dirspool").mkdir()
    proc = work.start("run", "--prop", str(work.prop))
    try:
        lock = str(work.root / "dirdat" / "sa.lock")
        _wait_for(lambda: holder(lock) == proc.pid, "the run to lock the trail")
        assert holder(str(work.root / "dirchk" / "SALES.lock")) == proc.pid
        dump = work.dump("in.jsonl", [work.body(1)])
        replay = work.msgcap("replay", "--prop", str(work.prop), str(dump))
        assert replay.returncode == 2
        assert replay.stderr.strip() == (f"msgcap replay: error: dirdat/sa.lock: locked by "
                                         f"process {proc.pid}: another msgcap writes trail "
                                         "dirdat/sa; one writer at a time")
        again = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1")
        assert again.returncode == 2 and f"SALES.lock: locked by process {proc.pid}" in (
            again.stderr)
        assert work.seqids() == []  # neither wrote anything
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_locks_vanish_with_a_killed_process(work) -> None:
    work.properties(jms_url="dir:dirspool")
    d = work.root / "dirspool"
    d.mkdir()
    proc = work.start("run", "--prop", str(work.prop))
    lock = str(work.root / "dirdat" / "sa.lock")
    _wait_for(lambda: holder(lock) == proc.pid, "the run to lock the trail")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert holder(lock) is None and holder(str(work.root / "dirchk" / "SALES.lock")) is None
    (d / "0001.msg").write_text(work.body(1))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert work.seqids() == ["0000000001"]


def test_batch_refuses_an_output_directory_in_use(work, tmp_path) -> None:
    pytest.importorskip("pyspark")
    work.properties()
    dump = work.dump("in.jsonl", [work.body(1)])
    out = tmp_path / "out"
    with Lock(str(out / "msgcap.lock"), "output"):
        done = work.msgcap("batch", "--prop", str(work.prop), "--input", str(dump),
                           "--output", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"msgcap.lock: locked by process {os.getpid()}" in done.stderr
    assert not (out / "trail").exists()


def test_holder_asks_the_kernel_without_taking_the_lock(tmp_path) -> None:
    path = str(tmp_path / "x.lock")
    assert holder(path) is None  # no file
    first = Lock(path, "trail x")
    first.acquire()
    try:
        assert holder(path) == os.getpid() and holder(path) == os.getpid()
        with pytest.raises(LockedError, match=f"locked by process {os.getpid()}: another "
                                              "msgcap writes trail x"):
            Lock(path, "trail x").acquire()  # a second descriptor, even in the same process
    finally:
        first.release()
    assert holder(path) is None
    with open(path) as fh:  # the file stays, for people
        assert fh.read().strip() == str(os.getpid())
