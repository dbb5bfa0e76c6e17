"""Pass 1, in the tasks: each segment is read, given ids and parsed — the only parse.

Per message the task keeps what the rest of the batch needs, so that nothing is parsed again:

* the **skeleton**: its kind (parsed, bad, fatal) and its operations' shapes (table, optype,
  seqid, txid, txind, txname, txowner, ordinal, whether its records fail) — what the assembler's
  state machine looks at;
* the **payload**: each operation's values (timestamp, before and after images; the rest is
  its shape), from which pass 2 writes it as replay does, by the compiled path
  (``Assembler.encode_whole``) or the general one, from the true state: trail bytes depend on
  where the transaction lands; rows' column texts with ``--format``. Not the raw lines: a
  message rejected in pass 2 is named by its line index, and the driver reads its line again
  (``segments.pick_lines``).

It also runs the real ``Assembler`` over the segment in **trials** from assumed start states:
``fresh`` (no transaction open, counters at 0, no duplicate mark) and, when the segment starts
by continuing a transaction (txind middle or end), ``continuing`` (that transaction open). When
the true state at the segment's start fits a trial (``plan.fits``), the driver takes the state
at its end from the trial in O(1) instead of running the state machine per message.

A ``Parsed`` per segment is kept by Spark (``MEMORY_AND_DISK``): its ``Summary`` goes to the
driver, skeleton and payload to pass 2 (and the skeleton to the driver when no trial fits).
"""

from __future__ import annotations

import gc
import marshal
import os
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from msgcap.assembler import Assembler, AssemblerState, ImageRecords, ImageRules, OpenState
from msgcap.batch.inputs import InputFile, Scan
from msgcap.batch.rows import row_body
from msgcap.batch.segments import (
    Segment,
    SegmentKey,
    WholeFiles,
    messages,
    segments,
    whole_files,
)
from msgcap.msgid import MessageIds
from msgcap.pipeline import grouped
from msgcap.trail.records import TrailRecord
from parsers.model import MISSING, TX_END, TX_MIDDLE, Message, Op
from props.errors import MessageError, MsgcapError

if TYPE_CHECKING:
    from gendef.model import Definitions
    from parsers.base import Parser
    from props.settings import ByteOrder, ErrorPolicy, Settings

# a message's kind: ONE is an OK message of one operation with one record (most messages)
OK, BAD, FATAL, ONE = 0, 1, 2, 3
# first_message of a transaction a trial assumes open from before its segment
INHERITED = "\x00inherited\x00"


@dataclass(slots=True)
class Job:
    """What every task gets (broadcast once): the parser (it pickles as its plan), the
    definitions, the rules and settings of the run, and the input files."""

    parser: Parser
    definitions: Definitions
    rules: ImageRules
    id_mode: str
    policy: ErrorPolicy
    max_bytes: int  # ``jms.maxbytes``: the largest message body
    byteorder: ByteOrder
    time_base: int  # µs: ``time`` ids are time_base + the message's offset in the input
    rows: bool
    files: tuple[InputFile, ...]
    whole: WholeFiles
    first_lines: dict[SegmentKey, int] | None = None  # counted before pass 1 when ids need them
    # compress what crosses the JVM (kept pass-1 payloads, framed bytes): executors elsewhere
    compress: bool = False
    # a directory of the driver's where pass 1 leaves its payloads and pass 2 its framed bytes
    # (``spool``), instead of sending them through Spark: local masters, whose executor shares
    # the driver's files (Spark's blocks and task results cross the JVM, copied on the way)
    spool: str | None = None
    # on a cluster, the driver's spool directory all the same: a one-pass task that sees it (an
    # executor on the driver's machine, or on a file system shared with it) leaves its framed
    # bytes there, neither compressed nor sent (``direct.direct_segments``)
    nearby: str | None = None
    # a partitioned feed's partition (``MSGCAP_PARTITION``): its user token on every record, as
    # ``msgcap replay --partition`` writes it
    partition: int | None = None

    @classmethod
    def create(cls, settings: Settings, parser: Parser, definitions: Definitions,
               files: Sequence[InputFile],
               scans: Sequence[Scan], *, rows: bool, time_base: int) -> Job:
        """The job of a run of ``settings`` over ``files`` read in ``scans``."""
        return cls(parser, definitions, ImageRules.from_settings(settings), settings.jms.id,
                   settings.error.policy, settings.jms.maxbytes, settings.trail.byteorder,
                   time_base, rows, tuple(files), whole_files(files, scans),
                   partition=settings.partition)

    def first_line(self, key: SegmentKey) -> int | None:
        return self.first_lines.get(key) if self.first_lines is not None else None

    def tables(self) -> dict[str, Any]:
        """The definitions' tables by name (pass 2 rebuilds operations from their names)."""
        return {t.name: t for t in self.definitions}


