"""The trail writer's side of transactions written in parts, as the live capture uses it: a durable
position inside one is where it begins, and ``drop_open`` removes its parts (rolled-over files
included) while keeping every complete transaction."""

from __future__ import annotations

import os

from gendef.model import Table, char_column, varchar_column
from msgcap.trail.reader import TrailReader
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter

TABLE = Table.build("GG.TCUSTMER", [varchar_column("CUST_CODE", 4, key=True),
                                    varchar_column("NAME", 30), char_column("STATE", 2)])


def tx(n: int, records: int = 1, first: int = 0) -> TrailTransaction:
    return TrailTransaction(str(n), [
        TrailRecord(TABLE, IOTYPE_INSERT, "A", n, f"{n:010d}{i:010d}", i, [str(n), "x" * 30, "WA"])
        for i in range(first, first + records)])


def txids(prefix: str) -> list[str]:
    reader = TrailReader(prefix + "000000000")
    out = [r.txid for r in reader]
    assert reader.tail is None
    return out


def test_durable_position_inside_parts_is_where_the_transaction_begins(tmp_path) -> None:
    w = TrailWriter(str(tmp_path / "aa"), sync="batch")
    w.open()
    end_of_one = w.write_transaction(tx(1))
    w.write_records(tx(2, 5), first=True, last=False)
    assert w.in_transaction
    assert w.flush_durable() == end_of_one == w.durable
    assert os.path.getsize(end_of_one.file) > end_of_one.rba  # the part is on disk, after it
    end = w.write_records(tx(2, 5, first=5), first=False, last=True)
    assert not w.in_transaction
    assert w.flush_durable() == end
    w.close()
    assert txids(str(tmp_path / "aa")) == ["1"] + ["2"] * 10


def test_drop_open_removes_the_parts_and_the_files_they_rolled_into(tmp_path) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none", megabytes=1)
    w.open()
    w.write_transaction(tx(1))
    end_of_two = w.write_transaction(tx(2, 3))
    first = True
    while w.position.seqno < 2:  # parts of a transaction larger than two files
        w.write_records(tx(3, 500), first=first, last=False)
        first = False
    w.drop_open()
    assert not w.in_transaction and w.position == end_of_two
    assert (w.txnum, w.last_txid, w.last_seqid) == (2, "2", f"{2:010d}{2:010d}")
    assert sorted(os.listdir(tmp_path)) == ["aa000000000"]
    w.write_transaction(tx(3, 2))
    w.close()
    assert txids(prefix) == ["1", "2", "2", "2", "3", "3"]
