"""The one pass: each task parses and encodes its segments from their true start state.

Pass 1 exists because a segment's trail bytes depend on what comes before it (the ``*seqid``
and ``*txid`` counters, the transaction numbers, the duplicate mark, a transaction left open).
For the common input — every message a whole transaction of one record, which the compiled
path (``Assembler.encode_wholes``) writes — that state follows from the number of messages
before the segment alone, and a count of lines gives it without parsing. So when the inputs
are read by lines and the input's first message is of that kind (``steps``):

1. the driver gives each segment its start (``starts``): messages before it, times the steps
   of its counters (1 for a system ``*seqid`` / ``*txid``, 0 for a given one);
2. a task runs its segments through the real ``Pipeline`` from those starts, into pass 2's
   ``Sink``, and returns each as pass 2 does (``Encoded``) with what the driver checks
   (``Direct``); a message of any other kind, or a count that differs, and the segment is a
   ``Fallback`` saying why;
3. the driver appends them in input order (``in_input_order``: a task reading files whole gets
   them in Spark's order), checking that each segment follows the one before it (``border``: a
   given seqid after the mark, ids of one width), as the assembler and the id function would
   have across the border.

Anything else — one segment not common, one border that does not follow — and the driver says
why, drops what it wrote and runs the two passes, which give the same trail for every input: the
one pass is only a faster way to the same bytes (every message parsed once, nothing kept between
passes).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from msgcap.assembler import Assembler, AssemblerState, after_mark
from msgcap.batch.encode import Encoded, Sink
from msgcap.batch.inputs import KIND_FILE, KIND_LINES, InputFile
from msgcap.batch.parse import Clock, Job, no_gc
from msgcap.batch.plan import Plan
from msgcap.batch.segments import Segment, SegmentKey, message_of, messages, segments
from msgcap.dumps import without_bom
from msgcap.msgid import MessageIds
from msgcap.pipeline import Pipeline, Processed
from msgcap.trail.encoder import TrailEncoder
from parsers.model import TX_WHOLE, Message
from props.errors import MsgcapError, SourceError


@dataclass(frozen=True, slots=True)
class Counted:
    """A segment counted before any pass: its lines, its messages (lines not ``blank``) and
    the raw line of its first message (None without one)."""

    key: SegmentKey
    lines: int
    messages: int
    first: bytes | None


@dataclass(frozen=True, slots=True)
class Start:
    """Where the one pass of a segment starts: its first line's number, the counters and the
    transactions before it, the lines and messages it must hold and the counters' ``steps``."""

    first_line: int
    seq: int
    txid: int
    txnum: int
    lines: int
    messages: int
    steps: tuple[int, int]


@dataclass(slots=True)
class Direct:
    """A segment the one pass encoded, with the marks the driver checks at its borders: the
    first record's (seqid, ordinal) and the first and last message ids (None: no message)."""

    encoded: Encoded
    first_mark: tuple[str, int] | None
    first_id: str | None
    last_id: str | None


@dataclass(frozen=True, slots=True)
class Fallback:
    """Why the one pass cannot give a segment's bytes (naming its file): the driver says it and
    runs the two passes."""

    reason: str


def count_segments(job: Job, elements: Iterable[bytes], *, lines: bool) -> list[Counted]:
    """``Counted`` of each segment of one task's elements (``jobs`` counts the blocks of a
    large file in the JVM, the same way)."""
    out = []
    for seg in segments(elements, job.files, job.whole, lines=lines):
        got = seg.complete()
        kept = [raw for raw in got if not blank(seg.file.kind, raw)]
        out.append(Counted(seg.key, len(got), len(kept), kept[0] if kept else None))
    return out


def count_local(file: InputFile, block: int) -> list[Counted]:
    """``Counted`` of the blocks of a large local file, read here, as Spark's text source cuts
    it (a line belongs to the block where it starts: ``(start, start + block]``, the first
    ``[0, block]``); the first block's first message kept. Each task checks the counts of its
    segment (``direct_segment``): a file that changed since falls back to the two passes."""
    counts: dict[int, list] = {}
    pos = 0
    rest = b""
    try:
        with open(file.uri.removeprefix("file:"), "rb") as fh:
            while chunk := fh.read(1 << 20):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                pos = _count_lines(file.kind, lines, pos, block, counts)
    except OSError as exc:
        raise SourceError(f"cannot read an input: {exc.strerror or exc}", url=file.name) from None
    if rest:
        _count_lines(file.kind, [rest], pos, block, counts)
    return [Counted((file.index, start * block), n, m, first)
            for start, (n, m, first) in sorted(counts.items())]


