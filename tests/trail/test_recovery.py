"""Crash recovery (trail-format.md §14): whatever tail a crash leaves, reopening keeps exactly
the complete transactions, and the writer never appends after bytes it has not validated."""

from __future__ import annotations

import os
import shutil

import pytest

from gendef.model import Table
from msgcap.trail.reader import TrailFile, TrailReader
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter
from props.errors import TrailError


def tx(table: Table, n: int, records: int = 1, size: int = 10) -> TrailTransaction:
    return TrailTransaction(str(n), [
        TrailRecord(table, IOTYPE_INSERT, "A", n, f"{n:020d}", i, [f"{n}", "x" * size, "c", "WA"])
        for i in range(records)], txname="NAME" if n % 2 else None)


def txids(path: str) -> list[str]:
    reader = TrailReader(path)
    out = [r.txid for r in reader]
    assert reader.tail is None
    return out


def write(prefix: str, txs: list[TrailTransaction], megabytes: int = 100) -> list:
    w = TrailWriter(prefix, sync="none", megabytes=megabytes)
    w.open()
    positions = [w.write_transaction(t) for t in txs]
    w.close()
    return positions


def test_truncation_at_every_byte_of_the_last_transaction(tmp_path, tcustmer: Table) -> None:
    src = tmp_path / "src"
    src.mkdir()
    txs = [tx(tcustmer, 1), tx(tcustmer, 2, records=2), tx(tcustmer, 3, records=3)]
    positions = write(str(src / "aa"), txs)
    full = (src / "aa000000000").read_bytes()
    start, end = positions[1].rba, positions[2].rba
    assert end == len(full)
    work = tmp_path / "work"
    for cut in range(start, end + 1):
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        path = work / "aa000000000"
        path.write_bytes(full[:cut])
        w = TrailWriter(str(work / "aa"), sync="none")
        rec = w.open()
        complete = cut == end
        last = txs[2] if complete else txs[1]
        assert rec.last_txid == last.txid, cut
        assert rec.last_seqid == last.records[-1].seqid
        assert rec.last_audit_pos == len(last.records) - 1
        assert rec.txnum == (3 if complete else 2)
        assert rec.rba == (end if complete else start) == os.path.getsize(path)
        assert rec.truncated == (0 if complete else cut - start)
        # appending continues cleanly after the recovery point
        w.write_transaction(tx(tcustmer, 9))
        w.close()
        expected = ["1", "2", "2"] + (["3"] * 3 if complete else []) + ["9"]
        assert txids(str(path)) == expected, cut
        assert TrailFile(str(path)).records().__next__().audit_rba == 1


