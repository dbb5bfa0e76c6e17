"""Pass 2, in the tasks: a planned segment's transactions, framed into trail bytes.

Nothing is parsed again: the operations come back from pass 1's skeleton and payload, and run
through the real ``Pipeline`` from the plan's state into a sink that keeps the bytes, as replay
runs them into its trail writer: the common message by the compiled path
(``Assembler.encode_whole``), the others by the general one (``TrailEncoder``), with transaction
numbers from the plan. A transaction open at the segment's end is framed as a part
(``last=False``); one open at its start completes first (``first=False``). The bytes go back to
the driver (``Encoded``), which appends them in order; ``--format`` rows come from a second run
of the same code (the general path: rows are made from the records).
"""

from __future__ import annotations

import io
import os
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import TextIO

from msgcap.assembler import Assembler, ImageRecords, ImageRules
from msgcap.batch.inputs import InputFile
from msgcap.batch.parse import (
    BAD,
    FATAL,
    Job,
    Parsed,
    Skeleton,
    no_gc,
    read_spooled,
    rebuilt,
    spool,
)
from msgcap.batch.plan import Plan, message_name
from msgcap.batch.rows import RowBody, transaction_rows
from msgcap.batch.segments import SegmentKey, label, message_of, resolve
from msgcap.msgid import IdWidthError, MessageIds
from msgcap.pipeline import DiscardFile, Pipeline, Stats
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.records import Position, TrailRecord, TrailTransaction
from msgcap.trail.writer import check_records
from parsers.model import Message, Op
from props.errors import MessageError, MsgcapError


@dataclass(slots=True)
class Encoded:
    """What pass 2 returns for one segment.

    ``ends``: where each complete transaction of ``data`` ends; ``head_completed`` /
    ``head_failed``: the transaction open at the start was completed here / failed to encode;
    ``tail``: ``data`` ends with a part of a transaction still open (``tail_error``: framing it
    failed); ``last``: the writer's mark of the last transaction; ``discarded``: the messages
    rejected under ``discard`` (``Discards``); ``error``: where the job stops.
    ``data`` is zlib-compressed when the job says so (``Job.compress``), or left in the file
    ``spooled`` (``spool``).
    """

    key: SegmentKey
    txnum: int  # the plan's transactions before this segment
    head_error: str | None
    data: bytes
    ends: array
    head_completed: bool
    head_failed: bool
    tail: bool
    tail_error: str | None
    last: tuple[str | None, int | None, str | None]
    stats: Stats
    discarded: list[Discarded]
    error: str | None
    fatal: bool = False
    spooled: str | None = None
    size: int = 0  # of the spooled bytes

    def spool(self, directory: str) -> None:
        """Leave the framed bytes in a new file of ``directory``, for a driver on this machine
        to read (``framed``), instead of sending them through Spark: a local master's task
        results cross the JVM twice and are copied on the way (tens of MB a segment)."""
        self.spooled = spool(directory, f"framed-{self.key[0]}-{self.key[1]}-", self.data)
        self.size, self.data = len(self.data), b""

    def framed(self, compressed: bool) -> bytes:
        """The framed bytes, wherever they are (a spool file is removed once read)."""
        if self.spooled is None:
            return zlib.decompress(self.data) if compressed else self.data
        data = read_spooled(self.spooled, self.size, f"the trail bytes of segment {self.key}")
        os.remove(self.spooled)
        return data


class Noted(ImageRecords):
    """The record builder of pass 2 with ``--format``: the image rules' records, each
    operation's row body from pass 1 (``current``, by the operation's identity) noted against
    its main record, with where its message is."""

    __slots__ = ("bodies", "current", "where")

    def __init__(self, rules: ImageRules, bodies: dict[int, tuple[RowBody, str, int]]) -> None:
        super().__init__(rules)
        self.bodies = bodies
        self.current: dict[int, RowBody | None] = {}
        self.where = ("", 0)

    def __call__(self, op: Op, seqid: str) -> list[TrailRecord]:
        out = super().__call__(op, seqid)
        body = self.current.get(id(op))
        if body is not None:
            self.bodies[id(out[-1])] = (body, *self.where)
        return out


