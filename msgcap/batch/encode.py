"""Pass 2, in the tasks: a planned segment's transactions, framed into trail bytes.

Nothing is parsed again: the operations come back from pass 1's skeleton, their records (columns
already encoded) from its payload, and run through the real ``Pipeline`` from the plan's state
into a sink that frames each transaction with ``TrailEncoder`` and transaction numbers from the
plan. A transaction open at the segment's end is framed as a part (``last=False``); one open at
its start completes first (``first=False``). The bytes go back to the driver (``Encoded``),
which appends them in order; ``--format`` rows come from a second run of the same code.
"""

from __future__ import annotations

import io
import os
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Any, TextIO

from msgcap.assembler import Assembler
from msgcap.batch.inputs import InputFile
from msgcap.batch.parse import (
    BAD,
    FATAL,
    ONE,
    Job,
    Parsed,
    Skeleton,
    no_gc,
    read_spooled,
    spool,
)
from msgcap.batch.plan import Plan, message_name
from msgcap.batch.rows import RowBody, transaction_rows
from msgcap.batch.segments import SegmentKey, label, message_of, resolve
from msgcap.msgid import IdWidthError, MessageIds
from msgcap.pipeline import DiscardFile, Pipeline, Stats
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.records import TRANSIND_WHOLE, Position, TrailRecord, TrailTransaction
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


class Prebuilt:
    """The record builder of pass 2: each operation's records as pass 1 built them, with the
    seqid the assembler gives; rows' bodies are noted against each operation's main record."""

    __slots__ = ("bodies", "current", "where")

    def __init__(self, bodies: dict[int, tuple[RowBody, str, int]] | None) -> None:
        self.current: dict[int, tuple[Any, bool, RowBody | None]] = {}
        self.bodies = bodies
        self.where = ("", 0)

    def __call__(self, op: Op, seqid: str) -> list[TrailRecord]:
        entry, failing, body = self.current[id(op)]
        if failing:
            raise MessageError(entry[0], position=entry[1])
        table = op.table
        out = [TrailRecord(table, iotype, ba, io_time, seqid, audit_pos, None, None,
                           data if type(data) is bytes
                           else MessageError(data[0], position=data[1]))
               for iotype, ba, io_time, audit_pos, data in entry]
        if self.bodies is not None and body is not None:
            self.bodies[id(out[-1])] = (body, *self.where)
        return out