def _count_lines(kind: str, lines: list[bytes], pos: int, block: int,
                 counts: dict[int, list]) -> int:
    """Count ``lines``, the first starting at ``pos``, into ``counts`` (block number → lines,
    messages, first message); the position after them."""
    for raw in lines:
        number = (pos - 1) // block if pos else 0
        found = counts.get(number)
        if found is None:
            found = counts[number] = [0, 0, None]
        found[0] += 1
        line = raw if pos else without_bom(raw)  # (the file's first line starts at 0 still)
        if not blank(kind, line):
            found[1] += 1
            if found[2] is None:
                found[2] = line
        pos += len(raw) + 1
    return pos


def blank(kind: str, raw: bytes) -> bool:
    """Whether a line is no message: an empty line (a lone ``\r`` too) of a text-lines dump,
    white space of a JSON Lines one. (JSON Lines also takes Unicode spaces for blank: a
    count off by one of them makes a segment's messages differ, and the run falls back.)"""
    if kind == KIND_FILE:
        return False
    if kind == KIND_LINES:
        return not raw or raw == b"\r"
    return not raw or raw.isspace()


def steps(job: Job, counted: list[Counted]) -> tuple[int, int] | None:
    """The counter steps of the input's first message — (``*seqid`` records, ``*txid``
    transactions) it adds, each 0 or 1 — when it is a whole transaction of one record, else
    None. Every segment's messages must step alike (``direct_segment`` checks)."""
    firsts = sorted((c.key, c.first) for c in counted if c.first is not None)
    if not firsts:
        return None
    key, raw = firsts[0]
    try:
        message = message_of(job.files[key[0]], raw, "1")
        if message is None:
            return None
        message.id = MessageIds(job.id_mode, None, clock=Clock()).next_id(message)
        ops = job.parser.parse(message)
    except MsgcapError:
        return None  # the two passes report it where it is
    if len(ops) != 1 or ops[0].txind not in (None, TX_WHOLE):
        return None
    return int(ops[0].seqid is None), int(ops[0].txid is None)


def starts(counted: list[Counted], first_lines: dict[SegmentKey, int],
           step: tuple[int, int]) -> dict[SegmentKey, Start]:
    """Each segment's start, from the counts in input order and the counters' ``step``."""
    seq_step, txid_step = step
    out: dict[SegmentKey, Start] = {}
    before = 0
    for c in sorted(counted, key=lambda c: c.key):
        out[c.key] = Start(first_lines[c.key], before * seq_step, before * txid_step, before,
                           c.lines, c.messages, step)
        before += c.messages
    return out


def changed(name: str) -> Fallback:
    """An input read otherwise than it was counted: it changed while the job ran."""
    return Fallback(f"input {name} changed after its lines were counted")


def border(previous: Direct | None, current: Direct, name: str) -> Fallback | None:
    """Why ``current``'s segment (of input ``name``) does not continue ``previous`` (the last
    one with messages before it) as a single run would; None when it does: its ids of the
    previous ids' width, its first seqid after the previous mark (a given one; ``*seqid`` ones
    are after it by their count)."""
    if previous is None or current.first_mark is None:
        return None
    last = previous.encoded.last
    if (current.first_id is None or previous.last_id is None
            or len(current.first_id) != len(previous.last_id)):
        return Fallback(f"the message ids of {name} are not as wide as those before them")
    if (last[0] is None or last[1] is None
            or not after_mark(current.first_mark[0], current.first_mark[1], (last[0], last[1]))):
        return Fallback(f"the first seqid in {name} is not after the one written before it")
    return None


def in_input_order(done: list[Direct | Fallback]) -> list[Direct] | Fallback:
    """One task's segments in input order (a task of files read whole gets them in Spark's
    order: the largest first), or the first ``Fallback`` among them."""
    directs: list[Direct] = []
    for d in done:
        if isinstance(d, Fallback):
            return d
        directs.append(d)
    return sorted(directs, key=lambda d: d.encoded.key)


def direct_partition(job: Job, todo: dict[SegmentKey, Start], elements: Iterable[bytes], *,
                     lines: bool) -> list[Direct | Fallback]:
    """The one pass over one task's segments (``sc.runJob``); a ``Fallback`` for a segment
    that is not all of the common kind (the driver then runs the two passes)."""
    return direct_segments(job, todo, ((seg.key, seg) for seg in segments(
        elements, job.files, job.whole, lines=lines)))


