"""What the assembler hands the trail writer: records and transactions (trail-format.md §5–§7).

Values are trail-typed already (parsers/model.py): the writer never interprets text, it only
frames and encodes. ``None`` is NULL, ``MISSING`` means the column has no entry in the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from gendef.model import Table

# IOTypes msgcap writes (trail-format.md §6).
IOTYPE_DELETE, IOTYPE_INSERT, IOTYPE_UPDATE, IOTYPE_FIELDCOMP, IOTYPE_PKUPDATE, IOTYPE_TRUNCATE = (
    3, 5, 10, 15, 115, 100)

# Names msgcap dump prints for them (§17.2).
OP_NAMES = {
    IOTYPE_INSERT: "INSERT", IOTYPE_DELETE: "DELETE", IOTYPE_UPDATE: "UPDATE",
    IOTYPE_FIELDCOMP: "FIELDCOMP", IOTYPE_PKUPDATE: "PKUPDATE", IOTYPE_TRUNCATE: "TRUNCATE",
}

# TransInd values (§7).
TRANSIND_BEGIN, TRANSIND_MIDDLE, TRANSIND_END, TRANSIND_WHOLE = 0, 1, 2, 3


@dataclass(slots=True)
class TrailRecord:
    """One operation image as it goes into the trail.

    ``io_time`` is µs since 1970-01-01 UTC (the writer converts it to Julian µs); ``audit_pos``
    is the op's ordinal within its message. ``values`` has one entry per table column.
    ``key_before`` is used by PKUPDATE only: per column the key's before value, MISSING elsewhere.
    ``data``, when set, is the D token's value already encoded from those (the Spark batch
    encodes columns in its parse pass and frames records later), or the MessageError encoding
    them raised, which the encoder raises when the record is written. ``group``/``group_seq``:
    the message group and sequence of the record's message (§10 user tokens), None without.
    """

    table: Table
    iotype: int
    before_after: str
    io_time: int
    seqid: str
    audit_pos: int
    values: list[Any] | None
    key_before: list[Any] | None = None
    data: Any = None
    group: str | None = None
    group_seq: str | None = None


@dataclass(slots=True)
class TrailTransaction:
    """Records written together; the writer sets TransInd and AuditRBA."""

    txid: str
    records: list[TrailRecord]
    txname: str | None = None
    txowner: str | None = None


class Position(NamedTuple):
    """A place in a trail: file sequence number and byte offset (RBA) in that file.

    Ordered by (seqno, rba); a tuple because the writer returns one per transaction.
    """

    seqno: int
    rba: int
    file: str = ""
