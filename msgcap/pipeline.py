"""The one path a message takes: id → parser → assembler → trail writer, with ``error.policy``.

Replay, the live capture and the Spark batch driver all run ``Pipeline.process`` per message, so
the error policy (properties.md §10.4), the discard file and the statistics that reports and
summaries print (§11) behave the same everywhere. The pipeline does not fsync or acknowledge:
it returns what was written and which messages each transaction releases, and the caller applies
``trail.sync`` and acknowledges (the capture loop) or just closes the writer (replay).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Protocol, TextIO, runtime_checkable

from gendef.durable import fsync_parent
from msgcap import dumps
from msgcap.assembler import Assembled, Assembler, ImageRules, Outcome, Restart
from msgcap.msgid import MessageIds
from msgcap.trail.records import Position, TrailTransaction
from parsers.base import Parser
from parsers.model import Message, Op
from props.errors import MessageError, SourceError
from props.jmsnames import ABSENT, header_key

if TYPE_CHECKING:
    from gendef.model import Definitions
    from msgcap.trail.encoder import TrailEncoder
    from msgcap.trail.writer import Recovery
    from props.settings import ErrorPolicy, Settings

OP_LABELS = {"I": "insert", "U": "update", "D": "delete", "T": "truncate"}


class Writer(Protocol):
    """What the pipeline needs of ``msgcap.trail.writer.TrailWriter``."""

    def write_transaction(self, tx: TrailTransaction) -> Position: ...

    def write_records(self, tx: TrailTransaction, *, first: bool, last: bool) -> Position: ...


@runtime_checkable
class WholeWriter(Writer, Protocol):
    """A writer the compiled path writes into: ``TrailWriter``, and the Spark batch's tasks,
    which frame in a buffer (``msgcap.batch.encode.Sink``)."""

    encoder: TrailEncoder
    txnum: int

    def append_whole(self, data: bytes, last_seqid: str, last_audit_pos: int,
                     last_txid: str) -> Position: ...

    def append_wholes(self, wholes: list[tuple[bytes, str, int, str]]
                      ) -> tuple[Position, list[str]]: ...


# Messages ``Pipeline.process_many`` parses ahead: enough for each stage's code to stay hot, few
# enough for their parsed values to stay in the CPU caches until they are written (a batch of
# 64 ebcdic records in bench_fixed.py: about 0.1 MB; 256 cost a tenth more CPU per record).
AHEAD = 64

# The headers of a message's group and its number in the group (props/jmsnames.py), which
# every record of the message carries as user tokens.
GROUP_HEADER, GROUP_SEQ_HEADER = header_key("JMSXGroupID"), header_key("JMSXGroupSeq")


def grouped(message: Message, ops: list[Op]) -> None:
    """Give ``ops`` the message's group and its number in the group, if it has one: the order
    tokens of their records (trail-format.md §10), from a broker or a dump's headers alike."""
    group = message.headers.get(GROUP_HEADER)
    if group:
        seq = message.headers.get(GROUP_SEQ_HEADER)
        if seq == ABSENT[GROUP_SEQ_HEADER]:  # JMS's "no number"
            seq = None
        for op in ops:
            op.group, op.group_seq = group, seq


_COUNTER = {"counter": True}  # a Stats field that intervals subtract and parts add


