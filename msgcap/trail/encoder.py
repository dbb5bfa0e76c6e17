"""Record and transaction encoding: G/H/D/T/U/Z framing (trail-format.md §3, §5–§7, §10).

``TrailEncoder`` holds the Structs of one byte order and one ``TableEncoder`` per table, built the
first time the table is seen; ``encode_transaction`` is the pure function the Spark batch mode
calls in parallel tasks.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache

from gendef.model import Table
from msgcap.trail.columns import NOT_COMMON, NOT_PRESENT, TableEncoder, present_columns
from msgcap.trail.julian import JULIAN_UNIX_EPOCH_US
from msgcap.trail.layout import (
    FORMAT_TYPE,
    GZ_INFO,
    HDR_IND,
    HEADER_FIXED,
    MAX_RECORD,
    ORIG_NODE,
    PARTITION,
    REC_G,
    REC_Z,
    TOK_D,
    TOK_H,
    TOK_T,
    TOK_U,
    TOKEN_TRANID,
    TOKEN_VAMSEQID,
    UTOKEN_GROUP,
    UTOKEN_GROUP_SEQ,
    UTOKEN_PARTITION,
    UTOKEN_TXNAME,
    UTOKEN_TXOWNER,
    Layout,
    layout_for,
)
from msgcap.trail.records import (
    IOTYPE_PKUPDATE,
    IOTYPE_TRUNCATE,
    TRANSIND_BEGIN,
    TRANSIND_END,
    TRANSIND_MIDDLE,
    TRANSIND_WHOLE,
    TrailRecord,
    TrailTransaction,
)
from parsers.codegen import compile_function
from props.errors import MessageError
from props.text import quoted

_BEFORE_AFTER = {"A": 0x41, "B": 0x42}


class _Frame:
    """Per table: the column encoder, one Struct for G head … H token … D head, and ``record``,
    a function generated once per table that encodes a whole common-case record (see
    ``record_function``)."""

    __slots__ = ("hlen", "name", "pack_d", "pack_nod", "record", "table")

    def __init__(self, table: Table, layout: Layout) -> None:
        self.table = TableEncoder(table, layout)
        self.name = self.table.name_bytes
        self.hlen = HEADER_FIXED + len(self.name)
        fmt = layout.prefix_format + f"{len(self.name)}s"
        self.pack_d = struct.Struct(fmt + "BxH").pack
        self.pack_nod = struct.Struct(fmt).pack
        self.record = record_function(self.table, self.pack_d, layout)


def record_function(table: TableEncoder, pack_d: Callable, layout: Layout) -> Callable:
    """``record(values, iotype, before_after, io_time, audit_pos, tail, audit_rba, transind)``
    → the whole G … Z record of an insert, update or delete (a ``TrailRecord``'s fields, or
    those the compiled path has without building one), with ``tail`` (T and U tokens) after
    the D token; None when the values or
    header fields are not the common case, the record is a PK update or truncate, has no
    column entry or is too long (the caller then encodes it field by field, which raises every
    error)."""
    inline = table.inline
    space = dict(inline.space, PRE=pack_d, Z=layout.head.pack, NAME=table.name_bytes,
                 BA=_BEFORE_AFTER, NOT_COMMON=NOT_COMMON)
    hlen = HEADER_FIXED + len(table.name_bytes)
    body = "\n".join("  " + line for line in inline.body.splitlines())
    head = (f"{REC_G}, {GZ_INFO}, total, {TOK_H}, {hlen}, {HDR_IND}, {PARTITION}, "
            f"BA[before_after], dlen, iotype, {ORIG_NODE}, {JULIAN_UNIX_EPOCH_US} + "
            f"io_time, audit_pos, rba, ind, {FORMAT_TYPE}, 1, NAME, {TOK_D}, dlen")
    # every value present and of its common form: the D area in one struct call, first
    present = present_columns(table.table, layout)
    if present is not None:
        size = present.size
        lines = [*present.lines, f"  total = len(tail) + {size + 12 + hlen + 4}",
                 f"  if total <= {MAX_RECORD}:",
                 (f"   return b''.join((PRE({head.replace('dlen', str(size))}), d, tail, "
                  f"Z({REC_Z}, {GZ_INFO}, total)))")]
        space.update(present.space, NOT_PRESENT=NOT_PRESENT)
        body = ("  try:\n" + "\n".join("   " + line for line in lines)
                + "\n  except NOT_PRESENT:\n   pass\n"
                + body)
    source = (
        "def record(values, iotype, before_after, io_time, audit_pos, tail, rba, ind):\n"
        " try:\n"
        f"  if iotype == {IOTYPE_PKUPDATE} or iotype == {IOTYPE_TRUNCATE}: return None\n"
        f"{body}\n"
        f"  dlen = {inline.size}\n"
        f"  total = len(tail) + dlen + {12 + hlen + 4}\n"  # G, H and D heads, Z
        f"  if total > {MAX_RECORD} or not dlen: return None\n"  # no D token when no entry
        f"  return b''.join((PRE({head}), {inline.parts}tail, Z({REC_Z}, {GZ_INFO}, total)))\n"
        " except NOT_COMMON:\n"
        "  return None\n")
    return compile_function(source, space, "record", f"trail record encoder for {table.table.name}")


class TrailEncoder:
    """Encodes transactions in one metadata byte order; caches per-table encoders."""

    __slots__ = ("_frames", "_head", "_t_head", "byteorder", "layout", "partition_pairs",
                 "partition_u", "tail_heads", "wholes")

    def __init__(self, byteorder: str = "big", partition: int | None = None) -> None:
        self.layout = layout_for(byteorder)
        self.byteorder = byteorder
        # a partitioned feed's partition (``--partition``): every record's U token names it
        # (§10); b"" without
        self.partition_pairs = (b"" if partition is None else
                                UTOKEN_PARTITION.encode() + b"\x00%d\x00" % partition)
        self.partition_u = (self.layout.head.pack(TOK_U, 0, len(self.partition_pairs))
                            + self.partition_pairs if partition is not None else b"")
        self._frames: dict[int, tuple[Table, _Frame]] = {}
        self._head = self.layout.head.pack
        # T token head and TRANID head together
        self._t_head = struct.Struct(("<" if byteorder == "little" else ">") + "BBHBBH").pack
        # the T token's heads by the lengths of TRANID and VAMSEQID, made by ``tail`` once the
        # lengths are checked
        self.tail_heads: dict[tuple[int, int], tuple[bytes, bytes]] = {}
        self.wholes: dict[int, tuple[Table, Callable, tuple[int, ...], bool]] = {}

    def _frame(self, table: Table) -> _Frame:
        hit = self._frames.get(id(table))
        if hit is None or hit[0] is not table:
            hit = (table, _Frame(table, self.layout))
            self._frames[id(table)] = hit
        return hit[1]

    def whole(self, table: Table) -> tuple[Table, Callable, tuple[int, ...], bool]:
        """(table, its generated whole-record function (``record_function``), key indexes,
        has declared keys), kept in ``wholes`` by the table's id for the compiled path."""
        hit = self.wholes[id(table)] = (table, self._frame(table).record, table.key_indexes,
                                        table.has_declared_keys)
        return hit

    def table(self, table: Table) -> TableEncoder:
        """The table's encoder, built once (keyed by identity: tables are built once)."""
        return self._frame(table).table

    def user_tokens(self, txname: str | None, txowner: str | None) -> bytes:
        """The U token value of a transaction: ``name 00 value 00`` pairs for TXNAME/TXOWNER,
        then MSGCAP_PARTITION when the trail is a partition's (§10)."""
        parts = []
        for name, value in ((UTOKEN_TXNAME, txname), (UTOKEN_TXOWNER, txowner)):
            if value is not None:
                if "\x00" in value:
                    raise MessageError(f"{name} {quoted(value)} contains a NUL character")
                parts.append(name.encode() + b"\x00" + value.encode() + b"\x00")
        out = b"".join(parts) + self.partition_pairs
        if len(out) > MAX_RECORD - 64:
            raise MessageError(f"TXNAME and TXOWNER of {len(out)} bytes are too long for the "
                               "trail's user tokens")
        return out

    def transaction_tokens(self, txid: str, txname: str | None,
                           txowner: str | None) -> tuple[bytes, bytes]:
        """A transaction's TRANID value and user token pairs (``user_tokens``; b"" without
        TXNAME, TXOWNER and partition), made once for all its records (``tail``)."""
        tb = txid.encode() if type(txid) is str else str(txid).encode()
        if len(tb) > MAX_RECORD:
            raise MessageError(f"transaction id of {len(tb)} bytes is too long for a trail token")
        if txname is None and txowner is None:
            return tb, self.partition_pairs
        return tb, self.user_tokens(txname, txowner)

    def tail(self, tb: bytes, seqid: str, pairs: bytes, group: str | None = None,
             group_seq: str | None = None) -> bytes:
        """The T token (TRANID ``tb``, VAMSEQID ``seqid``) and the U token of the
        transaction's ``pairs`` and the record's message group (none when both are empty)."""
        sb = seqid.encode() if type(seqid) is str else str(seqid).encode()
        if group is not None:
            pairs += group_pairs(group, group_seq)
        if pairs:
            if len(sb) + len(tb) + len(pairs) > MAX_RECORD - 68:
                raise MessageError(f"seqid, transaction id and user tokens of "
                                   f"{len(sb) + len(tb) + len(pairs)} bytes are too long for "
                                   "the trail's tokens")
            pairs = self._head(TOK_U, 0, len(pairs)) + pairs
        # the heads depend on the two lengths alone: made once per pair
        heads = self.tail_heads.get((len(tb), len(sb)))
        if heads is None:
            if len(sb) + len(tb) > MAX_RECORD - 64:
                raise MessageError(f"seqid and transaction id of {len(sb) + len(tb)} bytes are "
                                   "too long for the trail's tokens")
            if len(self.tail_heads) >= 4096:
                self.tail_heads.clear()
            heads = self.tail_heads[len(tb), len(sb)] = (
                self._t_head(TOK_T, 0, 8 + len(tb) + len(sb), TOKEN_TRANID, 0, len(tb)),
                self._head(TOKEN_VAMSEQID, 0, len(sb)))
        return b"".join((heads[0], tb, heads[1], sb, pairs))

    def encode_transaction(self, tx: TrailTransaction, txnum: int, *, first: bool = True,
                           last: bool = True) -> bytes:
        """All records of ``tx`` with TransInd set and AuditRBA = ``txnum`` mod 2³².

        ``first``/``last`` False: ``tx`` holds only a part of its transaction (no begin / no end
        record), as the Spark batch mode encodes a transaction that spans partitions.
        """
        records = tx.records
        audit_rba = txnum & 0xFFFFFFFF
        frames = self._frames
        if len(records) == 1:  # one message, one record: the common case of replay
            rec = records[0]
            if first:
                ind = TRANSIND_WHOLE if last else TRANSIND_BEGIN
            else:
                ind = TRANSIND_END if last else TRANSIND_MIDDLE
            txid, seqid = tx.txid, rec.seqid
            # no user tokens but the partition's, and T token heads made before for these
            # lengths (``tail``)
            if (tx.txname is None and tx.txowner is None and rec.group is None
                    and type(txid) is str and type(seqid) is str
                    and (heads := self.tail_heads.get(
                        (len(tb := txid.encode()), len(sb := seqid.encode())))) is not None):
                tail = b"".join((heads[0], tb, heads[1], sb, self.partition_u))
            else:
                tb, u = self.transaction_tokens(txid, tx.txname, tx.txowner)
                tail = self.tail(tb, seqid, u, rec.group, rec.group_seq)
            hit = frames.get(id(rec.table))
            if hit is not None and hit[0] is rec.table and rec.data is None:
                data = hit[1].record(rec.values, rec.iotype, rec.before_after, rec.io_time,
                                     rec.audit_pos, tail, audit_rba, ind)
                if data is not None:
                    return data
            return self._record(rec, tail, audit_rba, ind)
        if not records:
            raise MessageError(f"transaction {tx.txid}: no records")
        tb, u = self.transaction_tokens(tx.txid, tx.txname, tx.txowner)
        end = len(records) - 1 if last else -1
        out: list[bytes] = []
        tail_of = None  # the (seqid, group, group_seq) ``tail`` was made for
        tail = b""
        for n, rec in enumerate(records):
            if tail_of is None or rec.seqid != tail_of[0] or rec.group != tail_of[1] or (
                    rec.group_seq != tail_of[2]):
                tail_of = (rec.seqid, rec.group, rec.group_seq)
                tail = self.tail(tb, rec.seqid, u, rec.group, rec.group_seq)
            if n:
                ind = TRANSIND_END if n == end else TRANSIND_MIDDLE
            else:
                ind = TRANSIND_BEGIN if first else TRANSIND_MIDDLE
            hit = frames.get(id(rec.table))
            data = (hit[1].record(rec.values, rec.iotype, rec.before_after, rec.io_time,
                                  rec.audit_pos, tail, audit_rba, ind)
                    if hit is not None and hit[0] is rec.table and rec.data is None else None)
            out.append(data if data is not None else self._record(rec, tail, audit_rba, ind))
        return b"".join(out)

    def column_data(self, rec: TrailRecord) -> bytes:
        """The D token's value of a record (b"" for a truncate), or ``rec.data`` when it was
        encoded earlier; raises MessageError for values the columns cannot hold."""
        data = rec.data
        if data is not None:
            if isinstance(data, MessageError):
                raise data
            return data
        iotype = rec.iotype
        values = rec.values
        assert values is not None  # a record without values carries its data
        if iotype == IOTYPE_PKUPDATE:
            return self._frame(rec.table).table.encode_pk(rec.key_before, values)
        if iotype == IOTYPE_TRUNCATE:
            return b""
        return self._frame(rec.table).table.encode(values)

    def _record(self, rec: TrailRecord, tail: bytes, audit_rba: int, ind: int) -> bytes:
        """One record field by field: any record, every error."""
        return self.frame(rec.table, rec.iotype, rec.before_after, rec.io_time, rec.seqid,
                          rec.audit_pos, self.column_data(rec), tail, audit_rba, ind)

    def frame(self, table: Table, iotype: int, before_after: str, io_time: int, seqid: str,
              audit_pos: int, d: bytes, tail: bytes, audit_rba: int, ind: int) -> bytes:
        """One record around its encoded columns ``d`` and its ``tail`` (T and U tokens)."""
        fr = self._frame(table)
        dlen = len(d)
        fixed = 12 + len(tail)  # G head + H head + Z, T (and U) tokens
        try:
            if dlen:
                total = fixed + fr.hlen + 4 + dlen
                if total > MAX_RECORD:
                    raise MessageError(f"record of {total} bytes exceeds the trail limit of "
                                       f"{MAX_RECORD}", source=seqid,
                                       position=f"table {table.name}")
                pre = fr.pack_d(REC_G, GZ_INFO, total, TOK_H, fr.hlen, HDR_IND, PARTITION,
                                _BEFORE_AFTER[before_after], dlen, iotype, ORIG_NODE,
                                JULIAN_UNIX_EPOCH_US + io_time, audit_pos,
                                audit_rba, ind, FORMAT_TYPE, 1, fr.name, TOK_D, dlen)
            else:
                total = fixed + fr.hlen
                pre = fr.pack_nod(REC_G, GZ_INFO, total, TOK_H, fr.hlen, HDR_IND, PARTITION,
                                  _BEFORE_AFTER[before_after], 0, iotype, ORIG_NODE,
                                  JULIAN_UNIX_EPOCH_US + io_time, audit_pos,
                                  audit_rba, ind, FORMAT_TYPE, 1, fr.name)
        except (KeyError, TypeError, struct.error) as exc:
            raise MessageError(f"bad record header field: {exc!r}", source=seqid,
                               position=f"table {table.name}") from None
        return b"".join((pre, d, tail, self._head(REC_Z, GZ_INFO, total)))


