"""``msgcap batch`` on local[2] and on a standalone cluster (``spark`` runs each test on both):
the trail equals replay's, rows equal dump --json, error.policy under both policies (no partial
trail), multi-file order, txind spans across splits, rollover."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from msgcap.batch.driver import run_batch, window
from msgcap.batch.encode import Encoded
from msgcap.batch.inputs import block_size, input_files, local_inputs, plan_scans
from msgcap.batch.jobs import SparkJobs
from msgcap.cli import main
from props.errors import MessageError
from props.loader import load_settings

from .conftest import copy_example, output_entries, trail_view

DELIM_PROP = "dirprm/jmsvam.properties"


def replay(capsys, prop: str, *inputs: str, lines: bool = False) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["replay", "--prop", prop, "--progress-interval", "-1",
                 *(["--lines"] if lines else []), *inputs])
    out, err = capsys.readouterr()
    return code, out, err


def batch(spark, prop: str, inputs: list[str], out: str = "out", **kw):
    return run_batch(load_settings(prop), inputs, out, spark=spark, progress_interval=-1, **kw)


def layouts(spark, *parts: int) -> tuple[int, ...]:
    """Split counts to try: all on local[2]; on the cluster, where every job costs more, the
    first and the last."""
    return parts if spark.sparkContext.master.startswith("local") else (parts[0], parts[-1])


def same_trail(replayed: str, batched: str, *, mask_io_time: bool = False) -> None:
    a = trail_view(replayed, mask_io_time=mask_io_time)
    b = trail_view(batched, mask_io_time=mask_io_time)
    assert [x[0] for x in a] == [x[0] for x in b]
    assert a == b


# -- equivalence with replay ----------------------------------------------------------------------

def test_delimited_example(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    code, out, _ = replay(capsys, DELIM_PROP, "messages.jsonl")
    assert code == 0
    for parts in layouts(spark, 1, 2, 3, 7):
        result = batch(spark, DELIM_PROP, ["messages.jsonl"], f"out{parts}", partitions=parts)
        same_trail("dirdat/sa", f"out{parts}/trail/sa")
        assert result.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
    assert result.splits >= 5  # about one message per split: the B/M/E span crosses splits


def test_a_partitions_batch_writes_its_partition_token(local_spark, tmp_path, monkeypatch,
                                                        capsys):
    """A partitioned feed's archive, replayed by ``msgcap batch`` with ``MSGCAP_PARTITION``:
    every record carries the partition's user token, and the trail is replay's (issue 36)."""
    from msgcap.trail.reader import TrailReader, sequence_files

    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(DELIM_PROP)
    text = prop.read_text()
    for plain, partitioned in (("dir:dirspool", "dir:dirspool${PARTITION}"),
                               ("dirdat/sa", "dirdat/p${PARTITION}/sa"),
                               ("=SALES\n", "=SALES${PARTITION}\n"),
                               ("SALES.dsc", "SALES${PARTITION}.dsc")):
        assert plain in text
        text = text.replace(plain, partitioned)
    prop.write_text(text)
    monkeypatch.setenv("MSGCAP_PARTITION", "3")
    Path("dirdat/p3").mkdir(parents=True)
    assert replay(capsys, DELIM_PROP, "messages.jsonl")[0] == 0
    batch(local_spark, DELIM_PROP, ["messages.jsonl"], partitions=2)
    same_trail("dirdat/p3/sa", "out/trail/sa")
    records = TrailReader([path for _, path in sequence_files("out/trail/sa", 9)])
    tokens = [dict(rec.user_tokens) for rec in records]
    assert tokens and all(t.get("MSGCAP_PARTITION") == b"3" for t in tokens)


@pytest.mark.parametrize("prop, dump, prefix", [
    ("dirprm/orders.properties", "messages/orders.jsonl", "dirdat/or"),
    ("dirprm/mytable.properties", "messages/mytable.jsonl", "dirdat/my"),
])
def test_xml_examples(spark, tmp_path, monkeypatch, capsys, prop, dump, prefix):
    copy_example("xml", tmp_path, monkeypatch)
    if "orders" in prop:  # jms.id=time (the default) ids differ from run to run: use the ids
        Path(prop).write_text(Path(prop).read_text() + "\njms.id=JMSMessageID\n")
    assert replay(capsys, prop, dump)[0] == 0
    batch(spark, prop, [dump], partitions=3)
    same_trail(prefix, "out/trail/" + Path(prefix).name)


def test_time_ids_increase(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("xml", tmp_path, monkeypatch)
    batch(local_spark, "dirprm/orders.properties", ["messages/orders.jsonl"] * 3, partitions=4)
    seqids = [r["tokens"]["VAMSEQID"] for r in _dump_records(capsys, "out/trail/or", None)]
    assert len(seqids) == 15 and all(len(s) == 20 for s in seqids)
    firsts = sorted(set(seqids))
    assert firsts == sorted(firsts) and len(firsts) == 6  # one id per message, increasing
    assert seqids == sorted(seqids)


def test_fixed_examples(spark, tmp_path, monkeypatch, capsys):
    copy_example("fixed", tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path / "copybook")
    assert replay(capsys, DELIM_PROP, "messages.jsonl")[0] == 0
    batch(spark, DELIM_PROP, ["messages.jsonl"], partitions=3)
    same_trail("dirdat/rt", "out/trail/rt")
    monkeypatch.chdir(tmp_path / "sourcedefs")
    assert replay(capsys, DELIM_PROP, "messages")[0] == 0
    batch(spark, DELIM_PROP, ["messages"], partitions=2)
    same_trail("dirdat/tc", "out/trail/tc", mask_io_time=True)  # timestamp *ts


def _grouped_jsonl(path: Path, bodies: list[str]) -> None:
    """Every other message in one of three message groups, numbered in it (issue 36)."""
    with open(path, "w") as fh:
        for i, body in enumerate(bodies):
            headers = {"JMSXGroupID": f"g{i % 3}", "JMSXGroupSeq": str(i // 3 + 1)} if i % 2 \
                else {}
            fh.write(json.dumps({"id": f"m{i:06d}", "headers": headers, "body": body}) + "\n")


def test_message_groups_in_a_dump_become_order_tokens(local_spark, tmp_path, monkeypatch,
                                                      capsys):
    """A dump's JMSXGroupID/JMSXGroupSeq headers are the records' user tokens in batch as in
    replay, in the one pass (whole one-record messages) and in the two (spans)."""
    copy_example("delimited", tmp_path, monkeypatch)
    _grouped_jsonl(Path("spans.jsonl"), _messages(120, seed=36))
    _grouped_jsonl(Path("whole.jsonl"), [_record(n, "W") + "\n" for n in range(1, 301)])
    for name, one_pass in (("spans.jsonl", False), ("whole.jsonl", True)):
        shutil.rmtree("dirdat", ignore_errors=True)
        Path("dirdat").mkdir()
        assert replay(capsys, DELIM_PROP, name)[0] == 0
        result = batch(local_spark, DELIM_PROP, [name], f"out-{name}", partitions=3)
        assert result.one_pass is one_pass
        same_trail("dirdat/sa", f"out-{name}/trail/sa")
        groups = {(r["tokens"].get("JMSXGroupID"), r["tokens"].get("JMSXGroupSeq"))
                  for r in _dump_records(capsys, f"out-{name}/trail/sa", None)}
        assert {("g1", "1"), ("g0", "2"), ("g2", "2"), (None, None)} <= groups, groups


# -- generated inputs: multi-file order, spans, duplicates, rollover ------------------------------

def _record(n: int, txind: str) -> str:
    return (f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,{txind},{n:010d},NULL,{n},"
            f"NULL,Customer {n},NULL,City {n % 17},NULL,2024-03-01 10:15:30")


def _messages(count: int, seed: int) -> list[str]:
    """Bodies of whole and spanning transactions (B, M…, E over messages), some repeated."""
    rng = random.Random(seed)
    bodies: list[str] = []
    n = 0
    while len(bodies) < count:
        sizes = [rng.choice((1, 1, 2)) for _ in range(rng.choice((1, 1, 2, 3, 5)))]
        total, k = sum(sizes), 0
        for size in sizes:
            recs = []
            for _ in range(size):
                n += 1
                ind = ("W" if total == 1 else "B" if k == 0 else "E" if k == total - 1
                       else "M")
                recs.append(_record(n, ind))
                k += 1
            bodies.append("\n".join(recs) + "\n")
        if len(sizes) == 1 and rng.random() < 0.15:
            bodies.append(bodies[-1])  # a duplicate: skipped by its seqid
    return bodies


def _write_jsonl(path: Path, bodies: list[str], start: int) -> None:
    with open(path, "w") as fh:
        fh.writelines(json.dumps({"id": f"m{start + i:06d}", "body": body}) + "\n"
                      for i, body in enumerate(bodies))


def test_many_files_in_order_with_spans(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    bodies = _messages(300, seed=7)
    Path("in").mkdir()
    cuts = [0, 40, 41, 120, 200, 260, len(bodies)]
    for k in range(len(cuts) - 1):
        _write_jsonl(Path(f"in/part-{k}.jsonl"), bodies[cuts[k]:cuts[k + 1]], cuts[k])
    code, out, _ = replay(capsys, DELIM_PROP, "in/part-*.jsonl")
    assert code == 0 and "duplicates 0" not in out
    for parts in (4, 11):
        result = batch(spark, DELIM_PROP, ["in/part-*.jsonl"], f"out{parts}", partitions=parts)
        same_trail("dirdat/sa", f"out{parts}/trail/sa")
        assert result.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
    # the order given, not name order, decides
    names = [f"in/part-{k}.jsonl" for k in range(len(cuts) - 1)]
    swapped = [names[2], *names[:2], *names[3:]]
    prop = Path(DELIM_PROP)
    prop.write_text(prop.read_text().replace("trail.path=dirdat/sa", "trail.path=dirdat2/sa"))
    assert replay(capsys, DELIM_PROP, *swapped)[0] == 0
    batch(spark, DELIM_PROP, swapped, "outswapped", partitions=5)
    same_trail("dirdat2/sa", "outswapped/trail/sa")
    assert trail_view("dirdat2/sa") != trail_view("dirdat/sa")


def test_rollover_and_lines(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    spooled: list[bool] = []
    framed = Encoded.framed
    monkeypatch.setattr(Encoded, "framed", lambda r, compressed: (
        spooled.append(r.spooled is not None), framed(r, compressed))[1])
    prop = Path(DELIM_PROP)
    prop.write_text(prop.read_text() + "\ntrail.megabytes=1\n")
    text = "".join(_record(n, "W") + "\n" for n in range(1, 9001))
    Path("records.txt").write_text(text)
    assert replay(capsys, DELIM_PROP, "records.txt", lines=True)[0] == 0
    result = batch(spark, DELIM_PROP, ["records.txt"], lines=True, partitions=12)
    view = trail_view("out/trail/sa")
    assert len(view) >= 2
    same_trail("dirdat/sa", "out/trail/sa")
    # the driver waits for a few partitions' bytes at a time, not all of them
    local = spark.sparkContext.master.startswith("local")
    assert result.splits == 12 and result.planned_slow == 0
    assert result.one_pass  # every line a whole transaction of one record: parsed once
    assert result.most_held <= window(spark.sparkContext.defaultParallelism, spooled=local) + 1
    assert result.most_held < result.splits
    # a local master's tasks leave the framed bytes in files for the driver, and so do a
    # cluster's in the one pass, whose executors here see the driver's directory
    assert spooled == [True] * len(spooled) != []


def test_one_pass_falls_back_late(local_spark, tmp_path, monkeypatch, capsys):
    """A transaction over two messages near the end: the one pass has appended the segments
    before it when it meets it; the run drops them and runs the two passes, and the trail is
    replay's, with nothing of the first try left."""
    copy_example("delimited", tmp_path, monkeypatch)
    inds = ["W"] * 3000
    inds[2900:2902] = ["B", "E"]
    Path("records.txt").write_text("".join(_record(n, i) + "\n" for n, i in enumerate(inds, 1)))
    assert replay(capsys, DELIM_PROP, "records.txt", lines=True)[0] == 0
    said: list[str] = []
    result = run_batch(load_settings(DELIM_PROP), ["records.txt"], "out", spark=local_spark,
                       lines=True, partitions=6, progress=said.append)
    assert not result.one_pass and result.planned_slow == 0
    assert any(s.endswith("(one pass)") for s in said)
    assert ("a message of records.txt is not a whole transaction of one record: two passes "
            "instead") in said
    assert sorted(os.listdir("out/trail")) == ["sa000000000"]
    same_trail("dirdat/sa", "out/trail/sa")