@dataclass(frozen=True, slots=True)
class Trial:
    """The assembler's run over a segment from an assumed start state: transactions completed,
    counters used, the state at the end (its names may hold line labels), and ``stop``, the
    message where the job stops (under abend, the first rejected one; a fatal error always)."""

    txns: int
    state: AssemblerState
    stop: int | None


@dataclass(frozen=True, slots=True)
class Summary:
    """What the driver gets of a segment after pass 1 (small, whatever its size).

    ``continues``: the given txid (None for ``*txid``) of the transaction ``continuing``
    assumes open. Seqid facts decide whether a duplicate mark before the segment could change
    its run: ``system_seqids`` (some operation has a ``*seqid``), ``given_width`` (the width of
    every given seqid, -1 when they differ, None without any) and ``min_given``.
    """

    key: SegmentKey
    lines: int
    messages: int
    body_size: int
    first_id: tuple[int, str] | None
    last_id: str | None
    fresh: Trial
    continuing: Trial | None
    continues: str | None
    system_seqids: bool
    given_width: int | None
    min_given: str | None


@dataclass(slots=True)
class Parsed:
    """Pass 1's result for one segment, kept by Spark between the passes; with a spool, the
    payload is in the file ``payload_file`` (``payload_size`` bytes)."""

    summary: Summary
    skeleton: bytes
    payload: bytes
    payload_file: str | None = None
    payload_size: int = 0

    def load_payload(self, compressed: bool) -> Payload:
        blob = self.payload
        if self.payload_file is not None:
            blob = read_spooled(self.payload_file, self.payload_size,
                                f"the parse of segment {self.summary.key}")
        return Payload.load(blob, compressed)


def spool(directory: str, prefix: str, data: bytes) -> str:
    """Write ``data`` to a new file of ``directory`` (``Job.spool``); its path."""
    fd, path = tempfile.mkstemp(prefix=prefix, dir=directory)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def read_spooled(path: str, size: int, what: str) -> bytes:
    """The ``size`` bytes ``spool`` wrote to ``path``; a MsgcapError naming ``what`` when the
    file is not that."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise MsgcapError(f"{what} in {path}: {exc.strerror}") from None
    if len(data) != size:
        raise MsgcapError(f"{what} in {path} is {len(data)} bytes, not {size}")
    return data


@dataclass(slots=True)
class Skeleton:
    """Per message: kind, line index in the segment, operation shapes (see the module doc)."""

    kinds: bytes
    numbers: array
    shapes: list[tuple]

    @classmethod
    def load(cls, blob: bytes) -> Skeleton:
        kinds, numbers, refs, distinct = marshal.loads(blob)
        n = array("i")
        n.frombytes(numbers)
        r = array("q")
        r.frombytes(refs)
        return cls(kinds, n, [distinct[i] if i >= 0 else () for i in r])


# an op's timestamp, before, after, and with a message group its group and number in it
Kept = (tuple[int, list[Any] | None, list[Any] | None]
        | tuple[int, list[Any] | None, list[Any] | None, str, str | None])


def kept(op: Op) -> Kept:
    """What pass 2 needs of ``op`` beside its shape, as ``marshal`` keeps it (``MISSING``, a
    value absent from the message, as ``...``)."""
    if op.group is None:
        return op.timestamp, _plain(op.before), _plain(op.after)
    return op.timestamp, _plain(op.before), _plain(op.after), op.group, op.group_seq


def _plain(values: list[Any] | None) -> list[Any] | None:
    if values is None or MISSING not in values:
        return values
    return [... if v is MISSING else v for v in values]


def _values(values: list[Any] | None) -> list[Any] | None:
    if values is None or ... not in values:
        return values
    return [MISSING if v is ... else v for v in values]


def rebuilt(table: Any, shape: tuple, values: Kept) -> Op:
    """The operation pass 1 kept (``kept``) of its shape, on ``table``."""
    _, optype, seqid, txid, txind, txname, txowner, ordinal, _ = shape
    op = Op(table, optype, values[0], seqid, txid, txind, txname, txowner, _values(values[1]),
            _values(values[2]), ordinal)
    if len(values) == 5:
        op.group, op.group_seq = values[3], values[4]
    return op


@dataclass(slots=True)
class Payload:
    """Per message: its operations' values (``kept``; () for a bad or fatal message; those of
    the common message marshalled on their own, ``values``: pass 1 then holds one object a
    message, not the parser's dozen, which replay frees as it goes); the error of a bad or
    fatal message; rows' column texts per operation with ``--format``. (Ids and lines are not
    kept: pass 2 names messages by file and line.)"""

    ops: list[tuple[Kept, ...] | bytes]
    errors: dict[int, Any]
    rows: list[tuple] | None

    @classmethod
    def load(cls, blob: bytes, compressed: bool) -> Payload:
        return cls(*marshal.loads(zlib.decompress(blob) if compressed else blob))

    def values(self, index: int) -> tuple[Kept, ...]:
        """The values of message ``index``'s operations."""
        found = self.ops[index]
        return marshal.loads(found) if isinstance(found, bytes) else found