def test_garbage_after_complete_data_is_removed(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    positions = write(prefix, [tx(tcustmer, 1), tx(tcustmer, 2)])
    for garbage in (b"\x00" * 300, b"G\x01\x00\x10" + os.urandom(100), b"Z" * 7):
        with open(prefix + "000000000", "ab") as f:
            f.write(garbage)
        rec = TrailWriter(prefix, sync="none").open()
        assert rec.last_txid == "2" and rec.rba == positions[-1].rba
        assert os.path.getsize(prefix + "000000000") == positions[-1].rba


@pytest.mark.parametrize("offset", [0, 1, 2, 3])
def test_corrupt_record_in_the_middle_ends_the_valid_prefix(tmp_path, tcustmer: Table,
                                                            offset: int) -> None:
    prefix = str(tmp_path / "aa")
    positions = write(prefix, [tx(tcustmer, n) for n in range(1, 5)])
    path = tmp_path / "aa000000000"
    data = bytearray(path.read_bytes())
    data[positions[1].rba + offset] ^= 0x7F  # the third record's head: id, info or length
    path.write_bytes(bytes(data))
    path = str(path)
    if offset == 1:  # the info byte is ignored by readers
        assert txids(path) == ["1", "2", "3", "4"]
        return
    if offset == 0:  # another record id with a valid trailer is skipped (with a warning)
        assert txids(path) == ["1", "2", "4"]
        return
    with pytest.raises(TrailError, match=f"RBA {positions[1].rba}"):
        list(TrailReader(path))
    w = TrailWriter(prefix, sync="none")
    rec = w.open()
    w.close()
    assert rec.last_txid == "2" and os.path.getsize(path) == positions[1].rba


def test_not_a_trail_file_is_left_alone(tmp_path) -> None:
    path = tmp_path / "aa000000000"
    content = b"this is not a trail file at all, just text\n" * 20
    path.write_bytes(content)
    with pytest.raises(TrailError, match="not a trail file"):
        TrailWriter(str(tmp_path / "aa"), sync="none").open()
    assert path.read_bytes() == content


@pytest.mark.parametrize("keep", [0, 1, 5, 11, 40])
def test_partial_file_header_is_rewritten(tmp_path, tcustmer: Table, keep: int) -> None:
    prefix = str(tmp_path / "aa")
    write(prefix, [])
    path = prefix + "000000000"
    with open(path, "rb") as f:
        header = f.read()
    with open(path, "wb") as f:
        f.write(header[:keep])
    w = TrailWriter(prefix, sync="none")
    rec = w.open()
    assert rec.last_txid is None and rec.txnum == 0 and rec.rba == len(header)
    w.write_transaction(tx(tcustmer, 1))
    w.close()
    assert txids(path) == ["1"]


def test_incomplete_transaction_spanning_files(tmp_path, wide_tcustmer: Table) -> None:
    tcustmer = wide_tcustmer
    prefix = str(tmp_path / "aa")
    big = tx(tcustmer, 2, records=9000, size=200)
    write(prefix, [tx(tcustmer, 1), big], megabytes=1)
    files = sorted(os.listdir(tmp_path))
    assert len(files) >= 3
    last = tmp_path / files[-1]
    last.write_bytes(last.read_bytes()[:-30])  # the big transaction lost its end
    first_size = os.path.getsize(tmp_path / files[0])
    w = TrailWriter(prefix, sync="none", megabytes=1)
    rec = w.open()
    assert rec.last_txid == "1" and rec.seqno == 0 and rec.rba == first_size
    assert sorted(os.path.basename(p) for p in rec.deleted) == files[1:]
    w.write_transaction(tx(tcustmer, 3))
    w.close()
    assert sorted(os.listdir(tmp_path)) == files[:1]
    assert txids(prefix + "000000000") == ["1", "3"]


def test_next_file_holding_only_its_header_is_kept(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    w._roll()  # a roll-over whose first transaction never arrived
    w.close()
    with TrailFile(prefix + "000000001") as tf:
        header_len = tf.data_start
        assert tf.size == header_len
    w = TrailWriter(prefix, sync="none")
    rec = w.open()
    assert (rec.seqno, rec.rba, rec.last_txid, rec.deleted, rec.truncated) == (
        1, header_len, "1", (), 0)
    w.write_transaction(tx(tcustmer, 2))
    w.close()
    assert txids(prefix + "000000000") == ["1", "2"]


def test_next_file_with_a_partial_record_is_deleted(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none")
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    w._roll()
    w.write_transaction(tx(tcustmer, 2))
    w.close()
    path1 = prefix + "000000001"
    with TrailFile(path1) as tf:
        cut = tf.data_start + 17
    with open(path1, "r+b") as f:  # crashed while writing the first record after the roll
        f.truncate(cut)
    w = TrailWriter(prefix, sync="none")
    rec = w.open()
    assert (rec.seqno, rec.last_txid, rec.deleted) == (0, "1", (path1,))
    w.write_transaction(tx(tcustmer, 3))
    w.close()
    assert not os.path.exists(path1)
    assert txids(prefix + "000000000") == ["1", "3"]


def test_empty_newest_file_after_a_roll(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    write(prefix, [tx(tcustmer, 1)])
    open(prefix + "000000001", "wb").close()
    w = TrailWriter(prefix, sync="none")
    rec = w.open()
    w.write_transaction(tx(tcustmer, 2))
    w.close()
    assert rec.last_txid == "1"
    assert txids(prefix + "000000000") == ["1", "2"]


def test_trail_without_any_complete_transaction(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    positions = write(prefix, [tx(tcustmer, 1, records=3)])
    path = prefix + "000000000"
    with open(path, "r+b") as f:
        f.truncate(positions[0].rba - 1)
    w = TrailWriter(prefix, sync="none")
    rec = w.open()
    assert rec.last_txid is None and rec.txnum == 0
    w.write_transaction(tx(tcustmer, 5))
    w.close()
    assert [r.audit_rba for r in TrailReader(path)] == [1]
