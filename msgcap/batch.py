"""Spark batch replay of message dumps (properties.md §13.1): ``msgcap batch``.

The trail must be byte-identical to what ``msgcap replay`` writes for the same inputs, although
the messages are parsed in parallel tasks and the assembler's state (``*seqid``/``*txid``
counters, the duplicate mark, a txind transaction left open) runs across partition borders.
Three steps, the parse always in the tasks:

1. **skeleton** (tasks): each split is read, ids assigned and messages parsed; a task returns
   only what the assembler's state machine needs per operation (table name, optype, seqid, txid,
   txind, ordinal, whether its records fail), never values.
2. **plan** (driver): the real ``Assembler`` runs over those skeletons (records stubbed), which
   is cheap, and notes at each split border its ``AssemblerState``, the transactions completed so
   far and the last message id; errors under ``abend`` (and fatal ones) fix where the job stops.
3. **encode** (tasks): each split is read and parsed again and runs through the real
   ``Pipeline`` from its planned state, into a sink that encodes every transaction with
   ``TrailEncoder`` and transaction numbers from the plan; a transaction open at a border is
   encoded in parts (``first``/``last``). Bytes are staged in files under ``DIR/.staging``.

Every split is a Spark job of its own, submitted from a thread pool in order: a split's
encoding is queued as soon as its plan is final, so the driver plans and appends while the
tasks parse and encode later splits. Step 1 returns one ``marshal`` blob per split, not a
million small objects pickled through the JVM. The driver appends the staged bytes in order
with ``TrailWriter.append_encoded``, in groups of whole transactions that fit the current file,
so rollover happens before the same transaction as in replay. A transaction that fails to encode under ``discard`` shifts later transaction numbers:
the splits after it are encoded again with corrected plans.

Tasks read the inputs by path (local files, or a file system shared with the executors), in the
driver's working directory so that relative paths in the properties work as in replay.
"""

from __future__ import annotations

import bisect
import gc
import io
import json
import marshal
import os
import shutil
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self, TextIO

from msgcap import dumps
from msgcap.assembler import Assembler, AssemblerState, ImageRules
from msgcap.msgid import MessageIds
from msgcap.pipeline import DiscardFile, Pipeline, Stats
from msgcap.trail.dumpfmt import scaled
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.records import (
    IOTYPE_DELETE,
    OP_NAMES,
    TRANSIND_BEGIN,
    TRANSIND_END,
    TRANSIND_MIDDLE,
    TRANSIND_WHOLE,
    Position,
    TrailRecord,
    TrailTransaction,
)
from parsers.model import MISSING, Message, Op
from props.errors import MessageError, MsgcapError, SourceError

FORMATS = ("trail", "parquet", "json")
KIND_JSONL, KIND_LINES, KIND_FILE = "jsonl", "lines", "file"
_OK, _BAD, _FATAL = 0, 1, 2
_READ_CHUNK = 1 << 20


# -- splits ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Piece:
    """A byte range of one input file: the messages whose line starts in ``[start, end)``.

    ``first_line`` is the number of the first such line; ``base`` the file's offset in the
    concatenated input (``time`` ids are ``job start µs + base + offset``, so they increase).
    """

    path: str
    kind: str
    start: int
    end: int
    first_line: int
    base: int


@dataclass(frozen=True, slots=True)
class Split:
    """One task's input: consecutive pieces (several small files, or part of a large one)."""

    index: int
    pieces: tuple[Piece, ...]


