"""The replay path's fast paths give exactly what the general paths give.

The assembler's one-op path (``add_single``) against ``add`` with that path turned off, and its
batch form (``take_single``) against it; the
chunked text-line reader against line-by-line reading, and ``time`` ids against their rules.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gendef.model import Table, number_column, varchar_column
from msgcap import dumps
from msgcap.assembler import Assembler, ImageRules, Restart
from msgcap.msgid import IdWidthError, MessageIds
from parsers.model import MISSING, TX_BEGIN, TX_END, TX_WHOLE, Message, Op
from props.errors import MessageError

T = Table.build("S.CUST", [number_column("ID", 8, key=True), varchar_column("NAME", 20)])


class GeneralOnly(Assembler):
    """The same assembler with the one-op path turned off."""

    def add_single(self, message, op):
        return None


def _op(optype, key, seqid, txid, txind, ordinal):
    after = [key, "n"] if optype != "T" else None
    if key is None and after is not None:
        after[0] = MISSING  # a missing key: an error
    return Op(T, optype, 5, seqid, txid, txind, "name" if ordinal else None, None,
              after if optype == "D" else None, None if optype == "D" else after, ordinal, "m")


OPS = st.tuples(st.sampled_from("IUDT"), st.one_of(st.none(), st.integers(0, 9)),
                st.one_of(st.none(), st.sampled_from(["00000000000000000005", "0000000000000000000X",
                                                      "00000000000000000009", "7"])),
                st.one_of(st.none(), st.sampled_from(["t1", "t2"])),
                st.sampled_from([None, None, None, TX_BEGIN, TX_END, TX_WHOLE]),
                st.integers(0, 2))


def _run(asm, steps):
    out = []
    for n, step in enumerate(steps):
        message = Message(f"m{n}", origin=f"d:{n}")
        try:
            outcome = asm.add(message, [_op(*step)])
        except MessageError as exc:
            out.append(("error", exc.reason, exc.position, exc.source))
            continue
        except IdWidthError as exc:  # stops capture: nothing after it
            out.append(("fatal", str(exc)))
            break
        out.append((outcome.ack_now, outcome.duplicate, outcome.skipped_transactions,
                    [(d.tx.txid, d.tx.txname, d.tx.txowner,
                      [(r.table.name, r.iotype, r.before_after, r.io_time, r.seqid, r.audit_pos,
                        r.values, r.key_before) for r in d.tx.records],
                      [m.name for m in d.messages], d.ops, d.first_message)
                     for d in outcome.completed]))
    out.append(asm.state())
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(OPS, max_size=12), st.booleans(),
       st.sampled_from([None, ("00000000000000000005", 1, "41")]))
def test_single_op_path_equals_the_general_path(steps, compress, restart):
    rules = ImageRules(compress_updates=compress, compress_deletes=compress, pk_updates=False)
    start = Restart(*restart) if restart else Restart()
    assert _run(Assembler(rules, start), steps) == _run(GeneralOnly(rules, start), steps)


@settings(max_examples=200, deadline=None)
@given(st.lists(OPS, max_size=12), st.sampled_from([None, ("00000000000000000005", 1, "41")]))
def test_take_single_follows_add_single(steps, restart):
    """The Spark batch's trial (``take_single``) keeps exactly the state ``add_single`` keeps,
    and accepts the same operations."""
    start = Restart(*restart) if restart else Restart()
    built, taken = Assembler(None, start), Assembler(None, start)
    for n, step in enumerate(steps):
        op, message = _op(*step), Message(f"m{n}", origin=f"d:{n}")
        try:
            done = built.add_single(message, op)
        except MessageError:  # records that do not build: not for take_single (pass 2 says)
            return
        except IdWidthError as exc:
            with pytest.raises(IdWidthError) as info:
                taken.take_single(message, op)
            assert str(info.value) == str(exc)
            return
        assert taken.take_single(message, op) == (done is not None)
        if done is None:
            for asm in (built, taken):
                with contextlib.suppress(MessageError, IdWidthError):
                    asm.add(message, [op])
        assert built.state() == taken.state()


def test_single_op_error_changes_nothing():
    asm = Assembler()
    with pytest.raises(MessageError) as info:
        asm.add(Message("x", origin="d:1"), [_op("I", None, None, None, None, 0)])
    assert info.value.source == "d:1"
    (done,) = asm.add(Message("y"), [_op("I", 1, None, None, None, 0)]).completed
    assert done.tx.txid == "1" and done.tx.records[0].seqid == "00000000000000000001"


LINES = [b"a,b", b"", b"caf\xc3\xa9,\xe2\x82\xac", b"x\r", b"\r", b"bad \xff byte", b"y\r\r",
         b"\xc3", b"\xa9", b"last"]


def _reference(path):
    """Line-by-line reading: each line alone through ``line_messages``."""
    with open(path, "rb") as fh:
        return [(m.id, m.body, m.origin) for n, raw in enumerate(fh, 1)
                for _, m in dumps.line_messages(raw.removesuffix(b"\n"), path.name, str(path),
                                                iter((str(n),)))]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 64, 1 << 20])
@pytest.mark.parametrize("final", [b"", b"\n", b"\r\n"])
def test_text_lines_in_chunks_equal_line_by_line_reading(tmp_path, monkeypatch, chunk, final):
    path = tmp_path / "in.txt"
    path.write_bytes(b"\n".join(LINES) + final)
    monkeypatch.setattr(dumps, "_CHUNK", chunk)
    got = [(m.id, m.body, m.origin) for m in dumps.read_text_lines(str(path))]
    assert got == _reference(path)
    assert ("in.txt:6", b"bad \xff byte", f"{path}:6") in got
    assert ("in.txt:3", "café,€", f"{path}:3") in got


def test_time_ids_increase_past_a_clock_going_back_and_a_recovered_id():
    ticks = iter([5_000, 4_000, 9_000, 9_000])
    ids = MessageIds("time", "00000000000000000006", clock=lambda: next(ticks))
    got = [ids.next_id(Message(str(n))) for n in range(4)]
    assert got == ["00000000000000000007", "00000000000000000008", "00000000000000000009",
                   "00000000000000000010"]
    assert ids.last == got[-1]


def test_time_id_width_is_checked_and_a_rejected_id_is_not_the_last():
    ticks = iter([1_000, 10 ** 23, 2_000])
    ids = MessageIds("time", clock=lambda: next(ticks))
    assert ids.next_id(Message("a")) == "00000000000000000001"
    with pytest.raises(IdWidthError, match="width changed from 20 to 21"):
        ids.next_id(Message("b"))
    assert ids.next_id(Message("c")) == "00000000000000000002"
