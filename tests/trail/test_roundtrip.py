"""Property tests: whatever the writer encodes, the reader gives back exactly (random tables,
types, NULLs, missing columns, images, PK updates, tokens and both byte orders)."""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.model import (
    Column,
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
    varchar_column,
)
from msgcap.trail.columns import TableDecoder
from msgcap.trail.encoder import encode_transaction
from msgcap.trail.layout import layout_for
from msgcap.trail.reader import TrailFile, TrailReader, parse_record
from msgcap.trail.records import (
    IOTYPE_DELETE,
    IOTYPE_FIELDCOMP,
    IOTYPE_INSERT,
    IOTYPE_PKUPDATE,
    IOTYPE_TRUNCATE,
    IOTYPE_UPDATE,
    TrailRecord,
    TrailTransaction,
)
from msgcap.trail.writer import TrailWriter
from parsers.model import MISSING

NAMES = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", min_size=1, max_size=12)
ASCII = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
UNICODE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
TIMES = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1))


@st.composite
def columns(draw, name: str) -> Column:
    kind = draw(st.sampled_from(["char", "varchar", "numtext", "number", "date", "int"]))
    key = draw(st.booleans())
    if kind == "char":
        return char_column(name, draw(st.integers(1, 20)), key)
    if kind == "varchar":
        return varchar_column(name, draw(st.integers(1, 40)), key)
    if kind == "numtext":
        return number_text_column(name, 40, key)
    if kind == "number":
        p = draw(st.integers(1, 18))
        return number_column(name, p, draw(st.integers(0, p)), key)
    if kind == "date":
        return datetime_column(name, draw(st.sampled_from([10, 19, 21, 26, 29])), key)
    code = draw(st.sampled_from([130, 131, 132, 133, 135]))
    size = {130: 2, 131: 2, 132: 4, 133: 4, 135: 8}[code]
    return Column(name, code, 10, internal_length=size, binary_length=size, key=key)


@st.composite
def tables(draw) -> Table:
    names = draw(st.lists(NAMES, min_size=1, max_size=9, unique=True))
    cols = [draw(columns(n)) for n in names]
    return Table.build(f"S{draw(st.integers(0, 3))}.{draw(NAMES)}", cols)


INT_RANGES = {130: (-2**15, 2**15 - 1), 131: (0, 2**16 - 1), 132: (-2**31, 2**31 - 1),
              133: (0, 2**32 - 1), 135: (0, 2**64 - 1)}


@st.composite
def value(draw, col: Column):
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return None
    if choice == 1:
        return MISSING
    t = col.type_code
    if t == 0:
        return draw(ASCII.map(lambda s, n=col.external_length: s[:n].ljust(n)))
    if t == 64:
        if col.sub_type == 2:
            return str(draw(st.integers(-10**30, 10**30)))
        text = draw(UNICODE)  # within the column's bytes (source-definitions.md §6.3)
        while len(text.encode()) > col.external_length:
            text = text[:-1]
        return text
    if t == 134:
        return draw(st.integers(-(10**18) + 1, 10**18 - 1))
    if t == 192:
        text = draw(TIMES).strftime("%Y-%m-%d:%H:%M:%S.%f") + "000"
        return text[:col.external_length]
    lo, hi = INT_RANGES[t]
    return draw(st.integers(lo, hi))


@st.composite
def records(draw, table: Table, seqid: str) -> TrailRecord:
    iotype = draw(st.sampled_from([IOTYPE_INSERT, IOTYPE_DELETE, IOTYPE_UPDATE, IOTYPE_FIELDCOMP,
                                   IOTYPE_PKUPDATE, IOTYPE_TRUNCATE]))
    values = [draw(value(c)) for c in table.columns]
    key_before = None
    if iotype == IOTYPE_PKUPDATE:
        keys = set(table.key_indexes)
        key_before = [draw(value(c)) if i in keys else MISSING
                      for i, c in enumerate(table.columns)]
    us = draw(st.integers(-2**40, 2**52))
    return TrailRecord(table, iotype, draw(st.sampled_from("AB")), us, seqid,
                       draw(st.integers(0, 2**32 - 1)), values, key_before)