def plan_splits(paths: list[str], *, lines: bool, target: int) -> list[Split]:
    """Cut the inputs into about ``target`` splits of equal bytes, in input order.

    Line-based files (JSON Lines, ``--lines``) are cut anywhere (a message belongs to the split
    where its line starts); one-message files are never cut but grouped. ``first_line`` of a piece
    that does not start a file is 0 until ``count_lines`` fills it in.
    """
    sizes = []
    for path in paths:
        try:
            sizes.append(os.path.getsize(path))
        except OSError as exc:
            raise SourceError(exc.strerror or str(exc), url=path) from None
    per = max(1, -(-sum(sizes) // max(1, target)))
    splits: list[Split] = []
    cur: list[Piece] = []
    used = 0
    base = 0
    for path, size in zip(paths, sizes, strict=True):
        kind = KIND_LINES if lines else (KIND_JSONL if path.endswith(dumps.JSONL_SUFFIXES)
                                         else KIND_FILE)
        if kind == KIND_FILE:
            cur.append(Piece(path, kind, 0, size, 1, base))
            used += size
        else:
            start = 0
            while True:
                end = start + min(size - start, per - used)
                cur.append(Piece(path, kind, start, end, 1 if start == 0 else 0, base))
                used += end - start
                start = end
                if start >= size:
                    break
                splits.append(Split(len(splits), tuple(cur)))
                cur, used = [], 0
        if used >= per:
            splits.append(Split(len(splits), tuple(cur)))
            cur, used = [], 0
        base += size + 1
    if cur:
        splits.append(Split(len(splits), tuple(cur)))
    return splits


def newline_ranges(splits: list[Split]) -> list[tuple[str, int, int]]:
    """The byte ranges whose newline counts give the first line numbers of inner pieces."""
    out = []
    prev: dict[int, int] = {}  # by file (its base: a file may be given twice)
    for split in splits:
        for p in split.pieces:
            if p.start > 0:
                out.append((p.path, prev.get(p.base, 0), p.start - 1))
                prev[p.base] = p.start - 1
    return out


def count_newlines(path: str, start: int, end: int) -> int:
    """Newlines in ``[start, end)`` of a file (run in tasks)."""
    n = 0
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            data = fh.read(min(left, _READ_CHUNK))
            if not data:
                break
            n += data.count(b"\n")
            left -= len(data)
    return n


def with_line_numbers(splits: list[Split], counts: list[int]) -> list[Split]:
    """Fill in ``first_line`` from ``count_newlines`` over ``newline_ranges`` (same order)."""
    it = iter(counts)
    seen: dict[int, int] = {}
    out = []
    for split in splits:
        pieces = []
        for p in split.pieces:
            if p.start > 0:
                seen[p.base] = seen.get(p.base, 0) + next(it)
                p = Piece(p.path, p.kind, p.start, p.end, seen[p.base] + 2, p.base)
            pieces.append(p)
        out.append(Split(split.index, tuple(pieces)))
    return out


def read_split(split: Split) -> Iterator[tuple[int, str, int, Message]]:
    """(offset in the concatenated input, file, line or message number, Message) in order.

    Malformed JSON Lines raise SourceError where replay would.
    """
    for p in split.pieces:
        if p.kind == KIND_FILE:
            yield p.base, p.path, 1, dumps.read_whole_file(p.path)
            continue
        name = os.path.basename(p.path)
        try:
            fh = open(p.path, "rb")  # noqa: SIM115 - closed below, generator
        except OSError as exc:
            raise SourceError(exc.strerror or str(exc), url=p.path) from None
        with fh:
            pos = 0
            if p.start > 0:
                fh.seek(p.start - 1)
                pos = p.start - 1 + len(fh.readline())
            number = p.first_line
            end = p.end
            jsonl = p.kind == KIND_JSONL
            if not jsonl:
                yield from _text_lines(fh, p, name, pos, number)
                continue
            while pos < end:
                raw = fh.readline()
                if not raw:
                    break
                if jsonl:
                    message = dumps.jsonl_message(raw, p.path, number)
                else:
                    message = dumps.text_line_message(raw, name, p.path, number)
                if message is not None:
                    yield p.base + pos, p.path, number, message
                pos += len(raw)
                number += 1


def _text_lines(fh: Any, p: Piece, name: str, pos: int,
                number: int) -> Iterator[tuple[int, str, int, Message]]:
    """``read_split`` of a text-lines piece from ``pos``: read in large chunks and split, the
    messages as ``dumps.text_line_message`` makes them (``readline`` per line costs more)."""
    end, base, path = p.end, p.base, p.path
    name_at, path_at = f"{name}:", f"{path}:"
    rest = b""
    while pos < end:
        chunk = fh.read(_READ_CHUNK)
        if chunk:
            data = rest + chunk if rest else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            rest = data[cut + 1:]
            lines = data[:cut].split(b"\n")
            extra = 1
        elif rest:  # a last line without terminator
            lines, rest, extra = [rest], b"", 0
        else:
            return
        for raw in lines:
            if pos >= end:
                return
            size = len(raw) + extra
            if raw[-1:] == b"\r":
                raw = raw[:-1]
            if raw:
                try:
                    body: str | bytes = raw.decode("utf-8")
                except UnicodeDecodeError:
                    body = raw
                n = str(number)
                yield base + pos, path, number, Message(name_at + n, {}, body, None,
                                                        path_at + n)
            pos += size
            number += 1


# -- what every task gets -------------------------------------------------------------------------

@dataclass(slots=True)
class Job:
    """Broadcast to the tasks: the parser (pickles as settings + definitions), rules, ids."""

    parser: Any
    rules: ImageRules
    id_mode: str
    policy: str
    byteorder: str
    time_base: int
    cwd: str
    staging: str
    rows: bool


@contextmanager
def _no_gc() -> Iterator[None]:
    """Without cyclic GC for a loop that keeps millions of small acyclic objects alive (GC passes
    over them cost a fifth of the time); collection resumes afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Clock:
    """``time`` ids in tasks: job start µs + the message's offset (increasing, reproducible)."""

    __slots__ = ("now_ns",)

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns


# -- step 1: skeletons ----------------------------------------------------------------------------

@dataclass(slots=True)
class Skeleton:
    """What the state machine needs of one split, per message (kind, name, ops or None).

    Packed in one ``marshal`` blob (kinds as bytes, names, and per message an index into the
    split's distinct op tuples): a million small tuples pickled through the JVM cost more than
    the parse itself.
    """

    index: int
    blob: bytes
    first_id: tuple[int, str] | None = None  # (message index, id) of the first id assigned
    last_id: str | None = None

    def messages(self) -> Iterator[tuple[int, str, tuple | None]]:
        """The (kind, name, ops) of each message, in order."""
        kinds, names, refs, distinct = marshal.loads(self.blob)
        index = array("q")
        index.frombytes(refs)
        return zip(kinds, names, map(distinct.__getitem__, index), strict=True)


def skeleton(job: Job, split: Split) -> Skeleton:
    """Read, assign ids and parse one split; keep only the state machine's inputs."""
    first_id: tuple[int, str] | None = None
    clock = _Clock()
    ids = MessageIds(job.id_mode, None, clock=clock)
    checker = Assembler(job.rules)
    parse = job.parser.parse
    kinds = bytearray()
    names: list[str] = []
    refs = array("q")
    distinct: list[tuple | None] = []
    seen: dict[tuple | None, int] = {}

    def add(kind: int, name: str, ops: tuple | None) -> None:
        ref = seen.get(ops)
        if ref is None:
            ref = seen[ops] = len(distinct)
            distinct.append(ops)
        kinds.append(kind)
        names.append(name)
        refs.append(ref)

    with _no_gc():
        try:
            for offset, _path, _number, message in read_split(split):
                clock.now_ns = (job.time_base + offset) * 1000
                try:
                    message.id = ids.next_id(message)
                    if first_id is None:
                        first_id = (len(kinds), message.id)
                    ops = parse(message)
                except MessageError:
                    add(_BAD, "", None)
                    continue
                shape = ((_skeleton_op(checker, ops[0]),) if len(ops) == 1
                         else tuple(_skeleton_op(checker, op) for op in ops))
                ref = seen.get(shape)  # add(), inline for the common case
                if ref is None:
                    ref = seen[shape] = len(distinct)
                    distinct.append(shape)
                kinds.append(_OK)
                names.append(message.origin or message.id)  # message.name, without the call
                refs.append(ref)
        except MsgcapError:  # not discardable (id width, unreadable dump): the job stops there
            add(_FATAL, "", None)
        blob = marshal.dumps((bytes(kinds), names, refs.tobytes(), distinct))
    return Skeleton(split.index, blob, first_id, ids.last)


def _skeleton_op(checker: Assembler, op: Op) -> tuple:
    try:
        checker.records(op, op.seqid or "")
        bad = False
    except MessageError:
        bad = True
    return (op.table.name, op.optype, op.seqid, op.txid, op.txind, op.txname, op.txowner,
            op.ordinal, bad)


class _TableName:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _SkeletonAssembler(Assembler):
    """The real state machine with records stubbed: failing records raise, others are empty."""

    def __init__(self, rules: ImageRules) -> None:
        super().__init__(rules)
        self.bad: set[int] = set()

    def records(self, op: Op, seqid: str) -> list[TrailRecord]:
        if id(op) in self.bad:
            raise MessageError("records fail")
        return []


@dataclass(slots=True)
class Plan:
    """Where one split starts: assembler state, transactions written before, last message id.

    ``stop``: the index of the message where the job stops (abend, fatal error), else None.
    ``head_error``: the transaction open at the start already failed to encode (its completing
    message is rejected with this error).
    """

    index: int
    state: AssemblerState
    txnum: int
    last_id: str | None
    stop: int | None = None
    head_error: str | None = None


@dataclass(slots=True)
class Planned:
    """The plans of the splits the job runs (up to where it stops)."""

    plans: list[Plan]
    end_error: MessageError | None = None  # open transaction at the end of the input


def plan(skeletons: Iterable[Skeleton], rules: ImageRules, policy: str,
         ready: Callable[[Plan], None] | None = None) -> Planned:
    """Run the state machine over the skeletons in order (step 2); ``ready`` gets each split's
    plan as soon as it is final (its encoding can start while later splits are planned)."""
    asm = _SkeletonAssembler(rules)
    names: dict[str, _TableName] = {}
    abend = policy == "abend"
    with _no_gc():
        return _plan(skeletons, asm, names, abend, ready or (lambda p: None))


def _plan(skeletons: Iterable[Skeleton], asm: _SkeletonAssembler, names: dict[str, _TableName],
          abend: bool, ready: Callable[[Plan], None]) -> Planned:
    plans: list[Plan] = []
    txnum = 0
    bad, add = asm.bad, asm.add
    headers: dict[str, str] = {}  # shared: the plan's messages only name themselves
    last_id: str | None = None
    width: int | None = None
    for sk in skeletons:
        p = Plan(sk.index, asm.state(), txnum, last_id)
        plans.append(p)
        fid = sk.first_id
        check_at = -1
        if fid is not None:
            if width is None:
                width = len(fid[1])
            elif len(fid[1]) != width:
                check_at = fid[0]
        for mi, (kind, name, ops) in enumerate(sk.messages()):
            if kind != _OK or mi == check_at:
                if mi == check_at or kind == _FATAL or abend:
                    p.stop = mi
                    ready(p)
                    return Planned(plans)
                continue
            if bad:
                bad.clear()
            built = []
            for t, optype, seqid, txid, txind, txname, txowner, ordinal, failing in ops:
                table = names.get(t)
                if table is None:
                    table = names[t] = _TableName(t)
                op = Op(table, optype, 0, seqid, txid, txind, txname, txowner, None, None,
                        ordinal)
                if failing:
                    bad.add(id(op))
                built.append(op)
            try:
                outcome = add(Message("", headers, "", None, name), built)
            except MessageError:
                if abend:
                    p.stop = mi
                    ready(p)
                    return Planned(plans)
                continue
            txnum += len(outcome.completed)
        ready(p)
        if sk.last_id is not None:
            last_id = sk.last_id
    try:
        asm.finish()
    except MessageError as exc:
        return Planned(plans, exc)
    return Planned(plans)


# -- step 3: encoding -----------------------------------------------------------------------------

class _Sink:
    """The pipeline's writer in a task: encodes transactions and keeps their end offsets."""

    def __init__(self, encoder: TrailEncoder, plan: Plan, rows: list | None,
                 origins: dict[int, tuple[str, int]] | None) -> None:
        self.encoder = encoder
        self.txnum = plan.txnum
        self.chunks: list[bytes] = []
        self.size = 0
        self.ends = array("q")
        held = plan.state.open
        self.head_open = held is not None and not held[4]
        self.head_error = plan.head_error
        self.head_done = False
        self.head_failed = False
        self.last_tx: TrailTransaction | None = None
        self.rows = rows
        self.origins = origins
        self.split = plan.index

    def write_transaction(self, tx: TrailTransaction) -> Position:
        head = self.head_open and not self.head_done
        if head:  # the transaction open at the split's start: it completes first
            self.head_done = True
            if self.head_error is not None:
                self.head_failed = True
                raise MessageError(self.head_error)
        try:
            data = self.encoder.encode_transaction(tx, self.txnum + 1, first=not head)
        except MessageError:
            self.head_failed = head
            raise
        self.txnum += 1
        if self.rows is None:  # _add, inline for the common case
            self.chunks.append(data)
            self.size += len(data)
        else:
            self._add(data, tx, not head, True)
        self.ends.append(self.size)
        self.last_tx = tx
        return Position(0, self.size, "")

    @property
    def last(self) -> tuple[str | None, int | None, str | None]:
        """seqid, AuditPos and txid of the last transaction written (the writer's mark)."""
        tx = self.last_tx
        if tx is None:
            return None, None, None
        rec = tx.records[-1]
        return rec.seqid, rec.audit_pos, tx.txid

    def tail(self, asm: Assembler) -> str | None:
        """Encode the records of the transaction still open; its error text when it fails."""
        records = asm.open_records
        held = asm.state().open
        if not records or held is None:
            return None
        head = self.head_open and not self.head_done
        tx = TrailTransaction(held[0], records, held[2], held[3])
        try:
            data = self.encoder.encode_transaction(tx, self.txnum + 1, first=not head,
                                                   last=False)
        except MessageError as exc:
            return str(exc)
        self._add(data, tx, not head, False)
        return None

    def _add(self, data: bytes, tx: TrailTransaction, first: bool, last: bool) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.rows is not None:
            rows = list(op_rows(tx, first, last, self.origins or {}))
            if not last:  # dropped if the rest of the transaction fails to encode
                for row in rows:
                    row["tail_of"] = self.split
            self.rows.extend(rows)


class _Discards(DiscardFile):
    """Discard records of a task, kept in memory for the driver to write in order."""

    def __init__(self) -> None:
        super().__init__("<batch>")
        self.buffer = io.StringIO()

    def _open(self) -> TextIO:
        return self.buffer


class _TracingAssembler(Assembler):
    """Remembers which message each record came from (analysis rows name file and position)."""

    def __init__(self, rules: ImageRules, origins: dict[int, tuple[str, int]]) -> None:
        super().__init__(rules)
        self.origins = origins
        self.current: tuple[str, int] = ("", 0)

    def records(self, op: Op, seqid: str) -> list[TrailRecord]:
        out = super().records(op, seqid)
        for rec in out:
            self.origins[id(rec)] = self.current
        return out


@dataclass(slots=True)
class Encoded:
    """What a task returns for one split (its bytes are in the staging file ``data``)."""

    index: int
    txnum: int  # plan's transactions before this split
    head_error: str | None
    data: str | None
    size: int
    ends: array
    head_completed: bool
    head_failed: bool
    tail: bool
    tail_error: str | None
    last: tuple[str | None, int | None, str | None]
    stats: Stats
    discards: str
    error: str | None  # the error that stops the job here
    fatal: bool = False
    rows: str | None = None


def encode_split(job: Job, split: Split, plan: Plan) -> Encoded:
    """Step 3 for one split: the real pipeline from the planned state into a ``_Sink``."""
    origins: dict[int, tuple[str, int]] | None = {} if job.rows else None
    rows: list | None = [] if job.rows else None
    tracing = _TracingAssembler(job.rules, origins) if origins is not None else None
    asm = tracing if tracing is not None else Assembler(job.rules)
    asm.resume(plan.state)
    clock = _Clock()
    ids = MessageIds(job.id_mode, plan.last_id, clock=clock)
    sink = _Sink(TrailEncoder(job.byteorder), plan, rows, origins)
    discards = _Discards()
    pipeline = Pipeline(job.parser, asm, sink, ids, policy=job.policy, discard=discards)
    error: str | None = None
    fatal = False
    stop = plan.stop
    with _no_gc():
        try:
            for n, (offset, path, number, message) in enumerate(read_split(split)):
                if stop is not None and n > stop:
                    break
                clock.now_ns = (job.time_base + offset) * 1000
                if tracing is not None:
                    tracing.current = (path, number)
                pipeline.process(message)
        except MessageError as exc:
            error = str(exc)
        except MsgcapError as exc:
            error, fatal = str(exc), True
    tail_error = None
    tail = False
    if error is None and stop is None:
        before = sink.size
        tail_error = sink.tail(asm)
        tail = sink.size > before
    data_path = None
    if sink.size:
        data_path = os.path.join(job.staging, f"part-{split.index:05d}.trail")
        with open(data_path, "wb") as fh:
            fh.writelines(sink.chunks)
    rows_path = None
    if rows:
        rows_path = os.path.join(job.staging, f"rows-{split.index:05d}.jsonl")
        with open(rows_path, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False))
                fh.write("\n")
    return Encoded(split.index, plan.txnum, plan.head_error, data_path, sink.size, sink.ends,
                   sink.head_done, sink.head_failed, tail, tail_error, sink.last,
                   pipeline.stats, discards.buffer.getvalue(), error, fatal, rows_path)


# -- analysis rows --------------------------------------------------------------------------------

def _text(value: Any, scale: int) -> str:
    if isinstance(value, int):
        return scaled(value, scale)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def op_rows(tx: TrailTransaction, first: bool, last: bool,
            origins: dict[int, tuple[str, int]]) -> Iterator[dict[str, Any]]:
    """One row per operation of (a part of) a transaction, as ``--format parquet/json`` write.

    An operation is its records with one seqid and AuditPos: a before-image record
    (``trail.getupdatebefores``) and the after image are one row. ``after``/``before`` map column
    names to the text ``msgcap dump --json`` shows; ``null_columns``/``missing_columns`` describe
    the operation's main image (the after image; the before image of a delete).
    """
    records = tx.records
    end = len(records) - 1 if last else -1
    i = 0
    while i < len(records):
        group = [records[i]]
        while (i + len(group) < len(records)
               and records[i + len(group)].seqid == group[0].seqid
               and records[i + len(group)].audit_pos == group[0].audit_pos
               and group[-1].before_after == "B" and group[0].iotype != IOTYPE_DELETE):
            group.append(records[i + len(group)])
        n = i + len(group) - 1
        if first and n == 0:
            ind = TRANSIND_WHOLE if end == 0 else TRANSIND_BEGIN
        else:
            ind = TRANSIND_END if n == end else TRANSIND_MIDDLE
        main = group[-1]
        columns = main.table.columns
        after: dict[str, str] = {}
        before: dict[str, str] = {}
        nulls, missing = [], []
        target = before if main.before_after == "B" else after
        for col, v in zip(columns, main.values, strict=False):
            if v is MISSING:
                missing.append(col.name)
            elif v is None:
                nulls.append(col.name)
            else:
                target[col.name] = _text(v, col.scale)
        for rec in group[:-1]:
            for col, v in zip(columns, rec.values, strict=False):
                if v is not MISSING and v is not None:
                    before[col.name] = _text(v, col.scale)
        if main.key_before is not None:
            for col, v in zip(columns, main.key_before, strict=False):
                if v is not MISSING and v is not None:
                    before[col.name] = _text(v, col.scale)
        for rec in group[:-1]:
            origins.pop(id(rec), None)
        source, position = origins.pop(id(main), ("", 0))
        yield {"source_file": source, "position": position, "txid": tx.txid,
               "seqid": main.seqid, "commit_us": main.io_time, "table": main.table.name,
               "op": OP_NAMES.get(main.iotype, str(main.iotype)), "transind": ind,
               "after": after, "before": before, "null_columns": nulls,
               "missing_columns": missing}
        i += len(group)


# -- the driver -----------------------------------------------------------------------------------

@dataclass(slots=True)
class Result:
    """What ``run_batch`` did: the summary's counters and where the outputs went."""

    stats: Stats
    discard_file: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    splits: int = 0


def spark_session(master: str = "local[*]", app: str = "msgcap batch") -> Any:
    """A SparkSession for the batch (the existing one when this process already has one)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
            .config("spark.python.worker.reuse", "true")
            .getOrCreate())


def _ship_code(sc: Any, staging: str) -> None:
    """Non-local masters: the project's packages go to the executors as one zip."""
    if sc.master.startswith("local"):
        return
    import zipfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(staging, "msgcap-code.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in ("props", "gendef", "parsers", "msgcap"):
            for dirpath, _dirs, files in os.walk(os.path.join(root, package)):
                for name in files:
                    if name.endswith(".py"):
                        full = os.path.join(dirpath, name)
                        zf.write(full, os.path.relpath(full, root))
    sc.addPyFile(path)


class Progress:
    """Progress lines on stderr while Spark runs: step, finished tasks of the running stages."""

    def __init__(self, sc: Any, out: TextIO, interval: float) -> None:
        self.sc, self.out, self.interval = sc, out, interval
        self.step = "starting"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.interval > 0:
            self._thread = threading.Thread(target=self._run, name="batch-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def say(self, step: str) -> None:
        self.step = step
        if self.interval >= 0:
            self.out.write(f"batch: {step}\n")
            self.out.flush()

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self._stop.wait(self.interval):
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                self.out.write(f"batch: {self.step}: {done}/{total} tasks done\n")
                self.out.flush()


def run_batch(settings: Any, inputs: list[str], output: str, *, spark: Any,
              formats: tuple[str, ...] = ("trail",), partitions: int | None = None,
              lines: bool = False, definitions: Any = None,
              progress: Callable[[str], None] | None = None,
              progress_out: TextIO | None = None, progress_interval: float = 5.0) -> Result:
    """The whole batch (see the module doc); raises MsgcapError like replay does."""
    from gendef.build import build_definitions
    from msgcap.pipeline import write_trail_defs
    from msgcap.trail.writer import TrailWriter
    from parsers.base import build_parser

    for f in formats:
        if f not in FORMATS:
            raise SourceError(f"unknown format {f!r} (expected {', '.join(FORMATS)})",
                              url="--format")
    paths = dumps.expand_inputs(inputs)
    if definitions is None:
        definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    _check_output(output, formats)
    staging = os.path.abspath(os.path.join(output, ".staging"))
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    sc = spark.sparkContext
    _ship_code(sc, staging)
    target = partitions or max(2, sc.defaultParallelism * 2)
    splits = plan_splits(paths, lines=lines, target=target)
    job = Job(parser, ImageRules.from_settings(settings), settings.jms.id,
              settings.error.policy, settings.trail.byteorder, time.time_ns() // 1000,
              os.getcwd(), staging, any(f != "trail" for f in formats))
    bjob = sc.broadcast(job)
    cwd = job.cwd
    out = progress_out if progress_out is not None else sys.stderr
    # one Spark job per split, submitted from threads: a split's plan is final (and its
    # encoding job queued) while later splits are still parsed and planned
    pool = ThreadPoolExecutor(max_workers=2 * max(1, sc.defaultParallelism) + 2,
                              thread_name_prefix="batch-job")
    try:
        with Progress(sc, out, progress_interval) as prog:
            say = progress or prog.say
            ranges = newline_ranges(splits)
            if ranges:
                say(f"counting lines of {len(ranges)} split points")
                todo = [(os.path.abspath(path), a, b) for path, a, b in ranges]
                if sc.master.startswith("local"):  # a scan at disk speed: cheaper than a job
                    counts = [count_newlines(*r) for r in todo]
                else:
                    counts = sc.parallelize(todo, len(todo)).map(
                        lambda r: count_newlines(*r)).collect()
                splits = with_line_numbers(splits, counts)
            say(f"parsing {len(paths)} input files in {len(splits)} splits")
            parsed = [_submit(pool, sc, lambda s: skeleton(_job(bjob, cwd), s), split)
                      for split in splits]

            def arriving() -> Iterator[Skeleton]:
                for k, future in enumerate(parsed):
                    if k == len(parsed) - 1:
                        say("assembling transactions")
                    yield future.result()
                    parsed[k] = None

            def ready(p: Plan) -> None:
                encoding.append(_encode(pool, sc, bjob, cwd, splits[p.index], p))

            encoding: list[Future] = []
            planned = plan(arriving(), job.rules, job.policy, ready)
            write_trail_defs(settings, definitions)
            result = Result(Stats(), splits=len(splits))
            trail = settings.trail
            trail_dir = os.path.join(output, "trail")
            prefix = os.path.join(trail_dir, os.path.basename(trail.path))
            writer = TrailWriter(prefix, seqlen=trail.seqlen, megabytes=trail.megabytes,
                                 byteorder=trail.byteorder, sync=trail.sync,
                                 extract=trail.extract, uri=trail.uri,
                                 header_path=trail.path)
            writer.open()
            try:
                say(f"encoding {len(planned.plans)} splits")
                dropped: list[int] = []
                error = _append_all(pool, sc, bjob, cwd, splits, planned.plans, encoding,
                                    writer, result, output, say, dropped)
                if error is None and planned.end_error is not None:
                    error = planned.end_error
                writer.flush_durable()
            finally:
                writer.close()
                if "trail" not in formats:  # encoded all the same: the errors are the same
                    shutil.rmtree(trail_dir, ignore_errors=True)
                    result.stats.trail_files.clear()
            if error is not None:
                raise error
            if "trail" in formats:
                result.outputs["trail"] = trail_dir
            for f in formats:
                if f != "trail":
                    say(f"writing {f} rows")
                    _write_rows(spark, staging, output, f, dropped)
                    result.outputs[f] = os.path.join(output, f)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # no task writes to staging afterwards
        bjob.unpersist()
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _submit(pool: ThreadPoolExecutor, sc: Any, fn: Callable[[Any], Any], item: Any) -> Future:
    """A one-task Spark job running ``fn(item)``; its result when done."""
    return pool.submit(lambda: sc.parallelize([item], 1).map(fn).collect()[0])


def _encode(pool: ThreadPoolExecutor, sc: Any, bjob: Any, cwd: str, split: Split,
            plan: Plan) -> Future:
    """The job encoding one planned split (step 3); its ``Encoded`` when done."""
    return _submit(pool, sc, lambda sp: encode_split(_job(bjob, cwd), sp[0], sp[1]),
                   (split, plan))


def _job(bjob: Any, cwd: str) -> Job:
    """The broadcast job inside a task, in the driver's working directory (before the parser is
    rebuilt: it may read copybooks or definitions by relative path)."""
    if os.path.isdir(cwd) and os.getcwd() != cwd:
        os.chdir(cwd)
    return bjob.value


def _check_output(output: str, formats: tuple[str, ...]) -> None:
    for sub in ("trail", "errors", *formats):
        d = os.path.join(output, sub)
        if os.path.isdir(d) and os.listdir(d):
            raise SourceError("output exists and is not empty; remove it or choose another "
                              "--output", url=d)


def _append_all(pool: ThreadPoolExecutor, sc: Any, bjob: Any, cwd: str, splits: list[Split],
                plans: list[Plan], encoding: list[Future], writer: Any, result: Result,
                output: str, say: Callable[[str], None],
                dropped: list[int]) -> MsgcapError | None:
    """Encode the planned splits in tasks and append their bytes in order; the stopping error.

    ``dropped`` gets the splits whose tail rows belong to a transaction that failed to encode.
    A split's bytes are valid when its plan's transaction count and head error match what was
    actually written before it; otherwise (a transaction failed to encode under ``discard``) it
    and the splits after it are encoded again with corrected plans.
    """
    planned_txnum = {p.index: p.txnum for p in plans}
    pending: list[bytes] = []  # encoded parts of the transaction open across splits
    pending_splits: list[int] = []  # the splits they come from
    pending_error: str | None = None
    discards: TextIO | None = None
    stats = result.stats
    work = list(plans)

    def encode(todo: list[Plan]) -> list[Future]:
        return [_encode(pool, sc, bjob, cwd, splits[p.index], p) for p in todo]

    results = encoding
    i = 0
    try:
        while i < len(results):
            r = results[i].result()
            results[i] = None  # its bytes are appended below: not kept
            if r.txnum != writer.txnum or r.head_error != pending_error:
                say(f"encoding splits {r.index}-{splits[-1].index} again (a transaction "
                    "failed to encode)")
                moved = planned_txnum[r.index] - writer.txnum
                redo = [Plan(p.index, p.state, planned_txnum[p.index] - moved, p.last_id,
                             p.stop, pending_error if k == 0 else None)
                        for k, p in enumerate(work[i:])]
                work = work[:i] + redo
                for future in results[i + 1:]:  # they write the same staging files
                    future.exception()
                results = results[:i] + encode(redo)
                continue
            if r.discards:
                if discards is None:
                    d = os.path.join(output, "errors")
                    os.makedirs(d, exist_ok=True)
                    result.discard_file = os.path.join(d, "discarded.jsonl")
                    discards = open(result.discard_file, "a", encoding="utf-8")  # noqa: SIM115
                discards.write(r.discards)
            _merge(stats, r.stats)
            data = b""
            if r.data is not None:
                with open(r.data, "rb") as fh:
                    data = fh.read()
            view = memoryview(data)
            pos = 0
            ends = r.ends
            if r.head_completed:
                if not r.head_failed:
                    _append(writer, b"".join(pending) + view[:ends[0]], 1, r.last, stats)
                    pos = ends[0]
                    ends = ends[1:]
                else:
                    dropped.extend(pending_splits)
                pending, pending_splits, pending_error = [], [], None
            _append_group(writer, view, ends, pos, r.last, stats)
            if ends:
                pos = ends[-1]
            if r.tail:
                pending.append(bytes(view[pos:r.size]))
                pending_splits.append(r.index)
            if r.tail_error is not None:
                pending_error = r.tail_error
            if r.error is not None:
                return MsgcapError(r.error) if r.fatal else MessageError(r.error)
            i += 1
    finally:
        if discards is not None:
            discards.close()
    return None


def _append(writer: Any, data: Any, transactions: int,
            last: tuple[str | None, int | None, str | None], stats: Stats) -> None:
    writer.append_encoded(data, transactions=transactions, last_seqid=last[0],
                          last_audit_pos=last[1], last_txid=last[2])
    position = writer.position
    if not stats.trail_files or stats.trail_files[-1] != position.file:
        stats.trail_files.append(position.file)
    stats.last_position = position


def _append_group(writer: Any, view: memoryview, ends: Any, pos: int,
                  last: tuple[str | None, int | None, str | None], stats: Stats) -> None:
    """Append whole transactions ending at ``ends``: as many at once as fit the current file,
    so that the writer rolls over before the same transaction as when it gets them one by one."""
    i, n = 0, len(ends)
    while i < n:
        room = writer.limit - writer.position.rba
        j = bisect.bisect_right(ends, pos + room, i) - 1
        j = max(j, i)
        _append(writer, view[pos:ends[j]], j - i + 1, last, stats)
        pos = ends[j]
        i = j + 1


def _merge(total: Stats, part: Stats) -> None:
    total.messages += part.messages
    total.duplicates += part.duplicates
    total.discarded += part.discarded
    total.transactions += part.transactions
    total.skipped_transactions += part.skipped_transactions
    total.body_size += part.body_size
    for key, n in part.operations.items():
        total.operations[key] = total.operations.get(key, 0) + n
    if part.last_commit_us is not None:
        total.last_commit_us = part.last_commit_us


def _write_rows(spark: Any, staging: str, output: str, fmt: str, dropped: list[int]) -> None:
    """The staged operation rows as a table partitioned by table name (parquet or json)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType([
        StructField("source_file", StringType()), StructField("position", LongType()),
        StructField("txid", StringType()), StructField("seqid", StringType()),
        StructField("commit_us", LongType()), StructField("table", StringType()),
        StructField("op", StringType()), StructField("transind", IntegerType()),
        StructField("after", MapType(StringType(), StringType())),
        StructField("before", MapType(StringType(), StringType())),
        StructField("null_columns", ArrayType(StringType())),
        StructField("missing_columns", ArrayType(StringType())),
        StructField("tail_of", IntegerType()),
    ])
    target = os.path.abspath(os.path.join(output, fmt))  # the JVM has its own working dir
    files = sorted(os.path.join(staging, n) for n in os.listdir(staging)
                   if n.startswith("rows-"))
    if files:
        df = spark.read.schema(schema).json(files)
    else:
        df = spark.createDataFrame([], schema)
    if dropped:
        df = df.where(F.col("tail_of").isNull() | ~F.col("tail_of").isin(dropped))
    df = (df.withColumn("commit_time", F.timestamp_micros("commit_us"))
          .select("source_file", "position", "txid", "seqid", "commit_time", "table", "op",
                  "transind", "after", "before", "null_columns", "missing_columns"))
    writer = df.write.mode("overwrite").partitionBy("table")
    if fmt == "parquet":
        writer.parquet(target)
    else:
        writer.json(target)