def test_one_pass_with_small_files_after_a_split_one(spark, tmp_path, monkeypatch, capsys):
    """Issue 35: a large file read in blocks, then small files read whole by one task, which
    Spark hands it largest first: the one pass takes them in input order, and the progress
    says nothing of two passes."""
    copy_example("delimited", tmp_path, monkeypatch)
    Path("big.txt").write_text("".join(_record(n, "W") + "\n" for n in range(1, 3001)))
    inputs = ["big.txt"]
    for k, count in enumerate((5, 12, 9)):  # sizes unlike their order
        first = 5000 + 20 * k
        Path(f"small{k}.txt").write_text("".join(_record(n, "W") + "\n"
                                                 for n in range(first, first + count)))
        inputs.append(f"small{k}.txt")
    assert replay(capsys, DELIM_PROP, *inputs, lines=True)[0] == 0
    said: list[str] = []
    result = run_batch(load_settings(DELIM_PROP), inputs, "out", spark=spark,
                       lines=True, partitions=6, progress=said.append)
    assert result.one_pass, said
    assert any(s.endswith("(one pass)") for s in said)
    assert not any("two passes" in s for s in said), said
    same_trail("dirdat/sa", "out/trail/sa")


def test_one_pass_says_an_input_changed(local_spark, tmp_path, monkeypatch, capsys):
    """Issue 35: an input that changes between the count of its lines and the one pass: the
    run says so (not that a message is no whole transaction) and runs the two passes, which
    read it as it is then."""
    copy_example("delimited", tmp_path, monkeypatch)
    records = "".join(_record(n, "W") + "\n" for n in range(1, 3001))
    Path("big.txt").write_text(records)
    said: list[str] = []

    def progress(line: str) -> None:
        said.append(line)
        if line.endswith("(one pass)"):  # counted: a blank line goes in before every record
            Path("big.txt").write_text("\n" + records)

    result = run_batch(load_settings(DELIM_PROP), ["big.txt"], "out", spark=local_spark,
                       lines=True, partitions=6, progress=progress)
    assert not result.one_pass
    assert "input big.txt changed after its lines were counted: two passes instead" in said
    assert not any("whole transaction" in s for s in said), said
    assert replay(capsys, DELIM_PROP, "big.txt", lines=True)[0] == 0
    same_trail("dirdat/sa", "out/trail/sa")