class Sink:
    """The pipeline's writer in a task: frames transactions and keeps where each ends."""

    def __init__(self, encoder: TrailEncoder, plan: Plan, bodies: dict | None) -> None:
        self.encoder = encoder  # with ``txnum`` and ``append_whole``: the compiled path's
        self.txnum = plan.txnum
        self.chunks: list[bytes] = []
        self.size = 0
        self.ends = array("q")
        held = plan.state.open
        self.head_open = held is not None and not held.skipping
        self.head_error = plan.head_error
        self.head_done = False
        self.head_failed = False
        self.last: tuple[str | None, int | None, str | None] = (None, None, None)
        # the mark of the compiled path's first transaction (see ``append_whole``)
        self.first: tuple[str, int] | None = None
        self.bodies = bodies
        self.rows: list[tuple] = []
        self.tail_rows: list[tuple] = []

    def framed(self, walk: bool = True) -> bytes:
        """The framed bytes, every record walked here, where it scales (the driver's writer
        checks only their ends: ``append_encoded(checked=True)``). ``walk`` False: only
        records of the compiled path, which replay appends unwalked too."""
        framed = b"".join(self.chunks)
        if framed and walk:
            check_records(framed, self.encoder.byteorder, partial=True)
        return framed

    def write_records(self, tx: TrailTransaction, *, first: bool, last: bool) -> Position:
        """Never called: a batch pipeline has no ``stream_at``, its transactions stay whole."""
        raise NotImplementedError("a batch pipeline does not stream transactions")

    def write_transaction(self, tx: TrailTransaction) -> Position:
        head = self.head_open and not self.head_done
        if head:  # the transaction open at the segment's start: it completes first
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
        self.chunks.append(data)
        self.size += len(data)
        if self.bodies is not None:
            self.rows.extend(transaction_rows(tx, not head, True, self.bodies))
        self.ends.append(self.size)
        rec = tx.records[-1]
        self.last = (rec.seqid, rec.audit_pos, tx.txid)  # the writer's mark
        return Position(0, self.size, "")

    def append_whole(self, data: bytes, last_seqid: str, last_audit_pos: int,
                     last_txid: str) -> Position:
        """``TrailWriter.append_whole``: a whole transaction the compiled path encoded as
        transaction ``txnum + 1`` (never the head: a transaction is open there)."""
        self.txnum += 1
        self.chunks.append(data)
        self.size += len(data)
        self.ends.append(self.size)
        if self.first is None:  # (the mark of its last record: its first, if it has one)
            self.first = (last_seqid, last_audit_pos)
        self.last = (last_seqid, last_audit_pos, last_txid)
        return Position(0, self.size, "")

    def append_wholes(self, wholes: list[tuple[bytes, str, int, str]]
                      ) -> tuple[Position, list[str]]:
        """``TrailWriter.append_wholes``: ``append_whole`` of each, at once (no trail files
        here)."""
        if not wholes:
            return Position(0, self.size, ""), []
        data = [w[0] for w in wholes]
        self.chunks.extend(data)
        ends = accumulate(map(len, data), initial=self.size)
        next(ends)  # (the initial size: where the one before ends)
        self.ends.extend(ends)
        self.size = self.ends[-1]
        self.txnum += len(wholes)
        if self.first is None:
            self.first = (wholes[0][1], wholes[0][2])
        last = wholes[-1]
        self.last = (last[1], last[2], last[3])
        return Position(0, self.size, ""), []

    def tail(self, asm: Assembler) -> str | None:
        """Frame the records of the transaction still open; its error text when it fails."""
        records = asm.open_records
        held = asm.state().open
        if not records or held is None:
            return None
        head = self.head_open and not self.head_done
        tx = TrailTransaction(held.txid, records, held.txname, held.txowner)
        try:
            data = self.encoder.encode_transaction(tx, self.txnum + 1, first=not head,
                                                   last=False)
        except MessageError as exc:
            return str(exc)
        self.chunks.append(data)
        self.size += len(data)
        if self.bodies is not None:
            self.tail_rows.extend(transaction_rows(tx, not head, False, self.bodies))
        return None


# a discarded message: its line index in the segment, the error's reason, source, position
Discarded = tuple[int, str, str | None, str | None]


class Discards:
    """The pipeline's discard file in a task: only where each rejected message is and why.
    Pass 1 keeps no raw lines; the driver reads the few it needs again and writes the records
    (``discard_records``)."""

    def __init__(self, numbers: array) -> None:
        self.numbers = numbers
        self.index = 0  # the message the pipeline is taking
        self.found: list[Discarded] = []

    def write(self, message: Message, error: MessageError, *, raw_id: str | None = None) -> None:
        self.found.append((self.numbers[self.index], error.reason, error.source,
                           error.position))

    def close(self) -> None:
        pass


class _DiscardText(DiscardFile):
    """Discard records written to a string (the driver appends them to the file in order)."""

    def __init__(self) -> None:
        super().__init__("<batch>")
        self.buffer = io.StringIO()

    def _open(self) -> TextIO:
        return self.buffer


