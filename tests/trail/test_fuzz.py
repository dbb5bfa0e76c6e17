"""Random damage: the reader only ever yields records or raises TrailError, and after the
writer's recovery the trail always reads back cleanly, ending with a complete transaction."""

from __future__ import annotations

import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.model import Definitions, Table, char_column, number_column, varchar_column
from msgcap.trail.reader import TrailReader
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter
from props.errors import TrailError

TABLE = Table.build("S.T", [number_column("ID", 10, key=True), varchar_column("NAME", 20),
                            char_column("C", 3)])
DEFS = Definitions((TABLE,))


def _trail(d: str, byteorder: str) -> bytes:
    w = TrailWriter(os.path.join(d, "aa"), sync="none", byteorder=byteorder)
    w.open()
    for n in range(1, 6):
        w.write_transaction(TrailTransaction(str(n), [
            TrailRecord(TABLE, IOTYPE_INSERT, "A", n, f"{n:05d}", i, [n * 10 + i, "x" * n, "ab"])
            for i in range(n % 3 + 1)]))
    w.close()
    with open(os.path.join(d, "aa000000000"), "rb") as f:
        return f.read()


DAMAGE = st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert", "delete"]),
                            st.integers(0, 10**6), st.binary(min_size=1, max_size=8)),
                  min_size=1, max_size=4)


def _damage(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for op, where, blob in ops:
        i = where % (len(b) + 1)
        if op == "flip" and i < len(b):
            b[i] ^= blob[0] or 1
        elif op == "cut":
            del b[i:]
        elif op == "insert":
            b[i:i] = blob
        elif op == "delete":
            del b[i:i + len(blob)]
    return bytes(b)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["big", "little"]), DAMAGE)
def test_damaged_trails(byteorder: str, ops) -> None:
    with tempfile.TemporaryDirectory() as d:
        good = _trail(d, byteorder)
        path = os.path.join(d, "aa000000000")
        bad = _damage(good, ops)
        with open(path, "wb") as f:
            f.write(bad)
        try:
            reader = TrailReader(path, DEFS)
            for n, rec in enumerate(reader):
                assert n < 1000
                rec.values(reader.decoder(rec))
        except TrailError as exc:
            assert path in str(exc)
        try:
            w = TrailWriter(os.path.join(d, "aa"), sync="none", byteorder=byteorder)
            rec = w.open()
            w.close()
        except TrailError as exc:
            assert "not a trail file" in str(exc)
            with open(path, "rb") as f:
                assert f.read() == bad  # nothing changed
            return
        reader = TrailReader(path, DEFS)
        recs = list(reader)
        assert reader.tail is None
        if recs:
            assert recs[-1].transind in (2, 3)
            assert (rec.last_txid, rec.last_seqid, rec.txnum) == (
                recs[-1].txid, recs[-1].seqid, recs[-1].audit_rba)
        assert os.path.getsize(path) == rec.rba