@st.composite
def transactions(draw, tabs: list[Table]) -> TrailTransaction:
    seqid = draw(st.text("0123456789", min_size=1, max_size=24))
    recs = [draw(records(draw(st.sampled_from(tabs)), seqid))
            for _ in range(draw(st.integers(1, 5)))]
    txname = draw(st.none() | st.text(st.characters(blacklist_categories=("Cs",),
                                                    blacklist_characters="\x00"), max_size=10))
    txowner = draw(st.none() | st.just("OWNER"))
    return TrailTransaction(draw(st.text("0123456789abc.", min_size=1, max_size=12)), recs,
                            txname, txowner)


def expected_values(rec: TrailRecord) -> tuple[list | None, list]:
    if rec.iotype == IOTYPE_TRUNCATE:
        return None, [MISSING] * len(rec.values)
    return rec.key_before, rec.values


def check_record(got, rec: TrailRecord, tx: TrailTransaction, txnum: int, n: int, last: int,
                 decoder) -> None:
    assert got.table == rec.table.name
    assert got.iotype == rec.iotype and got.before_after == rec.before_after
    assert got.io_time_us == rec.io_time and got.audit_pos == rec.audit_pos
    assert got.audit_rba == txnum and got.txid == tx.txid and got.seqid == rec.seqid
    assert got.transind == (3 if last == 0 else 0 if n == 0 else 2 if n == last else 1)
    user = {k: v.decode() for k, v in got.user_tokens.items()}
    assert user == {k: v for k, v in (("TXNAME", tx.txname), ("TXOWNER", tx.txowner))
                    if v is not None}
    assert got.values(decoder) == expected_values(rec)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_encode_then_parse_is_identity(data) -> None:
    tabs = data.draw(st.lists(tables(), min_size=1, max_size=3, unique_by=lambda t: t.name))
    byteorder = data.draw(st.sampled_from(["big", "little"]))
    tx = data.draw(transactions(tabs))
    txnum = data.draw(st.integers(1, 2**32 - 1))
    raw = encode_transaction(tx, txnum, byteorder)
    lay = layout_for(byteorder)
    p, n = 0, 0
    while p < len(raw):
        total = lay.head.unpack_from(raw, p)[2]
        got = parse_record(raw, p, total, lay, "f", p, {})
        rec = tx.records[n]
        check_record(got, rec, tx, txnum, n, len(tx.records) - 1, TableDecoder(rec.table, lay))
        p += total
        n += 1
    assert n == len(tx.records)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_writer_then_reader_forwards_and_backwards(data) -> None:
    tabs = data.draw(st.lists(tables(), min_size=1, max_size=3, unique_by=lambda t: t.name))
    byteorder = data.draw(st.sampled_from(["big", "little"]))
    txs = data.draw(st.lists(transactions(tabs), min_size=1, max_size=6))
    defs = Definitions(tuple(tabs))
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "aa")
        w = TrailWriter(prefix, byteorder=byteorder, sync="none")
        w.open()
        for tx in txs:
            w.write_transaction(tx)
        w.close()
        reader = TrailReader(prefix + "000000000", defs)
        got = list(reader)
        expected = [(tx, i + 1, n, rec) for i, tx in enumerate(txs)
                    for n, rec in enumerate(tx.records)]
        assert len(got) == len(expected) and reader.tail is None
        for g, (tx, txnum, n, rec) in zip(got, expected, strict=True):
            check_record(g, rec, tx, txnum, n, len(tx.records) - 1, reader.decoder(g))
        with TrailFile(prefix + "000000000") as tf:
            assert tf.byteorder == byteorder
            back = list(tf.backward())
        assert [r.rba for r in back] == [r.rba for r in reversed(got)]
        assert [r.data for r in back] == [r.data for r in reversed(got)]


def test_microsecond_times_survive_far_dates(orders: Table) -> None:
    for dt in (datetime(1900, 1, 1, tzinfo=UTC), datetime(2999, 12, 31, 23, 59, 59, 999999,
                                                              tzinfo=UTC)):
        us = (dt - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
        rec = TrailRecord(orders, IOTYPE_TRUNCATE, "A", us, "1", 0, [MISSING] * 8)
        raw = encode_transaction(TrailTransaction("1", [rec]), 1)
        assert parse_record(raw, 0, len(raw), layout_for("big"), "f", 0, {}).io_time_us == us
