"""The generated per-table encoders give exactly the bytes (and errors) of the per-column path.

Every encoder is compared with one whose generated functions are switched off, so only the
per-column path runs (trail-format.md §5, §9, §10)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.model import (
    Column,
    Table,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
    sized_text,
    varchar_column,
)
from msgcap.trail.encoder import TrailEncoder
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
from parsers.model import MISSING
from props.errors import MessageError

NAMES = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", min_size=1, max_size=12)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
ODD = st.sampled_from([True, False, 1.5, b"ab", "", "x" * 300, "é" * 130, -1, 2**70, MISSING,
                       None, "2024-03-01", "2024-03-01:10:15:30", "2024-03-01:10:15:30.12",
                       "2024-03-01:10:15:30.123456", "2024-03-01:10:15:30.123456789",
                       "2024-03-01:10:15:3é", "AB  ", "ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 3])


def _none(*_: Any) -> None:
    return None


class _Forgetful(dict):
    """A cache that keeps nothing: every T token's heads are made by ``TrailEncoder.tail``."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def general_only(enc: TrailEncoder, tables: list[Table]) -> TrailEncoder:
    """``enc`` with the generated functions of ``tables`` replaced by ones that always decline,
    and without the T token heads kept for the one-record path."""
    for t in tables:
        fr = enc._frame(t)
        fr.record = _none
        fr.table._fast = _none
    enc.tail_heads = _Forgetful()
    return enc


def outcome(fn, *args, **kw) -> bytes | tuple[str, str]:
    try:
        return fn(*args, **kw)
    except MessageError as exc:
        return ("MessageError", str(exc))


@st.composite
def columns(draw, name: str) -> Column:
    kind = draw(st.sampled_from(["char", "varchar", "numtext", "number", "date", "int", "long",
                                 "wide"]))
    key = draw(st.booleans())
    if kind == "char":
        return char_column(name, draw(st.integers(1, 20)), key)
    if kind == "varchar":
        return varchar_column(name, draw(st.sampled_from([1, 5, 40, 255, 256, 4000])), key)
    if kind == "wide":  # n characters of 2 to 4 UTF-8 bytes (source-definitions.md §6.3)
        text = draw(st.sampled_from([char_column, varchar_column]))(
            name, draw(st.integers(1, 20)), key)
        return sized_text(text, draw(st.integers(2, 4)))
    if kind == "numtext":
        return number_text_column(name, 40, key)
    if kind == "number":
        p = draw(st.integers(1, 18))
        return number_column(name, p, draw(st.integers(0, p)), key)
    if kind == "date":
        return datetime_column(name, draw(st.sampled_from([10, 19, 21, 26, 29])), key)
    if kind == "long":  # longer than the NULL datetime text: its NULL entry is shorter
        return Column(name, 192, 32, internal_length=32, binary_length=32, key=key)
    code = draw(st.sampled_from([130, 131, 132, 133, 135]))
    size = {130: 2, 131: 2, 132: 4, 133: 4, 135: 8}[code]
    return Column(name, code, 10, internal_length=size, binary_length=size, key=key)


@st.composite
def tables(draw) -> Table:
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    return Table.build(f"S.{draw(NAMES)}", [draw(columns(n)) for n in names])


@st.composite
def good(draw, col: Column) -> Any:
    """A common-case value (the generated path takes it), None or MISSING."""
    t, n = col.type_code, col.external_length
    pick = draw(st.integers(0, 7))
    if t == 0:
        n = col.characters
    if pick < 2:
        return (None, MISSING)[pick]
    if t == 0:
        return draw(st.text("abcXYZ 09", min_size=n, max_size=n))
    if t == 64:  # n bytes: n characters when ASCII (source-definitions.md §6.3)
        text = draw(TEXT)[:n]
        while len(text.encode()) > n:
            text = text[:-1]
        return text
    if t == 192:
        return "2024-03-01:10:15:30.123456789000"[:n].ljust(n, "0")
    bits = {130: 15, 131: 16, 132: 31, 133: 32, 134: 63, 135: 64}[t]
    return draw(st.integers(0, 2**bits - 1))


