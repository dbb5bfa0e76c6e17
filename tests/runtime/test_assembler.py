"""Transaction assembly: txind state machine, counters, duplicates and image rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gendef.model import Table, number_column, varchar_column
from msgcap.assembler import Assembler, ImageRules, Restart
from msgcap.msgid import IdWidthError
from msgcap.trail.records import (
    IOTYPE_DELETE,
    IOTYPE_FIELDCOMP,
    IOTYPE_INSERT,
    IOTYPE_PKUPDATE,
    IOTYPE_TRUNCATE,
    IOTYPE_UPDATE,
)
from parsers.model import MISSING, Message, Op
from props.errors import MessageError

T = Table.build("S.CUST", [number_column("ID", 8, key=True), varchar_column("NAME", 20),
                           varchar_column("CITY", 20)])
NOKEY = Table.build("S.LOG", [varchar_column("A", 5), varchar_column("B", 5)])
M = MISSING


def op(optype="I", after=(1, "a", "b"), before=None, txind=None, seqid=None, txid=None,
       ordinal=0, table=T, ts=1_000_000):
    return Op(table, optype, ts, seqid, txid, txind, None, None,
              list(before) if before is not None else None,
              list(after) if after is not None else None, ordinal, "m")


def msg(name="m1"):
    return Message(name, origin=f"dump.jsonl:{name}")


def one(asm, o, **kw):
    out = asm.add(msg(), [o])
    (done,) = out.completed
    return done.tx.records


# -- image rules --------------------------------------------------------------------------------

def test_insert_writes_present_after_values():
    (r,) = one(Assembler(), op("I", (1, "a", M)))
    assert (r.iotype, r.before_after, r.values) == (IOTYPE_INSERT, "A", [1, "a", M])
    assert r.seqid == "00000000000000000001" and r.audit_pos == 0 and r.io_time == 1_000_000


def test_compressed_update_keys_plus_changed_columns():
    (r,) = one(Assembler(), op("U", after=(1, "a", "new"), before=(1, "a", "old")))
    assert (r.iotype, r.values) == (IOTYPE_FIELDCOMP, [1, M, "new"])


def test_compressed_update_without_befores_writes_all_present_columns():
    (r,) = one(Assembler(), op("U", after=(1, "a", M)))
    assert (r.iotype, r.values) == (IOTYPE_FIELDCOMP, [1, "a", M])


def test_compressed_update_nothing_changed_keys_only():
    (r,) = one(Assembler(), op("U", after=(1, "a", None), before=(1, "a", None)))
    assert r.values == [1, M, M]


def test_update_missing_before_counts_as_changed():
    (r,) = one(Assembler(), op("U", after=(1, "a", "x"), before=(1, "a", M)))
    assert r.values == [1, M, "x"]


def test_full_update_when_not_compressing():
    asm = Assembler(ImageRules(compress_updates=False))
    (r,) = one(asm, op("U", after=(1, "a", "new"), before=(1, "a", "old")))
    assert (r.iotype, r.values) == (IOTYPE_UPDATE, [1, "a", "new"])


def test_getupdatebefores_writes_before_record_of_same_columns_first():
    asm = Assembler(ImageRules(get_update_befores=True))
    b, a = one(asm, op("U", after=(1, "a", "new"), before=(1, "a", "old")))
    assert (b.before_after, b.iotype, b.values) == ("B", IOTYPE_FIELDCOMP, [1, M, "old"])
    assert (a.before_after, a.values) == ("A", [1, M, "new"])
    assert b.seqid == a.seqid and b.audit_pos == a.audit_pos


def test_getupdatebefores_without_befores_writes_after_only():
    asm = Assembler(ImageRules(get_update_befores=True))
    (a,) = one(asm, op("U", after=(1, "a", "new")))
    assert a.before_after == "A"


def test_primary_key_update():
    (r,) = one(Assembler(), op("U", after=(2, "a", "Chicago"), before=(1, "a", "Boston")))
    assert r.iotype == IOTYPE_PKUPDATE
    assert r.key_before == [1, M, M]
    assert r.values == [2, M, "Chicago"]


def test_primary_key_update_is_an_error_for_delim():
    asm = Assembler(ImageRules(pk_updates=False))
    with pytest.raises(MessageError, match="column ID.*primary-key updates"):
        asm.add(msg(), [op("U", after=(2, "a", "x"), before=(1, "a", "x"))])


def test_keyless_table_never_pk_update_and_all_columns_key():
    (r,) = one(Assembler(), op("U", table=NOKEY, after=("x", "y"), before=("x", "z")))
    assert (r.iotype, r.values) == (IOTYPE_FIELDCOMP, ["x", "y"])


def test_compressed_delete_key_only():
    (r,) = one(Assembler(), op("D", after=None, before=(1, "a", "b")))
    assert (r.iotype, r.before_after, r.values) == (IOTYPE_DELETE, "B", [1, M, M])


def test_delete_uses_after_values_when_only_those_exist():
    (r,) = one(Assembler(), op("D", after=(1, "a", M)))
    assert r.values == [1, M, M]


def test_full_delete_all_present_befores():
    asm = Assembler(ImageRules(compress_deletes=False))
    (r,) = one(asm, op("D", after=None, before=(1, None, M)))
    assert r.values == [1, None, M]


def test_truncate_has_no_values():
    (r,) = one(Assembler(), op("T", after=None))
    assert r.iotype == IOTYPE_TRUNCATE and all(v is M for v in r.values)


@pytest.mark.parametrize("optype,after,before", [
    ("I", (M, "a", "b"), None), ("U", (M, "a", "b"), None), ("D", None, (M, "a", "b"))])
def test_missing_key_is_a_message_error(optype, after, before):
    with pytest.raises(MessageError, match="key column ID is missing") as err:
        Assembler().add(msg(), [op(optype, after=after, before=before)])
    assert "dump.jsonl:m1" in str(err.value)


# -- transactions -------------------------------------------------------------------------------

def test_message_without_txind_is_one_transaction():
    asm = Assembler()
    out = asm.add(msg(), [op(ordinal=0), op(after=(2, "b", "c"), ordinal=1)])
    (done,) = out.completed
    assert done.tx.txid == "1" and len(done.tx.records) == 2
    assert [r.seqid for r in done.tx.records] == ["00000000000000000001", "00000000000000000002"]
    assert done.ops == {("S.CUST", "I"): 2}
    out = asm.add(msg("m2"), [op()])
    assert out.completed[0].tx.txid == "2"


def test_message_with_two_txids_is_an_error():
    with pytest.raises(MessageError, match="txid"):
        Assembler().add(msg(), [op(txid="A"), op(txid="B", ordinal=1)])


def test_txind_span_across_messages_and_acks():
    asm = Assembler()
    m1, m2, m3 = msg("1"), msg("2"), msg("3")
    out1 = asm.add(m1, [op(txind=0), op(txind=1, ordinal=1)])
    assert out1.completed == [] and not out1.ack_now
    assert asm.open_transaction == "dump.jsonl:1"
    out2 = asm.add(m2, [op(txind=1), op(txind=2, ordinal=1), op(txind=3, ordinal=2)])
    first, whole = out2.completed
    assert len(first.tx.records) == 4 and first.tx.txid == "1"
    assert first.messages == [m1]  # m2's last op is in the second transaction
    assert whole.messages == [m2] and whole.tx.txid == "2"
    out3 = asm.add(m3, [op(txind=0, txid=None)])
    assert out3.completed == []
    with pytest.raises(MessageError, match="no end record") as err:
        asm.finish()
    assert "dump.jsonl:3" in str(err.value)


@pytest.mark.parametrize("inds,reason", [
    ((1,), "middle without an open transaction"),
    ((2,), "end without an open transaction"),
    ((0, 0), "begin while transaction"),
    ((0, 3), "whole while transaction"),
])
def test_bad_txind_sequences(inds, reason):
    ops = [op(txind=i, ordinal=n) for n, i in enumerate(inds)]
    with pytest.raises(MessageError, match=reason):
        Assembler().add(msg(), ops)


def test_txid_change_inside_open_transaction_is_an_error():
    asm = Assembler()
    asm.add(msg(), [op(txind=0, txid="T1")])
    with pytest.raises(MessageError, match="differs from the open transaction"):
        asm.add(msg("2"), [op(txind=2, txid="T2")])


def test_message_without_txind_while_open_is_an_error():
    asm = Assembler()
    asm.add(msg(), [op(txind=0)])
    with pytest.raises(MessageError, match="must not interleave"):
        asm.add(msg("2"), [op()])


def test_failed_message_rolls_back_everything():
    asm = Assembler()
    asm.add(msg("1"), [op(txind=0)])
    with pytest.raises(MessageError):
        # a middle op is accepted, then the message fails on a missing key
        asm.add(msg("2"), [op(txind=1), op(txind=2, after=(M, "a", "b"), ordinal=1)])
    out = asm.add(msg("3"), [op(txind=2)])
    (done,) = out.completed
    assert [r.seqid for r in done.tx.records] == [
        "00000000000000000001", "00000000000000000002"]
    assert done.tx.txid == "1"


def test_txname_and_txowner_from_first_op():
    o = op()
    o.txname, o.txowner = "N", "O"
    out = Assembler().add(msg(), [o])
    assert (out.completed[0].tx.txname, out.completed[0].tx.txowner) == ("N", "O")


def test_empty_message_acks_now():
    out = Assembler().add(msg(), [])
    assert out.ack_now and not out.duplicate and out.completed == []


# -- restart and duplicates -----------------------------------------------------------------------

def test_counters_continue_after_restart():
    asm = Assembler(restart=Restart("00000000000000000041", 0, "7"))
    (done,) = asm.add(msg(), [op()]).completed
    assert done.tx.txid == "8"
    assert done.tx.records[0].seqid == "00000000000000000042"


def test_duplicates_by_seqid_and_ordinal():
    asm = Assembler(restart=Restart("0005", 1, "T"))
    dup = asm.add(msg("old"), [op(seqid="0005", ordinal=0), op(seqid="0005", ordinal=1)])
    assert dup.duplicate and dup.ack_now and dup.completed == []
    assert dup.skipped_transactions == 1
    assert asm.add(msg("older"), [op(seqid="0004")]).duplicate
    new = asm.add(msg("new"), [op(seqid="0006")])
    assert not new.duplicate and len(new.completed) == 1
    assert asm.last_written == ("0006", 0)
    # the same seqid again: not increasing, skipped as a duplicate
    assert asm.add(msg("again"), [op(seqid="0006")]).duplicate


def test_partly_written_message_writes_the_rest():
    asm = Assembler(restart=Restart("0005", 0))
    out = asm.add(msg(), [op(seqid="0005", txind=3, ordinal=0),
                          op(seqid="0005", txind=3, ordinal=1)])
    assert not out.duplicate and out.skipped_transactions == 1
    (done,) = out.completed
    assert done.tx.records[0].audit_pos == 1


def test_partly_written_transaction_is_an_error():
    asm = Assembler(restart=Restart("0005", 0))
    with pytest.raises(MessageError, match="only partly"):
        asm.add(msg(), [op(seqid="0005", ordinal=0), op(seqid="0005", ordinal=1)])


def test_duplicate_span_over_messages_is_skipped():
    asm = Assembler(restart=Restart("0009", 0))
    a = asm.add(msg("1"), [op(seqid="0008", txind=0)])
    b = asm.add(msg("2"), [op(seqid="0009", txind=2)])
    assert a.duplicate and b.duplicate and b.skipped_transactions == 1
    assert asm.open_transaction is None


def test_seqid_width_change_stops_capture():
    """Never a MessageError: error.policy=discard must not skip it (properties.md §14 #19)."""
    asm = Assembler(restart=Restart("0005", 0))
    with pytest.raises(IdWidthError, match="fixed-width") as caught:
        asm.add(msg(), [op(seqid="00006")])
    assert not isinstance(caught.value, MessageError)


# -- property: FieldComp = keys + changed columns + columns without a before value ---------------

_value = st.sampled_from([None, "x", "y", MISSING])


@given(st.lists(st.tuples(_value, _value), min_size=2, max_size=2),
       st.integers(1, 9), st.booleans())
def test_fieldcomp_columns(pairs, key, has_before):
    before = [key] + [b for b, _ in pairs]
    after = [key] + [a for _, a in pairs]
    o = op("U", after=after, before=before if has_before else None)
    (r,) = Assembler().add(msg(), [o]).completed[0].tx.records
    assert r.iotype == IOTYPE_FIELDCOMP and r.values[0] == key
    for i in range(1, 3):
        written = r.values[i]
        if after[i] is MISSING:
            assert written is MISSING
        elif has_before and before[i] is not MISSING and before[i] == after[i]:
            assert written is MISSING  # unchanged: left out
        else:
            assert written == after[i]  # changed, or nothing to compare with
