"""The writer: file naming, roll-over, sync modes, pre-encoded appends, limits, reopening."""

from __future__ import annotations

import os

import pytest

from gendef.model import Table, varchar_column
from msgcap.trail import writer as writer_mod
from msgcap.trail.encoder import TrailEncoder, encode_transaction
from msgcap.trail.reader import TrailFile, TrailReader
from msgcap.trail.records import IOTYPE_INSERT, Position, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter, check_records
from props.errors import MessageError, TrailError

MiB = 1024 * 1024


def tx(table: Table, n: int, records: int = 1, size: int = 20) -> TrailTransaction:
    seq = f"{n:020d}"
    return TrailTransaction(str(n), [
        TrailRecord(table, IOTYPE_INSERT, "A", n, seq, i, [f"{n}", "x" * size, "c", "WA"])
        for i in range(records)])


def read_all(path: str) -> list:
    return list(TrailReader(path))


def test_file_names_and_header(tmp_path, tcustmer: Table) -> None:
    os.chdir(tmp_path)
    w = TrailWriter("dirdat/aa", sync="none")
    rec = w.open()
    assert rec.file == "dirdat/aa000000000" and rec.seqno == 0 and rec.last_seqid is None
    assert rec.txnum == 0
    pos = w.write_transaction(tx(tcustmer, 1))
    w.close()
    assert pos == Position(0, os.path.getsize("dirdat/aa000000000"), "dirdat/aa000000000")
    with TrailFile("dirdat/aa000000000") as tf:
        assert tf.header.trail["file_name"] == "./dirdat/aa000000000"
        assert tf.header.trail["seqno"] == 0
        assert tf.header.producer["name"] == "MSGCAP"
        assert rec.rba == tf.data_start
    w6 = TrailWriter("dirdat/bb", seqlen=6, sync="none", extract="JMSVAM",
                     uri="uri:etl1::opt:gg:JMSVAM")
    assert w6.open().file == "dirdat/bb000000"
    w6.close()
    with TrailFile("dirdat/bb000000") as tf:
        assert tf.header.trail["uri"] == "uri:etl1::opt:gg:JMSVAM"
        assert tf.header.producer["name"] == "JMSVAM"


def test_rollover_at_megabytes_on_record_boundaries(tmp_path, wide_tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, megabytes=1, sync="none")
    w.open()
    positions = [w.write_transaction(tx(wide_tcustmer, n, size=200)) for n in range(1, 6001)]
    w.close()
    files = sorted(p for p in os.listdir(tmp_path))
    assert files == ["aa000000000", "aa000000001"]
    for name in files:
        path = str(tmp_path / name)
        assert os.path.getsize(path) <= MiB
        with TrailFile(path) as tf:
            recs = list(tf.records())
            assert tf.tail is None and recs[-1].end == tf.size
            assert tf.header.seqno == int(name[2:])
    assert positions[-1].seqno == 1 and positions[0].seqno == 0
    got = read_all(prefix + "000000000")
    assert [r.txid for r in got] == [str(n) for n in range(1, 6001)]
    assert [r.audit_rba for r in got] == list(range(1, 6001))


def test_transaction_rolls_whole_and_large_ones_span_files(tmp_path,
                                                           wide_tcustmer: Table) -> None:
    tcustmer = wide_tcustmer
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, megabytes=1, sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    # 2.5 MiB transaction: starts a new file, continues into the following ones
    big = tx(tcustmer, 2, records=12000, size=200)
    pos = w.write_transaction(big)
    w.write_transaction(tx(tcustmer, 3))
    w.close()
    names = sorted(os.listdir(tmp_path))
    assert len(names) >= 4 and pos.seqno == len(names) - 1
    with TrailFile(str(tmp_path / names[0])) as tf:
        assert [r.txid for r in tf.records()] == ["1"]
    got = read_all(prefix + "000000000")
    assert len(got) == 1 + 12000 + 1
    inds = [r.transind for r in got if r.txid == "2"]
    assert inds[0] == 0 and inds[-1] == 2 and set(inds[1:-1]) == {1}
    for name in names:
        assert os.path.getsize(tmp_path / name) <= MiB


