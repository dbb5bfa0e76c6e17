"""Transaction assembly: parsed Ops → trail transactions (properties.md §3.4, §3.6, §9.2, §10.1).

The assembler is fed one message's Ops at a time and returns the transactions that message
completed. It owns the state that must survive between messages and across restarts:

* the open transaction of a txind span (contiguous, never interleaved);
* the ``*seqid`` / ``*txid`` counters and the duplicate mark (S, k) = (seqid, ordinal) of the last
  operation accepted, all restored from the trail's ``Recovery`` on start;
* the image rules that pick which columns each record carries (trail-format.md §6).

While a transaction is open, a message already in the trail by the mark of the last complete
transaction (§9.2) is a duplicate before any interleaving test: after a reconnection the spill
journal rebuilds the open transaction first, then the broker redelivers messages of earlier
transactions whose acknowledgements were lost. The open transaction is left as it was.

A message is all or nothing: if any of its Ops is rejected, the state is rolled back to what it
was before the message, so ``error.policy=discard`` can drop it and go on (a transaction left open
by earlier messages stays open). The live capture, replay and Spark batch use it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gendef.model import Table
from msgcap.msgid import IdWidthError
from msgcap.trail.records import (
    IOTYPE_DELETE,
    IOTYPE_FIELDCOMP,
    IOTYPE_INSERT,
    IOTYPE_PKUPDATE,
    IOTYPE_TRUNCATE,
    IOTYPE_UPDATE,
    TRANSIND_BEGIN,
    TRANSIND_END,
    TRANSIND_MIDDLE,
    TRANSIND_WHOLE,
    TrailRecord,
    TrailTransaction,
)
from parsers.model import (
    DELETE,
    INSERT,
    MISSING,
    TRUNCATE,
    TX_BEGIN,
    TX_END,
    TX_MIDDLE,
    TX_WHOLE,
    UPDATE,
    Message,
    Op,
)
from props.errors import MessageError
from props.text import quoted

if TYPE_CHECKING:
    from msgcap.trail.encoder import TrailEncoder
    from props.settings import Settings

_TXIND_NAMES = {TX_BEGIN: "begin", TX_MIDDLE: "middle", TX_END: "end", TX_WHOLE: "whole"}
_OP_NAMES = {INSERT: "insert", UPDATE: "update", DELETE: "delete", TRUNCATE: "truncate"}


@dataclass(frozen=True, slots=True)
class ImageRules:
    """Which columns updates and deletes carry (``trail.compress*``, ``trail.getupdatebefores``).

    ``pk_updates`` is False for the delimited parser, which cannot express a key change: such an
    update is a message error there instead of an IOType 115 record.
    """

    compress_updates: bool = True
    get_update_befores: bool = False
    compress_deletes: bool = True
    pk_updates: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> ImageRules:
        trail = settings.trail
        return cls(trail.compressupdates, trail.getupdatebefores, trail.compressdeletes,
                   settings.parser_type != "delim")


class TrailMark(Protocol):
    """The trail's last complete transaction, as the writer's ``Recovery`` and the
    ``TrailWriter`` itself (after writing) both tell it; None fields: an empty trail."""

    @property
    def last_seqid(self) -> str | None: ...
    @property
    def last_audit_pos(self) -> int | None: ...
    @property
    def last_txid(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Restart:
    """What the assembler continues from: the trail's last complete transaction.

    Built from the writer's ``Recovery`` (``from_recovery``); ``None`` fields mean an empty trail.
    """

    last_seqid: str | None = None
    last_ordinal: int = 0
    last_txid: str | None = None

    @classmethod
    def from_recovery(cls, recovery: TrailMark | None) -> Restart:
        if recovery is None:
            return cls()
        return cls(getattr(recovery, "last_seqid", None) or None,
                   getattr(recovery, "last_audit_pos", 0) or 0,
                   getattr(recovery, "last_txid", None) or None)


@dataclass(frozen=True, slots=True)
class OpenState:
    """A transaction open between two messages, without its records.

    ``given_txid`` is the txid its operations carry (None for ``*txid``; ``txid`` is then the
    counter's value); ``skipping``: it is already in the trail (§9.2) and is being skipped;
    ``first_message`` names the message that began it; ``ops`` are the (table, optype) of its
    operations so far.
    """

    txid: str
    given_txid: str | None
    txname: str | None
    txowner: str | None
    skipping: bool
    first_message: str
    ops: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class AssemblerState:
    """The state between two messages, without records: the counters, the duplicate mark and
    the open transaction.

    ``Assembler.state()`` takes it and ``resume()`` continues from it, so that a later part of
    the input can be assembled elsewhere (Spark batch partitions); the open transaction's
    earlier records stay wherever they were encoded. ``base``: the duplicate mark when the open
    transaction began (that of the last complete transaction), None when none is open.
    """

    seq: int = 0
    txid: int = 0
    last: tuple[str, int] | None = None
    open: OpenState | None = None
    base: tuple[str, int] | None = None


@dataclass(slots=True)
class Assembled:
    """A complete transaction, and the messages to acknowledge once it is durable.

    ``messages`` are those whose last written operation is in this transaction; ``ops`` counts
    its operations per (table, optype) for reports. ``streamed``: earlier parts of it were taken
    with ``Assembler.take_open`` (and their messages with them); ``tx`` holds the last part only.
    """

    tx: TrailTransaction
    messages: list[Message]
    ops: dict[tuple[str, str], int]
    first_message: str
    streamed: bool = False


@dataclass(slots=True)
class Outcome:
    """What one message produced: completed transactions and how the message is acknowledged.

    ``ack_now``: nothing of the message waits for the trail (no operations, or all skipped as
    already written), so it can be acknowledged at once. Otherwise it is in the ``messages`` of one
    of ``completed`` or of a transaction still open. ``duplicate``: it had operations and every one
    was already in the trail (§9.2). ``skipped_transactions`` counts transactions dropped as such.
    """

    completed: list[Assembled] = field(default_factory=list)
    ack_now: bool = False
    duplicate: bool = False
    skipped_transactions: int = 0


class _OpenTx:
    """A transaction being assembled (possibly over several messages)."""

    __slots__ = (
        "base",
        "counts",
        "first_message",
        "given_txid",
        "messages",
        "ops",
        "records",
        "skipping",
        "streamed",
        "txid",
        "txname",
        "txowner",
    )

    def __init__(self, txid: str, given_txid: str | None, op: Op | None, skipping: bool,
                 first_message: str, base: tuple[str, int] | None) -> None:
        self.base = base  # the duplicate mark when it began: the last complete transaction's
        self.txid = txid
        self.given_txid = given_txid
        self.txname = op.txname if op is not None else None
        self.txowner = op.txowner if op is not None else None
        self.records: list[TrailRecord] = []
        self.messages: list[Message] = []
        self.ops: list[tuple[str, str]] = []
        self.skipping = skipping
        self.first_message = first_message
        self.streamed = False  # parts taken by ``Assembler.take_open``
        self.counts: dict[tuple[str, str], int] = {}  # ``ops`` of those parts

    def mark(self) -> tuple[int, int, int]:
        return len(self.records), len(self.messages), len(self.ops)

    def rollback(self, mark: tuple[int, int, int]) -> None:
        del self.records[mark[0]:]
        del self.messages[mark[1]:]
        del self.ops[mark[2]:]

    def count_ops(self) -> dict[tuple[str, str], int]:
        counts = dict(self.counts)
        for key in self.ops:
            counts[key] = counts.get(key, 0) + 1
        return counts

    def finish(self) -> Assembled:
        tx = TrailTransaction(self.txid, self.records, self.txname, self.txowner)
        return Assembled(tx, self.messages, self.count_ops(), self.first_message, self.streamed)


RecordBuilder = Callable[[Op, str], list[TrailRecord]]
"""``(op, seqid) → records``: how the assembler turns an accepted operation into trail records.

``ImageRecords`` (the image rules) by default; the Spark batch injects others (the image rules'
records noted for ``--format`` rows, or none at all when only the transaction boundaries
matter). It raises
MessageError for an operation that cannot be written; the message is then rejected.
"""


class Assembler:
    """Ops of successive messages → complete TrailTransactions, per the rules of the module doc.

    ``records`` builds each accepted operation's records (``ImageRecords(rules)`` by default).
    """

    def __init__(self, rules: ImageRules | None = None, restart: Restart | None = None, *,
                 records: RecordBuilder | None = None) -> None:
        self.rules = rules or ImageRules()
        self.records: RecordBuilder = records or ImageRecords(self.rules)
        # the image rules the compiled path applies (None: another builder, no compiled path)
        self._images = self.records if type(self.records) is ImageRecords else None
        self._update_iotype = IOTYPE_FIELDCOMP if self.rules.compress_updates else IOTYPE_UPDATE
        restart = restart or Restart()
        self._seq = _counter(restart.last_seqid, 20)
        self._txid = _counter(restart.last_txid, None)
        self._last: tuple[str, int] | None = (
            (restart.last_seqid, restart.last_ordinal) if restart.last_seqid else None)
        self._open: _OpenTx | None = None

    # -- state ----------------------------------------------------------------------------------

    @property
    def open_transaction(self) -> str | None:
        """Name of the first message of the open transaction, or None."""
        return self._open.first_message if self._open else None

    @property
    def last_written(self) -> tuple[str, int] | None:
        """(seqid, ordinal) of the last operation accepted: the duplicate mark of §9.2."""
        return self._last

    def finish(self) -> None:
        """End of a finite input: an open transaction is an error naming its first message."""
        if self._open is not None:
            raise MessageError(
                f"transaction {self._open.txid} begun here has no end record at the end of "
                "the input", source=self._open.first_message, position="txind")

    def state(self) -> AssemblerState:
        """The state now (between messages); see ``AssemblerState``."""
        tx = self._open
        held = None if tx is None else OpenState(
            tx.txid, tx.given_txid, tx.txname, tx.txowner, tx.skipping, tx.first_message,
            tuple(k for k, n in tx.count_ops().items() for _ in range(n)) if tx.counts
            else tuple(tx.ops))
        return AssemblerState(self._seq, self._txid, self._last, held,
                              None if tx is None else tx.base)

    def resume(self, state: AssemblerState) -> None:
        """Continue from ``state``: the open transaction gets only the records added from now."""
        self._seq, self._txid, self._last = state.seq, state.txid, state.last
        self._open = None
        held = state.open
        if held is not None:
            tx = self._open = _OpenTx(held.txid, held.given_txid, None, held.skipping,
                                      held.first_message, state.base)
            tx.txname, tx.txowner = held.txname, held.txowner
            tx.ops.extend(held.ops)

    @property
    def open_records(self) -> list[TrailRecord]:
        """Records of the open transaction added by this assembler (empty when none is open)."""
        return self._open.records if self._open is not None else []

    def take_open(self) -> tuple[TrailTransaction, bool]:
        """Remove the open transaction's records so far as a part to write now
        (``TrailWriter.write_records``), and whether it is the first part: memory stays bounded
        whatever the transaction's size. The messages of the part are dropped too (the caller
        releases them when the transaction ends); the rest comes as a ``streamed`` Assembled.
        Only between messages, while a transaction with records is open.
        """
        tx = self._open
        if tx is None or not tx.records:
            raise ValueError("no open transaction with records to take")
        part = TrailTransaction(tx.txid, tx.records, tx.txname, tx.txowner)
        first = not tx.streamed
        tx.counts = tx.count_ops()
        tx.records, tx.messages, tx.ops = [], [], []
        tx.streamed = True
        return part, first

    # -- one message ----------------------------------------------------------------------------

    def add(self, message: Message, ops: Sequence[Op]) -> Outcome:
        """Assemble one message's Ops; on a MessageError nothing of the message is kept.

        The Ops' value lists are taken over by the records (not copied).
        """
        if len(ops) == 1:
            done = self.add_single(message, ops[0])
            if done is not None:
                return Outcome([done], False, False, 0)
        saved = (self._seq, self._txid, self._last, self._open)
        mark = self._open.mark() if self._open is not None else None
        try:
            return self._add(message, ops)
        except (MessageError, IdWidthError) as exc:
            self._seq, self._txid, self._last, self._open = saved
            if self._open is not None and mark is not None:
                self._open.rollback(mark)
            raise exc.located(message.name) from None

    def add_single(self, message: Message, op: Op) -> Assembled | None:
        """``add`` of the common message — its one op, without txind, while no transaction is
        open — returning the transaction it completes; None for any other case (call ``add``).

        Nothing changes unless it succeeds; a MessageError names the message like ``add``'s.
        """
        if op.txind is not None or self._open is not None:
            return None
        try:
            found = self._single(op)
            if found is None:
                return None
            txid, txnum, seqid, seq = found
            tx = TrailTransaction(txid, _grouped(self.records(op, seqid), op), op.txname,
                                  op.txowner)
        except (MessageError, IdWidthError) as exc:
            raise exc.located(message.name) from None
        self._txid, self._seq, self._last = txnum, seq, (seqid, op.ordinal)
        return Assembled(tx, [message], {(op.table.name, op.optype): 1},
                         message.origin or message.id)  # message.name, without the call

    def encode_whole(self, ops: list[Op], encoder: TrailEncoder, txnum: int
                     ) -> tuple[bytes, str, int, str] | None:
        """The compiled path of a message: the trail bytes of the one transaction its ``ops``
        make, as transaction number ``txnum``, and the writer's mark after it (seqid and
        ordinal of its last record, txid); the counters and the duplicate mark move as ``add``
        moves them. For the common message only: no transaction open, no txind (or the one
        operation's txind ``W``, a whole transaction as well), one txid, nothing already in the
        trail, each op one record of the common case (``ImageRecords.single``) that the table's
        generated record function encodes. None for any other (nothing changed): ``add`` takes
        it, which gives the same bytes or the error.
        """
        out: list[tuple[bytes, str, int, str]] = []
        self.encode_wholes([ops], 0, encoder, txnum, out)
        return out[0] if out else None

    def encode_wholes(self, results: list[list[Op] | Exception], start: int,
                      encoder: TrailEncoder, txnum: int,
                      out: list[tuple[bytes, str, int, str]]) -> int:
        """``encode_whole`` of the messages whose parsing gave ``results``, from index
        ``start`` on, numbered from ``txnum``, into ``out``, up to the first one it does not
        take (an exception, no operations, or not the common case): that one's index, or
        ``len(results)``. One call for a batch of messages (``Pipeline.consume``).

        The message of one insert, update without before values or delete (without txind or
        with ``W``), the most common, runs inline: its image, key test and T token without a
        call (``ImageRecords.single`` and ``_update_values`` give the same records).
        """
        if self._open is not None or self._images is None:
            return start
        wholes, tail_heads, partition_u = encoder.wholes, encoder.tail_heads, encoder.partition_u
        compress_deletes, update_iotype = self.rules.compress_deletes, self._update_iotype
        end = len(results)
        k = start
        while k < end:
            ops = results[k]
            if ops.__class__ is not list or not ops:
                return k
            op = ops[0]
            optype = op.optype
            if (len(ops) != 1 or op.txind is not None and op.txind != TX_WHOLE
                    or op.txname is not None or op.txowner is not None):
                image = None
            elif optype == INSERT:
                image, iotype, before_after = op.after, IOTYPE_INSERT, "A"
            elif optype == UPDATE and op.before is None:  # every present column changed
                image, iotype, before_after = op.after, update_iotype, "A"
            elif optype == DELETE:
                image, iotype, before_after = (
                    op.before if op.before is not None else op.after), IOTYPE_DELETE, "B"
            else:
                image = None
            if image is None:  # not of the inline case: op by op
                done = self._encode_ops(ops, encoder, txnum)
                if done is None:
                    return k
                out.append(done)
                k += 1
                txnum += 1
                continue
            table = op.table
            hit = wholes.get(id(table))
            if hit is None or hit[0] is not table:
                hit = encoder.whole(table)
            if hit[3]:
                for i in hit[2]:
                    if image[i] is MISSING:
                        return k
            if iotype == IOTYPE_DELETE and compress_deletes:
                image = _only(image, hit[2])
            seqid, ordinal, last = op.seqid, op.ordinal, self._last
            seq = self._seq
            if seqid is None:
                seq += 1
                seqid = str(seq).zfill(20)  # f"{seq:020d}", faster
            elif not after_mark(seqid, ordinal, last):
                return k  # already written, or of another width: ``add`` says which
            txid = op.txid
            txcount = self._txid
            if txid is None:
                txcount += 1
                txid = str(txcount)
            try:
                tb, sb = txid.encode(), seqid.encode()
                heads = tail_heads.get((len(tb), len(sb)))
                tail = (b"".join((heads[0], tb, heads[1], sb, partition_u))
                        if heads is not None and op.group is None else
                        encoder.tail(tb, seqid, encoder.partition_pairs, op.group,
                                     op.group_seq))
            except (AttributeError, MessageError):  # not text, or too long: the general path
                return k
            data = hit[1](image, iotype, before_after, op.timestamp, ordinal, tail,
                          txnum & 0xFFFFFFFF, TRANSIND_WHOLE)
            if data is None:
                return k
            self._txid, self._seq, self._last = txcount, seq, (seqid, ordinal)
            out.append((data, seqid, ordinal, txid))
            k += 1
            txnum += 1
        return k

    def _encode_ops(self, ops: Sequence[Op], encoder: TrailEncoder, txnum: int
                    ) -> tuple[bytes, str, int, str] | None:
        """``encode_whole`` of any message: op by op."""
        assert self._images is not None  # (encode_whole)
        first = ops[0]
        given = first.txid
        txcount = self._txid
        if given is None:
            txcount += 1
            txid = str(txcount)
        else:
            txid = given
        seq, last = self._seq, self._last
        single = self._images.single
        end = len(ops) - 1
        rba = txnum & 0xFFFFFFFF
        out = []
        tail_of = None  # the (seqid, group, group_seq) ``tail`` was made for
        wholes = encoder.wholes
        try:
            tb, u = encoder.transaction_tokens(txid, first.txname, first.txowner)
            for k, op in enumerate(ops):
                seqid = op.seqid
                if op.txind is not None or op.txid != given:
                    return None
                if seqid is None:
                    seq += 1
                    seqid = str(seq).zfill(20)
                elif not after_mark(seqid, op.ordinal, last):
                    return None
                image = single(op)
                if image is None:
                    return None
                if tail_of != (seqid, op.group, op.group_seq):
                    tail_of = (seqid, op.group, op.group_seq)
                    tail = encoder.tail(tb, seqid, u, op.group, op.group_seq)
                table = op.table
                hit = wholes.get(id(table))
                if hit is None or hit[0] is not table:
                    hit = encoder.whole(table)
                data = hit[1](image[2], image[0], image[1], op.timestamp, op.ordinal, tail, rba,
                              TRANSIND_WHOLE if not end else TRANSIND_BEGIN if not k else
                              TRANSIND_END if k == end else TRANSIND_MIDDLE)
                if data is None:
                    return None
                out.append(data)
                last = (seqid, op.ordinal)
        except MessageError:
            return None
        assert last is not None  # (set by the first op)
        self._txid, self._seq, self._last = txcount, seq, last
        return (out[0] if not end else b"".join(out)), last[0], last[1], txid

    def take_single(self, message: Message, op: Op) -> bool:
        """``add_single`` in a run of the state machine alone (the Spark batch's trials), for an
        op whose records are known to build: the same checks and state, nothing built. True
        when it took the op as one whole transaction; False for any other case (call ``add``)."""
        if op.txind is not None or self._open is not None:
            return False
        try:
            found = self._single(op)
        except (MessageError, IdWidthError) as exc:
            raise exc.located(message.name) from None
        if found is None:
            return False
        self._txid, self._seq, self._last = found[1], found[3], (found[2], op.ordinal)
        return True

    def _single(self, op: Op) -> tuple[str, int, str, int] | None:
        """(txid, txid counter, seqid, seqid counter) ``add_single`` gives ``op``, or None when it
        is already in the trail (``add`` skips it)."""
        seqid, last = op.seqid, self._last
        # a seqid of the same width past the mark is new; anything else is tested in full
        if seqid is not None and last is not None and (
                len(seqid) != len(last[0]) or seqid <= last[0]) and _is_written(op, last):
            return None
        txid, txnum = op.txid, self._txid
        if txid is None:
            txnum += 1
            txid = str(txnum)
        seq = self._seq
        if seqid is None:
            seq += 1
            seqid = str(seq).zfill(20)  # f"{seq:020d}", faster
        return txid, txnum, seqid, seq

    def _add(self, message: Message, ops: Sequence[Op]) -> Outcome:
        out = Outcome()
        if not ops:
            out.ack_now = True
            return out
        if self._open is not None and self._redelivered(self._open, ops):
            out.ack_now = out.duplicate = True
            return out
        name = message.name
        holder: _OpenTx | None = None  # the last written transaction holding one of our ops
        written = 0
        tx: _OpenTx | None
        if ops[0].txind is None:
            if self._open is not None:
                raise MessageError(
                    f"a message without txind while transaction {self._open.txid} (begun in "
                    f"{self._open.first_message}) is open: transactions must not interleave",
                    position="txind")
            first = ops[0]
            for op in ops:
                if op.txind is not None:
                    raise MessageError("operations with and without txind in one message",
                                       position=_where(op, "txind"))
                if op.txid != first.txid:
                    raise MessageError(
                        f"txid {op.txid!r} differs from the message's first txid "
                        f"{first.txid!r} (without txind a message is one transaction)",
                        position=_where(op, "txid"))
            tx = self._begin(first, name)
            for n, op in enumerate(ops):
                written += self._append(tx, op, n == 0)
            holder = tx if not tx.skipping else None
            self._complete(tx, out)
        else:
            for op in ops:
                ind = op.txind
                if ind is None:
                    raise MessageError("operations with and without txind in one message",
                                       position=_where(op, "txind"))
                tx = self._open
                begun = False
                if ind in (TX_BEGIN, TX_WHOLE):
                    if tx is not None:
                        raise MessageError(
                            f"txind {_TXIND_NAMES[ind]} while transaction {tx.txid} (begun in "
                            f"{tx.first_message}) is open: transactions must not interleave",
                            position=_where(op, "txind"))
                    tx = self._open = self._begin(op, name)
                    begun = True
                elif ind in (TX_MIDDLE, TX_END):
                    if tx is None:
                        raise MessageError(
                            f"txind {_TXIND_NAMES[ind]} without an open transaction",
                            position=_where(op, "txind"))
                    if op.txid != tx.given_txid:
                        raise MessageError(
                            f"txid {op.txid!r} differs from the open transaction's txid "
                            f"{tx.given_txid!r}: transactions must not interleave",
                            position=_where(op, "txid"))
                else:
                    raise MessageError(f"unknown txind {ind!r}", position=_where(op, "txind"))
                n = self._append(tx, op, begun)
                written += n
                if n:
                    holder = tx
                if ind in (TX_END, TX_WHOLE):
                    self._open = None
                    self._complete(tx, out)
        if written == 0:
            out.ack_now = True
            out.duplicate = True
        elif holder is not None:
            holder.messages.append(message)
        return out

    def _redelivered(self, tx: _OpenTx, ops: Sequence[Op]) -> bool:
        """While ``tx`` is open: True for a message that is not part of it and whose operations
        are all at or before the mark of the last complete transaction (§9.2), such as one of
        an earlier transaction redelivered after a lost acknowledgement.

        A message continuing ``tx`` by its txid takes the usual path: the skipped
        transaction's own messages end it there, and for one being written it is an error
        (partly written). Without txids nothing tells a new transaction's messages apart, so
        only a skipped transaction is continued by them.
        """
        base = tx.base
        if base is None:
            return False
        first = ops[0]
        ind = first.txind
        if (ind in (TX_MIDDLE, TX_END) and first.txid == tx.given_txid
                and (tx.skipping or first.txid is not None)):
            return False
        return all(_is_written(op, base) for op in ops)

    def _begin(self, op: Op, name: str) -> _OpenTx:
        last = self._last
        skipping = _is_written(op, last)
        if op.txid is None:
            if skipping:
                txid = ""
            else:
                self._txid += 1
                txid = str(self._txid)
        else:
            txid = op.txid
        return _OpenTx(txid, op.txid, op, skipping, name, last)

    def _complete(self, tx: _OpenTx, out: Outcome) -> None:
        if tx.skipping:
            out.skipped_transactions += 1
        else:
            out.completed.append(tx.finish())

    def _append(self, tx: _OpenTx, op: Op, first: bool) -> int:
        """Add one op's records to ``tx``; 0 when it is skipped as already written, else 1.

        ``first``: the op that began ``tx``, whose duplicate test ``_begin`` already made.
        """
        if not first and _is_written(op, self._last) != tx.skipping:
            raise MessageError(
                f"seqid {op.seqid} ordinal {op.ordinal}: transaction {tx.txid or '?'} is only "
                "partly in the trail already (seqids do not increase)",
                position=_where(op, "seqid"))
        if tx.skipping:
            return 0
        seqid = op.seqid
        if seqid is None:
            self._seq += 1
            seqid = f"{self._seq:020d}"
        tx.records.extend(_grouped(self.records(op, seqid), op))
        tx.ops.append((op.table.name, op.optype))
        self._last = (seqid, op.ordinal)
        return 1


class ImageRecords:
    """The default ``RecordBuilder``: an operation's records by the image rules
    (``trail.compress*``, ``trail.getupdatebefores``; trail-format.md §6)."""

    __slots__ = ("_tables", "rules")

    def __init__(self, rules: ImageRules) -> None:
        self.rules = rules
        self._tables: dict[int, tuple[Table, tuple[int, ...], bool]] = {}

    def _table_info(self, table: Table) -> tuple[Table, tuple[int, ...], bool]:
        """(table, key indexes, has declared keys), computed once per table object."""
        info = self._tables[id(table)] = (table, table.key_indexes, table.has_declared_keys)
        return info

    def __call__(self, op: Op, seqid: str) -> list[TrailRecord]:
        """The trail records of one operation; the insert (the common case) first."""
        table, optype = op.table, op.optype
        info = self._tables.get(id(table))
        if info is None or info[0] is not table:
            info = self._table_info(table)
        keys, declared = info[1], info[2]
        if optype == INSERT:
            after = op.after
            if after is None:
                after = _image(op, after, "after")  # (raises)
            if declared:
                for i in keys:
                    if after[i] is MISSING:
                        _check_keys(op, after, keys)
            return [TrailRecord(table, IOTYPE_INSERT, "A", op.timestamp, seqid, op.ordinal,
                                after)]
        if optype == UPDATE:
            return self._update(op, seqid, keys, declared)
        if optype == DELETE:
            before = _image(op, op.before if op.before is not None else op.after, "before")
            if declared:
                _check_keys(op, before, keys)
            values = _only(before, keys) if self.rules.compress_deletes else before
            return [TrailRecord(table, IOTYPE_DELETE, "B", op.timestamp, seqid, op.ordinal,
                                values)]
        if optype == TRUNCATE:
            return [TrailRecord(table, IOTYPE_TRUNCATE, "A", op.timestamp, seqid, op.ordinal,
                                [MISSING] * len(table.columns))]
        raise MessageError(f"unknown operation type {optype!r}", position=_where(op))

    def _update(self, op: Op, seqid: str, keys: tuple[int, ...],
                declared: bool) -> list[TrailRecord]:
        table, rules = op.table, self.rules
        after = _image(op, op.after, "after")
        before = op.before
        if declared:
            _check_keys(op, after, keys)
        pk_change = before is not None and declared and any(
            before[i] is not MISSING and before[i] != after[i] for i in keys)
        iotype, values = self._update_values(after, before, keys)
        key_before = None
        if pk_change and before is not None:  # (a key change needs before values)
            if not rules.pk_updates:
                changed = next(table.columns[i].name for i in keys
                               if before[i] is not MISSING and before[i] != after[i])
                raise MessageError(
                    f"key column {changed} changes ({before[keys[0]]!r} → …): primary-key "
                    "updates are not supported by the delimited parser",
                    position=_where(op, f"column {changed}"))
            iotype = IOTYPE_PKUPDATE
            key_before = _only(before, keys)
        out = []
        if rules.get_update_befores and before is not None:
            bvalues = [before[i] if v is not MISSING else MISSING for i, v in enumerate(values)]
            out.append(TrailRecord(table, iotype, "B", op.timestamp, seqid, op.ordinal, bvalues))
        out.append(TrailRecord(table, iotype, "A", op.timestamp, seqid, op.ordinal, values,
                               key_before))
        return out

    def _update_values(self, after: list[Any], before: list[Any] | None,
                       keys: tuple[int, ...]) -> tuple[int, list[Any]]:
        """The IOType and after values of an update's record by ``trail.compressupdates``:
        the keys and the columns that changed (all present ones without before values), or
        every after value."""
        if not self.rules.compress_updates:
            return IOTYPE_UPDATE, after
        if before is None:  # every present column counts as changed: the after image itself
            return IOTYPE_FIELDCOMP, after
        values = [MISSING] * len(after)
        for i in keys:
            values[i] = after[i]
        for i, v in enumerate(after):
            if v is not MISSING and (before[i] is MISSING or before[i] != v):
                values[i] = v
        return IOTYPE_FIELDCOMP, values

    def single(self, op: Op) -> tuple[int, str, list[Any]] | None:
        """(IOType, before/after, values) of the one record of an insert, update or delete
        of the common case, as ``__call__`` builds it; None for anything else (a truncate, a
        primary-key update, an update with a before-image record, a missing image or key),
        which ``__call__`` builds or refuses."""
        table, optype = op.table, op.optype
        info = self._tables.get(id(table))
        if info is None or info[0] is not table:
            info = self._table_info(table)
        keys, declared = info[1], info[2]
        if optype in (INSERT, UPDATE):
            image = op.after
        elif optype == DELETE:
            image = op.before if op.before is not None else op.after
        else:
            return None
        if image is None:
            return None
        if declared:
            for i in keys:
                if image[i] is MISSING:
                    return None
        if optype == INSERT:
            return IOTYPE_INSERT, "A", image
        if optype == DELETE:
            return IOTYPE_DELETE, "B", (_only(image, keys) if self.rules.compress_deletes
                                        else image)
        before = op.before
        if before is not None and (self.rules.get_update_befores or declared and any(
                before[i] is not MISSING and before[i] != image[i] for i in keys)):
            return None  # a before-image record, or a primary-key update
        iotype, values = self._update_values(image, before, keys)
        return iotype, "A", values


def after_mark(seqid: str, ordinal: int, mark: tuple[str, int] | None) -> bool:
    """Whether an op of ``seqid`` and ``ordinal`` comes after the duplicate mark (S, k) and
    has the width of S: not written yet (§9.2), and no width error (``_is_written``)."""
    return mark is None or len(seqid) == len(mark[0]) and (
        seqid > mark[0] or seqid == mark[0] and ordinal > mark[1])


def _counter(last: str | None, width: int | None) -> int:
    """A system counter continued from the last value written (0 when it was not ours)."""
    if last and last.isdigit() and (width is None or len(last) == width):
        return int(last)
    return 0


def _is_written(op: Op, mark: tuple[str, int] | None) -> bool:
    """True when the op is at or before the duplicate mark (S, k) (§9.2)."""
    seqid = op.seqid
    if mark is None or seqid is None:
        return False
    s, k = mark
    if len(seqid) != len(s):
        raise IdWidthError(
            f"{_where(op, 'seqid')}: seqid {quoted(seqid)} has {len(seqid)} characters, the "
            f"previous one {quoted(s)} {len(s)}: seqids must be fixed-width, capture stops")
    return seqid < s or (seqid == s and op.ordinal <= k)


def _grouped(records: list[TrailRecord], op: Op) -> list[TrailRecord]:
    """``records`` of ``op`` with its message group, for the trail's order tokens."""
    if op.group is not None:
        for rec in records:
            rec.group, rec.group_seq = op.group, op.group_seq
    return records


def _where(op: Op, item: str | None = None) -> str:
    where = f"operation {op.ordinal + 1} ({op.table.name})"
    return f"{where}, {item}" if item else where


def _image(op: Op, values: list[Any] | None, which: str) -> list[Any]:
    if values is None:
        raise MessageError(f"{_OP_NAMES.get(op.optype, op.optype)} without {which} values",
                           position=_where(op))
    return values


def _check_keys(op: Op, values: list[Any], keys: tuple[int, ...]) -> None:
    table: Table = op.table
    for i in keys:
        if values[i] is MISSING:
            raise MessageError(f"key column {table.columns[i].name} is missing",
                               position=_where(op, f"column {table.columns[i].name}"))


def _only(values: list[Any], indexes: Sequence[int]) -> list[Any]:
    out = [MISSING] * len(values)
    for i in indexes:
        out[i] = values[i]
    return out