def test_a_byte_order_mark_is_no_part_of_the_first_line(local_spark, tmp_path, monkeypatch,
                                                          capsys):
    """Issue 35: ``--lines`` files that start with a UTF-8 byte-order mark: replay and batch
    both drop it and write the first line, whichever way batch reads the file (blocks the
    driver counts and the one pass's tasks read, blocks through Spark's text source, a small
    file read whole, the two passes): byte-identical trails."""
    copy_example("delimited", tmp_path, monkeypatch)
    bom = "\ufeff"
    Path("big.txt").write_text(bom + "".join(_record(n, "W") + "\n" for n in range(1, 2001)),
                               encoding="utf-8")
    Path("small.txt").write_text(bom + "".join(_record(n, "W") + "\n"
                                               for n in range(5000, 5010)), encoding="utf-8")
    spans = ["W"] * 2000
    spans[1000:1002] = ["B", "E"]
    Path("spans.txt").write_text(bom + "".join(_record(n, i) + "\n"
                                               for n, i in enumerate(spans, 1)), encoding="utf-8")
    assert Path("big.txt").read_bytes().startswith(b"\xef\xbb\xbfI,")
    for inputs, one_pass in ((["big.txt", "small.txt"], True),
                             ([(tmp_path / "big.txt").as_uri()], True),
                             (["spans.txt"], False)):
        shutil.rmtree("dirdat", ignore_errors=True)
        shutil.rmtree("out", ignore_errors=True)
        local = [i.removeprefix("file://") for i in inputs]
        code, out, _ = replay(capsys, DELIM_PROP, *local, lines=True)
        assert code == 0 and "discarded 0" in out, out
        result = batch(local_spark, DELIM_PROP, inputs, lines=True, partitions=4)
        assert result.one_pass == one_pass and result.stats.discarded == 0, inputs
        same_trail("dirdat/sa", "out/trail/sa")
        assert result.stats.messages == sum(len(Path(p).read_text().splitlines())
                                            for p in local)


