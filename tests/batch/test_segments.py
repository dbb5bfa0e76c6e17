"""The batch's pure steps without a JVM, over many ways of cutting the inputs into blocks.

Blocks are cut as Hadoop's line reader cuts them (a line belongs to the block where it starts:
``(start, end]``, the first block ``[0, end]``), the byte strings made as ``jobs`` makes them in
the JVM. Then: the segments read like replay; a trial's plan equals the message-by-message plan;
parse → plan → frame → append equals replay's trail for every layout.
"""

from __future__ import annotations

import json
import marshal
import os
import random
import shutil
from array import array
from dataclasses import replace
from pathlib import Path

import pytest

from gendef.build import build_definitions
from msgcap import dumps
from msgcap.assembler import Assembler
from msgcap.batch import segments as segments_module
from msgcap.batch.direct import (
    Fallback,
    border,
    changed,
    count_local,
    count_segments,
    direct_blocks,
    direct_partition,
    in_input_order,
    local_segment,
    starts,
    steps,
)
from msgcap.batch.driver import Appender, _first_lines, trail_writer
from msgcap.batch.encode import Encoded, discard_records, encode_segment
from msgcap.batch.inputs import (
    KIND_FILE,
    InputFile,
    block_size,
    input_files,
    local_inputs,
    plan_scans,
)
from msgcap.batch.parse import Job, Payload, Skeleton, parse_segment
from msgcap.batch.plan import Planner
from msgcap.batch.segments import (
    file_head,
    line_head,
    messages,
    pick_lines,
    resolve,
    segments,
    whole_files,
)
from msgcap.cli import main
from msgcap.pipeline import Stats
from parsers.base import build_parser
from props.errors import MsgcapError, SourceError
from props.loader import load_settings

from .conftest import REPO, copy_example, trail_view
from .test_batch import _messages, _record, _write_jsonl

PROP = "dirprm/jmsvam.properties"


