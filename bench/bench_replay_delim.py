"""Replay throughput on delimited records, beside ``csv.reader`` on the same text (one core).

    python bench/bench_replay_delim.py [--records 1000000] [--per-message 1]

Writes N 8-column insert records as a text-lines dump (``--per-message 1``: one record per message,
as ``msgcap replay --lines`` reads it) or a JSON Lines dump (several records per message), then
times, in this process:

* ``csv.reader`` tokenizing the same record text (the baseline: splitting only);
* the parser alone (``parse`` on every message);
* the whole replay: dump reading → ids → parser → assembler → trail writer (``trail.sync=none``
  plus one fsync at the end), as ``msgcap replay`` runs it;
* the same replay with the trail writer stubbed out, so that the writer's share shows.

Prints ops/s and MB/s of message text for each, from CPU time of this process (the machine may
be shared; wall time is shown too). Target: ≥ 100k ops/s end to end.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PROPS = """\
trail.path=dirdat/bn
trail.sync=none
parser.type=delim
delim.sourcedefs=dirdef/bench.def
delim.header=optype,schemaandtable
delim.nullindicator=NULL
"""


def definitions_text() -> str:
    from gendef.defgen import format_defs
    from gendef.model import (
        Definitions,
        Table,
        char_column,
        datetime_column,
        number_column,
        varchar_column,
    )

    table = Table.build("BENCH.ORDERS", [
        number_column("ORDER_ID", 12, key=True), varchar_column("CUSTOMER", 30),
        varchar_column("CITY", 20), number_column("AMOUNT", 11, 2), number_column("QTY", 8),
        char_column("STATUS", 1), varchar_column("CODE", 10), datetime_column("CREATED", 19)])
    return format_defs(Definitions((table,)), created="2024-03-01 00:00:00")


def record(n: int) -> str:
    city = ("Boston", "Chicago", '"New York, NY"', "NULL")[n % 4]
    return (f"I,BENCH.ORDERS,{n + 1},Customer {n % 9973},{city},{n % 100000}.{n % 100:02d},"
            f"{n % 50},{'NSX'[n % 3]},C{n % 1000:04d},2024-03-01 10:{n // 60 % 60:02d}:"
            f"{n % 60:02d}")


class NullWriter:
    """Takes transactions and returns a position, encoding and writing nothing."""

    def __init__(self) -> None:
        from msgcap.trail.records import Position

        self.position = Position(0, 0, "")

    def write_transaction(self, tx):
        return self.position


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--per-message", type=int, default=1)
    args = ap.parse_args()
    n, per = args.records, max(1, args.per_message)

    from replay_timing import time_parse_and_replay

    from msgcap.dumps import read_messages
    from msgcap.pipeline import build_pipeline

    with tempfile.TemporaryDirectory(prefix="bench-replay-") as work:
        os.chdir(work)
        os.makedirs("dirprm")
        os.makedirs("dirdef")
        Path("dirprm/bench.properties").write_text(PROPS)
        Path("dirdef/bench.def").write_text(definitions_text())
        lines = [record(i) for i in range(n)]
        text = "\n".join(lines) + "\n"
        size_mb = len(text.encode()) / 1e6
        if per == 1:
            dump, as_lines = "messages.txt", True
            Path(dump).write_text(text)
        else:
            dump, as_lines = "messages.jsonl", False
            with open(dump, "w") as fh:
                for start in range(0, n, per):
                    body = "\n".join(lines[start:start + per])
                    fh.write(json.dumps({"id": f"m{start // per:09d}", "body": body}) + "\n")
        del lines
        print(f"{n} records, 8 columns, {per} per message, {size_mb:.1f} MB of text")

        t0, c0 = time.perf_counter(), time.process_time()
        count = 0
        for row in csv.reader(text.splitlines()):
            count += len(row) > 0
        csv_s = (time.perf_counter() - t0, time.process_time() - c0)
        assert count == n

        timing = time_parse_and_replay(dump, as_lines, n)
        parse_s, replay_s, stats, trail_mb = (timing.parse, timing.replay, timing.stats,
                                              timing.trail_mb)
        settings, definitions, parser = timing.settings, timing.definitions, timing.parser

        # the same replay with the trail writer stubbed: what the writer costs is the difference
        t0, c0 = time.perf_counter(), time.process_time()
        pipeline = build_pipeline(settings, NullWriter(), None, definitions=definitions,
                                  parser=parser)
        for message in read_messages([dump], lines=as_lines):
            pipeline.process(message)
        pipeline.finish()
        stub_s = (time.perf_counter() - t0, time.process_time() - c0)
        assert pipeline.stats.total_operations == n
        os.chdir("/")

    def line(label: str, seconds: tuple[float, float]) -> None:
        wall, cpu = seconds
        print(f"  {label:<30} cpu {cpu:6.2f} s (wall {wall:6.2f} s)  {n / cpu:>10,.0f} ops/s  "
              f"{size_mb / cpu:6.1f} MB/s")

    line("csv.reader (tokenize only)", csv_s)
    line("delim parser (parse only)", parse_s)
    line("replay end to end", replay_s)
    line("  of which not parsing", (replay_s[0] - parse_s[0], replay_s[1] - parse_s[1]))
    line("replay, trail writer stubbed", stub_s)
    line("  of which the trail writer", (replay_s[0] - stub_s[0], replay_s[1] - stub_s[1]))
    print(f"  trail written: {trail_mb:.1f} MB, {stats.transactions} transactions; "
          f"replay = {replay_s[1] / csv_s[1]:.1f}× csv.reader CPU time; target 100,000 ops/s "
          f"end to end: {'met' if n / replay_s[1] >= 100_000 else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
