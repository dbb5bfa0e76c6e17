"""Delimited parser throughput beside csv.reader on the same text (no timed assertions).

    python bench/bench_delim.py [--records N] [--per-message K] [--quoted]

Prints records/s for: csv.reader alone (split only, the baseline), Dialect.split alone, and
DelimParser.parse (split + header items + conversion of 8 typed columns into Op objects), from
the CPU time of this process (the machine may be shared; wall time is shown too).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import time
from pathlib import Path
from typing import Self

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gendef.model import (
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    varchar_column,
)
from parsers.base import build_parser
from parsers.model import Message
from props.loader import settings_from_text

PROPS = r"""
parser.type=delim
delim.sourcedefs=dirdef/bench.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.nullindicator=NULL
"""

TABLE = Table.build("BENCH.ORDERS", [
    number_column("ORDER_ID", 10, key=True), varchar_column("NAME", 30),
    varchar_column("CITY", 20), number_column("AMOUNT", 9, 2), number_column("QTY", 5),
    char_column("STATUS", 1), datetime_column("CREATED", 19), varchar_column("NOTE", 40),
])


def record(i: int, quoted: bool) -> str:
    name = f'"Customer {i % 977}, Inc."' if quoted else f"Customer {i % 977}"
    txind = "W"
    return (f"I,BENCH.ORDERS,2024-03-01 10:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000000:06d},"
            f"{txind},{i:010d},{i},{name},City{i % 50},{i % 100000}.{i % 100:02d},{i % 7},"
            f"{'NYS'[i % 3]},2024-03-01 10:15:30,NULL")


class Timer:
    """CPU and wall time of a block."""

    def __enter__(self) -> Self:
        self.cpu, self.wall = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu = time.process_time() - self.cpu
        self.wall = time.perf_counter() - self.wall


def rate(label: str, count: int, timer: Timer) -> None:
    print(f"{label:<34} {count / timer.cpu:>12,.0f} records/s   "
          f"(cpu {timer.cpu:.2f} s, wall {timer.wall:.2f} s)")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--records", type=int, default=200_000)
    args.add_argument("--per-message", type=int, default=100)
    args.add_argument("--quoted", action="store_true", help="quote one value per record")
    opts = args.parse_args()
    n, k = opts.records, opts.per_message
    bodies = ["\n".join(record(i, opts.quoted) for i in range(s, min(s + k, n))) + "\n"
              for s in range(0, n, k)]
    messages = [Message(str(i), body=b) for i, b in enumerate(bodies)]
    parser = build_parser(settings_from_text(PROPS), Definitions((TABLE,)))
    dialect = parser._dialect
    print(f"{n:,} records of 5 header + 8 columns, {k} per message, "
          f"{'one quoted value' if opts.quoted else 'no quotes'}")

    with Timer() as t:
        rows = 0
        for body in bodies:
            for _ in csv.reader(io.StringIO(body)):
                rows += 1
    rate("csv.reader (baseline, split only)", rows, t)
    base = t.cpu

    with Timer() as t:
        rows = sum(len(dialect.split(body)) for body in bodies)
    rate("Dialect.split", rows, t)

    with Timer() as t:
        ops = 0
        for message in messages:
            ops += len(parser.parse(message))
    rate("DelimParser.parse (typed Ops)", ops, t)
    print(f"parse = {t.cpu / base:.1f}x csv.reader CPU time")


if __name__ == "__main__":
    main()
