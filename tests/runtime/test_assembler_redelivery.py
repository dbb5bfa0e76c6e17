"""Messages already in the trail while a transaction is open (properties.md §9.2, §3.4).

After a reconnection the spill journal rebuilds the open transaction first, then the broker
redelivers messages of earlier, complete transactions whose acknowledgements were lost: they are
duplicates by the mark of the last complete transaction, and the open transaction goes on as if
they had not come. Everything else that interleaves stays an error.
"""

from __future__ import annotations

import pytest

from gendef.model import Table, number_column, varchar_column
from msgcap.assembler import Assembler, Restart
from msgcap.msgid import IdWidthError
from parsers.model import Message, Op
from props.errors import MessageError

T = Table.build("S.CUST", [number_column("ID", 8, key=True), varchar_column("NAME", 20)])
B, M, E, W = 0, 1, 2, 3


def op(seqid, txind=None, txid=None, ordinal=0):
    return Op(T, "I", 1_000_000, seqid, txid, txind, None, None, None, [int(seqid), "x"],
              ordinal, "m")


def msg(name):
    return Message(name, origin=f"q:{name}")


def opened(txid=None, restart=("0005", 1, "41")):
    """An assembler past the trail's mark (0005, 1) with a transaction of two messages open."""
    asm = Assembler(restart=Restart(*restart))
    assert asm.add(msg("6"), [op("0006", B, txid)]).completed == []
    assert asm.add(msg("7"), [op("0007", M, txid)]).completed == []
    return asm


def end(asm, txid=None):
    out = asm.add(msg("8"), [op("0008", E, txid)])
    (done,) = out.completed
    assert not out.duplicate and asm.open_transaction is None
    return done


def dup(asm, name, ops):
    """``ops`` in one message are a duplicate and leave the open transaction as it was."""
    before = asm.state()
    out = asm.add(msg(name), ops)
    assert out.duplicate and out.ack_now and out.completed == []
    assert out.skipped_transactions == 0
    assert asm.state() == before


@pytest.mark.parametrize("ops", [
    [op("0004")],                                     # without txind, before the mark
    [op("0005", ordinal=0), op("0005", ordinal=1)],   # at the mark
    [op("0005", W)],                                  # whole
    [op("0003", B)],                                  # an earlier span's messages, one by one
    [op("0004", M)],
    [op("0005", E)],
    [op("0004", M), op("0005", E, ordinal=1)],        # its last two in one message
    [op("0005", E), op("0005", W, ordinal=1)],        # several transactions in one message
], ids=["plain", "at-mark", "whole", "begin", "middle", "end", "middle-end", "end-whole"])
def test_redelivered_earlier_message_is_a_duplicate_while_a_transaction_is_open(ops):
    asm = opened()
    dup(asm, "old", ops)
    done = end(asm)
    assert [r.seqid for r in done.tx.records] == ["0006", "0007", "0008"]
    assert [m.name for m in done.messages] == ["q:6", "q:7", "q:8"]
    assert done.tx.txid == "42" and done.first_message == "q:6"
    assert asm.last_written == ("0008", 0)


def test_redelivered_messages_with_txids_of_an_earlier_transaction():
    asm = opened("T2")
    dup(asm, "b", [op("0003", B, "T1")])
    dup(asm, "m", [op("0004", M, "T1")])
    dup(asm, "e", [op("0005", E, "T1")])
    dup(asm, "w", [op("0005", W, "T0", ordinal=1)])
    done = end(asm, "T2")
    assert done.tx.txid == "T2" and len(done.tx.records) == 3


def test_duplicates_while_a_streamed_transaction_is_open():
    asm = opened()
    part, first = asm.take_open()
    assert first and len(part.records) == 2
    dup(asm, "old", [op("0004", W)])
    done = end(asm)
    assert done.streamed and [r.seqid for r in done.tx.records] == ["0008"]
    assert done.ops == {("S.CUST", "I"): 3}


def test_the_mark_travels_with_the_state():
    asm = opened()
    later = Assembler()
    later.resume(asm.state())
    dup(later, "old", [op("0005", W)])
    assert [r.seqid for r in end(later).tx.records] == ["0008"]


def test_a_skipped_open_transaction_goes_on_and_ends():
    """A span the trail already holds is open (skipped): an earlier message is a duplicate,
    the span's own end still ends it."""
    asm = Assembler(restart=Restart("0009", 0))
    assert asm.add(msg("8"), [op("0008", B)]).duplicate
    dup(asm, "old", [op("0005", W)])
    out = asm.add(msg("9"), [op("0009", E)])
    assert out.duplicate and out.skipped_transactions == 1 and asm.open_transaction is None
    (done,) = asm.add(msg("10"), [op("0010", W)]).completed
    assert done.tx.records[0].seqid == "0010"


# -- what stays an error ---------------------------------------------------------------------------

@pytest.mark.parametrize("ops,reason", [
    # new transactions interleaving
    ([op("0009", W)], "whole while transaction"),
    ([op("0009", B)], "begin while transaction"),
    ([op("0009")], "without txind while transaction"),
    # partly before the mark: not all of the message is in the trail
    ([op("0004", W), op("0009", W, ordinal=1)], "whole while transaction"),
    ([op("0004", M), op("0009", E, ordinal=1)], "must not interleave"),
    # after the mark but not increasing: the open transaction is not in the trail yet
    ([op("0006", W)], "whole while transaction"),
], ids=["whole", "begin", "plain", "straddling", "straddling-span", "inside-open"])
def test_interleaving_stays_an_error(ops, reason):
    asm = opened("T2")
    before = asm.state()
    for o in ops:
        o.txid = o.txid or "T9"
    with pytest.raises(MessageError, match=reason) as err:
        asm.add(msg("bad"), ops)
    assert err.value.source == "q:bad"
    assert asm.state() == before
    assert end(asm, "T2").tx.txid == "T2"


def test_continuing_the_open_transaction_from_before_the_mark_is_partly_written():
    asm = opened("T2")
    with pytest.raises(MessageError, match="only partly"):
        asm.add(msg("bad"), [op("0004", M, "T2")])
    assert end(asm, "T2").tx.txid == "T2"


def test_a_skipped_open_transaction_continued_after_the_mark_is_partly_written():
    asm = Assembler(restart=Restart("0009", 0))
    assert asm.add(msg("8"), [op("0008", B)]).duplicate
    with pytest.raises(MessageError, match="only partly"):
        asm.add(msg("bad"), [op("0010", E)])


def test_seqid_width_change_stays_an_error_while_open():
    asm = opened()
    with pytest.raises(IdWidthError, match="fixed-width"):
        asm.add(msg("bad"), [op("00004", W)])