def test_one_pass_through_sparks_readers(local_spark, tmp_path, monkeypatch, capsys):
    """The one pass where the tasks do not read local files themselves: an input given as a URI
    (counted by Spark SQL, read by Spark's text source), small files read whole (counted by
    tasks). The trail is replay's."""
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(DELIM_PROP)
    prop.write_text(prop.read_text().replace("optype,schemaandtable,timestamp,txind,id",
                                             "optype,schemaandtable,timestamp,id"))
    record = "I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,{0:010d},NULL,{0},NULL,C{0},NULL,X,NULL,"
    Path("big.txt").write_text("".join(record.format(n) + "2024-03-01 10:15:30\n"
                                       for n in range(1, 2001)))
    for k in range(3):
        _write_jsonl(Path(f"small{k}.jsonl"), [record.format(n) + "2024-03-01 10:15:30"
                                               for n in range(3000 + 10 * k, 3010 + 10 * k)], 0)
    for inputs, lines in (([(tmp_path / "big.txt").as_uri()], True),
                          (["small0.jsonl", "small1.jsonl", "small2.jsonl"], False)):
        shutil.rmtree("dirdat", ignore_errors=True)
        shutil.rmtree("out", ignore_errors=True)
        local = [i.removeprefix("file://") for i in inputs]
        assert replay(capsys, DELIM_PROP, *local, lines=lines)[0] == 0
        result = batch(local_spark, DELIM_PROP, inputs, lines=lines, partitions=4)
        assert result.one_pass
        same_trail("dirdat/sa", "out/trail/sa")


