"""Trail write and read throughput for 8-column records, beside raw I/O of the same bytes.

Usage: python bench/bench_trail.py [RECORDS] [RECORDS_PER_TRANSACTION] [REPEAT]

Prints records/s and MB/s for: encoding only (and, as a same-run baseline, encoding with the
generated per-table encoders switched off: the per-column path), TrailWriter (sync=batch, one
fsync at the end), a raw os.write() of the same bytes in 1 MiB chunks, TrailReader over the file
(headers and tokens), TrailReader with typed column values, and a raw read of the same file —
all in this run and on one core, so the figures compare directly (best of REPEAT runs, wall and
CPU time).
Targets (trail issue): ≥ 200k records/s written and ≥ 200k records/s read.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gendef.model import (
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    varchar_column,
)
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.reader import TrailReader
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter

TABLE = Table.build("SALES.ORDERS", [
    number_column("ID", 10, 0, key=True), varchar_column("CUSTOMER", 30),
    varchar_column("CITY", 20), char_column("STATE", 2), number_column("AMOUNT", 12, 2),
    datetime_column("CREATED", 26), varchar_column("NOTE", 40), varchar_column("STATUS", 8)])


def transactions(records: int, per_tx: int) -> list[TrailTransaction]:
    txs = []
    base = 1_700_000_000_000_000
    for t in range(records // per_tx):
        recs = []
        for j in range(per_tx):
            n = t * per_tx + j
            recs.append(TrailRecord(TABLE, IOTYPE_INSERT, "A", base + n, f"{t:020d}", j, [
                n, f"Customer {n % 997}", "Seattle", "WA", n * 7 % 10_000_000,
                "2024-03-01:10:15:30.123456", "regular delivery, leave at door",
                "OPEN" if n % 3 else "SHIPPED"]))
        txs.append(TrailTransaction(str(t + 1), recs))
    return txs


def _decline(*_: object) -> None:
    return None


def measure(what: str, records: int, nbytes: int, step, repeat: int) -> None:
    """Run ``step`` ``repeat`` times; print the best wall and the best CPU rate (one core's
    rate: on a shared machine CPU time is the steadier figure)."""
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter_ns(), time.process_time_ns()
        step()
        walls.append(max(time.perf_counter_ns() - w0, 1) / 1e9)
        cpus.append(max(time.process_time_ns() - c0, 1) / 1e9)
    wall, cpu = min(walls), min(cpus)
    print(f"  {what:<32} {records / wall:>10,.0f} rec/s {nbytes / wall / 1e6:>7.1f} MB/s (wall)"
          f"  {records / cpu:>10,.0f} rec/s {nbytes / cpu / 1e6:>7.1f} MB/s (CPU)")


def main() -> None:
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    per_tx = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    txs = transactions(records, per_tx)
    records = len(txs) * per_tx
    print(f"trail benchmark: {records:,} records of 8 columns, {per_tx} per transaction, "
          f"best of {repeat}, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as d:
        enc = TrailEncoder("big")
        size = sum(len(enc.encode_transaction(tx, i)) for i, tx in enumerate(txs, 1))

        def encode() -> None:
            for i, tx in enumerate(txs, 1):
                enc.encode_transaction(tx, i)
        measure("encode only", records, size, encode, repeat)

        # the same-run baseline: the per-column path alone, generated encoders switched off
        plain = TrailEncoder("big")
        frame = plain._frame(TABLE)
        frame.record = frame.table._fast = _decline

        def encode_plain() -> None:
            for i, tx in enumerate(txs, 1):
                plain.encode_transaction(tx, i)
        measure("encode only, per-column path", records, size, encode_plain, repeat)

        prefix = os.path.join(d, "aa")
        path = prefix + "000000000"

        def write() -> None:
            if os.path.exists(path):
                os.unlink(path)
            w = TrailWriter(prefix, sync="batch", megabytes=2000)
            w.open()
            for tx in txs:
                w.write_transaction(tx)
            w.close()  # flush_durable: one fsync
        measure("TrailWriter (sync=batch)", records, size, write, repeat)
        data = Path(path).read_bytes()
        raw = os.path.join(d, "raw")
        view = memoryview(data)

        def raw_write() -> None:
            fd = os.open(raw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for p in range(0, len(view), 1 << 20):
                os.write(fd, view[p:p + (1 << 20)])
            os.fsync(fd)
            os.close(fd)
        measure("raw os.write + fsync, same bytes", records, len(data), raw_write, repeat)

        def read() -> None:
            n = 0
            for rec in TrailReader(path):
                n += rec.transind >= 0
            assert n == records
        measure("TrailReader (headers, tokens)", records, len(data), read, repeat)

        definitions = Definitions((TABLE,))

        def read_typed() -> None:
            reader = TrailReader(path, definitions)
            for rec in reader:
                rec.values(reader.decoder(rec))
        measure("TrailReader + typed values", records, len(data), read_typed, repeat)

        def raw_read() -> None:
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        measure("raw read of the same file", records, len(data), raw_read, repeat)
        print(f"  file size {len(data):,} bytes, {len(data) / records:.0f} bytes/record")


if __name__ == "__main__":
    main()