def discard_records(file: InputFile, first_line: int, discarded: list[Discarded],
                    lines: dict[int, bytes]) -> str:
    """The discard file's records of a segment's ``discarded`` messages, as replay writes them,
    from their raw ``lines`` (by line index) read again."""
    out = _DiscardText()
    for number, reason, source, position in discarded:
        message = message_of(file, lines[number], label(number, first_line))
        assert message is not None  # a discarded message is not a blank line
        out.write(message, MessageError(reason, source=source, position=position),
                  raw_id=message.id)
    return out.buffer.getvalue()


def encode_partition(job: Job, plans: dict[SegmentKey, Plan],
                     parsed: Iterable[Parsed]) -> list[Encoded]:
    """Pass 2 over one task's segments that have a plan (``sc.runJob``)."""
    out = []
    for p in parsed:
        plan = plans.get(p.summary.key)
        if plan is not None:
            encoded = encode_segment(job, p, plan)[0]
            if job.spool is not None:
                encoded.spool(job.spool)
            out.append(encoded)
    return out


def rows_partition(job: Job, plans: dict[SegmentKey, Plan], dropped: frozenset[SegmentKey],
                   parsed: Iterable[Parsed]) -> Iterator[tuple]:
    """The ``--format`` rows of one task's planned segments; tail rows of a segment in
    ``dropped`` belong to a transaction that failed to encode later and are left out."""
    for p in parsed:
        plan = plans.get(p.summary.key)
        if plan is not None:
            _, rows, tail_rows = encode_segment(job, p, plan, rows=True)
            yield from rows
            if p.summary.key not in dropped:
                yield from tail_rows


def encode_segment(job: Job, parsed: Parsed, plan: Plan, *,
                   rows: bool = False) -> tuple[Encoded, list[tuple], list[tuple]]:
    """Pass 2 of one segment: the Encoded, and with ``rows`` the rows of its complete
    transactions and of its tail part."""
    with no_gc():  # loading makes millions of objects: without GC passes over them
        return _encode_segment(job, parsed, plan, rows)


def _encode_segment(job: Job, parsed: Parsed, plan: Plan,
                    rows: bool) -> tuple[Encoded, list[tuple], list[tuple]]:
    summary = parsed.summary
    sk = Skeleton.load(parsed.skeleton)
    pl = parsed.load_payload(job.compress)
    file = job.files[summary.key[0]]
    first_line = plan.first_line
    bodies: dict | None = {} if rows else None
    noted = Noted(job.rules, bodies) if bodies is not None else None
    asm = Assembler(job.rules, records=noted)
    asm.resume(plan.state)
    sink = Sink(TrailEncoder(job.byteorder, job.partition), plan, bodies)
    discards = Discards(sk.numbers)
    pipeline = Pipeline(job.parser, asm, sink, MessageIds(job.id_mode), policy=job.policy,
                        discard=discards)
    pipeline.compiled = noted is None  # rows are made from the records
    complete, whole = pipeline.complete, pipeline.write_whole
    stats = pipeline.stats
    stats.body_size = summary.body_size
    tables = job.tables()
    headers: dict[str, str] = {}
    errors, values = pl.errors, pl.values
    bodies_of = pl.rows
    stop, width_at = plan.stop, plan.width_at
    shapes, numbers = sk.shapes, sk.numbers
    error: str | None = None
    fatal = False
    try:
        for index, kind in enumerate(sk.kinds):
            if stop is not None and index > stop:
                break
            ops = ([rebuilt(tables[shape[0]], shape, kept)
                    for shape, kept in zip(shapes[index], values(index), strict=True)]
                   if kind != BAD and kind != FATAL else [])
            if ops and index != width_at and whole(ops):  # the compiled path (not with rows)
                stats.messages += 1
                continue
            number = numbers[index]
            name = message_name(file, number, first_line)
            if index == width_at:
                assert summary.first_id is not None  # width_at is the first id's message
                raise IdWidthError.between(name, plan.last_id, summary.first_id[1])
            if kind == FATAL:
                raise MsgcapError(resolve(errors[index], first_line))
            discards.index = index
            message = Message("", headers, "", None, name)
            if kind == BAD:
                stats.messages += 1
                reason, source, position = errors[index]
                pipeline.reject(message, MessageError(
                    reason, source=resolve(source, first_line) if source else name,
                    position=position), "")
                continue
            if noted is not None:
                noted.where = (file.name, first_line + number if number >= 0 else 1)
                noted.current = ({id(op): body for op, body in zip(ops, bodies_of[index],
                                                                   strict=True)}
                                 if bodies_of is not None else {})
            complete(message, "", ops)
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
    framed = sink.framed()
    encoded = Encoded(summary.key, plan.txnum, plan.head_error,
                      zlib.compress(framed, 1) if job.compress else framed,
                      sink.ends, sink.head_done, sink.head_failed, tail, tail_error, sink.last,
                      stats, discards.found, error, fatal)
    return encoded, sink.rows, sink.tail_rows