def test_counts_in_the_jvm_equal_the_tasks(local_spark, tmp_path, monkeypatch):
    """The blocks of a large file are counted by Spark SQL (or by the driver, a local file),
    not by Python tasks: the same lines, messages and first message as the tasks count (blank
    lines, lone CRs, white space)."""
    from msgcap.batch.direct import count_segments
    from msgcap.batch.parse import Job

    copy_example("delimited", tmp_path, monkeypatch)
    Path("t.txt").write_bytes(b"".join(b"line %d\n" % n + (b"\n", b"\r\n", b" \n", b"")[n % 4]
                                       for n in range(400)) + b"\r\n\n")
    Path("j.jsonl").write_bytes(b"".join(b'{"id": "%d", "body": "b"}\n' % n
                                         + (b"\n", b" \t\r\n", b"")[n % 3] for n in range(300)))
    jobs = SparkJobs(local_spark)
    for name, lines in (("t.txt", True), ("j.jsonl", False)):
        files = jobs.list_inputs([name], lines=lines)
        scans = plan_scans(files, block=500)
        job = Job.create(load_settings(DELIM_PROP), None, None, files, scans, rows=False,
                         time_base=0)
        bjob = jobs.broadcast(job)
        source, kinds = jobs.source(files, scans)
        tasks = source.mapPartitionsWithIndex(
            lambda i, it, b=bjob, k=kinds: count_segments(b.value, it, lines=k[i])).collect()
        sql = sorted(jobs.segment_counts(files, scans, bjob), key=lambda c: c.key)
        assert len(tasks) > 5
        assert [(c.key, c.lines, c.messages) for c in sql] == [
            (c.key, c.lines, c.messages) for c in tasks]
        # of the lines, only the input's first message is read (the counters' steps)
        assert [c.first for c in sql] == [tasks[0].first] + [None] * (len(sql) - 1)
        assert tasks[0].first is not None
        # the driver's own count of a local file: the tasks' blocks, firsts of each block
        local = sorted(jobs.segment_counts(files, scans, bjob, on_driver=True),
                       key=lambda c: c.key)
        assert [(c.key, c.lines, c.messages, c.first) for c in local] == [
            (c.key, c.lines, c.messages, c.first) for c in tasks]


# -- errors ---------------------------------------------------------------------------------------

def _with_bad(tmp_path: Path) -> list[str]:
    bodies = _messages(40, seed=3)
    bad = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n"
    bodies.insert(25, bad)
    _write_jsonl(tmp_path / "a.jsonl", bodies[:15], 0)
    _write_jsonl(tmp_path / "b.jsonl", bodies[15:], 15)
    return ["a.jsonl", "b.jsonl"]


