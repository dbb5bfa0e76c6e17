"""Analysis rows (``--format parquet,json``): one row per operation written to the trail.

A row's column texts depend only on the operation, so pass 1 makes them (``row_body``) while the
values are at hand; what depends on where the operation lands (txid, seqid, TransInd, commit
time) is added when pass 2 frames its transaction (``transaction_rows``). ``after``/``before``
map column names to the text ``msgcap dump --json`` shows; ``null_columns``/``missing_columns``
describe the operation's main image (the after image; the before image of a delete).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from msgcap.trail.dumpfmt import scaled
from msgcap.trail.records import (
    OP_NAMES,
    TRANSIND_BEGIN,
    TRANSIND_END,
    TRANSIND_MIDDLE,
    TRANSIND_WHOLE,
    TrailRecord,
    TrailTransaction,
)
from parsers.model import MISSING

# The rows as Spark writes them (``commit_us`` becomes the timestamp ``commit_time``).
SCHEMA = ("source_file STRING, position BIGINT, txid STRING, seqid STRING, commit_us BIGINT, "
          "`table` STRING, op STRING, transind INT, after MAP<STRING, STRING>, "
          "before MAP<STRING, STRING>, null_columns ARRAY<STRING>, "
          "missing_columns ARRAY<STRING>")
COLUMNS = ("source_file", "position", "txid", "seqid", "commit_time", "table", "op", "transind",
           "after", "before", "null_columns", "missing_columns")

RowBody = tuple[str, str, dict[str, str], dict[str, str], list[str], list[str]]


def _text(value: Any, scale: int) -> str:
    if isinstance(value, int):
        return scaled(value, scale)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def row_body(records: list[TrailRecord]) -> RowBody:
    """(table, op, after, before, null columns, missing columns) of one operation's records
    (a before-image record, ``trail.getupdatebefores``, then the main one)."""
    main = records[-1]
    columns = main.table.columns
    after: dict[str, str] = {}
    before: dict[str, str] = {}
    nulls, missing = [], []
    target = before if main.before_after == "B" else after
    for col, v in zip(columns, main.values or (), strict=False):
        if v is MISSING:
            missing.append(col.name)
        elif v is None:
            nulls.append(col.name)
        else:
            target[col.name] = _text(v, col.scale)
    for rec in records[:-1]:
        for col, v in zip(columns, rec.values or (), strict=False):
            if v is not MISSING and v is not None:
                before[col.name] = _text(v, col.scale)
    if main.key_before is not None:
        for col, v in zip(columns, main.key_before, strict=False):
            if v is not MISSING and v is not None:
                before[col.name] = _text(v, col.scale)
    return (main.table.name, OP_NAMES.get(main.iotype, str(main.iotype)), after, before, nulls,
            missing)


def transaction_rows(tx: TrailTransaction, first: bool, last: bool,
                     bodies: dict[int, tuple[RowBody, str, int]]) -> Iterator[tuple]:
    """The rows of (a part of) a transaction: one per record found in ``bodies`` (the main
    record of each operation → its body, source file and position), with the TransInd the
    encoder gives that record."""
    records = tx.records
    end = len(records) - 1 if last else -1
    for n, rec in enumerate(records):
        found = bodies.pop(id(rec), None)
        if found is None:
            continue
        if first and n == 0:
            ind = TRANSIND_WHOLE if end == 0 else TRANSIND_BEGIN
        else:
            ind = TRANSIND_END if n == end else TRANSIND_MIDDLE
        (table, op, after, before, nulls, missing), source, position = found
        yield (source, position, tx.txid, rec.seqid, rec.io_time, table, op, ind, after, before,
               nulls, missing)
