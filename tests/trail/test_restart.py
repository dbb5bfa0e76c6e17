"""Restart from the checkpoint (properties.md §10.2, trail-format.md §14): the writer reads only
what follows the checkpoint's durable position, checks the record that ends there, and keeps
every recovery guarantee; a trail whose files do not follow each other is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gendef.model import Table
from msgcap.trail.reader import TrailFile
from msgcap.trail.writer import Recovery, TrailWriter
from props.errors import TrailError
from tests.trail.test_writer import tx


def _durable(w: TrailWriter) -> Recovery:
    """What a checkpoint records after a durable group."""
    pos = w.flush_durable()
    return Recovery(w.last_seqid, w.last_audit_pos, w.last_txid, w.txnum, pos.seqno, pos.rba,
                    pos.file)


def _trail(prefix: str, table: Table, n: int, start: int = 1) -> TrailWriter:
    w = TrailWriter(prefix, sync="none")
    w.open()
    for i in range(start, start + n):
        w.write_transaction(tx(table, i))
    return w


def test_restart_reads_only_what_follows_the_checkpoint(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = _trail(prefix, tcustmer, 100)
    cp = _durable(w)
    for i in (101, 102, 103):  # written after the checkpoint, before a crash
        w.write_transaction(tx(tcustmer, i))
    w.close()
    path = prefix + "000000000"
    with open(path, "ab") as f:
        f.write(b"G\x01\x01\x00partial")  # a cut record: the crash
    with TrailFile(path) as tf:
        tenth = next(r for r in tf.records() if r.txid == "10")
    with open(path, "r+b") as f:  # damage far before the checkpoint: never read on restart
        f.seek(tenth.rba)
        f.write(b"\xee" * 8)
    before = Path(path).read_bytes()
    rec = TrailWriter(prefix, sync="none").open(cp)
    assert (rec.txnum, rec.last_txid, rec.truncated) == (103, "103", 11)
    assert Path(path).read_bytes() == before[:-11]  # the damage is still there, untouched
    # a scan of the whole file (no checkpoint) would have cut the trail at the damage
    rescan = TrailWriter(prefix, sync="none").open()
    assert rescan.txnum == 9 and os.path.getsize(path) == tenth.rba


def test_nothing_after_the_checkpoint(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = _trail(prefix, tcustmer, 3)
    cp = _durable(w)
    w.close()
    w2 = TrailWriter(prefix, sync="none")
    rec = w2.open(cp)
    assert rec.position == cp.position and (rec.last_seqid, rec.txnum) == (cp.last_seqid, 3)
    w2.write_transaction(tx(tcustmer, 4))
    w2.close()
    with TrailFile(prefix + "000000000") as tf:
        assert [r.txid for r in tf.records()] == ["1", "2", "3", "4"]


def test_a_checkpoint_of_another_trail_is_refused(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = _trail(prefix, tcustmer, 5)
    cp = _durable(w)
    w.close()
    size = os.path.getsize(prefix + "000000000")
    other = Recovery("00000000000000000077", 0, "77", 77, cp.seqno, cp.rba, cp.file)
    with pytest.raises(TrailError, match="the checkpoint does not match the trail: it names "
                                         "seqid 00000000000000000077 of transaction 77"):
        TrailWriter(prefix, sync="none").open(other)
    shifted = Recovery(cp.last_seqid, 0, cp.last_txid, cp.txnum, cp.seqno, cp.rba - 3, cp.file)
    with pytest.raises(TrailError, match="no record ends at the durable position"):
        TrailWriter(prefix, sync="none").open(shifted)
    assert os.path.getsize(prefix + "000000000") == size  # nothing truncated


def test_checkpoint_inside_a_transaction_written_in_parts(tmp_path, tcustmer: Table) -> None:
    """Mid-transaction, the durable position is where the transaction begins."""
    prefix = str(tmp_path / "aa")
    w = _trail(prefix, tcustmer, 2)
    big = tx(tcustmer, 3, records=2)
    from msgcap.trail.records import TrailTransaction

    w.write_records(TrailTransaction("3", big.records[:1]), first=True, last=False)
    cp = _durable(w)
    assert cp.txnum == 2 and cp.last_txid == "2"
    w.flush()  # the crash leaves the first part on disk
    rec = TrailWriter(prefix, sync="none").open(cp)
    assert rec.position == cp.position and rec.truncated > 0 and rec.txnum == 2


def test_checkpoint_at_a_file_start_after_older_files_were_purged(tmp_path, tcustmer) -> None:
    prefix = str(tmp_path / "aa")
    w = _trail(prefix, tcustmer, 2)
    w._roll()
    cp = _durable(w)  # the start of file 1: no record before it in its file
    w.close()
    os.remove(prefix + "000000000")  # housekeeping removed the older file
    w2 = TrailWriter(prefix, sync="none")
    rec = w2.open(cp)
    assert (rec.seqno, rec.last_txid, rec.txnum) == (1, "2", 2)  # from the checkpoint
    assert w2.write_transaction(tx(tcustmer, 3)).seqno == 1


def test_a_missing_file_in_the_sequence_stops_recovery(tmp_path, tcustmer: Table) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none")
    w.open()
    for i in range(1, 4):
        w.write_transaction(tx(tcustmer, i))
        w._roll()
    w.close()
    os.remove(prefix + "000000001")
    names = sorted(os.listdir(tmp_path))
    with pytest.raises(TrailError, match=f"trail file {prefix}000000001 is missing before "
                                         f"{prefix}000000002"):
        TrailWriter(prefix, sync="none").open()
    assert sorted(os.listdir(tmp_path)) == names


def test_the_checkpoint_names_its_trail(tmp_path) -> None:
    from msgcap.checkpoint import Checkpoint, CheckpointFile

    cpf = CheckpointFile(str(tmp_path), "MSGCAP")
    cpf.save(Checkpoint("dirdat/my000000000", 0, 900, "07", 0, "7", "07", 7, 7,
                        trail="dirdat/my"))
    assert cpf.load("./dirdat/my").recovery.txnum == 7
    with pytest.raises(TrailError, match="MSGCAP.cpj: this checkpoint belongs to trail "
                                         "dirdat/my, not to trail.path=dirdat/or: give each "
                                         "configuration its own trail.extract"):
        cpf.load("dirdat/or")
    (tmp_path / "MSGCAP.cpj").write_text('{"file": "x", "seqno": "0", "rba": 1}')
    with pytest.raises(TrailError, match="bad checkpoint: seqno is '0'"):
        cpf.load()
    (tmp_path / "MSGCAP.cpj").write_text("[1]")
    with pytest.raises(TrailError, match="not a JSON object"):
        cpf.load()
