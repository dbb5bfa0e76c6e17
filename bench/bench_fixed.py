"""Replay throughput on fixed-width records, beside plain string slicing of the same text (one core).

    python bench/bench_fixed.py [--records 1000000]

Writes N 200-character messages (a 35-character copybook header + a 165-character data record of
12 fields: zoned numbers with implied decimals, text, a date) as a text-lines dump, as
``msgcap replay --lines`` reads it, then times, in this process:

* plain string slicing: every line cut into its 15 fields with precomputed offsets (the
  baseline: no conversion at all);
* the parser alone (``parse`` on every message);
* the whole replay: dump reading → ids → parser → assembler → trail writer (``trail.sync=none``
  plus one fsync at the end), as ``msgcap replay`` runs it.

Prints records/s and MB/s of message text for each. Target: ≥ 10 MB/s end to end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

COPYBOOK = """\
       01  HEADER.
      * DATEFORMAT YYYY-MM-DD-HH.MI.SS.FFFFFF
           05  HDR-TIMESTAMP   PIC X(26).
           05  HDR-FUNCTION    PIC X.
           05  HDR-REC-ID      PIC X(8).
       01  ORDERS.
      * KEY
           05  ORDER-ID        PIC 9(10).
           05  CUSTOMER        PIC X(30).
           05  CITY            PIC X(20).
           05  AMOUNT          PIC S9(9)V99.
           05  QTY             PIC 9(6).
           05  STATUS          PIC X.
           05  CODE            PIC X(10).
      * YYYYMMDD
           05  CREATED         PIC 9(8).
           05  NOTE            PIC X(55).
           05  PRICE           PIC 9(7)V99.
           05  REGION          PIC X(4).
           05  FLAG            PIC X.
"""

PROPS = """\
trail.path=dirdat/bf
trail.sync=none
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=dirdef/bench.cpy
fixed.header=HEADER
fixed.timestamp=HDR-TIMESTAMP
fixed.optype=HDR-FUNCTION
fixed.table=HDR-REC-ID
fixed.schema="BENCH"
fixed.seqid=*seqid
"""

WIDTHS = (26, 1, 8, 10, 30, 20, 11, 6, 1, 10, 8, 55, 9, 4, 1)


def record(n: int) -> str:
    city = ("Boston", "Chicago", "New York", "Denver")[n % 4]
    amount = f"{n % 100000:09d}{n % 100:02d}"
    if n % 7 == 0:  # a negative amount: overpunched last digit
        amount = amount[:-1] + "}JKLMNOPQR"[int(amount[-1])]
    parts = (f"2024-03-01-10.{n // 60 % 60:02d}.{n % 60:02d}.{n % 1000000:06d}", "I",
             "ORDERS  ", f"{n + 1:010d}", f"Customer {n % 9973}".ljust(30), city.ljust(20),
             amount, f"{n % 50:06d}", "NSX"[n % 3], f"C{n % 1000:04d}".ljust(10),
             f"2024{n % 12 + 1:02d}{n % 28 + 1:02d}", f"note {n}".ljust(55),
             f"{n % 9999999:07d}{n % 100:02d}", "EMEA", "Y")
    line = "".join(parts)
    assert len(line) == 200, len(line)
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.records

    from replay_timing import time_parse_and_replay

    with tempfile.TemporaryDirectory(prefix="bench-fixed-") as work:
        os.chdir(work)
        os.makedirs("dirprm")
        os.makedirs("dirdef")
        Path("dirprm/bench.properties").write_text(PROPS)
        Path("dirdef/bench.cpy").write_text(COPYBOOK)
        lines = [record(i) for i in range(n)]
        text = "\n".join(lines) + "\n"
        del lines
        size_mb = len(text.encode()) / 1e6
        Path("messages.txt").write_text(text)
        print(f"{n} records of 200 characters, 12 data fields + 3 header fields, "
              f"{size_mb:.1f} MB of text")

        offsets, at = [], 0
        for width in WIDTHS:
            offsets.append((at, at + width))
            at += width
        t0, c0 = time.perf_counter(), time.process_time()
        count = 0
        for line in text.splitlines():
            count += len([line[a:b] for a, b in offsets]) > 0
        slice_s = (time.perf_counter() - t0, time.process_time() - c0)
        assert count == n
        del text

        timing = time_parse_and_replay("messages.txt", True, n)
        parse_s, replay_s, stats, trail_mb = (timing.parse, timing.replay, timing.stats,
                                              timing.trail_mb)
        os.chdir("/")

    def line_of(label: str, seconds: tuple[float, float]) -> None:
        wall, cpu = seconds
        print(f"  {label:<30} cpu {cpu:6.2f} s (wall {wall:6.2f} s)  {n / cpu:>10,.0f} "
              f"records/s  {size_mb / cpu:6.1f} MB/s")

    line_of("string slicing (no conversion)", slice_s)
    line_of("fixed parser (parse only)", parse_s)
    line_of("replay end to end", replay_s)
    line_of("  of which not parsing", (replay_s[0] - parse_s[0], replay_s[1] - parse_s[1]))
    mbps = size_mb / replay_s[1]
    print(f"  trail written: {trail_mb:.1f} MB, {stats.transactions} transactions; "
          f"replay = {replay_s[1] / slice_s[1]:.1f}× slicing CPU time; target 10 MB/s end to "
          f"end: {'met' if mbps >= 10 else 'not met'} ({mbps:.1f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
