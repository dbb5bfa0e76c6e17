"""Acknowledgements lost before a reconnection while a long transaction is open.

The open transaction's messages are in the spill journal (and acknowledged); the acks of earlier,
complete and durable transactions did not reach the broker. After the reconnection the journal
rebuilds the open transaction, then the broker redelivers those earlier messages: they are
duplicates (properties.md §9.2), and the open transaction completes once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from parsers.model import Message
from tests.live.test_long_transactions import (
    Run,
    ScriptedSource,
    home,  # noqa: F401 - fixture
    ids,
    seqids,
    spanning,
    whole,
)


class LosingSource(ScriptedSource):
    """Drops the acknowledgements of ``lost`` until the connection is renewed."""

    def __init__(self, bodies: Sequence[str], lost: set[str], **kw) -> None:
        super().__init__(bodies, **kw)
        self.lost = lost

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        if self.epoch == 0:  # the raw id is in the ack handle (the pipeline renames messages)
            done = [m for m in done if m.ack is None or m.ack[1] not in self.lost]
            discarded = [m for m in discarded if m.ack is None or m.ack[1] not in self.lost]
        super().ack(done, discarded)


@pytest.mark.parametrize("stream_at", [None, 25])
def test_earlier_messages_redelivered_after_the_journal_are_duplicates(home, caplog,  # noqa: F811
                                                                       stream_at) -> None:
    # a span of three messages, a whole one, then a long span open at the reconnection
    bodies = spanning(home, 1, 3) + whole(home, 4) + spanning(home, 5, 300)
    lost = {"m000001", "m000002", "m000003"}  # the span's middle and end, the whole one
    source = LosingSource(bodies, lost, reconnect_after=150)
    run = Run(home, source, stream_at=stream_at)
    with caplog.at_level(logging.WARNING, logger="msgcap.capture"):
        run()
    assert run.capture.redeliveries == 1 and run.capture.spilled_messages > 0
    assert run.pipeline.stats.duplicates == len(lost)
    assert seqids(home) == ids(1, 300)
    assert [t for _, t, _ in home.trail()] == [0, 1, 2, 3, 0] + [1] * 294 + [2]
    assert source.acked == {ident for ident, _ in source.items}
    warned = [r.getMessage() for r in caplog.records if "duplicate" in r.getMessage()]
    assert len(warned) == 1, warned  # counted, not one line each (issue 35)
    assert warned[0].startswith(f"skipped {len(lost)} duplicates (messages already in the "
                                "trail)"), warned
