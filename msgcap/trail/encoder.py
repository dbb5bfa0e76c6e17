"""Record and transaction encoding: G/H/D/T/U/Z framing (trail-format.md §3, §5–§7, §10).

``TrailEncoder`` holds the Structs of one byte order and one ``TableEncoder`` per table, built the
first time the table is seen; ``encode_transaction`` is the pure function the Spark batch mode
calls in parallel tasks.
"""

from __future__ import annotations

import struct
from functools import lru_cache

from gendef.model import Table
from msgcap.trail.columns import TableEncoder
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
    layout_for,
)
from msgcap.trail.records import (
    IOTYPE_PKUPDATE,
    IOTYPE_TRUNCATE,
    TRANSIND_BEGIN,
    TRANSIND_END,
    TRANSIND_MIDDLE,
    TRANSIND_WHOLE,
    TrailTransaction,
)
from props.errors import MessageError

_BEFORE_AFTER = {"A": 0x41, "B": 0x42}


class TrailEncoder:
    """Encodes transactions in one metadata byte order; caches per-table encoders."""

    __slots__ = ("_d_head", "_head", "_prefix", "_tables", "byteorder", "layout")

    def __init__(self, byteorder: str = "big") -> None:
        self.layout = layout_for(byteorder)
        self.byteorder = byteorder
        self._tables: dict[int, tuple[Table, TableEncoder]] = {}
        self._prefix = self.layout.prefix.pack
        self._head = self.layout.head.pack

    def table(self, table: Table) -> TableEncoder:
        """The table's encoder, built once (keyed by identity: tables are built once)."""
        hit = self._tables.get(id(table))
        if hit is None or hit[0] is not table:
            hit = (table, TableEncoder(table, self.layout))
            self._tables[id(table)] = hit
        return hit[1]

    def _token(self, tid: int, text: str, what: str) -> bytes:
        b = text.encode()
        if len(b) > MAX_RECORD:
            raise MessageError(f"{what} of {len(b)} bytes is too long for a trail token")
        return self._head(tid, 0, len(b)) + b

    def user_tokens(self, tx: TrailTransaction) -> bytes:
        """The U token value: ``name 00 value 00`` pairs for TXNAME/TXOWNER (§10)."""
        parts = []
        for name, value in (("TXNAME", tx.txname), ("TXOWNER", tx.txowner)):
            if value is not None:
                if "\x00" in value:
                    raise MessageError(f"{name} {value!r} contains a NUL character")
                parts.append(name.encode() + b"\x00" + value.encode() + b"\x00")
        return b"".join(parts)

    def encode_transaction(self, tx: TrailTransaction, txnum: int) -> bytes:
        """All records of ``tx`` with TransInd set and AuditRBA = ``txnum`` mod 2³²."""
        records = tx.records
        if not records:
            raise MessageError(f"transaction {tx.txid}: no records")
        head, prefix = self._head, self._prefix
        tran = self._token(TOKEN_TRANID, str(tx.txid), "transaction id")
        u = self.user_tokens(tx) if (tx.txname is not None or tx.txowner is not None) else b""
        u_tok = head(TOK_U, 0, len(u)) + u if u else b""
        audit_rba = txnum & 0xFFFFFFFF
        last = len(records) - 1
        out = []
        seq_text, seq_tok = None, b""
        for n, rec in enumerate(records):
            if rec.seqid != seq_text:
                seq_text = rec.seqid
                seq_tok = self._token(TOKEN_VAMSEQID, str(seq_text), "seqid")
            te = self.table(rec.table)
            iotype = rec.iotype
            if iotype == IOTYPE_PKUPDATE:
                d = te.encode_pk(rec.key_before, rec.values)
            elif iotype == IOTYPE_TRUNCATE:
                d = b""
            else:
                d = te.encode(rec.values)
            t = tran + seq_tok
            name = te.name_bytes
            hlen = HEADER_FIXED + len(name)
            dlen = len(d)
            total = 16 + hlen + (dlen + 4 if dlen else 0) + len(t) + len(u_tok)
            if total > MAX_RECORD:
                raise MessageError(
                    f"record of {total} bytes exceeds the trail limit of {MAX_RECORD}",
                    source=seq_text, position=f"table {rec.table.name}")
            if last == 0:
                ind = TRANSIND_WHOLE
            elif n == 0:
                ind = TRANSIND_BEGIN
            else:
                ind = TRANSIND_END if n == last else TRANSIND_MIDDLE
            try:
                ba = _BEFORE_AFTER[rec.before_after]
                pre = prefix(REC_G, GZ_INFO, total, TOK_H, 0, hlen, HDR_IND, PARTITION, 0, ba,
                             dlen, iotype, ORIG_NODE, JULIAN_UNIX_EPOCH_US + rec.io_time,
                             rec.audit_pos, 0, audit_rba, ind, FORMAT_TYPE, 0, 0, 0, 1)
            except (KeyError, TypeError, struct.error) as exc:
                raise MessageError(f"bad record header field: {exc!r}", source=seq_text,
                                   position=f"table {rec.table.name}") from None
            out.append(pre)
            out.append(name)
            if dlen:
                out.append(head(TOK_D, 0, dlen))
                out.append(d)
            out.append(head(TOK_T, 0, len(t)))
            out.append(t)
            if u_tok:
                out.append(u_tok)
            out.append(head(REC_Z, GZ_INFO, total))
        return b"".join(out)


@lru_cache(maxsize=2)
def _shared(byteorder: str) -> TrailEncoder:
    return TrailEncoder(byteorder)


def encode_transaction(tx: TrailTransaction, txnum: int, byteorder: str = "big",
                       encoder: TrailEncoder | None = None) -> bytes:
    """Pure encoding of one transaction (for parallel tasks); pass ``encoder`` to reuse caches."""
    enc = encoder if encoder is not None else _shared(byteorder)
    if enc.byteorder != byteorder:
        raise ValueError(f"encoder is {enc.byteorder}-endian, asked for {byteorder}")
    return enc.encode_transaction(tx, txnum)
