"""Copybook field decoding throughput on the Cobrix type-variety records (no timed assertions).

    python bench/bench_copybook.py [--rounds N]

Uses testdata/cobrix/ebcdic-test6-type-variety: 100 EBCDIC records of 1493 bytes, 195 fields
each (DISPLAY up to 37 digits, COMP, COMP-3, COMP-1/2, separate signs). Prints fields/s for:
slicing only (the baseline: what any decoder must at least do), the msgcap decoders (selected
once per field, then slice + call), and the compile time of the copybook.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gendef.copybook import compile_copybook_file
from parsers.decoders import DecodeOptions, decoder_for
from props.errors import MessageError

REPO = Path(__file__).resolve().parents[1]
TESTDATA = Path(os.environ.get("MSGCAP_TESTDATA") or REPO.parent / "shared" / "testdata")
CASE = TESTDATA / "cobrix" / "ebcdic-test6-type-variety"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()

    t0 = time.perf_counter()
    cb = compile_copybook_file(CASE / "test6_copybook.cob")
    compile_s = time.perf_counter() - t0
    rec = cb.records[0]
    data = (CASE / "INTEGR.TYPES.NOV28.DATA.dat").read_bytes()
    records = [data[i:i + rec.length] for i in range(0, len(data), rec.length)]
    opts = DecodeOptions(floating_point_format="IEEE754")
    plan = [(f.offset, f.offset + f.length, decoder_for(f, "cp037", options=opts))
            for f in rec.fields]
    n_fields = len(plan) * len(records) * args.rounds

    t0 = time.perf_counter()
    for _ in range(args.rounds):
        for r in records:
            for a, b, _dec in plan:
                r[a:b]
    base = time.perf_counter() - t0

    errors = 0
    t0 = time.perf_counter()
    for _ in range(args.rounds):
        for r in records:
            for a, b, dec in plan:
                try:
                    dec(r[a:b])
                except MessageError:
                    errors += 1
    decode = time.perf_counter() - t0

    print(f"copybook compile: {compile_s * 1000:.1f} ms ({len(rec.fields)} fields, "
          f"record {rec.length} bytes)")
    print(f"slice only (baseline): {n_fields / base:,.0f} fields/s")
    print(f"msgcap decoders:       {n_fields / decode:,.0f} fields/s "
          f"({n_fields / len(plan) / decode:,.0f} records/s, {errors} bad values)")


if __name__ == "__main__":
    main()
