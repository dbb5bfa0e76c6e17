"""Trail write and read throughput for 8-column records, beside raw I/O of the same bytes.

Usage: python bench/bench_trail.py [RECORDS] [RECORDS_PER_TRANSACTION]

Prints records/s and MB/s for: encoding only, TrailWriter (sync=batch, one fsync at the end),
a raw os.write() of the same bytes in 1 MiB chunks, TrailReader over the file (headers and
tokens), TrailReader with typed column values, and a raw read of the same file — all in this run
and on one core, so the figures compare directly. Targets (trail issue): ≥ 200k records/s written
and ≥ 200k records/s read.
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


class Clock:
    """Wall and CPU time of one measured step (CPU time tells one core's rate on a busy box)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter_ns(), time.process_time_ns()

    def rates(self, records: int, nbytes: int) -> str:
        wall = max(time.perf_counter_ns() - self.wall, 1) / 1e9
        cpu = max(time.process_time_ns() - self.cpu, 1) / 1e9
        return (f"{records / wall:>12,.0f} rec/s {nbytes / wall / 1e6:>8.1f} MB/s (wall)  "
                f"{records / cpu:>12,.0f} rec/s {nbytes / cpu / 1e6:>8.1f} MB/s (CPU)")


def line(what: str, records: int, nbytes: int, clock: Clock) -> None:
    print(f"  {what:<32} {clock.rates(records, nbytes)}")


def main() -> None:
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 500_000
    per_tx = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    txs = transactions(records, per_tx)
    records = len(txs) * per_tx
    print(f"trail benchmark: {records:,} records of 8 columns, {per_tx} per transaction, "
          f"Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as d:
        enc = TrailEncoder("big")
        clock = Clock()
        size = 0
        for i, tx in enumerate(txs, 1):
            size += len(enc.encode_transaction(tx, i))
        line("encode only", records, size, clock)

        prefix = os.path.join(d, "aa")
        w = TrailWriter(prefix, sync="batch", megabytes=2000)
        start = w.open().rba
        clock = Clock()
        for tx in txs:
            w.write_transaction(tx)
        w.flush_durable()
        wrote = clock.rates(records, w.position.rba - start)
        w.close()
        path = prefix + "000000000"
        data = Path(path).read_bytes()
        print(f"  {'TrailWriter (sync=batch)':<32} {wrote}")

        raw = os.path.join(d, "raw")
        view = memoryview(data)
        clock = Clock()
        fd = os.open(raw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for p in range(0, len(view), 1 << 20):
            os.write(fd, view[p:p + (1 << 20)])
        os.fsync(fd)
        os.close(fd)
        line("raw os.write of the same bytes", records, len(data), clock)

        clock = Clock()
        n = 0
        for rec in TrailReader(path):
            n += rec.transind >= 0
        line("TrailReader (headers, tokens)", n, len(data), clock)

        reader = TrailReader(path, Definitions((TABLE,)))
        clock = Clock()
        n = 0
        for rec in reader:
            rec.values(reader.decoder(rec))
            n += 1
        line("TrailReader + typed values", n, len(data), clock)

        clock = Clock()
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        line("raw read of the same file", records, len(data), clock)
        print(f"  file size {len(data):,} bytes, {len(data) / records:.0f} bytes/record")


if __name__ == "__main__":
    main()
