"""``msgcap batch`` on local[2]: inputs given as URIs, text-line ids, and what goes wrong — an
unreadable input, a bad property, a parser error under abend, an input gone mid-job, a JVM that
does not start — as one line, exit 2, and no partial output; Spark's own output in the log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from msgcap.batch.driver import run_batch
from msgcap.batch.inputs import plan_scans
from msgcap.batch.jobs import SparkJobs
from msgcap.batch.parse import Job
from msgcap.cli import main
from props.errors import SourceError
from props.loader import load_settings

from .conftest import REPO, copy_example, output_entries, trail_view
from .test_batch import _messages, _record, _write_jsonl

PROP = "dirprm/jmsvam.properties"


def _run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _batch(capsys, *args: str, output: str = "out") -> tuple[int, str, str]:
    return _run(capsys, "batch", "--prop", PROP, "--output", output, "--progress-interval",
                "-1", *args)


def _one_line(err: str) -> str:
    """The error line (Spark's own start-up warnings aside); never a traceback."""
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def test_uri_inputs_equal_replay(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    Path("in").mkdir()
    bodies = _messages(60, seed=11)
    for k, cut in enumerate(range(0, 60, 20)):
        _write_jsonl(Path(f"in/part {k}%.jsonl"), bodies[cut:cut + 20], cut)
    assert _run(capsys, "replay", "--prop", PROP, "--progress-interval", "-1",
                "in/part 0%.jsonl", "in/part 1%.jsonl", "in/part 2%.jsonl")[0] == 0
    base = (tmp_path / "in").as_uri()
    code, out, _ = _batch(capsys, "--input", f"{base}/part*.jsonl", "--partitions", "5")
    assert code == 0, out
    assert trail_view("out/trail/sa") == trail_view("dirdat/sa")
    # a directory URI: its files in name order
    assert _batch(capsys, "--input", base, "--partitions", "2", output="out2")[0] == 0
    assert trail_view("out2/trail/sa") == trail_view("dirdat/sa")


def test_text_line_ids_count_lines_first(local_spark, tmp_path, monkeypatch, capsys):
    """Under a jms.id other than time, a text line's id (file:line) is used before the lines
    of earlier blocks are counted by the parse: they are counted in a job of their own."""
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(PROP)
    prop.write_text(prop.read_text().replace(
        "delim.header=optype,schemaandtable,timestamp,txind,id",
        "delim.header=optype,schemaandtable,timestamp,txind,key\ndelim.seqid=$jmsid")
        + "\njms.id=JMSMessageID\n")
    Path("records.txt").write_text("".join(_record(n, "W") + "\n" for n in range(1, 10)))
    assert _run(capsys, "replay", "--prop", PROP, "--lines", "--progress-interval", "-1",
                "records.txt")[0] == 0
    steps: list[str] = []
    run_batch(load_settings(PROP), ["records.txt"], "out", spark=local_spark, lines=True,
              partitions=4, progress=steps.append, progress_interval=-1)
    assert "counting lines" in steps
    assert trail_view("out/trail/sa") == trail_view("dirdat/sa")


def test_parser_error_under_abend(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(PROP)
    prop.write_text(prop.read_text().replace("error.policy=discard", "error.policy=abend"))
    bodies = _messages(40, seed=2)
    bodies.insert(31, "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n")
    _write_jsonl(tmp_path / "a.jsonl", bodies, 0)
    code, _, err = _run(capsys, "replay", "--prop", PROP, "--progress-interval", "-1",
                        "a.jsonl")
    assert code == 2
    code, out, err2 = _batch(capsys, "--input", "a.jsonl", "--partitions", "3")
    assert code == 2 and out == ""
    assert _one_line(err2) == _one_line(err).replace("msgcap replay:", "msgcap batch:")
    assert "a.jsonl:32" in err2 and "unknown table SALES.NOSUCH" in err2
    assert output_entries() == []  # no trail, no temporary files


def test_bad_property(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(PROP)
    prop.write_text(prop.read_text() + "trail.megabytes=lots\n")
    code, out, err = _batch(capsys, "--input", "messages.jsonl")
    assert code == 2 and out == ""
    line = _one_line(err)
    assert line.startswith(f"msgcap batch: error: {PROP}:") and "trail.megabytes" in line
    assert not Path("out").exists()


def test_unreadable_inputs(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    for missing in ("nosuch.jsonl", "messages.jsonl/x", "file:///nosuch/dir/*.jsonl",
                    "nosuch://host/x.jsonl"):
        code, out, err = _batch(capsys, "--input", "messages.jsonl", missing)
        assert code == 2 and out == ""
        assert missing in _one_line(err)
        assert not Path("out").exists() or output_entries() == []
    # not a dump: the line that is not JSON is named
    Path("broken.jsonl").write_text(Path("messages.jsonl").read_text() + "{not json\n")
    code, _, err = _batch(capsys, "--input", "broken.jsonl", "--partitions", "2")
    assert code == 2 and "broken.jsonl:6: not a JSON object" in _one_line(err)
    assert output_entries() == []


def test_input_gone_after_listing(local_spark, tmp_path, monkeypatch):
    """An input that cannot be read when Spark's reader opens it: the job's failure is one
    line naming the file."""
    copy_example("delimited", tmp_path, monkeypatch)
    Path("big.jsonl").write_text(Path("messages.jsonl").read_text() * 50)
    jobs = SparkJobs(local_spark)
    files = jobs.list_inputs(["big.jsonl"], lines=False)
    settings = load_settings(PROP)
    scans = plan_scans(files, block=1000)
    job = Job.create(settings, None, None, files, scans, rows=False, time_base=0)
    Path("big.jsonl").unlink()
    with pytest.raises(SourceError) as info:  # the count of its lines reads it first
        jobs.segment_counts(files, scans, jobs.broadcast(job))
    assert str(info.value).startswith("cannot read an input:") and "big.jsonl" in str(info.value)
    assert "\n" not in str(info.value)


# ``msgcap batch`` whose input is removed once Spark has planned its reads and counted the lines,
# before any task of the pass opens it: the deletion is put at that exact point, the rest is the
# command as a user runs it.
VANISHING_INPUT = """\
import os, sys
from msgcap.batch.jobs import SparkJobs
from msgcap.cli import main

counted = SparkJobs.segment_counts

def count_then_vanish(self, files, scans, bjob, **kw):
    out = counted(self, files, scans, bjob, **kw)
    os.unlink(sys.argv[1])
    return out

SparkJobs.segment_counts = count_then_vanish
sys.exit(main(sys.argv[2:]))
"""
JAVA_TRACE = ("\tat org.apache", "Exception in thread", "py4j.protocol.Py4JJavaError",
              "Caused by:")


def _command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The batch in a process of its own: the JVM it starts writes where the user would see."""
    return subprocess.run([sys.executable, *args], check=False, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_input_vanishing_mid_job(tmp_path, monkeypatch):
    """The one line on stderr (no Java stack trace: Spark's output goes to the log), the
    traces in ``DIR/batch.log``, no output."""
    copy_example("delimited", tmp_path, monkeypatch)
    Path("big.jsonl").write_text(Path("messages.jsonl").read_text() * 50)
    Path("vanish.py").write_text(VANISHING_INPUT)
    done = _command("vanish.py", "big.jsonl", "batch", "--prop", PROP, "--output", "out",
                    "--master", "local[1]", "--partitions", "2", "--progress-interval", "-1",
                    "--input", "big.jsonl")
    assert done.returncode == 2 and done.stdout == ""
    error = f"cannot read an input: File file:{tmp_path / 'big.jsonl'} does not exist"
    assert not any(trace in done.stderr for trace in JAVA_TRACE)
    assert done.stderr.splitlines() == [f"msgcap batch: error: {error}"]
    log = Path("out/batch.log").read_text()
    # the executor's trace (Spark's log) and the driver's (the Py4J error msgcap caught)
    assert "ERROR Executor: Exception in task" in log and "\tat org.apache.spark" in log
    assert "py4j.protocol.Py4JJavaError" in log and "java.io.FileNotFoundException" in log
    assert log.rstrip().endswith(f"ERROR   msgcap.batch: stopped by an error: {error}")
    assert output_entries() == []


def test_jvm_that_does_not_start(tmp_path, monkeypatch):
    copy_example("delimited", tmp_path, monkeypatch)
    done = _command("-m", "msgcap.cli", "batch", "--prop", PROP, "--output", "out",
                    "--input", "messages.jsonl", env={"JAVA_HOME": str(tmp_path / "nojava")})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [(
        "msgcap batch: error: local[*]: Spark did not start: [JAVA_GATEWAY_EXITED] Java "
        "gateway process exited before sending its port number. (its output: out/batch.log)")]
    assert f"{tmp_path}/nojava/bin/java" in Path("out/batch.log").read_text()  # why, logged
    assert output_entries() == []


def test_empty_inputs_and_names_spark_would_read_otherwise(local_spark, tmp_path, monkeypatch,
                                                          capsys):
    """Empty files, blank lines, and names with glob characters read as replay reads them;
    names Spark's readers would skip (a leading ``_`` or ``.``) are refused, not left out."""
    copy_example("delimited", tmp_path, monkeypatch)
    Path("empty.jsonl").write_text("")
    Path("blank.jsonl").write_text("\n\n\n")
    code, out, _ = _run(capsys, "replay", "--prop", PROP, "--progress-interval", "-1",
                        "empty.jsonl", "blank.jsonl")
    assert code == 0
    result = run_batch(load_settings(PROP), ["empty.jsonl", "blank.jsonl"], "out",
                       spark=local_spark, partitions=3, progress_interval=-1)
    assert trail_view("out/trail/sa") == trail_view("dirdat/sa")  # a file header only
    assert result.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
    bodies = _messages(30, seed=8)
    names = ["a[1].jsonl", "b{x}.jsonl", "c?*.jsonl"]
    cuts = [0, 10, 20, len(bodies)]
    for k, name in enumerate(names):
        _write_jsonl(Path(name), bodies[cuts[k]:cuts[k + 1]], cuts[k])
    prop = Path(PROP)
    prop.write_text(prop.read_text().replace("trail.path=dirdat/sa", "trail.path=dirdat2/sa"))
    code, out, err = _run(capsys, "replay", "--prop", PROP, "--progress-interval", "-1", *names)
    assert code == 0, err
    for parts in (1, 4):  # read whole, and in blocks
        run_batch(load_settings(PROP), names, f"out{parts}", spark=local_spark,
                  partitions=parts, progress_interval=-1)
        assert trail_view(f"out{parts}/trail/sa") == trail_view("dirdat2/sa")
    for hidden in ("_d.jsonl", ".e.jsonl"):
        Path(hidden).write_text(Path("a[1].jsonl").read_text())
        code, out, err = _batch(capsys, "--input", "a[1].jsonl", hidden, output="hidden")
        assert code == 2 and f"{hidden}: Spark's file readers skip files" in _one_line(err)


def _limit(max_bytes: int) -> None:
    prop = Path(PROP)
    prop.write_text(prop.read_text() + f"jms.maxbytes={max_bytes}\n")


def test_a_file_over_jms_maxbytes_is_refused_before_spark_reads_it(local_spark, tmp_path,
                                                                   monkeypatch, capsys):
    """Refused from its listed size (no Spark step starts), with replay's line: exit 2, no
    output, whatever ``error.policy`` (discard here)."""
    copy_example("delimited", tmp_path, monkeypatch)
    _limit(1000)
    Path("big.dat").write_text(_record(1, "W") + "\n" + "x" * 1500)
    code, _, err = _run(capsys, "replay", "--prop", PROP, "--progress-interval", "-1",
                        "messages.jsonl", "big.dat")
    assert code == 2 and "big.dat: message of 1617 bytes exceeds jms.maxbytes=1000" in err
    code, out, err2 = _run(capsys, "batch", "--prop", PROP, "--output", "out",
                           "--progress-interval", "0", "--input", "messages.jsonl", "big.dat")
    assert code == 2 and out == ""
    assert _one_line(err2) == _one_line(err).replace("msgcap replay:", "msgcap batch:")
    assert "batch: parsing" not in err2  # steps are shown: none started
    assert output_entries() == []


def test_a_line_over_jms_maxbytes_stops_the_batch(local_spark, tmp_path, monkeypatch, capsys):
    """A JSON Lines body or a text line (``--lines``) over the limit, in a file read in blocks:
    replay's line naming file:line, exit 2, no output."""
    copy_example("delimited", tmp_path, monkeypatch)
    _limit(1000)
    bodies = _messages(40, seed=2)
    bodies.insert(31, "".join(_record(9000 + k, "W") + "\n" for k in range(12)))
    _write_jsonl(Path("a.jsonl"), bodies, 0)
    lines = [_record(n, "W") for n in range(1, 41)]
    lines[24] = ",".join([lines[24]] * 12)
    Path("records.txt").write_text("\n".join(lines) + "\n")
    for options, name, refused in (
            ([], "a.jsonl", "a.jsonl:32: message of 1483 bytes exceeds"),
            (["--lines"], "records.txt", "records.txt:25: message of 1427 bytes exceeds")):
        code, _, err = _run(capsys, "replay", "--prop", PROP, "--progress-interval", "-1",
                            *options, name)
        assert code == 2 and refused in err
        code, out, err2 = _batch(capsys, "--partitions", "3", *options, "--input", name)
        assert code == 2 and out == ""
        assert _one_line(err2) == _one_line(err).replace("msgcap replay:", "msgcap batch:")
        assert output_entries() == []