class Sink:
    """The pipeline's writer in a task: frames transactions and keeps where each ends."""

    def __init__(self, encoder: TrailEncoder, plan: Plan, bodies: dict | None) -> None:
        self.encoder = encoder
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
        self.bodies = bodies
        self.rows: list[tuple] = []
        self.tail_rows: list[tuple] = []

    def framed(self) -> bytes:
        """The framed bytes, every record walked here, where it scales (the driver's writer
        checks only their ends: ``append_encoded(checked=True)``)."""
        framed = b"".join(self.chunks)
        if framed:
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

    def write_single(self, table: Any, txid: str, seqid: str, txname: str | None,
                     txowner: str | None, iotype: int, before_after: str, io_time: int,
                     audit_pos: int, data: Any) -> None:
        """``write_transaction`` of a transaction of one prebuilt record (not the head), framed
        without building it (``data``: its encoded columns, or the error encoding raised)."""
        encoder = self.encoder
        tb, u = encoder.transaction_tokens(txid, txname, txowner)
        if type(data) is not bytes:
            raise MessageError(data[0], position=data[1])
        out = encoder.frame(table, iotype, before_after, io_time, seqid, audit_pos, data,
                            encoder.tail(tb, seqid, u), (self.txnum + 1) & 0xFFFFFFFF,
                            TRANSIND_WHOLE)
        self.txnum += 1
        self.chunks.append(out)
        self.size += len(out)
        self.ends.append(self.size)
        self.last = (seqid, audit_pos, txid)

    def write_wholes(self, asm: Assembler, op: Op, count: int, records: tuple, at: int) -> int:
        """``write_single`` of ``count`` messages in a row whose operations are of ``op``'s
        shape (their records from index ``at`` of ``records``), as far as they frame in the
        common case; how many did (the next one takes ``write_single``)."""
        txids, seqids = asm.single_ids(op, count)
        framed = self.encoder.frame_wholes(op.table, txids, seqids, records, at, self.txnum + 1)
        done = len(framed)
        if done:
            asm.took_singles(op, done, seqids[done - 1])
            self.chunks.extend(framed)
            self.ends.extend(islice(accumulate(map(len, framed), initial=self.size), 1, None))
            self.size = self.ends[-1]
            self.txnum += done
            self.last = (seqids[done - 1], records[3][at + done - 1], txids[done - 1])
        return done

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
    builder = Prebuilt(bodies)
    current = builder.current
    asm = Assembler(job.rules, records=builder)
    asm.resume(plan.state)
    next_single = asm.next_single
    sink = Sink(TrailEncoder(job.byteorder), plan, bodies)
    discards = Discards(sk.numbers)
    pipeline = Pipeline(job.parser, asm, sink, MessageIds(job.id_mode), policy=job.policy,
                        discard=discards)
    stats = pipeline.stats
    stats.body_size = summary.body_size
    tables = job.tables()
    headers: dict[str, str] = {}
    errors, layouts, records = pl.errors, pl.layouts, pl.records
    iotypes, before_after, io_times, audit_pos, data = (
        records.iotypes, records.before_after, records.io_times, records.audit_pos,
        records.data)
    bodies_of = pl.rows
    stop, width_at = plan.stop, plan.width_at
    # the messages the true run takes as one whole transaction of one record, framed directly
    singles = pl.singles.get(plan.trial or "", b"") if not rows else b""
    single_ops: dict[int, Op] = {}  # by id of the shape: its operation, made once
    kinds, shapes = sk.kinds, sk.shapes
    columns = (iotypes, before_after, io_times, audit_pos, data)
    error: str | None = None
    fatal = False
    at = 0  # the first record of the message
    taken = 0  # the messages before this index were framed in a run (``Sink.write_wholes``)
    try:
        for index, kind in enumerate(kinds):
            if index < taken:
                continue
            if stop is not None and index > stop:
                break
            layout = _ONE if kind == ONE else layouts.get(index)
            if index < len(singles) and singles[index] and layout == _ONE:
                shape = shapes[index]
                op = single_ops.get(id(shape))
                if op is None:
                    op = single_ops[id(shape)] = _op(tables, shape[0])
                if kind == ONE and op.txname is None and op.txowner is None:
                    # the run of such messages from here, framed together
                    done = sink.write_wholes(asm, op, _run_length(sk, singles, index, stop),
                                             columns, at)
                    if done:
                        at += done
                        taken = index + done
                        stats.messages += done
                        _committed(stats, op, done, io_times[at - 1])
                        continue
                stats.messages += 1
                txid, seqid = next_single(op)
                r = at
                at += 1
                try:
                    sink.write_single(op.table, txid, seqid, op.txname, op.txowner,
                                      iotypes[r], before_after[r], io_times[r], audit_pos[r],
                                      data[r])
                except MessageError as exc:  # lost, as when replay's writer refuses it
                    name = message_name(file, sk.numbers[index], first_line)
                    discards.index = index
                    pipeline.reject(Message("", headers, "", None, name),
                                    exc.located(name), "")
                    continue
                _committed(stats, op, 1, io_times[r])
                continue
            stats.messages += 1
            number = sk.numbers[index]
            name = message_name(file, number, first_line)
            if index == width_at:
                assert summary.first_id is not None  # width_at is the first id's message
                raise IdWidthError.between(name, plan.last_id, summary.first_id[1])
            if kind == FATAL:
                raise MsgcapError(resolve(errors[index], first_line))
            discards.index = index
            message = Message("", headers, "", None, name)
            if kind == BAD:
                reason, source, position = errors[index]
                pipeline.reject(message, MessageError(
                    reason, source=resolve(source, first_line) if source else name,
                    position=position), "")
                continue
            assert layout is not None  # every OK message has one
            builder.where = (file.name, first_line + number if number >= 0 else 1)
            if current:
                current.clear()
            ops = []
            row_bodies = bodies_of[index] if bodies_of is not None else None
            for k, shape in enumerate(sk.shapes[index]):
                op = _op(tables, shape)
                part = layout[k]
                if type(part) is int:
                    entry: tuple = tuple(records.get(r) for r in range(at, at + part))
                    at += part
                else:
                    entry = part
                current[id(op)] = (entry, type(part) is not int,
                                   row_bodies[k] if row_bodies is not None else None)
                ops.append(op)
            pipeline.accept(message, "", ops)
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


def _run_length(sk: Skeleton, singles: bytes, index: int, stop: int | None) -> int:
    """How many messages from ``index`` on are taken as single transactions of the same shape
    and kind ONE (the run ``Sink.write_wholes`` frames together), up to ``stop``."""
    kinds, shapes = sk.kinds, sk.shapes
    limit = singles.find(0, index)
    limit = len(singles) if limit < 0 else limit
    if stop is not None:
        limit = min(limit, stop + 1)
    shape, end = shapes[index], index + 1
    while end < limit and kinds[end] == ONE and shapes[end] is shape:
        end += 1
    return end - index


def _committed(stats: Stats, op: Op, transactions: int, commit_us: int) -> None:
    """``transactions`` single transactions of ``op``'s shape written, the last at
    ``commit_us``."""
    stats.transactions += transactions
    key = (op.table.name, op.optype)
    stats.operations[key] = stats.operations.get(key, 0) + transactions
    stats.last_commit_us = commit_us


_ONE = (1,)  # the layout of a message of kind ONE: one operation of one record


def _op(tables: dict[str, Any], shape: tuple) -> Op:
    """The operation of a shape (pass 2 needs no values: its records are built)."""
    t, optype, seqid, txid, txind, txname, txowner, ordinal, _ = shape
    return Op(tables[t], optype, 0, seqid, txid, txind, txname, txowner, None, None, ordinal)