def test_sync_modes_fsync_as_documented(tmp_path, tcustmer: Table, monkeypatch) -> None:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(writer_mod.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    for mode, after_three, after_flush in (("transaction", 3, 4), ("batch", 0, 1),
                                           ("none", 0, 0)):
        w = TrailWriter(str(tmp_path / mode[:2]), sync=mode)
        w.open()
        calls.clear()
        for n in range(3):
            w.write_transaction(tx(tcustmer, n))
        assert len(calls) == after_three, mode
        durable = w.flush_durable()
        assert len(calls) == after_flush, mode
        assert durable == w.position == w.durable
        assert os.path.getsize(durable.file) == durable.rba  # written, not just buffered
        w.close()


def test_new_files_fsync_file_and_directory(tmp_path, tcustmer: Table, monkeypatch) -> None:
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(writer_mod.os, "fsync",
                        lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    w = TrailWriter(str(tmp_path / "aa"), sync="batch")
    w.open()
    assert str(tmp_path / "aa000000000") in synced and str(tmp_path) in synced
    w.close()


def test_append_encoded_equals_write_transaction(tmp_path, tcustmer: Table) -> None:
    txs = [tx(tcustmer, n, records=n % 3 + 1) for n in range(1, 20)]
    a = TrailWriter(str(tmp_path / "aa"), sync="none", byteorder="little")
    a.open()
    for t in txs:
        a.write_transaction(t)
    a.close()
    b = TrailWriter(str(tmp_path / "bb"), sync="none", byteorder="little")
    b.open()
    enc = TrailEncoder("little")
    chunks = [encode_transaction(t, b.txnum + 1 + i, "little", enc) for i, t in enumerate(txs)]
    last = txs[-1].records[-1]
    b.append_encoded(b"".join(chunks), transactions=len(txs), last_seqid=last.seqid,
                     last_audit_pos=last.audit_pos, last_txid=txs[-1].txid)
    assert b.txnum == len(txs)
    b.close()
    with TrailFile(str(tmp_path / "aa000000000")) as fa, \
            TrailFile(str(tmp_path / "bb000000000")) as fb:
        ra = (tmp_path / "aa000000000").read_bytes()[fa.data_start:]
        rb = (tmp_path / "bb000000000").read_bytes()[fb.data_start:]
    assert ra == rb
    again = TrailWriter(str(tmp_path / "bb"), sync="none", byteorder="little")
    rec = again.open()
    again.close()
    assert (rec.last_seqid, rec.last_audit_pos, rec.last_txid, rec.txnum) == (
        last.seqid, last.audit_pos, "19", 19)


def test_append_encoded_rejects_garbage_and_open_transactions(tmp_path, tcustmer: Table) -> None:
    w = TrailWriter(str(tmp_path / "aa"), sync="none")
    start = w.open().rba
    with pytest.raises(TrailError, match="no complete record"):
        w.append_encoded(b"Gxxxxxxx" * 10, transactions=1, last_seqid=None,
                         last_audit_pos=None, last_txid=None)
    two = encode_transaction(tx(tcustmer, 1, records=2), 1)
    first_only = two[:len(two) // 2]
    with pytest.raises(TrailError, match="complete transaction"):
        w.append_encoded(first_only, transactions=1, last_seqid=None, last_audit_pos=None,
                         last_txid=None)
    w.close()
    assert os.path.getsize(tmp_path / "aa000000000") == start


def test_checked_encoded_data_has_its_ends_checked(tmp_path, tcustmer: Table) -> None:
    """``checked``: the records were walked where they were framed; the writer still refuses
    data that does not start with a record, end with one, or end a transaction."""
    two = encode_transaction(tx(tcustmer, 1, records=2), 1)
    three = two + encode_transaction(tx(tcustmer, 2), 2)
    w = TrailWriter(str(tmp_path / "aa"), sync="none")
    start = w.open().rba
    for bad, reason in ((b"Gxxxxxxx" * 10, "no complete record at offset 0"),
                        (three[1:], "no complete record at offset 0"),
                        (three[:-1], "bad trailer"),
                        (two[:len(two) // 2], "complete transaction")):
        with pytest.raises(TrailError, match=reason):
            w.append_encoded(bad, transactions=1, last_seqid=None, last_audit_pos=None,
                             last_txid=None, checked=True)
    assert w.position.rba == start
    w.append_encoded(three, transactions=2, last_seqid=None, last_audit_pos=None,
                     last_txid=None, checked=True)
    w.close()
    with TrailFile(str(tmp_path / "aa000000000")) as tf:
        assert (tmp_path / "aa000000000").read_bytes()[tf.data_start:] == three


def test_check_records_walks_every_record(tcustmer: Table) -> None:
    first = encode_transaction(tx(tcustmer, 1), 1)
    data = bytearray(first + encode_transaction(tx(tcustmer, 2), 2))
    check_records(bytes(data), "big")
    data[len(first) - 4] = ord("X")  # the first record's trailer: the ends are still sound
    with pytest.raises(TrailError, match="bad trailer at offset 0"):
        check_records(bytes(data), "big")
    with pytest.raises(TrailError, match="complete transaction"):
        check_records(encode_transaction(tx(tcustmer, 3, records=2), 3)[:len(first)], "big")
    check_records(encode_transaction(tx(tcustmer, 3, records=2), 3)[:len(first)], "big",
                  partial=True)


def test_record_over_65535_bytes_is_a_message_error(tmp_path) -> None:
    t = Table.build("S.WIDE", [varchar_column(f"C{i}", 30000) for i in range(3)])
    w = TrailWriter(str(tmp_path / "aa"), sync="none")
    w.open()
    big = TrailTransaction("1", [TrailRecord(t, IOTYPE_INSERT, "A", 0, "1", 0, ["x" * 30000] * 3)])
    with pytest.raises(MessageError, match="exceeds the trail limit"):
        w.write_transaction(big)
    one = TrailTransaction("1", [TrailRecord(t, IOTYPE_INSERT, "A", 0, "1", 0,
                                             ["x" * 70000, None, None])])
    with pytest.raises(MessageError, match="C0"):
        w.write_transaction(one)
    assert w.txnum == 0
    ok = TrailTransaction("2", [TrailRecord(t, IOTYPE_INSERT, "A", 0, "2", 0, ["y", None, None])])
    w.write_transaction(ok)
    w.close()
    got = read_all(str(tmp_path / "aa000000000"))
    assert [(r.txid, r.audit_rba) for r in got] == [("2", 1)]


def test_bad_values_name_table_and_column(tmp_path, orders: Table) -> None:
    w = TrailWriter(str(tmp_path / "aa"), sync="none")
    w.open()
    values = [1, "n", "c", "WA", "12.50", "2024-01-01:00:00:00.000000", None, "1"]
    with pytest.raises(MessageError, match="SALES.ORDERS column AMOUNT"):
        w.write_transaction(TrailTransaction("1", [TrailRecord(orders, IOTYPE_INSERT, "A", 0,
                                                               "1", 0, values)]))
    values[4] = 10**19
    with pytest.raises(MessageError, match="AMOUNT"):
        w.write_transaction(TrailTransaction("1", [TrailRecord(orders, IOTYPE_INSERT, "A", 0,
                                                               "1", 0, values)]))
    w.close()


def test_reopen_continues_numbering_and_reports_last(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="batch")
    w.open()
    w.write_transaction(tx(tcustmer, 7, records=3))
    w.close()
    w = TrailWriter(prefix, sync="batch")
    rec = w.open()
    assert (rec.last_seqid, rec.last_audit_pos, rec.last_txid, rec.txnum) == (
        f"{7:020d}", 2, "7", 1)
    assert rec.truncated == 0 and rec.deleted == ()
    w.write_transaction(tx(tcustmer, 8))
    w.close()
    assert [r.audit_rba for r in read_all(prefix + "000000000")] == [1, 1, 1, 2]


def test_byte_order_change_starts_a_new_file(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, byteorder="little", sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    w.close()
    w = TrailWriter(prefix, byteorder="big", sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 2))
    w.close()
    with TrailFile(prefix + "000000000") as a, TrailFile(prefix + "000000001") as b:
        assert (a.byteorder, b.byteorder) == ("little", "big")
    assert [r.txid for r in read_all(prefix + "000000000")] == ["1", "2"]


def test_durable_position_beyond_the_trail_is_an_error(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    durable = w.flush_durable()
    w.write_transaction(tx(tcustmer, 2))
    w.close()
    path = prefix + "000000000"
    with open(path, "r+b") as f:  # lose the second transaction and part of the first
        f.truncate(durable.rba - 10)
    size = os.path.getsize(path)
    with pytest.raises(TrailError, match="durable"):
        TrailWriter(prefix, sync="none").open(durable=durable)
    assert os.path.getsize(path) == size


def test_writer_must_be_open(tmp_path, tcustmer: Table) -> None:
    w = TrailWriter(str(tmp_path / "aa"))
    with pytest.raises(TrailError, match="not open"):
        w.write_transaction(tx(tcustmer, 1))
    with pytest.raises(ValueError):
        TrailWriter(str(tmp_path / "aa"), sync="sometimes")
    with pytest.raises(ValueError):
        TrailWriter(str(tmp_path / "aa"), megabytes=0)


def test_transaction_written_in_parts(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="transaction", megabytes=1)
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    big = tx(tcustmer, 2, records=3)
    parts = [TrailTransaction("2", [r]) for r in big.records]
    w.write_records(parts[0], first=True, last=False)
    with pytest.raises(TrailError, match="still open"):
        w.write_transaction(tx(tcustmer, 3))
    with pytest.raises(TrailError, match="already open"):
        w.write_records(parts[1], first=True, last=False)
    assert w.txnum == 1 and w.last_txid == "1"
    w.write_records(parts[1], first=False, last=False)
    pos = w.write_records(parts[2], first=False, last=True)
    assert w.txnum == 2 and w.last_txid == "2" and w.durable == pos
    with pytest.raises(TrailError, match="no open transaction"):
        w.write_records(parts[0], first=False, last=True)
    w.write_transaction(tx(tcustmer, 3))
    w.close()
    got = read_all(prefix + "000000000")
    assert [(r.txid, r.transind, r.audit_rba) for r in got] == [
        ("1", 3, 1), ("2", 0, 2), ("2", 1, 2), ("2", 2, 2), ("3", 3, 3)]


def test_append_encoded_in_partial_chunks(tmp_path, tcustmer: Table) -> None:
    """Spark batch: a transaction spanning partitions arrives in two encoded chunks."""
    w = TrailWriter(str(tmp_path / "aa"), sync="none")
    w.open()
    two = tx(tcustmer, 1, records=2)
    head = encode_transaction(TrailTransaction("1", two.records[:1]), 1, last=False)
    tail = encode_transaction(TrailTransaction("1", two.records[1:]), 1, first=False)
    w.append_encoded(head, transactions=1, last_seqid=None, last_audit_pos=None, last_txid=None,
                     partial=True)
    with pytest.raises(TrailError, match="still open"):
        w.write_transaction(tx(tcustmer, 2))
    last = two.records[1]
    w.append_encoded(tail, transactions=0, last_seqid=last.seqid, last_audit_pos=1,
                     last_txid="1")
    w.write_transaction(tx(tcustmer, 2))
    w.close()
    got = read_all(str(tmp_path / "aa000000000"))
    assert [(r.txid, r.transind, r.audit_rba) for r in got] == [("1", 0, 1), ("1", 2, 1),
                                                                 ("2", 3, 2)]


def test_missing_trail_with_a_durable_checkpoint_is_an_error(tmp_path) -> None:
    with pytest.raises(TrailError, match="durable data is missing"):
        TrailWriter(str(tmp_path / "aa")).open(durable=Position(2, 5000, "x"))
    assert os.listdir(tmp_path) == []


def test_header_only_file_in_the_other_byte_order_is_rewritten(tmp_path) -> None:
    prefix = str(tmp_path / "aa")
    TrailWriter(prefix, byteorder="little", sync="none").open()
    w = TrailWriter(prefix, byteorder="big", sync="none")
    rec = w.open()
    w.close()
    assert rec.seqno == 0 and sorted(os.listdir(tmp_path)) == ["aa000000000"]
    with TrailFile(prefix + "000000000") as tf:
        assert tf.byteorder == "big"


def test_durable_position_at_the_start_of_a_header_only_next_file(tmp_path, tcustmer) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    w._roll()
    durable = w.flush_durable()
    w.close()
    assert durable.seqno == 1
    rec = TrailWriter(prefix, sync="none").open(durable=durable)
    assert rec.position == durable


def test_header_path_names_the_files_in_their_headers(tmp_path, tcustmer: Table) -> None:
    w = TrailWriter(str(tmp_path / "out" / "aa"), sync="none", header_path="dirdat/aa")
    w.open()
    data = bytearray(encode_transaction(tx(tcustmer, 1), 1))
    w.append_encoded(memoryview(data), transactions=1, last_seqid="1", last_audit_pos=0,
                     last_txid="1")
    data[:] = bytes(len(data))  # the caller reuses its buffer before the writer flushes
    w.close()
    with TrailFile(str(tmp_path / "out" / "aa000000000")) as tf:
        assert tf.header.trail["file_name"] == "./dirdat/aa000000000"
    assert [r.txid for r in read_all(str(tmp_path / "out" / "aa000000000"))] == ["1"]
