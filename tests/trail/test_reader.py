"""The reader on good and bad input: partial tails, corruption, unknown tokens and records,
positioning, backward walks and roll-over — it never loops and never crashes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gendef.model import Definitions, Table, varchar_column
from msgcap.trail.layout import layout_for
from msgcap.trail.reader import (
    TrailFile,
    TrailReader,
    sequence_files,
    split_trail_name,
    stray_files,
    stray_warning,
    trail_seqno,
)
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter
from props.errors import TrailError

BE = layout_for("big")


def tx(table: Table, n: int, records: int = 1) -> TrailTransaction:
    return TrailTransaction(str(n), [
        TrailRecord(table, IOTYPE_INSERT, "A", n, f"{n:020d}", i, [f"{n}", "name", None, "WA"])
        for i in range(records)])


@pytest.fixture
def trail(tmp_path, tcustmer: Table) -> tuple[str, list]:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none")
    w.open()
    positions = [w.write_transaction(tx(tcustmer, n, n)) for n in range(1, 4)]
    w.close()
    return prefix + "000000000", positions


def test_partial_tail_stops_cleanly(trail) -> None:
    path, positions = trail
    size = positions[-1].rba
    for cut in (size - 1, size - 50, positions[1].rba + 2):
        with open(path, "r+b") as f:
            f.truncate(cut)
        reader = TrailReader(path)
        recs = list(reader)
        assert recs[-1].end <= cut
        assert reader.tail is not None and reader.tail.rba == recs[-1].end
        assert reader.tail.pending == cut - recs[-1].end
        assert str(reader.tail).endswith(f"end of data at RBA {recs[-1].end} "
                                         f"({cut - recs[-1].end} bytes pending)")


def test_missing_trailer_at_the_very_end_is_a_partial_tail(trail) -> None:
    path, _ = trail
    data = bytearray(Path(path).read_bytes())
    data[-4] = 0  # the last record's Z
    with open(path, "wb") as f:
        f.write(data)
    with TrailFile(path) as tf:
        recs = list(tf.records())
        assert tf.tail is not None and tf.tail.rba == recs[-1].end


@pytest.mark.parametrize(("where", "value", "message"), [
    (0, 0x00, "invalid record head"),  # head zeroed: no valid length
    (3, 0x10, "length"),  # G length below the minimum
    (-4, 0x00, "trailer"),  # first record's Z byte
])
def test_corruption_names_file_and_rba(trail, where: int, value: int, message: str) -> None:
    path, positions = trail
    with TrailFile(path) as tf:
        first = tf.data_start
    data = bytearray(Path(path).read_bytes())
    rba = first if where >= 0 else positions[0].rba
    if where == 0:
        data[rba:rba + 4] = b"\x00\x00\x00\x00"
    else:
        data[rba + where] = value
    with open(path, "wb") as f:
        f.write(data)
    bad = first
    with pytest.raises(TrailError, match=message) as err:
        list(TrailReader(path))
    assert path in str(err.value) and f"RBA {bad}" in str(err.value)


def test_rec_length_mismatch_and_bad_inner_tokens(tmp_path, tcustmer: Table) -> None:
    w = TrailWriter(str(tmp_path / "aa"), sync="none")
    start = w.open().rba
    w.write_transaction(tx(tcustmer, 1))
    w.close()
    path = str(tmp_path / "aa000000000")
    good = Path(path).read_bytes()
    bad = bytearray(good)
    bad[start + 8 + 4:start + 8 + 6] = b"\x00\x01"  # RecLength
    with open(path, "wb") as f:
        f.write(bad)
    with pytest.raises(TrailError, match="RecLength 1"):
        list(TrailReader(path))
    bad = bytearray(good)
    bad[start + 6:start + 8] = b"\x00\x40"  # H token length beyond the record
    with open(path, "wb") as f:
        f.write(bad)
    with pytest.raises(TrailError, match=f"RBA {start}"):
        list(TrailReader(path))


def test_not_a_trail_file(tmp_path) -> None:
    for content in (b"hello world, not a trail file", b"F\x00\x00\x30" + b"\x00" * 60):
        path = tmp_path / "x"
        path.write_bytes(content)
        with pytest.raises(TrailError, match="not a trail file") as err:
            TrailFile(str(path))
        assert "RBA 0" in str(err.value)


def test_empty_and_short_files_are_partial_headers(tmp_path) -> None:
    for content in (b"", b"F\x00\x01"):
        path = tmp_path / "aa000000000"
        path.write_bytes(content)
        reader = TrailReader(str(path))
        assert list(reader) == [] and reader.tail.rba == 0 and reader.tail.pending == len(content)


def test_table_missing_from_definitions(trail) -> None:
    path, _ = trail
    other = Table.build("GG.OTHER", [varchar_column("A", 4)])
    reader = TrailReader(path, Definitions((other,)))
    rec = next(iter(reader))
    with pytest.raises(TrailError, match="GG.JMSCAP_TCUSTMER is not in the definitions") as err:
        reader.decoder(rec)
    assert f"RBA {rec.rba}" in str(err.value)


def test_column_index_beyond_the_definition(trail) -> None:
    path, _ = trail
    short = Table.build("GG.JMSCAP_TCUSTMER", [varchar_column("CUST_CODE", 4)])
    reader = TrailReader(path, Definitions((short,)))
    rec = next(iter(reader))
    with pytest.raises(TrailError, match="column index 1 not in table"):
        rec.values(reader.decoder(rec))


def _frame(tokens: list[tuple[int, bytes]], rid: int = 0x47) -> bytes:
    body = b"".join(BE.head.pack(t, 0, len(v)) + v for t, v in tokens)
    total = len(body) + 8
    return BE.head.pack(rid, 1, total) + body + BE.head.pack(0x5A, 1, total)


def test_unknown_tokens_and_records_are_skipped(trail, caplog) -> None:
    path, positions = trail
    with TrailFile(path) as tf:
        rec = tf.record_at(tf.data_start)
    raw = Path(path).read_bytes()
    d = bytes(rec.data)
    hdr = raw[rec.rba + 8:rec.rba + 8 + BE.head.unpack_from(raw, rec.rba + 4)[2]]
    tokens = BE.head.pack(0x36, 0, 1) + b"1" + BE.head.pack(0x4B, 0, 2) + b"\x01\x02"
    odd = _frame([(0x48, hdr), (0x58, b"future"), (0x44, d), (0x54, tokens)])
    unknown = _frame([(0x48, hdr)], rid=0x52)
    with open(path, "ab") as f:
        f.write(unknown + odd)
    with caplog.at_level(logging.WARNING, logger="msgcap.trail"):
        recs = list(TrailReader(path))
    assert "unknown type x52" in caplog.text
    assert len(recs) == 7
    last = recs[-1]
    assert last.rba == positions[-1].rba + len(unknown)
    assert last.txid == "1" and last.tokens[0x4B] == b"\x01\x02" and last.data == rec.data
    assert [i for i, _ in last.entries()] == [0, 1, 2, 3] and last.entries() == rec.entries()


def test_start_rba_record_at_and_backward(trail) -> None:
    path, _ = trail
    all_recs = list(TrailReader(path))
    mid = all_recs[3]
    assert [r.rba for r in TrailReader(path, start_rba=mid.rba)] == [r.rba for r in all_recs[3:]]
    with TrailFile(path) as tf:
        assert tf.record_at(mid.rba).data == mid.data
        back = [r.rba for r in tf.backward(mid.end)]
        assert back == [r.rba for r in reversed(all_recs[:4])]
        with pytest.raises(TrailError, match="no record starts here"):
            tf.record_at(mid.rba + 1)
        with pytest.raises(TrailError, match="trailer"):
            list(tf.backward(mid.end - 1))
    with pytest.raises(TrailError, match="outside"):
        list(TrailReader(path, start_rba=10))


def test_follows_rollover_and_rejects_a_partial_tail_before_it(tmp_path, tcustmer) -> None:
    prefix = str(tmp_path / "aa")
    w = TrailWriter(prefix, sync="none", seqlen=6)
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    w._roll()
    w.write_transaction(tx(tcustmer, 2))
    w._roll()
    w.write_transaction(tx(tcustmer, 3))
    w.close()
    assert [r.txid for r in TrailReader(prefix + "000000")] == ["1", "2", "3"]
    assert [r.txid for r in TrailReader(prefix + "000001")] == ["2", "3"]
    assert [r.txid for r in TrailReader(prefix + "000001", follow=False)] == ["2"]
    with open(prefix + "000001", "r+b") as f:
        f.truncate(os.path.getsize(prefix + "000001") - 3)
    with pytest.raises(TrailError, match="before the next file"):
        list(TrailReader(prefix + "000000"))


def test_split_trail_name() -> None:
    assert split_trail_name("dirdat/aa000000012") == ("dirdat/aa", 12, 9)
    assert split_trail_name("dirdat/aa000012") == ("dirdat/aa", 12, 6)
    assert split_trail_name("dirdat/notes.txt") is None
    # issue 35: digits Python's int() reads, or str.isdigit() takes, are no trail file's
    assert split_trail_name("dirdat/aa" + "\u0660" * 8 + "\u0667") is None
    assert split_trail_name("dirdat/aa00000000\u00b2") is None
    assert split_trail_name("dirdat/aa00001\u00b2") is None


ARABIC_INDIC_7 = "\u0660" * 8 + "\u0667"  # ٠٠٠٠٠٠٠٠٧: int() reads 7


@pytest.mark.parametrize(("name", "seqno"), [
    ("sa000000012", 12), ("sa999999999", 999999999), ("sa" + ARABIC_INDIC_7, None),
    ("sa00000000\u00b2", None), ("sa0000000\uff11\uff12", None), ("sa00000001", None),
    ("sa0000000012", None), ("sb000000012", None), ("sa-00000012", None),
    ("sa+00000012", None), ("sa 00000012", None), ("sa.lock", None)])
def test_trail_seqno_takes_ascii_digits_of_the_width_only(name, seqno) -> None:
    assert trail_seqno(name, "sa", 9) == seqno


def test_stray_files_are_no_part_of_the_trail(tmp_path, tcustmer: Table) -> None:
    """Issue 35: files named like trail files but with other digits in a fresh trail
    directory: the writer starts at seqno 0, the listing leaves them out, the warning names
    them (escaped: one line)."""
    d = tmp_path / "dirdat"
    d.mkdir()
    strays = ["sa" + ARABIC_INDIC_7, "sa00000000\u00b2", "sa0000000\n1"]
    for name in strays:
        (d / name).write_bytes(b"")
    (d / "sa.lock").write_bytes(b"")
    (d / "sa000000000.bak").write_bytes(b"")
    w = TrailWriter(str(d / "sa"))
    w.open()
    w.write_transaction(tx(tcustmer, 1))
    w.close()
    assert sequence_files(str(d / "sa"), 9) == [(0, str(d / "sa000000000"))]
    assert stray_files(str(d / "sa"), 9) == sorted(str(d / n) for n in strays)
    warning = stray_warning(str(d / "sa"), 9)
    assert warning == (f"ignored {d}/sa0000000\\n1, {d}/sa00000000\u00b2, {d}/sa{ARABIC_INDIC_7}: "
                       "not a trail file name (sa and 9 ASCII digits)")
    assert stray_warning(str(d / "sa"), 6) is None and stray_files(str(d / "xx"), 9) == []
    assert [r.txid for r in TrailReader(str(d / "sa000000000"))] == ["1"]


def test_every_single_byte_corruption_is_handled(trail) -> None:
    """Flip each byte of a small trail: records, a partial tail, a skip or a TrailError only."""
    path, _ = trail
    good = Path(path).read_bytes()
    tab = Table.build("GG.JMSCAP_TCUSTMER", [varchar_column("CUST_CODE", 4),
                                             varchar_column("NAME", 30),
                                             varchar_column("CITY", 20),
                                             varchar_column("STATE", 2)])
    defs = Definitions((tab,))
    outcomes = {"ok": 0, "error": 0}
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0xFF
        with open(path, "wb") as f:
            f.write(bad)
        try:
            reader = TrailReader(path, defs)
            for n, rec in enumerate(reader):
                assert n < 100
                rec.values(reader.decoder(rec))
            outcomes["ok"] += 1
        except TrailError as exc:
            assert path in str(exc)
            outcomes["error"] += 1
    assert outcomes["error"] > 0 and outcomes["ok"] > 0


def test_small_read_chunks_give_the_same_records(trail, monkeypatch) -> None:
    """Records straddling the reader's chunk boundary are reassembled exactly."""
    from msgcap.trail import reader as reader_mod
    path, _ = trail
    expected = [(r.rba, r.data, r.tokens) for r in TrailReader(path)]
    with open(path, "ab") as f:
        f.write(b"G\x01\x00")
    for chunk in (1, 7, 100, 333):
        monkeypatch.setattr(reader_mod, "CHUNK", chunk)
        reader = TrailReader(path)
        assert [(r.rba, r.data, r.tokens) for r in reader] == expected
        assert reader.tail.pending == 3
