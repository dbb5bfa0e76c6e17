"""The compiled path without a pipeline: a message in, the trail bytes of its transaction out.

``Pipeline`` writes the common message by ``Assembler.encode_whole`` into its trail writer; a
Spark partition (``msgcap batch``) has no trail writer, only the state its plan gives (the
assembler's counters and duplicate mark, the transaction numbers): ``CompiledPath`` runs the
same parser and ``encode_whole`` over that state and returns the bytes, to be appended in order
elsewhere. A message it does not take (None) changes nothing: the general path takes it, as in
a pipeline, and gives the same bytes or the error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from props.errors import MessageError

if TYPE_CHECKING:
    from msgcap.assembler import Assembler
    from msgcap.trail.encoder import TrailEncoder
    from parsers.base import Parser
    from parsers.model import Message


class CompiledPath:
    """``encode`` of message after message, numbered from ``txnum + 1``; ``last`` is the
    writer's mark (seqid, ordinal, txid) after the last transaction encoded."""

    __slots__ = ("assembler", "encoder", "last", "parser", "txnum")

    def __init__(self, parser: Parser, assembler: Assembler, encoder: TrailEncoder,
                 txnum: int = 0) -> None:
        self.parser = parser
        self.assembler = assembler
        self.encoder = encoder
        self.txnum = txnum
        self.last: tuple[str, int, str] | None = None

    def encode(self, message: Message) -> bytes | None:
        """The trail bytes of ``message``'s transaction (its id already applied, as
        ``MessageIds`` gives it), or None for a message the compiled path does not take —
        also one its parser refuses, which the general path reports."""
        try:
            ops = self.parser.parse(message)
        except MessageError:
            return None
        if not ops:
            return None
        done = self.assembler.encode_whole(ops, self.encoder, self.txnum + 1)
        if done is None:
            return None
        self.txnum += 1
        data, seqid, ordinal, txid = done
        self.last = (seqid, ordinal, txid)
        return data