def group_pairs(group: str, group_seq: str | None) -> bytes:
    """The user token pairs of a message group (JMSXGroupID, and JMSXGroupSeq when it has one);
    a NUL in either cannot be written (the pairs are NUL-terminated)."""
    if "\x00" in group or group_seq is not None and "\x00" in group_seq:
        raise MessageError(f"message group {quoted(group)} (JMSXGroupID/JMSXGroupSeq) contains "
                           "a NUL character")
    out = UTOKEN_GROUP.encode() + b"\x00" + group.encode(errors="surrogateescape") + b"\x00"
    if group_seq is not None:
        out += (UTOKEN_GROUP_SEQ.encode() + b"\x00" + group_seq.encode(errors="surrogateescape")
                + b"\x00")
    return out


@lru_cache(maxsize=2)
def _shared(byteorder: str) -> TrailEncoder:
    return TrailEncoder(byteorder)


def encode_transaction(tx: TrailTransaction, txnum: int, byteorder: str = "big",
                       encoder: TrailEncoder | None = None, *, first: bool = True,
                       last: bool = True) -> bytes:
    """Pure encoding of one transaction (for parallel tasks); pass ``encoder`` to reuse caches."""
    enc = encoder if encoder is not None else _shared(byteorder)
    if enc.byteorder != byteorder:
        raise ValueError(f"encoder is {enc.byteorder}-endian, asked for {byteorder}")
    return enc.encode_transaction(tx, txnum, first=first, last=last)