@contextmanager
def no_gc() -> Iterator[None]:
    """Without cyclic GC for a loop that keeps millions of small acyclic objects alive (GC passes
    over them cost a fifth of the time); collection resumes afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Clock:
    """``time`` ids in tasks: job start µs + the message's offset (increasing, reproducible)."""

    __slots__ = ("now_ns",)

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns


class Boundaries:
    """A record builder for the state machine alone: no records, but the operations in
    ``failing`` (by identity) fail as their records did when pass 1 built them."""

    __slots__ = ("failing",)

    def __init__(self) -> None:
        self.failing: set[int] = set()

    def __call__(self, op: Op, seqid: str) -> list[TrailRecord]:
        if id(op) in self.failing:
            raise MessageError("records fail")
        return []


class _TrialRun:
    """One trial in progress."""

    __slots__ = ("abend", "asm", "stop", "txns")

    def __init__(self, asm: Assembler, abend: bool) -> None:
        self.asm, self.abend = asm, abend
        self.txns = 0
        self.stop: int | None = None

    def add(self, index: int, message: Message, ops: list[Op]) -> None:
        try:
            if len(ops) == 1 and self.asm.add_single(message, ops[0]) is not None:
                self.txns += 1
            else:
                self.txns += len(self.asm.add(message, ops).completed)
        except MessageError:
            if self.abend:
                self.stop = index

    def rejected(self, index: int) -> None:
        if self.abend:
            self.stop = index

    def result(self) -> Trial:
        return Trial(self.txns, self.asm.state(), self.stop)


def parse_partition(job: Job, elements: Iterable[bytes], *, lines: bool) -> Iterator[Parsed]:
    """Pass 1 over one task's elements (``lines``: the task reads a block of lines)."""
    for seg in segments(elements, job.files, job.whole, lines=lines):
        yield parse_segment(job, seg)


def parse_segment(job: Job, seg: Segment) -> Parsed:
    """Pass 1 of one segment (see the module doc)."""
    return _Pass1(job, seg).run()