def test_bad_message_abend(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(DELIM_PROP)
    prop.write_text(prop.read_text().replace("error.policy=discard", "error.policy=abend"))
    inputs = _with_bad(tmp_path)
    code, _, err = replay(capsys, DELIM_PROP, *inputs)
    assert code == 2
    with pytest.raises(MessageError) as info:
        batch(spark, DELIM_PROP, inputs, partitions=4)
    assert f"msgcap replay: error: {info.value}" == err.strip().splitlines()[-1]
    assert "b.jsonl:" in str(info.value) and "SALES.NOSUCH" in str(info.value)
    assert trail_view("dirdat/sa")  # replay keeps what it wrote before; batch writes all or none
    assert output_entries() == []


def _discard_entries(path):
    """A discard file's records, their write time left out (batch writes them later)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    for row in rows:
        row.pop("time")
    return rows


def test_bad_message_discard(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    inputs = _with_bad(tmp_path)
    code, out, _ = replay(capsys, DELIM_PROP, *inputs)
    assert code == 0 and "discarded 1" in out
    result = batch(spark, DELIM_PROP, inputs, partitions=4)
    same_trail("dirdat/sa", "out/trail/sa")
    assert result.stats.discarded == 1
    assert result.discard_file == "out/errors/discarded.jsonl"
    assert _discard_entries(result.discard_file) == _discard_entries("dirrpt/SALES.dsc")


def test_discarded_lines_read_again(spark, tmp_path, monkeypatch, capsys):
    """Pass 1 keeps no raw lines: the driver reads a discarded message's line again from the
    inputs. Discards in a block of a split file (one of them a line across a split's border),
    in a one-message file and in a small JSON Lines file read whole: the records replay
    writes."""
    copy_example("delimited", tmp_path, monkeypatch)
    bad = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n"
    bodies = _messages(120, seed=5)
    discarded = 2  # bad.txt, small.jsonl's
    for at in range(3, len(bodies), 9):
        bodies.insert(at, bad + "x" * 200)  # long lines: one crosses a split's border
        discarded += 1
    _write_jsonl(tmp_path / "big.jsonl", bodies, 0)
    Path("bad.txt").write_text(bad)
    _write_jsonl(tmp_path / "small.jsonl", [_record(900, "W") + "\n", bad], 900)
    inputs, parts = ["big.jsonl", "bad.txt", "small.jsonl"], 6
    files = input_files(local_inputs(inputs), lines=False)
    block = block_size(files, target=parts, cap=None)
    assert [s.whole for s in plan_scans(files, block=block)] == [False, True]
    starts, crossing = 0, 0
    for line in Path("big.jsonl").read_bytes().splitlines(keepends=True):
        crossing += b"NOSUCH" in line and starts // block != (starts + len(line) - 1) // block
        starts += len(line)
    assert crossing
    code, out, _ = replay(capsys, DELIM_PROP, *inputs)
    assert code == 0 and f"discarded {discarded}" in out
    result = batch(spark, DELIM_PROP, inputs, partitions=parts)
    same_trail("dirdat/sa", "out/trail/sa")
    assert result.stats.discarded == discarded
    assert _discard_entries(result.discard_file) == _discard_entries("dirrpt/SALES.dsc")


def test_open_transaction_at_end(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    _write_jsonl(tmp_path / "a.jsonl", [_record(1, "W") + "\n", _record(2, "B") + "\n",
                                         _record(3, "M") + "\n"], 0)
    code, _, err = replay(capsys, DELIM_PROP, "a.jsonl")
    assert code == 2
    with pytest.raises(MessageError) as info:
        batch(spark, DELIM_PROP, ["a.jsonl"], partitions=3)
    assert f"msgcap replay: error: {info.value}" == err.strip().splitlines()[-1]
    assert output_entries() == []


# -- analysis rows and the command ----------------------------------------------------------------

def _dump_records(capsys, prefix: str, defs: str | None) -> list[dict]:
    capsys.readouterr()
    assert main(["dump", "--json", *(["--defs", defs] if defs else []), prefix]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [r for r in rows if r["kind"] == "record"]


def _as_map(value) -> dict:
    """A map column (parquet), or the struct JSON schema inference makes of it."""
    if value is None:
        return {}
    if hasattr(value, "asDict"):
        return {k: v for k, v in value.asDict().items() if v is not None}
    return dict(value)


def test_rows_match_dump(spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(DELIM_PROP)
    prop.write_text(prop.read_text() + "\ntrail.getupdatebefores=true\n")
    batch(spark, DELIM_PROP, ["messages.jsonl"], formats=("trail", "parquet", "json"),
          partitions=2)
    records = _dump_records(capsys, "out/trail/sa", "dirdat/sales.def")
    expected = []
    for rec in records:
        if rec["before_after"] == "B" and rec["op"] != "DELETE":
            continue  # an update's before-image record: the "before" of the next row
        image = {c["name"]: c["value"] for c in rec["columns"]
                 if not c.get("missing") and not c["null"]}
        expected.append((rec["table"], rec["op"], rec["transind"], rec["tokens"]["TRANID"],
                         rec["tokens"]["VAMSEQID"], rec["io_time"][:19],
                         image if rec["before_after"] == "A" else {},
                         image if rec["before_after"] == "B" else None,
                         sorted(c["name"] for c in rec["columns"] if c["null"]),
                         sorted(c["name"] for c in rec["columns"] if c.get("missing"))))
    for fmt in ("parquet", "json"):
        df = getattr(spark.read, fmt)(str(tmp_path / "out" / fmt)).selectExpr(
            "*", "date_format(commit_time, \"yyyy-MM-dd'T'HH:mm:ss\") AS ct")
        got = []
        for row in df.orderBy("seqid").collect():
            got.append((row["table"], row["op"], row["transind"], row["txid"], row["seqid"],
                        row["ct"], _as_map(row["after"]),
                        _as_map(row["before"]) if row["op"] == "DELETE" else None,
                        sorted(row["null_columns"]), sorted(row["missing_columns"])))
            assert row["source_file"] == "messages.jsonl" and 1 <= row["position"] <= 5
        assert sorted(got, key=lambda g: g[4]) == sorted(expected, key=lambda e: e[4])
    upd = spark.read.parquet(str(tmp_path / "out/parquet")).where("op = 'FIELDCOMP'").orderBy("seqid").first()
    assert upd["before"]["CITY"] == "Boston" and upd["position"] == 3
    assert upd["missing_columns"] == ["NAME", "CREATED"] and upd["null_columns"] == ["CITY"]


def test_command(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    code, out, _ = replay(capsys, DELIM_PROP, "messages.jsonl")
    code = main(["batch", "--prop", DELIM_PROP, "--input", "messages.jsonl", "--output", "out",
                 "--partitions", "2", "--progress-interval", "0"])
    got = capsys.readouterr()
    assert code == 0
    assert got.out.startswith(out.split("trail files:")[0])
    assert "trail files: out/trail/sa000000000" in got.out
    assert "batch: parsing 1 input files in 2 splits" in got.err
    same_trail("dirdat/sa", "out/trail/sa")
    # an output that exists is refused; a bad format is one clear error
    assert main(["batch", "--prop", DELIM_PROP, "--input", "messages.jsonl",
                 "--output", "out"]) == 2
    assert "output exists" in capsys.readouterr().err
    assert main(["batch", "--prop", DELIM_PROP, "--input", "messages.jsonl",
                 "--output", "o2", "--format", "csv"]) == 2
    assert "unknown format csv" in capsys.readouterr().err


def test_encode_failure_moves_transaction_numbers(spark, tmp_path, monkeypatch, capsys):
    """A transaction that cannot be encoded (a 70 000-byte txid) is discarded at write time;
    later transaction numbers move down, so the splits after it are encoded again."""
    copy_example("xml", tmp_path, monkeypatch)
    prop = Path("dirprm/orders.properties")
    prop.write_text(prop.read_text() + "\njms.id=JMSMessageID\nerror.policy=discard\n"
                    "error.file=dirrpt/orders.dsc\n")
    bodies = [json.loads(line)["body"]
              for line in Path("messages/orders.jsonl").read_text().splitlines()]
    entries = []
    for i in range(8):
        body = bodies[i % 2].replace('id="T100', f'id="T{i}-')
        if i == 3:
            body = body.replace(f'id="T{i}-', 'id="' + "X" * 70000)
        entries.append({"id": f"o-{i:02d}", "body": body})
    Path("in.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    code, out, _ = replay(capsys, str(prop), "in.jsonl")
    assert code == 0 and "discarded 1" in out
    steps: list[str] = []
    result = batch(spark, str(prop), ["in.jsonl"], partitions=4, progress=steps.append)
    assert any("again" in step for step in steps)
    same_trail("dirdat/or", "out/trail/or")
    assert result.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
    got = [json.loads(line) for line in Path(result.discard_file).read_text().splitlines()]
    want = [json.loads(line) for line in Path("dirrpt/orders.dsc").read_text().splitlines()]
    assert [(g["error"], g["source"], g["message"]) for g in got] == [
        (w["error"], w["source"], w["message"]) for w in want]


def test_rows_only(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    code = main(["batch", "--prop", DELIM_PROP, "--input", "messages.jsonl", "--output", "o",
                 "--format", "json", "--progress-interval", "-1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "trail files: no transaction written" in out and "json rows: o/json" in out
    assert not Path("o/trail").exists() and not Path("o/.staging").exists()
    assert local_spark.read.json(str(tmp_path / "o/json")).count() == 8


def test_pass_two_jobs_reach_spark_in_queue_order(local_spark):
    """Threads that submit at once (here in reverse, one after the other) still have their
    jobs run by Spark in the order they were queued; a ticket dropped (its job cancelled
    before it ran) holds nothing up, and a closed order submits nothing more."""
    sc = local_spark.sparkContext
    order = SparkJobs(local_spark).in_order()
    tickets = [order.queue() for _ in range(5)]
    dropped = tickets.pop(2)
    order.drop(dropped)
    threads = [threading.Thread(target=order.run, args=(t, sc.parallelize([t], 1).collect))
               for t in reversed(tickets)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(60)
    ids = [order.job_ids(t) for t in tickets]
    assert all(len(i) == 1 for i in ids) and order.job_ids(dropped) == []
    assert [i[0] for i in ids] == sorted(i[0] for i in ids)
    waiting = order.queue() + 1  # its job waits for one never run
    failed: list[BaseException] = []
    thread = threading.Thread(target=lambda: failed.append(
        pytest.raises(CancelledError, order.run, waiting, sc.parallelize([0], 1).collect)))
    thread.start()
    order.close()
    thread.join(60)
    assert failed and order.job_ids(waiting) == []


def _gated_pass_one(spark, tmp_path: Path, monkeypatch) -> tuple[SparkJobs, Any, Path, Path]:
    """The delimited example's pass 1 in three splits, kept, whose last split waits (up to 30
    s) for a file ``go`` before it is parsed and touches ``done`` when it ends."""
    from gendef.build import build_definitions
    from msgcap.batch.parse import Job
    from parsers.base import build_parser

    copy_example("delimited", tmp_path, monkeypatch)
    settings = load_settings(DELIM_PROP)
    definitions = build_definitions(settings)
    jobs = SparkJobs(spark)
    files = jobs.list_inputs(["messages.jsonl"], lines=False)
    scans = plan_scans(files, block=block_size(files, target=3, cap=None))
    job = Job.create(settings, build_parser(settings, definitions), definitions, files, scans,
                     rows=False, time_base=0)
    source, kinds = jobs.source(files, scans)
    last = source.getNumPartitions() - 1
    go, done = tmp_path / "go", tmp_path / "done"

    def gate(i, items):
        if i == last:
            deadline = time.monotonic() + 30
            while not go.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        yield from items
        if i == last:
            done.touch()

    gated = source.mapPartitionsWithIndex(gate, preservesPartitioning=True)
    return jobs, jobs.parse(gated, kinds, jobs.broadcast(job)), go, done


def test_summaries_come_as_each_pass_one_task_ends(local_spark, tmp_path, monkeypatch):
    """The driver gets a split's summaries as soon as its pass-1 task ends, not when the whole
    pass ends: the first split is planned (and its pass 2 submitted) while the last one is still
    parsed, so no executor waits for pass 1's slowest task."""
    jobs, parsed, go, done = _gated_pass_one(local_spark, tmp_path, monkeypatch)
    every = jobs.summaries(parsed)
    first = next(every)
    assert first and not done.exists()  # the last split has not been parsed yet
    go.touch()
    rest = list(every)
    assert done.exists() and len(rest) == parsed.getNumPartitions() - 1 and all(rest)
    keys = [s.key for found in [first, *rest] for s in found]
    assert keys == sorted(keys)


def test_summaries_closed_early_cancel_pass_one(local_spark, tmp_path, monkeypatch):
    """A driver that stops planning (an error, a stop under abend) closes the summaries: the
    pass-1 job still running is cancelled, not left to finish."""
    jobs, parsed, go, done = _gated_pass_one(local_spark, tmp_path, monkeypatch)
    every = jobs.summaries(parsed)
    assert next(every)
    every.close()  # returns once the pass-1 job has ended
    assert not done.exists() and not go.exists()
    assert local_spark.sparkContext.statusTracker().getActiveJobsIds() == []
