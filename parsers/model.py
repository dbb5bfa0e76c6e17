"""What flows between the layers: a ``Message`` in, ``Op`` objects out.

A parser turns one Message into a list of Ops. Column values are already converted to what the
trail stores for the column's definition type (properties.md §2.5), so encoders never parse text:

* type 0 CHAR(n): ``str`` padded to n; type 64 (VARCHAR or NUMBER text): ``str``;
* type 134 NUMBER(p,s): ``int`` = value × 10^s; type 192: ``str`` ``YYYY-MM-DD:HH:MI:SS[.f…]``
  cut to the column's external length;
* ``None`` = SQL NULL; ``MISSING`` = not in the message (no trail entry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self, cast

from gendef.model import Table


class _Missing:
    """The third state of a column value: absent from the message (not NULL)."""

    __slots__ = ()
    _instance: _Missing | None = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cast(Self, cls._instance)  # the one instance (the class has no subclasses)

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> tuple[object, ...]:
        return (_Missing, ())

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()

# Operation types (properties.md §3.3).
INSERT, UPDATE, DELETE, TRUNCATE = "I", "U", "D", "T"

# Transaction indicators (properties.md §3.4), as written to the trail's TransInd.
TX_BEGIN, TX_MIDDLE, TX_END, TX_WHOLE = 0, 1, 2, 3


@dataclass(slots=True)
class Message:
    """One message as a source delivers it.

    ``id`` is the message's own id (``$jmsid`` once ``jms.id`` is applied), ``headers`` the STOMP
    headers / JMS properties as strings, ``body`` text (``str``) or bytes. ``ack`` is an opaque
    handle the source uses to acknowledge it; ``origin`` names where it came from (dump file:line,
    spool file) for error messages.
    """

    id: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str | bytes = ""
    ack: Any = None
    origin: str | None = None

    @property
    def name(self) -> str:
        """How errors and logs name this message."""
        return self.origin or self.id


@dataclass(slots=True)
class Op:
    """One operation parsed from a message.

    ``timestamp`` is the commit time in microseconds since 1970-01-01 UTC. ``txind`` is one of
    TX_BEGIN…TX_WHOLE when the parser has a transaction indicator, else None (one transaction
    per message). ``before``/``after`` hold one value per table column (see module doc), or None
    when the message has no such image. ``ordinal`` is the 0-based position of the op within its
    message (AuditPos in the trail). ``seqid``/``txid`` are None when configured as ``*seqid`` /
    ``*txid``: the assembler assigns those system counters (which recovery restores), so that the
    parser stays a pure function of the message. ``group``/``group_seq`` are the message's
    JMSXGroupID / JMSXGroupSeq (None when it has none), which the capture adds after parsing for
    the trail's order tokens (trail-format.md §10).
    """

    table: Table
    optype: str
    timestamp: int
    seqid: str | None
    txid: str | None = None
    txind: int | None = None
    txname: str | None = None
    txowner: str | None = None
    before: list[Any] | None = None
    after: list[Any] | None = None
    ordinal: int = 0
    message_id: str = ""
    group: str | None = None
    group_seq: str | None = None