@dataclass(slots=True)
class Stats:
    """Counters since start; ``copy()`` + ``since(earlier)`` give the interval of a report.

    ``body_size`` counts characters of text bodies and bytes of byte bodies (throughput figures).
    ``transactions`` and ``last_position`` count what was written; ``durable_*`` what was
    fsynced (and checkpointed) as well, which is all a crash or a full disk leaves: summaries
    and reports show both.
    """

    messages: int = field(default=0, metadata=_COUNTER)
    duplicates: int = field(default=0, metadata=_COUNTER)
    discarded: int = field(default=0, metadata=_COUNTER)
    transactions: int = field(default=0, metadata=_COUNTER)
    skipped_transactions: int = field(default=0, metadata=_COUNTER)
    operations: dict[tuple[str, str], int] = field(default_factory=dict)
    body_size: int = field(default=0, metadata=_COUNTER)
    trail_files: list[str] = field(default_factory=list)
    last_position: Position | None = None
    last_commit_us: int | None = None  # source commit time of the last transaction written
    durable_transactions: int = 0
    durable_commit_us: int | None = None  # wall time a transaction was last made durable
    durable_position: Position | None = None
    heartbeat_us: int | None = None  # wall time of the capture loop's last heartbeat

    @property
    def total_operations(self) -> int:
        return sum(self.operations.values())

    def copy(self) -> Stats:
        return replace(self, operations=dict(self.operations),
                       trail_files=list(self.trail_files))

    def since(self, earlier: Stats) -> Stats:
        """The counts of the interval after ``earlier`` (positions are this one's)."""
        ops = {k: v - earlier.operations.get(k, 0) for k, v in self.operations.items()}
        return replace(self, **{n: getattr(self, n) - getattr(earlier, n) for n in _COUNTERS},
                       operations={k: v for k, v in ops.items() if v},
                       trail_files=[f for f in self.trail_files if f not in earlier.trail_files])

    def add(self, part: Stats) -> None:
        """Count ``part`` (the stats of a part of the input, a batch task's) into these."""
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(part, name))
        for key, n in part.operations.items():
            self.operations[key] = self.operations.get(key, 0) + n
        if part.last_commit_us is not None:
            self.last_commit_us = part.last_commit_us

    def summary(self) -> str:
        """The multi-line summary replay prints and reports reuse."""
        lines = [(f"messages {self.messages}  duplicates {self.duplicates}  "
                  f"discarded {self.discarded}  transactions {self.transactions}  "
                  f"operations {self.total_operations}")]
        tables: dict[str, dict[str, int]] = {}
        for (table, optype), n in sorted(self.operations.items()):
            tables.setdefault(table, {})[optype] = n
        width = max((len(t) for t in tables), default=0)
        for table, counts in tables.items():
            parts = "  ".join(f"{OP_LABELS.get(o, o)} {counts[o]}"
                              for o in ("I", "U", "D", "T") if o in counts)
            lines.append(f"  {table.ljust(width)}  {parts}")
        if self.trail_files:
            lines.append("trail files: " + " ".join(self.trail_files))
        else:
            lines.append("trail files: no transaction written")
        if self.durable_position is not None:
            lines.append(self.trail_status())
        return "\n".join(lines)

    def trail_status(self) -> str:
        """Where the trail is durable and, when more was written, where it was written to."""
        line = (f"trail durable: {_at(self.durable_position)} "
                f"({self.durable_transactions} transactions)")
        written = self.last_position
        if self.transactions != self.durable_transactions or (
                written is not None and written != self.durable_position):
            pending = self.transactions - self.durable_transactions
            line += (f"; written: {_at(written)} ({pending} more transactions, not durable: "
                     "their messages were not acknowledged)")
        return line


_COUNTERS = tuple(f.name for f in fields(Stats) if f.metadata.get("counter"))


def _at(position: Position | None) -> str:
    return f"{position.file or position.seqno} RBA {position.rba}" if position else "none"


@dataclass(slots=True)
class Processed:
    """What one message did.

    ``written``: transactions it completed, each as the messages it releases for
    acknowledgement once durable and the position the writer returned. ``ack_now``: the message
    itself needs no durable trail data (no operations, a duplicate, or discarded — after the
    discard record).
    """

    written: list[tuple[list[Message], Position]] = field(default_factory=list)
    ack_now: bool = False
    duplicate: bool = False
    discarded: MessageError | None = None


Parsed = tuple[Message, str, list[Op] | Exception]  # a message, its raw id, what parsing gave


class Discards(Protocol):
    """Where ``error.policy=discard`` puts a bad message: ``write`` returns once it is kept
    (the capture then acknowledges it). ``DiscardFile``, or the dead-letter destination
    (``msgcap.sources.broker.DeadLetters``)."""

    def write(self, message: Message, error: MessageError, *,
              raw_id: str | None = None) -> None: ...

    def close(self) -> None: ...