def partitions(files: list[InputFile], block: int) -> list[tuple[list[bytes], bool]]:
    """The byte strings Spark hands each task (see ``segments``), and whether the task reads a
    block of lines, in input order."""
    out: list[tuple[list[bytes], bool]] = []
    for number, scan in enumerate(plan_scans(files, block=block)):
        if scan.whole:  # Spark reads a file given twice in one scan once
            out.append(([file_head(number) + f.uri.encode() + b"\0" + Path(f.name).read_bytes()
                         for f in {files[i].uri: files[i] for i in scan.files}.values()], False))
            continue
        index = scan.files[0]
        data = Path(files[index].name).read_bytes()
        blocks: dict[int, list[bytes]] = {}
        pos = 0
        for raw in data.split(b"\n"):
            if pos >= len(data):
                break
            start = max(0, -(-pos // block) - 1) * block
            found = blocks.setdefault(start, [])
            found.append(raw if found else line_head(index) + start.to_bytes(8, "big") + raw)
            pos += len(raw) + 1
        out.extend((blocks.get(start, []), True) for start in range(0, len(data), block))
    return out


def _segments(elements: list[bytes], lines: bool, job: Job) -> list:
    return list(segments(elements, job.files, job.whole, lines=lines))


def all_segments(files: list[InputFile], block: int, whole) -> list:
    """Every segment of every task, in input order (the driver orders a task's segments)."""
    found = [seg for elements, lines in partitions(files, block)
             for seg in segments(elements, files, whole, lines=lines)]
    return sorted(found, key=lambda s: s.key)


def read_all(files: list[InputFile], block: int, max_bytes: int = 1 << 24) -> list[tuple]:
    """Every message of every segment in input order (the driver orders a task's segments),
    line labels resolved as the driver resolves them (in an error's text too)."""
    out = []
    seen: dict[int, int] = {}
    whole = whole_files(files, plan_scans(files, block=block))
    for seg in all_segments(files, block, whole):
        first = seen.get(seg.file.index, 0) + 1 if seg.start else 1
        try:
            for _n, _offset, m in messages(seg, None, max_bytes):  # the block's lines as it goes
                out.append((resolve(m.id, first), resolve(m.origin or "", first), m.body,
                            m.headers))
        except SourceError as exc:
            raise SourceError(resolve(str(exc), first)) from None
        seen[seg.file.index] = seen.get(seg.file.index, 0) + len(seg.complete())
    return out


@pytest.fixture
def mixed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    entries = [{"id": f"m{i}", "headers": {"k": str(i)}, "body": f"body {i} " + "x" * (i % 7)}
               for i in range(12)]
    Path("a.jsonl").write_text("".join(json.dumps(e) + "\n" + ("\n" if i % 5 == 0 else "")
                                       for i, e in enumerate(entries)))
    Path("b.txt").write_bytes(b"one\r\ntwo\n\nthree\n\xc1\xc2 not utf-8\nlast-no-newline")
    Path("c.msg").write_bytes(b"\xc1\xc2 whole file")
    Path("d e%.jsonl").write_text(json.dumps({"id": "x", "body": "y"}) + "\n")
    return ["a.jsonl", "c.msg", "a.jsonl", "d e%.jsonl"], ["b.txt", "b.txt"]


@pytest.mark.parametrize("chunk", [2, segments_module.CHUNK])
@pytest.mark.parametrize("block", [1, 2, 3, 5, 8, 13, 40, 97, 500, 10**6])
def test_segments_read_like_replay(mixed, monkeypatch, block, chunk):
    monkeypatch.setattr(segments_module, "CHUNK", chunk)  # lines read from Spark at a time
    for paths, lines in ((mixed[0], False), (mixed[1], True)):
        files = input_files(local_inputs(paths), lines=lines)
        want = [(m.id, m.origin, m.body, m.headers)
                for m in dumps.read_messages(paths, lines=lines)]
        assert read_all(files, block) == want


# (jms.maxbytes, inputs, --lines, what replay refuses)
OVER_THE_LIMIT = [
    (12, ["a.jsonl", "c.msg", "a.jsonl"], False, "a.jsonl:9: message of 13 bytes"),
    (12, ["d e%.jsonl", "c.msg"], False, "c.msg: message of 13 bytes"),
    (3, ["b.txt"], True, "b.txt:4: message of 5 bytes"),  # "one\r": a CR is not counted
    (10, ["b.txt", "b.txt"], True, "b.txt:5: message of 12 bytes"),  # not UTF-8
    (14, ["b.txt", "b.txt"], True, "b.txt:6: message of 15 bytes"),  # the last line
]


@pytest.mark.parametrize("chunk", [2, segments_module.CHUNK])
@pytest.mark.parametrize("block", [1, 5, 40, 10**6])
@pytest.mark.parametrize(("max_bytes", "paths", "lines", "refused"), OVER_THE_LIMIT)
def test_a_message_over_jms_maxbytes_is_refused_like_replay(mixed, monkeypatch, block, chunk,
                                                            max_bytes, paths, lines, refused):
    """The first text line, JSON Lines body or whole file over the limit stops the reading with
    replay's error, naming file:line."""
    monkeypatch.setattr(segments_module, "CHUNK", chunk)
    files = input_files(local_inputs(paths), lines=lines)
    with pytest.raises(SourceError) as replay:
        list(dumps.read_messages(paths, lines=lines, max_bytes=max_bytes))
    assert str(replay.value).startswith(refused)
    with pytest.raises(SourceError) as batch:
        read_all(files, block, max_bytes)
    assert str(batch.value) == str(replay.value)


def test_scans_keep_order_and_read_small_files_whole(mixed):
    files = input_files(local_inputs(mixed[0] + ["b.txt"]), lines=False)
    assert [f.kind for f in files] == ["jsonl", KIND_FILE, "jsonl", "jsonl", KIND_FILE]
    scans = plan_scans(files, block=100)
    assert [(s.files, s.whole) for s in scans] == [((0,), False), ((1,), True), ((2,), False),
                                                   ((3, 4), True)]
    assert block_size(files, target=4, cap=None) == -(-sum(f.size for f in files) // 4)
    assert block_size(files, target=1, cap=10) == 10


# -- plan and frame: every layout equals replay -------------------------------------------------

class _NoTrials(Planner):
    """The planner with every segment run message by message (the fallback path)."""

    def fits(self, s):
        return None


def batch_in_process(out: str, paths: list[str], block: int, planner_type=Planner):
    """Pass 1, plan, pass 2 and the ordered append of ``run_batch``, in this process; the
    lines of discarded messages read again from their task's byte strings, made anew."""
    settings = load_settings(PROP)
    definitions = build_definitions(settings)
    files = input_files(local_inputs(paths), lines=False)
    job = Job.create(settings, build_parser(settings, definitions), definitions, files,
                     plan_scans(files, block=block), rows=False, time_base=0)
    planner = planner_type(job.rules, job.policy, files)
    writer = trail_writer(settings, os.path.join(out, "trail"))
    writer.open()
    appender = Appender(writer, Stats(), os.path.join(out, "errors"))
    plans = []
    error = None
    for seg in all_segments(files, block, job.whole):
        parsed = parse_segment(job, seg)
        plan = planner.plan(parsed.summary, lambda p=parsed: Skeleton.load(p.skeleton))
        plans.append(plan)
        encoded = encode_segment(job, parsed, plan)[0]
        assert appender.expects(encoded)
        discards = ""
        if encoded.discarded:
            elements, lines = next((e, lines) for e, lines in partitions(files, block)
                                   if seg.key in {s.key for s in _segments(e, lines, job)})
            wanted = {seg.key: [d[0] for d in encoded.discarded]}
            discards = discard_records(seg.file, plan.first_line, encoded.discarded, pick_lines(
                elements, files, job.whole, wanted, lines=lines)[seg.key])
        error = appender.append(encoded, discards)
        if planner.stopped or error is not None:
            break
    writer.close()
    appender.close()
    return appender, planner, plans, error or (None if planner.stopped else planner.finish())


def _replay(capsys, *inputs: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["replay", "--prop", PROP, "--progress-interval", "-1", *inputs])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_layout_equals_replay(tmp_path, monkeypatch, capsys, seed):
    copy_example("delimited", tmp_path, monkeypatch)
    rng = random.Random(seed)
    bodies = _messages(120, seed)
    bad = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n"
    for _ in range(3):  # discarded; a transaction open around one stays open
        bodies.insert(rng.randrange(len(bodies)), bad)
    cut = rng.randrange(20, 100)
    _write_jsonl(tmp_path / "a.jsonl", bodies[:cut], 0)
    _write_jsonl(tmp_path / "b.jsonl", bodies[cut:], cut)
    code, out = _replay(capsys, "a.jsonl", "b.jsonl")
    assert code == 0 and "discarded 3" in out
    want = trail_view("dirdat/sa")
    dsc = [json.loads(x) for x in Path("dirrpt/SALES.dsc").read_text().splitlines()]
    size = sum(os.path.getsize(p) for p in ("a.jsonl", "b.jsonl"))
    fast = slow = 0
    for parts in (1, 2, 3, 5, 8, 13, 21, 34, 60, 130):
        block = -(-size // parts)
        appender, planner, plans, error = batch_in_process(f"out{parts}", ["a.jsonl", "b.jsonl"],
                                                           block)
        assert error is None
        assert trail_view(f"out{parts}/trail/sa") == want, parts
        assert appender.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
        got = [json.loads(x) for x in Path(appender.discard_file).read_text().splitlines()]
        assert [(g["error"], g["source"], g["message"]) for g in got] == [
            (d["error"], d["source"], d["message"]) for d in dsc]
        _, _, every, _ = batch_in_process(f"slow{parts}", ["a.jsonl", "b.jsonl"], block,
                                          _NoTrials)
        # a trial's plan is the message-by-message plan
        assert every == [replace(p, trial=None) for p in plans]
        fast, slow = fast + planner.fast, slow + planner.slow
    assert fast > 0 and slow > 0  # both paths were taken


def test_long_transaction_through_many_segments(tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    inds = ["W", "B", *["M"] * 30, "E", "W"]
    _write_jsonl(tmp_path / "a.jsonl", [_record(n + 1, i) + "\n" for n, i in enumerate(inds)], 0)
    assert _replay(capsys, "a.jsonl")[0] == 0
    size = os.path.getsize("a.jsonl")
    for parts in (4, 17, 40):
        _, planner, _, error = batch_in_process(f"out{parts}", ["a.jsonl"], -(-size // parts))
        assert error is None
        assert trail_view(f"out{parts}/trail/sa") == trail_view("dirdat/sa")
        assert planner.slow == 0  # segments inside the transaction continue it: trials fit


def test_abend_at_every_position(tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(PROP)
    prop.write_text(prop.read_text().replace("error.policy=discard", "error.policy=abend"))
    bodies = _messages(30, 5)
    bodies.insert(17, "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n")
    _write_jsonl(tmp_path / "a.jsonl", bodies, 0)
    code, out = _replay(capsys, "a.jsonl")
    assert code == 2
    size = os.path.getsize("a.jsonl")
    for parts in (1, 3, 7, 31):
        _, _, _, error = batch_in_process(f"out{parts}", ["a.jsonl"], -(-size // parts))
        assert error is not None and str(error) in out
        assert trail_view(f"out{parts}/trail/sa") == trail_view("dirdat/sa")


def _one_record(n: int, seqid: int | None = None) -> str:
    """An insert without a transaction indicator: a whole transaction of one record."""
    return (f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,{seqid or n:010d},NULL,{n},NULL,"
            f"Customer {n},NULL,City {n % 17},NULL,2024-03-01 10:15:30\n")


@pytest.fixture(params=["given", "system"])
def one_record_messages(request, tmp_path, monkeypatch):
    """The example without txind: runs of one-record transactions (pass 2 frames a run at
    once), broken by unknown tables (discarded) and repeated seqids (duplicates, skipped)."""
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(PROP)
    text = prop.read_text().replace("delim.header=optype,schemaandtable,timestamp,txind,id",
                                    "delim.header=optype,schemaandtable,timestamp,id")
    prop.write_text(text + ("delim.seqid=*seqid\n" if request.param == "system" else ""))
    bodies = [_one_record(n) for n in range(1, 80)]
    for at in (5, 6, 30, 61):
        bodies.insert(at, "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,9999999999,NULL,1\n")
    bodies.insert(40, _one_record(990, seqid=20))  # a duplicate of message 20 (given seqids)
    _write_jsonl(tmp_path / "a.jsonl", bodies, 0)
    return request.param


def test_runs_of_one_record_transactions_equal_replay(one_record_messages, capsys):
    code, out = _replay(capsys, "a.jsonl")
    assert code == 0 and "discarded 4" in out
    assert ("duplicates 1" in out) == (one_record_messages == "given")
    want = trail_view("dirdat/sa")
    size = os.path.getsize("a.jsonl")
    for parts in (1, 3, 8, 50):
        appender, _, _, error = batch_in_process(f"out{parts}", ["a.jsonl"], -(-size // parts))
        assert error is None
        assert trail_view(f"out{parts}/trail/sa") == want, parts
        assert appender.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]


def test_pass_two_writes_by_the_compiled_path(one_record_messages, monkeypatch):
    """Pass 2 writes the common message by replay's compiled path (``Assembler.encode_whole``)
    and gives what the general path alone gives, also for values that do not encode (a number
    in a text column, a text too long for it): those messages are discarded, as replay
    discards them, and the segment goes on after."""
    settings = load_settings(PROP)
    definitions = build_definitions(settings)
    files = input_files(local_inputs(["a.jsonl"]), lines=False)
    job = Job.create(settings, build_parser(settings, definitions), definitions, files,
                     plan_scans(files, block=files[0].size), rows=False, time_base=0)
    [seg] = all_segments(files, files[0].size, job.whole)
    parsed = parse_segment(job, seg)
    payload = Payload.load(parsed.payload, False)
    for index, name in ((3, 12345), (50, "x" * 70000)):
        ((_, _, after),) = payload.ops[index] = payload.values(index)
        after[1] = name  # NAME
    parsed.payload = marshal.dumps((payload.ops, payload.errors, payload.rows))
    plan = Planner(job.rules, job.policy, files).plan(parsed.summary, lambda: None)
    compiled = []
    encode_whole = Assembler.encode_whole

    def counted(self, *args):
        done = encode_whole(self, *args)
        compiled.append(done is not None)
        return done

    monkeypatch.setattr(Assembler, "encode_whole", counted)
    both = encode_segment(job, parsed, plan)[0]
    assert sum(compiled) >= 70
    monkeypatch.setattr(Assembler, "encode_whole", lambda *args: None)
    general = encode_segment(job, parsed, plan)[0]
    assert [d[1][:13] for d in both.discarded] == [
        "cannot encode", "unknown table", "unknown table", "unknown table", "cannot encode",
        "unknown table"]
    assert both == general


def test_spooled_framed_bytes(tmp_path):
    """A local master's pass 2 leaves its framed bytes in a spool file: read once, removed;
    a file that is not what the task wrote is refused (one line), never appended."""
    r = Encoded((0, 0), 0, None, b"framed bytes", array("q", [12]), False, False, False, None,
                ("1", 1, "1"), Stats(), [], None)
    r.spool(str(tmp_path))
    assert r.data == b"" and r.size == 12 and os.path.dirname(r.spooled) == str(tmp_path)
    assert r.framed(False) == b"framed bytes" and os.listdir(tmp_path) == []
    r.data = b"framed bytes"
    r.spool(str(tmp_path))
    Path(r.spooled).write_bytes(b"framed")
    with pytest.raises(MsgcapError, match=r"segment \(0, 0\) in .* is 6 bytes, not 12"):
        r.framed(False)


class _Tripwire:
    """A parser that must not be called."""

    def parse(self, message):
        raise AssertionError(f"message {message.name} parsed again")


@pytest.mark.parametrize("compress, spooled", [(False, False), (True, False), (False, True)])
def test_pass_two_parses_nothing(tmp_path, monkeypatch, capsys, compress, spooled):
    """Each message is parsed once: pass 2 frames what pass 1 kept (compressed, as the driver
    asks for cluster masters, or in spool files, for local masters)."""
    copy_example("delimited", tmp_path, monkeypatch)
    _write_jsonl(tmp_path / "a.jsonl", _messages(80, seed=4), 0)
    assert _replay(capsys, "a.jsonl")[0] == 0
    settings = load_settings(PROP)
    definitions = build_definitions(settings)
    files = input_files(local_inputs(["a.jsonl"]), lines=False)
    block = -(-files[0].size // 5)
    job = Job.create(settings, build_parser(settings, definitions), definitions, files,
                     plan_scans(files, block=block), rows=True, time_base=0)
    job.compress = compress
    if spooled:
        job.spool = str(tmp_path / "spool")
        os.mkdir(job.spool)
    parsed = [parse_segment(job, seg) for seg in all_segments(files, block, job.whole)]
    assert all((p.payload_file is not None) == spooled for p in parsed)
    job.parser = _Tripwire()
    planner = Planner(job.rules, job.policy, files)
    writer = trail_writer(settings, "out/trail")
    writer.open()
    appender = Appender(writer, Stats(), "out/errors", compressed=compress)
    rows = 0
    for p in parsed:
        plan = planner.plan(p.summary, lambda p=p: Skeleton.load(p.skeleton))
        encoded, complete, tail = encode_segment(job, p, plan, rows=True)
        rows += len(complete) + len(tail)
        if spooled:
            encoded.spool(job.spool)
        assert appender.append(encoded) is None
    writer.close()
    assert trail_view("out/trail/sa") == trail_view("dirdat/sa")
    assert rows == appender.stats.total_operations
    if spooled:  # the trail bytes' files are removed once appended
        assert sorted(n.split("-")[0] for n in os.listdir(job.spool)) == ["parse"] * len(parsed)


# -- the one pass -------------------------------------------------------------------------------

def one_pass_in_process(out: str, paths: list[str], block: int, *, lines: bool = False):
    """The one pass of ``run_batch`` in this process (counts as tasks count them): the
    appender, or why the driver falls back to the two passes (None: no one pass tried)."""
    settings = load_settings(PROP)
    definitions = build_definitions(settings)
    files = input_files(local_inputs(paths), lines=lines)
    job = Job.create(settings, build_parser(settings, definitions), definitions, files,
                     plan_scans(files, block=block), rows=False, time_base=0)
    tasks = partitions(files, block)
    counted = [c for elements, by_lines in tasks
               for c in count_segments(job, elements, lines=by_lines)]
    job.first_lines = _first_lines(counted)
    step = steps(job, counted)
    if step is None:
        return None
    todo = starts(counted, job.first_lines, step)
    writer = trail_writer(settings, os.path.join(out, "trail"))
    writer.open()
    appender = Appender(writer, Stats(), os.path.join(out, "errors"))
    previous = None
    try:
        for elements, by_lines in tasks:
            done = in_input_order(direct_partition(job, todo, elements, lines=by_lines))
            if isinstance(done, Fallback):
                return done
            for d in done:
                name = files[d.encoded.key[0]].name
                stop = border(previous, d, name)
                if stop is None and not appender.expects(d.encoded):
                    stop = changed(name)
                if stop is not None:
                    return stop
                assert appender.append(d.encoded) is None
                if d.first_mark is not None:
                    previous = d
    finally:
        writer.close()
        appender.close()
    return appender


def _lines_input(path: Path, count: int, *, duplicate_at: int | None = None) -> None:
    """Text lines of one-record transactions, blank lines between some (and a CR line)."""
    with open(path, "w", newline="") as fh:
        for n in range(1, count + 1):
            fh.write(_one_record(n, seqid=3 if n == duplicate_at else None))
            if n % 9 == 0:
                fh.write("\n" if n % 2 else "\r\n")


def test_one_pass_equals_replay(one_record_messages, tmp_path, capsys):
    """Every message a whole transaction of one record, given or ``*seqid`` seqids, text
    lines with blank ones and JSON Lines: the one pass gives replay's trail and summary in every
    layout (the counters of a segment's start come from the counts before it)."""
    _lines_input(tmp_path / "a.txt", 150)
    _write_jsonl(tmp_path / "b.jsonl", [_one_record(n) for n in range(1, 90)], 0)
    _write_jsonl(tmp_path / "c.jsonl", [_one_record(n) for n in range(90, 130)], 89)
    for paths, lines in ((["a.txt"], True), (["b.jsonl", "c.jsonl"], False)):
        shutil.rmtree("dirdat", ignore_errors=True)
        capsys.readouterr()
        assert main(["replay", "--prop", PROP, "--progress-interval", "-1",
                     *(["--lines"] if lines else []), *paths]) == 0
        out = capsys.readouterr().out
        size = sum(os.path.getsize(p) for p in paths)
        for parts in (1, 2, 5, 13, 60):
            where = f"one{parts}-{lines}"
            appender = one_pass_in_process(where, paths, -(-size // parts), lines=lines)
            assert not isinstance(appender, Fallback), (parts, appender)
            assert trail_view(f"{where}/trail/sa") == trail_view("dirdat/sa"), parts
            assert (appender.stats.summary().split("trail files:")[0]
                    == out.split("trail files:")[0])


@pytest.mark.parametrize("one_record_messages", ["given"], indirect=True)  # (duplicate marks)
def test_one_pass_declines_what_it_cannot_know(one_record_messages, tmp_path):
    """Where a segment's start does not follow from the counts before it, the one pass
    declines (the driver runs the two passes): a discarded message, a duplicate seqid (inside a
    segment, or first of one), a message of several records, a transaction over several
    messages."""
    size = os.path.getsize("a.jsonl")  # (with unknown tables and a duplicate)
    for parts in (1, 4, 30):
        assert one_pass_in_process(f"bad{parts}", ["a.jsonl"], -(-size // parts)) in (
            Fallback("a message of a.jsonl is in error"),  # (error.policy=abend)
            Fallback("a message of a.jsonl is a duplicate (its seqid was written before)"))
    _lines_input(tmp_path / "dup.txt", 40, duplicate_at=30)  # seqid 3 again, late
    _lines_input(tmp_path / "ok.txt", 40)
    for parts in (1, 3, 9):
        block = -(-os.path.getsize("dup.txt") // parts)
        assert one_pass_in_process(f"dup{parts}", ["dup.txt"], block, lines=True) in (
            Fallback("a message of dup.txt is a duplicate (its seqid was written before)"),
            Fallback("the first seqid in dup.txt is not after the one written before it"))
        assert not isinstance(one_pass_in_process(f"ok{parts}", ["ok.txt"], block, lines=True),
                              Fallback)
        # the second file's first seqid is not after the first file's last: a border
        assert one_pass_in_process(f"twice{parts}", ["ok.txt", "ok.txt"], block,
                                   lines=True) == Fallback(
            "the first seqid in ok.txt is not after the one written before it")
    # a message of two records first in a file, the first record's seqid written already:
    # given seqids leave the counters as they are, but the border's mark is its first record's
    _write_jsonl(tmp_path / "one.jsonl", [_one_record(n) for n in range(1, 21)], 0)
    _write_jsonl(tmp_path / "two.jsonl", [_one_record(5) + _one_record(90)]
                 + [_one_record(n) for n in range(91, 95)], 20)
    for parts in (1, 3):
        block = -(-os.path.getsize("one.jsonl") // parts)
        assert one_pass_in_process(f"two{parts}", ["one.jsonl", "two.jsonl"], block) == Fallback(
            "a message of two.jsonl is not a whole transaction of one record")
    prop = Path(PROP)
    prop.write_text(prop.read_text().replace("delim.header=optype,schemaandtable,timestamp,id",
                                             "delim.header=optype,schemaandtable,timestamp,"
                                             "txind,id"))
    _write_jsonl(tmp_path / "span.jsonl", [_record(1, "W") + "\n", _record(2, "W") + "\n",
                                           _record(3, "B") + "\n", _record(4, "E") + "\n"], 0)
    assert one_pass_in_process("span", ["span.jsonl"], 10**6) == Fallback(
        "a message of span.jsonl is not a whole transaction of one record")


def test_one_pass_counts_like_its_messages(tmp_path, monkeypatch):
    """``count_segments``' messages are the messages ``messages`` reads: blank text lines are
    empty or a lone CR, blank JSON Lines white space."""
    copy_example("delimited", tmp_path, monkeypatch)
    Path("t.txt").write_bytes(b"a\n\n\r\n \nb\r\n\r\n\xc1\n\nlast")
    Path("j.jsonl").write_bytes(b'{"id": "1", "body": "x"}\n\n \t\n\r\n{"id": "2", "body": "y"}'
                                b'\n  \n')
    for paths, lines in ((["t.txt"], True), (["j.jsonl"], False)):
        files = input_files(local_inputs(paths), lines=lines)
        for block in (1, 3, 7, 10**6):
            job = Job.create(load_settings(PROP), None, None, files,  # type: ignore[arg-type]
                             plan_scans(files, block=block), rows=False, time_base=0)
            for elements, by_lines in partitions(files, block):
                counted = count_segments(job, elements, lines=by_lines)
                segs = _segments(elements, by_lines, job)
                assert [c.messages for c in counted] == [
                    sum(1 for _ in messages(seg, None, 1 << 20)) for seg in segs]


def test_one_pass_spools_where_the_driver_sees_it(one_record_messages, tmp_path):
    """On a cluster (``Job.nearby``), a one-pass task whose machine shows the driver's spool
    directory leaves its framed bytes there; elsewhere it sends them, compressed."""
    settings = load_settings(PROP)
    definitions = build_definitions(settings)
    _lines_input(tmp_path / "a.txt", 50)
    files = input_files(local_inputs(["a.txt"]), lines=True)
    block = files[0].size + 1
    job = Job.create(settings, build_parser(settings, definitions), definitions, files,
                     plan_scans(files, block=block), rows=False, time_base=0)
    job.compress = True
    counted = count_local(files[0], block)
    job.first_lines = {c.key: 1 for c in counted}
    step = steps(job, counted)
    assert step is not None
    todo = starts(counted, job.first_lines, step)
    seen = tmp_path / "spool"
    seen.mkdir()
    framed = []
    for nearby in (str(seen), str(tmp_path / "elsewhere")):
        job.nearby = nearby
        done = direct_blocks(job, todo, [(c.key, block) for c in counted])
        assert len(done) == 1 and not isinstance(done[0], Fallback)
        encoded = done[0].encoded
        assert (encoded.spooled is not None) == (nearby == str(seen))
        framed.append(encoded.framed(compressed=True))
    assert framed[0] == framed[1] and os.listdir(seen) == []  # (read: removed)


@pytest.mark.parametrize("block", [1, 2, 3, 5, 8, 13, 40, 97, 500, 10**6])
def test_driver_counts_blocks_like_the_tasks(mixed, block):
    """``count_local`` cuts a local file into blocks as Spark's text source does (the
    partitions here cut them so) and counts what the tasks count in each; ``local_segment``
    reads each block's lines."""
    files = input_files(local_inputs(["b.txt", "a.jsonl"]), lines=True)
    job = Job.create(load_settings(str(REPO / "examples/delimited/dirprm/jmsvam.properties")),
                     None, None, files, plan_scans(files, block=block),  # type: ignore[arg-type]
                     rows=False, time_base=0)
    tasks = [c for elements, lines in partitions(files, block) if lines
             for c in count_segments(job, elements, lines=True)]
    local = [c for f in files if f.size > block for c in count_local(f, block)]
    assert local == tasks
    # and a task of the one pass reads each block's lines as Spark gives them
    segs = [(s.key, s.complete()) for elements, lines in partitions(files, block) if lines
            for s in _segments(elements, True, job)]
    read = [local_segment(f, c.key[1], block) for f in files if f.size > block
            for c in count_local(f, block)]
    assert [(s.key, s.lines) for s in read if s is not None] == segs


def test_driver_count_of_a_file_gone_is_one_line(tmp_path):
    gone = InputFile(0, f"file:{tmp_path}/gone.txt", "gone.txt", 10, "lines", 0)
    with pytest.raises(SourceError) as info:
        count_local(gone, 4)
    assert str(info.value) == "gone.txt: cannot read an input: No such file or directory"


def test_sink_appends_wholes_as_one_by_one():
    """A task's sink takes a row of compiled transactions (``append_wholes``, the pipeline's
    ``WholeWriter``) as it takes them one by one: bytes, ends, numbers and mark."""
    from msgcap.assembler import AssemblerState
    from msgcap.batch.encode import Sink
    from msgcap.batch.plan import Plan
    from msgcap.trail.encoder import TrailEncoder

    wholes = [(b"first", "01", 0, "7"), (b"second!", "02", 1, "8")]
    sinks = [Sink(TrailEncoder(), Plan((0, 0), AssemblerState(), 5, None, 1), None)
             for _ in range(2)]
    position, files = sinks[0].append_wholes(wholes)
    for whole in wholes:
        sinks[1].append_whole(*whole)
    assert (position.rba, files) == (12, [])
    assert [(s.chunks, list(s.ends), s.txnum, s.first, s.last) for s in sinks] == [
        ([b"first", b"second!"], [5, 12], 7, ("01", 0), ("02", 1, "8"))] * 2
