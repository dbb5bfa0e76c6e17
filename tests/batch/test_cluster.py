"""``msgcap batch`` on the standalone cluster only: what the executors get, and a Python worker
killed in the middle of a job.

The workers run a plain ``python3`` without msgcap; the jobs ship a packed environment. The
executors' working directories are the workers' own: relative paths of the properties (the
copybook, the DEFGEN files) mean nothing there.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from msgcap.batch.driver import run_batch
from msgcap.cli import main
from props.errors import MsgcapError
from props.loader import load_settings

from .conftest import Sessions, copy_example, output_entries, trail_view
from .test_batch import _record

PROP = "dirprm/jmsvam.properties"


def _replay(capsys, prop: str, *inputs: str, lines: bool = False) -> None:
    capsys.readouterr()
    assert main(["replay", "--prop", prop, "--progress-interval", "-1",
                 *(["--lines"] if lines else []), *inputs]) == 0
    capsys.readouterr()


def _executor_dirs(cluster_dir: Path) -> list[Path]:
    """The executors' working directories (``work/<worker>/<app>/<executor>``)."""
    return [d for d in (cluster_dir / "work").glob("*/app-*/*") if d.is_dir()]


def test_executors_get_only_what_spark_ships(cluster_spark, sessions: Sessions, tmp_path,
                                            monkeypatch, capsys):
    copy_example("fixed", tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path / "copybook")  # fixed.copybook=dirdef/retail.cpy, relative
    _replay(capsys, PROP, "messages.jsonl")
    run_batch(load_settings(PROP), ["messages.jsonl"], "out", spark=cluster_spark, partitions=3,
              progress_interval=-1)
    assert trail_view("out/trail/rt") == trail_view("dirdat/rt")
    assert sessions.cluster is not None
    executors = _executor_dirs(sessions.cluster.dir)
    assert executors
    for d in executors:  # the unpacked environment and the logs: no code, no copybook
        assert {p.name for p in d.iterdir()} <= {"environment", "stdout", "stderr"}
        assert (d / "environment" / "bin" / "python").exists()


def test_workers_python_has_no_msgcap(sessions: Sessions, tmp_path, monkeypatch, capsys):
    """Without the packed environment the executors run the workers' own python3: the job
    fails with one line saying what to do."""
    copy_example("delimited", tmp_path, monkeypatch)
    from msgcap.batch.session import spark_session

    cluster = sessions.start_cluster()
    sessions.stop()
    plain = spark_session(cluster.url, app="msgcap batch without environment",
                          conf=[("spark.task.maxFailures", "1")])
    plain.sparkContext.setLogLevel("OFF")
    try:
        with pytest.raises(MsgcapError) as info:
            run_batch(load_settings(PROP), ["messages.jsonl"], "out", spark=plain,
                      progress_interval=-1)
    finally:
        plain.stop()
    message = str(info.value)
    assert message.startswith("the executors' Python cannot import msgcap")
    assert "--python-env" in message and "\n" not in message
    assert output_entries() == []


def _python_workers(cluster_dir: Path) -> list[tuple[int, int]]:
    """(pid, CPU ticks) of the executors' Python workers: processes of the packed environment
    forked by another (the pyspark daemon)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if cwd.startswith(str(cluster_dir)) and b"environment/bin/python" in cmd:
            found[int(entry)] = (int(stat[1]), int(stat[11]) + int(stat[12]))  # ppid, ticks
    return [(pid, ticks) for pid, (ppid, ticks) in found.items() if ppid in found]


def _marker_job(sc, name: str) -> int:
    """The id of a job run now (job ids grow), in a job group of its own thread."""
    marker = threading.Thread(target=lambda: (sc.setJobGroup(name, "a marker job"),
                                              sc.parallelize([0], 1).count()))
    marker.start()
    marker.join(120)
    (job,) = sc.statusTracker().getJobIdsForGroup(name)
    return job


def _wait_idle_workers(cluster_dir: Path) -> None:
    """Wait until no Python worker's CPU time moves over 0.2 s."""
    last = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = _python_workers(cluster_dir)
        if now == last:
            return
        last = now
        time.sleep(0.2)


def test_killed_python_worker_is_retried(cluster_spark, sessions: Sessions, tmp_path,
                                         monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    Path("records.txt").write_text("".join(_record(n, "W") + "\n" for n in range(1, 60001)))
    _replay(capsys, PROP, "records.txt", lines=True)
    assert sessions.cluster is not None
    cluster_dir = sessions.cluster.dir
    sc = cluster_spark.sparkContext
    before = _marker_job(sc, "before")
    _wait_idle_workers(cluster_dir)  # the marker's worker is not taken for the batch's
    outcome: list[BaseException | None] = []

    def batch() -> None:
        try:
            run_batch(load_settings(PROP), ["records.txt"], "out", spark=cluster_spark,
                      lines=True, partitions=4, progress_interval=-1)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            outcome.append(exc)

    thread = threading.Thread(target=batch)
    thread.start()
    killed = None
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 600
    while killed is None and thread.is_alive() and time.monotonic() < deadline:
        for pid, ticks in _python_workers(cluster_dir):
            if pid in seen and ticks > seen[pid]:  # busy with a task
                os.kill(pid, signal.SIGKILL)
                killed = pid
                break
            seen[pid] = ticks
        time.sleep(0.05)
    thread.join(900)
    assert killed is not None, "no busy Python worker was seen to kill"
    assert outcome == [None]
    assert trail_view("out/trail/sa") == trail_view("dirdat/sa")
    tracker = sc.statusTracker()
    failed = 0
    for job in range(before + 1, _marker_job(sc, "after")):  # the batch's, in any job group
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            stage_info = tracker.getStageInfo(stage)
            failed += stage_info.numFailedTasks if stage_info else 0
    assert failed >= 1  # the task whose worker died ran again