class DiscardFile:
    """``error.file``: one JSON line per discarded message (§10.4), opened on first use.

    ``sync=True`` fsyncs each record, so a discarded message can be acknowledged right after.
    """

    def __init__(self, path: str, *, sync: bool = False) -> None:
        self.path = path
        self.sync = sync
        self._fh: TextIO | None = None

    def write(self, message: Message, error: MessageError, *, raw_id: str | None = None) -> None:
        record = {
            "time": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "error": error.reason,
            "position": error.position,
            "source": error.source or message.name,
            "message": dumps.entry(message, id=raw_id),
        }
        fh = self._open()
        try:
            fh.write(dumps.dumps_line(record))
            fh.flush()
            if self.sync:
                os.fsync(fh.fileno())
        except OSError as exc:
            self._fh = None  # closing retries the failed write, which fails as it did
            with contextlib.suppress(OSError):
                fh.close()
            raise SourceError(f"cannot write the discard file: {exc.strerror}",
                              url=self.path) from None

    def _open(self) -> TextIO:
        if self._fh is None:
            try:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                self._fh = open(self.path, "a", encoding="utf-8", newline="\n")  # noqa: SIM115
                if self.sync:
                    fsync_parent(self.path)  # a new file's name, before its first record counts
            except OSError as exc:
                raise SourceError(f"cannot open the discard file: {exc.strerror}",
                                  url=self.path) from None
        return self._fh

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Pipeline:
    """Runs messages through ids, parser, assembler and writer under one error policy.

    ``policy`` is ``abend`` (re-raise the located MessageError; the trail keeps exactly the
    transactions written before) or ``discard`` (write the message to ``discard`` and go on).
    Errors that are not MessageErrors (configuration, trail I/O, id width) always propagate.

    ``stream_at`` (the live capture sets it): once the open transaction holds that many records
    they are written as a part (``TrailWriter.write_records``) and dropped, so memory does not
    grow with the transaction; its messages are then released by the caller, not by the
    ``Assembled`` of its end. A part that cannot be encoded stops the run under either policy
    (it holds earlier messages' records). None: transactions are written whole (replay, batch).
    """

    def __init__(self, parser: Parser, assembler: Assembler, writer: Writer, ids: MessageIds,
                 *, policy: ErrorPolicy = "abend", discard: Discards | None = None,
                 stats: Stats | None = None) -> None:
        if policy not in ("abend", "discard"):
            raise ValueError(f"error policy {policy!r}")
        if policy == "discard" and discard is None:
            raise ValueError("discard policy needs a discard file")
        self.parser = parser
        self.assembler = assembler
        self.writer = writer
        self.ids = ids
        self.policy = policy
        self.discard = discard
        self.stats = stats or Stats()
        self.stream_at: int | None = None
        self._trail: WholeWriter | None = None  # the writer of the compiled path
        self.compiled = True

    @property
    def compiled(self) -> bool:
        """Whether the compiled path (``Assembler.encode_whole``) writes the common message:
        by default when the writer takes its bytes (``WholeWriter``: a trail writer, a Spark
        task's sink); False: every message takes the general path (tests compare the two)."""
        return self._trail is not None

    @compiled.setter
    def compiled(self, on: bool) -> None:
        self._trail = self.writer if on and isinstance(self.writer, WholeWriter) else None

    def process(self, message: Message) -> Processed:
        """One message through the pipeline; see ``Processed``."""
        raw_id = message.id
        return self.complete(message, raw_id, self._parse(message))

    def process_many(self, messages: Iterable[Message], batch: int = AHEAD
                     ) -> Iterator[tuple[Message, Processed]]:
        """``process`` of each message, in order, with ids and parsing done a batch ahead."""
        complete = self.complete
        for message, raw_id, parsed in self.parse_ahead(messages, batch):
            yield message, complete(message, raw_id, parsed)

    def consume(self, messages: Iterable[Message], batch: int = AHEAD
                ) -> Iterator[list[tuple[Message, Processed]]]:
        """``process_many`` for a caller that acknowledges nothing (replay), a batch at a time:
        for each batch, the messages the compiled path did not write with their ``Processed``
        (those the general path took: duplicates, discards, spans …).

        The transactions the compiled path encodes in a row go to the writer together
        (``TrailWriter.append_wholes``), before any message of the general path.
        """
        counted, parse, encode = self._counted, self._parse, self.assembler.encode_wholes
        stats = self.stats
        it = iter(messages)
        while chunk := list(islice(it, batch)):  # as ``parse_ahead``
            raw_ids = [m.id for m in chunk]
            results = list(map(parse, chunk))
            general = []
            # the batch is counted at once; an error takes back the messages after its own
            stats.messages += len(chunk)
            stats.body_size += sum(map(len, [m.body for m in chunk]))
            writer = self._trail
            k = 0
            try:
                while k < len(results):
                    if writer is not None:
                        wholes: list[tuple[bytes, str, int, str]] = []
                        taken = encode(results, k, writer.encoder, writer.txnum + 1, wholes)
                        if wholes:
                            first, k = k, taken - 1  # (a write error counts them all)
                            self._write_wholes(wholes, results[first:taken])  # type: ignore[arg-type]
                            k = taken
                            if k == len(results):
                                break
                    message = chunk[k]
                    general.append((message, counted(message, raw_ids[k], results[k])))
                    k += 1
            except BaseException:
                after = chunk[k + 1:]
                stats.messages -= len(after)
                stats.body_size -= sum(map(len, [m.body for m in after]))
                raise
            yield general

    def parse_ahead(self, messages: Iterable[Message], batch: int = AHEAD) -> Iterator[Parsed]:
        """Each message with its raw id and its ops (or the exception that stopped them), ids and
        parsing done for ``batch`` messages at a time; ``complete`` each in turn.

        The ids depend on the messages alone and the parser is a pure function of a message,
        so running them for the next ``batch`` messages before assembling and writing gives the
        same results (an error met ahead counts at its message's turn), while each stage's code
        stays hot in the CPU caches: replay spends about a fifth less CPU per message. The live
        capture runs it over the messages its source had ready at once.
        """
        it = iter(messages)
        parse = self._parse
        while chunk := list(islice(it, batch)):
            yield from [(message, message.id, parse(message)) for message in chunk]

    def _parse(self, message: Message) -> list[Op] | Exception:
        """The message with its id applied → its ops, or the exception that stopped them
        (raised, or the message rejected, by ``complete`` at the message's turn)."""
        try:
            message.id = self.ids.next_id(message)
            ops = self.parser.parse(message)
        except Exception as exc:  # noqa: BLE001 - deferred to the message's turn, not dropped
            return exc
        grouped(message, ops)
        return ops

    def complete(self, message: Message, raw_id: str, parsed: list[Op] | Exception
                 ) -> Processed:
        """Assemble and write what parsing gave for one message (``parse_ahead``)."""
        stats = self.stats
        stats.messages += 1
        stats.body_size += len(message.body)
        if parsed.__class__ is list and parsed and self._whole(parsed):
            assert stats.last_position is not None  # (written)
            return Processed([([message], stats.last_position)], False, False, None)
        return self._counted(message, raw_id, parsed)

    def _counted(self, message: Message, raw_id: str, parsed: list[Op] | Exception
                 ) -> Processed:
        """``complete`` of a message already counted, by the general path."""
        try:
            if isinstance(parsed, Exception):
                raise parsed
            ops = parsed
        except MessageError as exc:
            return self.reject(message, exc.located(message.name), raw_id)
        return self.accept(message, raw_id, ops)

    def accept(self, message: Message, raw_id: str, ops: list[Op]) -> Processed:
        """``process`` from assembly on, for a message whose id and operations are known (the
        Spark batch parses in an earlier pass); ``raw_id`` is its id before ``jms.id``."""
        try:
            # the common message (one op, one transaction) skips the Outcome
            done = self.assembler.add_single(message, ops[0]) if len(ops) == 1 else None
            outcome = self.assembler.add(message, ops) if done is None else None
        except MessageError as exc:
            return self.reject(message, exc.located(message.name), raw_id)
        if outcome is not None:
            return self._write(message, raw_id, outcome)
        assert done is not None  # (add_single's transaction)
        try:
            position = self.writer.write_transaction(done.tx)
        except MessageError as exc:
            # e.g. a record over the trail's size limit: the whole transaction is lost
            return self.reject(message, exc.located(message.name), raw_id, Processed())
        self._count(done, position)
        return Processed([(done.messages, position)], False, False, None)

    def write_whole(self, ops: list[Op]) -> bool:
        """The compiled path alone, for a message whose ``ops`` are known (the Spark batch's
        pass 2); False: nothing done (``complete`` takes the message). The caller counts it."""
        return self._whole(ops)

    def _whole(self, ops: list[Op]) -> bool:
        """Write the one transaction of a message's ``ops`` by the compiled path, counted;
        False (nothing done) for a message it does not take."""
        writer = self._trail
        if writer is None:
            return False
        done = self.assembler.encode_whole(ops, writer.encoder, writer.txnum + 1)
        if done is None:
            return False
        position = writer.append_whole(done[0], done[1], done[2], done[3])
        self._count_ops(ops)
        self._written(position, ops[-1].timestamp)
        return True

    def _count_ops(self, ops: list[Op]) -> None:
        """Count the operations of a transaction the compiled path wrote."""
        counts = self.stats.operations
        for op in ops:
            key = (op.table.name, op.optype)
            counts[key] = counts.get(key, 0) + 1

    def _write_wholes(self, wholes: list[tuple[bytes, str, int, str]],
                      taken: list[list[Op]]) -> None:
        """Append the transactions the compiled path encoded for the messages of ``taken``
        (``consume``), counted as ``_whole`` counts one."""
        assert self._trail is not None  # (they were encoded for it)
        position, files = self._trail.append_wholes(wholes)
        for ops in taken:
            self._count_ops(ops)
        self._written(position, taken[-1][-1].timestamp, len(wholes), files)

    def refuse(self, message: Message, error: MessageError) -> Processed:
        """A message its source could not read (a malformed spool file): counted, then handled
        by the error policy like a message the parser refuses."""
        self.stats.messages += 1
        self.stats.body_size += len(message.body)
        return self.reject(message, error, message.id)

    def _write(self, message: Message, raw_id: str, outcome: Outcome) -> Processed:
        """Write the transactions a message completed (the general case of ``process``)."""
        stats = self.stats
        result = Processed([], outcome.ack_now, outcome.duplicate, None)
        if outcome.duplicate:
            stats.duplicates += 1
        stats.skipped_transactions += outcome.skipped_transactions
        for done in outcome.completed:
            try:
                if done.streamed:
                    position = self.writer.write_records(done.tx, first=False, last=True)
                else:
                    position = self.writer.write_transaction(done.tx)
            except MessageError as exc:
                return self.reject(message, exc.located(message.name), raw_id, result)
            result.written.append((done.messages, position))
            self._count(done, position)
        if self.stream_at is not None and len(self.assembler.open_records) >= self.stream_at:
            part, first = self.assembler.take_open()
            try:
                self.writer.write_records(part, first=first, last=False)
            except MessageError as exc:
                raise exc.located(message.name) from None
        return result

    def finish(self) -> None:
        """End of a finite input (replay, batch): an open transaction is an error."""
        self.assembler.finish()

    def mark_durable(self, position: Position) -> None:
        """Everything written so far is durable at ``position`` (the caller fsynced it); when
        that includes a new transaction, now is the time of the last durable commit."""
        if self.stats.transactions != self.stats.durable_transactions:
            self.stats.durable_commit_us = time.time_ns() // 1000
        self.stats.durable_position = position
        self.stats.durable_transactions = self.stats.transactions

    def _count(self, done: Assembled, position: Position) -> None:
        counts = self.stats.operations
        done_ops = done.ops
        for key in done_ops:
            counts[key] = counts.get(key, 0) + done_ops[key]
        self._written(position, done.tx.records[-1].io_time)

    def _written(self, position: Position, commit_us: int, transactions: int = 1,
                 files: list[str] | None = None) -> None:
        """``transactions`` more written (their operations counted by the caller), the last
        ending at ``position``, committed at ``commit_us``, in ``files`` (default: the
        position's)."""
        stats = self.stats
        stats.transactions += transactions
        stats.last_position = position
        stats.last_commit_us = commit_us
        trail_files = stats.trail_files
        for file in (position.file,) if files is None else files:
            if file and (not trail_files or trail_files[-1] != file):
                trail_files.append(file)

    def reject(self, message: Message, error: MessageError, raw_id: str,
               result: Processed | None = None) -> Processed:
        """A bad message under the error policy: raise (abend) or discard it and go on."""
        if self.policy == "abend":
            raise error
        assert self.discard is not None
        self.discard.write(message, error, raw_id=raw_id)
        self.stats.discarded += 1
        result = result or Processed()
        result.ack_now = True
        result.discarded = error
        return result