@st.composite
def value(draw, col: Column) -> Any:
    return draw(ODD) if draw(st.integers(0, 4)) == 0 else draw(good(col))


@st.composite
def transactions(draw, tabs: list[Table], values=value) -> TrailTransaction:
    recs = []
    seqid = draw(st.text("0123456789", min_size=1, max_size=24))
    for _ in range(draw(st.integers(1, 4))):
        table = draw(st.sampled_from(tabs))
        iotype = draw(st.sampled_from([IOTYPE_INSERT, IOTYPE_DELETE, IOTYPE_UPDATE,
                                       IOTYPE_FIELDCOMP, IOTYPE_PKUPDATE, IOTYPE_TRUNCATE]))
        vals = [draw(values(c)) for c in table.columns]
        before = [draw(values(c)) for c in table.columns] if iotype == IOTYPE_PKUPDATE else None
        if draw(st.booleans()):
            seqid = draw(st.text("0123456789", min_size=1, max_size=24))
        recs.append(TrailRecord(table, iotype, draw(st.sampled_from("AAB")),
                                draw(st.integers(-2**40, 2**52)), seqid,
                                draw(st.integers(0, 2**32 - 1)), vals, before))
    return TrailTransaction(draw(st.text("0123456789abc.é", min_size=1, max_size=12)), recs,
                            draw(st.none() | st.just("NAME")), draw(st.none() | st.just("OWN")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_transactions_are_the_bytes_of_the_per_column_path(data) -> None:
    tabs = data.draw(st.lists(tables(), min_size=1, max_size=3))
    order = data.draw(st.sampled_from(["big", "little"]))
    fast, slow = TrailEncoder(order), general_only(TrailEncoder(order), tabs)
    for txnum in range(1, 4):
        tx = data.draw(transactions(tabs))
        first, last = data.draw(st.booleans()), data.draw(st.booleans())
        want = outcome(slow.encode_transaction, tx, txnum, first=first, last=last)
        # twice: the second time, the T token heads of the first are known
        for _ in range(2):
            assert outcome(fast.encode_transaction, tx, txnum, first=first, last=last) == want


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_common_values_take_the_generated_path(data) -> None:
    """Guards the equivalence test above: common values really run the generated code."""
    table = data.draw(tables())
    order = data.draw(st.sampled_from(["big", "little"]))
    values = [data.draw(good(c)) for c in table.columns]
    enc = TrailEncoder(order)
    fr = enc._frame(table)
    d = fr.table._fast(values)
    assert d is not None
    assert d == general_only(TrailEncoder(order), [table]).table(table).encode(values)
    rec = TrailRecord(table, IOTYPE_INSERT, "A", 0, "1", 0, values)
    # a record without column entries has no D token: the per-column path writes it
    assert (fr.record(rec.values, rec.iotype, rec.before_after, rec.io_time, rec.audit_pos, b"",
                      1, 3) is None) == all(v is MISSING for v in values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_table_encoder_matches_per_column_path(data) -> None:
    table = data.draw(tables())
    order = data.draw(st.sampled_from(["big", "little"]))
    values = [data.draw(value(c)) for c in table.columns]
    fast = TrailEncoder(order).table(table)
    slow = general_only(TrailEncoder(order), [table]).table(table)
    assert outcome(fast.encode, values) == outcome(slow.encode, values)


ORDERS = Table.build("S.ORDERS", [number_column("ID", 10, key=True), varchar_column("NOTE", 65535),
                                  char_column("ST", 2), datetime_column("AT", 19)])


def _tx(values: list[Any], before_after: str = "A", audit_pos: int = 0) -> TrailTransaction:
    return TrailTransaction("1", [TrailRecord(ORDERS, IOTYPE_INSERT, before_after, 0, "7",
                                              audit_pos, values)])


@pytest.mark.parametrize(("values", "kw", "message"), [
    ([1, "x" * 65500, "WA", "2024-03-01:10:15:30"], {}, "exceeds the trail limit of 65535"),
    ([True, "x", "WA", "2024-03-01:10:15:30"], {}, "expected int, got bool"),
    ([1, "x", "WAX", "2024-03-01:10:15:30"], {}, "3 characters do not fit CHAR(2)"),
    ([1, "x", "ÄÖ", "2024-03-01:10:15:30"], {}, "4 bytes do not fit CHAR(2) of 2 bytes"),
    ([1, "x", "WA", "2024-03-01:10"], {}, "does not fit length 19"),
    ([1, "x", "WA"], {}, "3 values for 4 columns"),
    ([2**63, "x", "WA", "2024-03-01:10:15:30"], {}, "cannot encode"),
    ([1, "x", "WA", "2024-03-01:10:15:30"], {"before_after": "C"}, "bad record header field"),
    ([1, "x", "WA", "2024-03-01:10:15:30"], {"audit_pos": -1}, "bad record header field"),
])
def test_errors_are_kept(values, kw, message) -> None:
    with pytest.raises(MessageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrailEncoder().encode_transaction(_tx(values, **kw), 1)


def test_near_the_limit_fits_or_fails_like_the_per_column_path() -> None:
    enc, slow = TrailEncoder(), general_only(TrailEncoder(), [ORDERS])
    for size in range(65400, 65500):
        tx = _tx([1, "x" * size, "WA", "2024-03-01:10:15:30"])
        assert outcome(enc.encode_transaction, tx, 1) == outcome(slow.encode_transaction, tx, 1)


@st.composite
def present(draw, col: Column) -> Any:
    """A value that is there (not None or MISSING): mostly of the common form, at times not."""
    pick = draw(st.integers(0, 9))
    if pick == 0:
        return draw(ODD | st.text(max_size=3) | st.just("é" * col.characters)
                    | st.just("€" * col.characters))
    if pick == 1 and col.type_code == 0:  # one character short or over: two may compensate
        return "x" * (col.characters + draw(st.sampled_from((-1, 1))))
    v = draw(good(col))
    while v is None or v is MISSING:
        v = draw(good(col))
    return v


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_all_present_records_are_the_bytes_of_the_per_column_path(data) -> None:
    """Records whose every value is present take the one-struct path of ``present_columns``
    (guarded below): the same bytes, or the same error, as the per-column path."""
    tabs = data.draw(st.lists(tables(), min_size=1, max_size=2))
    if data.draw(st.booleans()):  # CHAR entries whose head is not ASCII (length ≥ 126)
        t = tabs[0]
        wide = [char_column("W1", data.draw(st.integers(126, 300))), char_column("W2", 20)]
        tabs[0] = Table.build(t.name, [*t.columns, *wide[:data.draw(st.integers(1, 2))]])
    order = data.draw(st.sampled_from(["big", "little"]))
    fast, slow = TrailEncoder(order), general_only(TrailEncoder(order), tabs)
    for txnum in range(1, 3):
        tx = data.draw(transactions(tabs, values=present))
        got = outcome(fast.encode_transaction, tx, txnum)
        assert got == outcome(slow.encode_transaction, tx, txnum)
        for rec in tx.records:
            assert outcome(fast.table(rec.table).encode, rec.values) == outcome(
                slow.table(rec.table).encode, rec.values)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_all_present_common_values_take_the_one_struct_path(data) -> None:
    """Guards the test above: common present values really run ``present_columns``' code."""
    from msgcap.trail.columns import present_columns
    from msgcap.trail.layout import layout_for
    from parsers.codegen import compile_function

    table = data.draw(tables())
    order = data.draw(st.sampled_from(["big", "little"]))
    values = [data.draw(good(c).filter(lambda x: x is not None and x is not MISSING))
              for c in table.columns]
    code = present_columns(table, layout_for(order))
    if code is None:
        assert any(c.type_code not in (0, 192, 130, 131, 132, 133, 134, 135)
                   for c in table.columns)
        return
    source = "def f(values):\n" + "\n".join(" " + line for line in code.lines) + "\n   return d\n"
    d = compile_function(source, code.space, "f", "test")(values)
    assert d is not None and len(d) == code.size
    assert d == general_only(TrailEncoder(order), [table]).table(table).encode(values)