class _Pass1:
    """Pass 1 of one segment; ``run`` is the loop, one message at a time (a plain message,
    one operation of one record of the common case (``ImageRecords.single``), takes the short
    way)."""

    def __init__(self, job: Job, seg: Segment) -> None:
        self.job, self.seg = job, seg
        self.clock = Clock()
        self.ids = MessageIds(job.id_mode, None, clock=self.clock)
        self.build = ImageRecords(job.rules)
        self.abend = job.policy == "abend"
        self.boundaries = Boundaries()
        self.fresh = _TrialRun(Assembler(job.rules, records=self.boundaries), self.abend)
        self.trials = [self.fresh]
        self.continuing: _TrialRun | None = None
        self.continues: str | None = None
        self.decided = False
        self.kinds = bytearray()
        self.numbers = array("i")
        self.refs = array("q")
        self.distinct: list[tuple] = []
        self.seen: dict[tuple, int] = {}
        self.ops: list[tuple[Kept, ...] | bytes] = []
        self.errors: dict[int, Any] = {}
        self.rows: list[tuple] | None = [] if job.rows else None
        self.system_seqids = False
        self.width: int | None = None
        self.min_given: str | None = None

    def run(self) -> Parsed:
        job, seg, clock = self.job, self.seg, self.clock
        next_id, parse, common = self.ids.next_id, job.parser.parse, self.build.single
        keep = self.ops.append
        kinds, numbers, refs = self.kinds, self.numbers, self.refs
        seen, distinct = self.seen, self.distinct
        rows, fresh, time_base = self.rows, self.fresh, job.time_base
        single, add = fresh.asm.take_single, fresh.asm.add
        dumps = marshal.dumps
        body_size = 0
        first_id: tuple[int, str] | None = None
        found = messages(seg, job.first_line(seg.key), job.max_bytes)
        with no_gc():
            try:
                for number, offset, message in found:
                    if fresh.stop is not None and self.stopped():
                        break
                    index = len(kinds)
                    numbers.append(number)
                    body_size += len(message.body)
                    clock.now_ns = (time_base + offset) * 1000
                    try:
                        message.id = next_id(message)
                        if first_id is None:
                            first_id = (index, message.id)
                        ops = parse(message)
                        if message.headers:
                            grouped(message, ops)
                    except MessageError as exc:
                        self.bad(index, exc)
                        continue
                    if len(ops) != 1 or rows is not None or not self.decided:
                        self.general(index, message, ops)
                        continue
                    op = ops[0]
                    seqid = op.seqid
                    if seqid is None:
                        self.system_seqids = True
                    else:
                        self.given(seqid)
                    if common(op) is None:  # records that may fail, or several
                        self.general(index, message, ops)
                        continue
                    keep(dumps((kept(op),)))
                    shape = ((op.table.name, op.optype, seqid, op.txid, op.txind, op.txname,
                              op.txowner, op.ordinal, False),)
                    ref = seen.get(shape)
                    if ref is None:
                        ref = seen[shape] = len(distinct)
                        distinct.append(shape)
                    kinds.append(ONE)
                    refs.append(ref)
                    if fresh.stop is None:  # the fresh trial, inline
                        try:
                            if single(message, op):
                                fresh.txns += 1
                            else:
                                fresh.txns += len(add(message, ops).completed)
                        except MessageError:
                            if fresh.abend:
                                fresh.stop = index
                    if self.continuing is not None and self.continuing.stop is None:
                        self.continuing.add(index, message, ops)
            except MsgcapError as exc:  # not discardable (id width, unreadable dump): stops here
                self.fatal(exc)
            lines = seg.complete()
            skeleton = marshal.dumps((bytes(kinds), numbers.tobytes(), refs.tobytes(),
                                      distinct))
            payload = marshal.dumps((self.ops, self.errors, rows))
            if job.compress:
                payload = zlib.compress(payload, 1)
        continuing = self.continuing
        summary = Summary(seg.key, len(lines), len(kinds), body_size, first_id, self.ids.last,
                          fresh.result(), continuing.result() if continuing else None,
                          self.continues, self.system_seqids, self.width, self.min_given)
        if job.spool is None:
            return Parsed(summary, skeleton, payload)
        name = spool(job.spool, f"parse-{seg.key[0]}-{seg.key[1]}-", payload)
        return Parsed(summary, skeleton, b"", name, len(payload))

    def stopped(self) -> bool:
        return all(t.stop is not None for t in self.trials)

    def given(self, seqid: str) -> None:
        """Note a given seqid (the facts ``Summary`` keeps)."""
        if self.width is None:
            self.width = len(seqid)
        elif self.width != len(seqid):
            self.width = -1
        if self.min_given is None or seqid < self.min_given:
            self.min_given = seqid

    def skip(self, kind: int) -> None:
        self.kinds.append(kind)
        self.refs.append(-1)
        self.ops.append(())
        if self.rows is not None:
            self.rows.append(())

    def bad(self, index: int, exc: MessageError) -> None:
        self.skip(BAD)
        self.errors[index] = (exc.reason, exc.source, exc.position)
        for t in self.trials:
            t.rejected(index)

    def fatal(self, exc: MsgcapError) -> None:
        index = len(self.kinds)
        if len(self.numbers) == index:  # the line itself could not be read as a message
            self.numbers.append(-1)
        self.skip(FATAL)
        self.errors[index] = str(exc)
        for t in self.trials:
            if t.stop is None:
                t.stop = index

    def general(self, index: int, message: Message, ops: list[Op]) -> None:
        """Any message with operations: several, failing ones, rows, the first one."""
        failing = self.boundaries.failing
        failing.clear()
        shapes = []
        bodies: list | None = [] if self.rows is not None else None
        for op in ops:
            if op.seqid is None:
                self.system_seqids = True
            else:
                self.given(op.seqid)
            try:
                recs = self.build(op, "")
            except MessageError:
                failing.add(id(op))
                shapes.append(_shape(op, True))
                if bodies is not None:
                    bodies.append(None)
                continue
            shapes.append(_shape(op, False))
            if bodies is not None:
                bodies.append(row_body(recs))
        shape = tuple(shapes)
        ref = self.seen.get(shape)
        if ref is None:
            ref = self.seen[shape] = len(self.distinct)
            self.distinct.append(shape)
        self.kinds.append(OK)
        self.refs.append(ref)
        self.ops.append(tuple(kept(op) for op in ops))
        if self.rows is not None and bodies is not None:
            self.rows.append(tuple(bodies))
        if not self.decided and ops:
            self.decided = True
            if ops[0].txind in (TX_MIDDLE, TX_END) and self.fresh.stop is None:
                self.continues = ops[0].txid
                asm = Assembler(self.job.rules, records=self.boundaries)
                asm.resume(AssemblerState(open=OpenState(
                    "", self.continues, None, None, False, INHERITED)))
                self.continuing = _TrialRun(asm, self.abend)
                self.trials.append(self.continuing)
        for t in self.trials:
            if t.stop is None:
                t.add(index, message, ops)
        failing.clear()


def _shape(op: Op, failing: bool) -> tuple:
    return (op.table.name, op.optype, op.seqid, op.txid, op.txind, op.txname, op.txowner,
            op.ordinal, failing)