def build_pipeline(settings: Settings, writer: Writer, recovery: Recovery | None = None, *,
                   definitions: Definitions | None = None, parser: Parser | None = None,
                   last_message_id: str | None = None, discard_sync: bool = False,
                   stats: Stats | None = None) -> Pipeline:
    """A Pipeline as ``settings`` configure it, continuing from the writer's ``recovery``.

    ``definitions`` default to ``gendef.build.build_definitions(settings)``; ``last_message_id``
    (from a checkpoint) fixes the id width and the floor of ``time`` ids; ``stats``: counters
    someone else reads too (``msgcap run``'s status file).
    """
    if parser is None:
        from parsers.base import build_parser

        if definitions is None:
            from gendef.build import build_definitions

            definitions = build_definitions(settings)
        parser = build_parser(settings, definitions)
    mode = settings.jms.id
    if last_message_id is None and mode.strip().lower() == "time" and recovery is not None:
        last_message_id = getattr(recovery, "last_seqid", None)
    ids = MessageIds(mode, last_message_id)
    assembler = Assembler(ImageRules.from_settings(settings), Restart.from_recovery(recovery))
    discard = (DiscardFile(settings.error.file, sync=discard_sync)
               if settings.error.policy == "discard" else None)
    pipeline = Pipeline(parser, assembler, writer, ids, policy=settings.error.policy,
                        discard=discard, stats=stats)
    if recovery is not None:  # what the trail held at start is durable
        pipeline.stats.durable_position = recovery.position
    return pipeline


def write_trail_defs(settings: Settings, definitions: Definitions) -> str | None:
    """``trail.defs``: write the definitions in use next to the trail (temp file + rename)."""
    path = settings.trail.defs
    if not path:
        return None
    from gendef.build import check_names_known
    from gendef.defgen import write_defs

    check_names_known(settings)
    write_defs(definitions, path)
    return path