def direct_segments(job: Job, todo: dict[SegmentKey, Start],
                    found: Iterable[tuple[SegmentKey, Segment | None]]
                    ) -> list[Direct | Fallback]:
    """The one pass of ``found``, each from its start in ``todo``; stops at the first that is
    not all common, or not there (a None segment: a block the count has lines in)."""
    out: list[Direct | Fallback] = []
    spool = job.spool or (job.nearby if job.nearby and os.path.isdir(job.nearby) else None)
    for key, seg in found:
        start = None if seg is None else todo.get(seg.key)
        if seg is None or start is None:  # the count and this read of the input differ
            out.append(changed(job.files[key[0]].name))
            break
        with no_gc():
            done = direct_segment(job, seg, start, compress=job.compress and spool is None)
        if isinstance(done, Direct) and spool is not None:
            done.encoded.spool(spool)
        out.append(done)
        if isinstance(done, Fallback):
            break  # the run falls back: the rest would be thrown away
    return out


def direct_blocks(job: Job, todo: dict[SegmentKey, Start],
                  blocks: Iterable[tuple[SegmentKey, int]]) -> list[Direct | Fallback]:
    """``direct_partition`` of blocks of local files that the task reads itself
    (``local_segment``), not through Spark's text source: (key, block size) each."""
    return direct_segments(job, todo, ((key, local_segment(job.files[key[0]], key[1], block))
                                       for key, block in blocks))


def local_segment(file: InputFile, start: int, block: int) -> Segment | None:
    """The segment of the block of a local file at ``start``, read here: its lines as Spark's
    text source gives them (``count_local``); None when no line starts in it."""
    with open(file.uri.removeprefix("file:"), "rb") as fh:
        fh.seek(start)
        data = fh.read(block)  # a line starts after each newline of it (and at 0)
        if start:
            at = data.find(b"\n")
            if at < 0:
                return None
            data = data[at + 1:]
        else:
            data = without_bom(data)
        if start + block < file.size:  # the last line (maybe starting at the block's end)
            tail = [data]
            while (more := fh.read(1 << 16)):
                cut = more.find(b"\n")
                if cut >= 0:
                    tail.append(more[:cut + 1])
                    break
                tail.append(more)
            data = b"".join(tail)
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()  # after the last newline: no line (or the line starting at the file's end)
    return Segment(file, start, lines, False) if lines else None


def _not_common(name: str, done: Processed | None) -> Fallback:
    """A message of input ``name`` the compiled path did not write (``done``: what the general
    path did with it)."""
    if done is not None and done.duplicate:
        return Fallback(f"a message of {name} is a duplicate (its seqid was written before)")
    if done is not None and done.discarded is not None:
        return Fallback(f"a message of {name} is discarded (error.policy)")
    return Fallback(f"a message of {name} is not a whole transaction of one record")


class _Given:
    """The pipeline's ids: each message's id was given as pass 1 gives it (``time`` ids from
    its offset in the input) before the pipeline takes it."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: str | None = None

    def next_id(self, message: Message) -> str:
        self.last = message.id
        return message.id


def direct_segment(job: Job, seg: Segment, start: Start, *,
                   compress: bool = False) -> Direct | Fallback:
    """The one pass of one segment (see the module doc); ``compress`` the framed bytes."""
    plan = Plan(seg.key, AssemblerState(start.seq, start.txid), start.txnum, None,
                start.first_line)
    asm = Assembler(job.rules)
    asm.resume(plan.state)
    sink = Sink(TrailEncoder(job.byteorder, job.partition), plan, None)
    clock = Clock()
    ids = MessageIds(job.id_mode, None, clock=clock)
    given = _Given()
    pipeline = Pipeline(job.parser, asm, sink, given)  # type: ignore[arg-type]  # (_Given)
    first_id: list[str] = []
    time_base = job.time_base

    def with_ids() -> Iterator[Message]:
        for _, offset, message in messages(seg, start.first_line, job.max_bytes):
            clock.now_ns = (time_base + offset) * 1000
            message.id = ids.next_id(message)
            if not first_id:
                first_id.append(message.id)
            yield message

    name = seg.file.name
    try:
        for general in pipeline.consume(with_ids()):
            if general:
                return _not_common(name, general[0][1])
    except MsgcapError:  # any error: the two passes report it as replay does
        return Fallback(f"a message of {name} is in error")
    state, stats, n = asm.state(), pipeline.stats, start.messages
    seq_step, txid_step = start.steps
    if len(seg.complete()) != start.lines or stats.messages != n:
        return changed(name)
    if (stats.total_operations != n or sink.txnum != start.txnum + n
            or state.seq != start.seq + n * seq_step or state.txid != start.txid + n * txid_step
            or n and (sink.first is None or given.last is None)):
        return _not_common(name, None)
    framed = sink.framed(walk=False)  # (compiled wholes alone: ``general`` was empty)
    encoded = Encoded(seg.key, start.txnum, None,
                      zlib.compress(framed, 1) if compress else framed, sink.ends, False,
                      False, False, None, sink.last, stats, [], None)
    return Direct(encoded, sink.first, first_id[0] if first_id else None, given.last)
