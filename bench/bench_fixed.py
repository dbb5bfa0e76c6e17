"""Fixed-width decoding and replay, stage by stage, beside hand-written decoders (one core).

    python bench/bench_fixed.py [--records 200000] [--workload ebcdic|ascii|both]

Two workloads, each measured in this process, in CPU seconds (figures per core):

* ``ebcdic`` (issue 13): 200-byte cp037 records of a realistic mainframe layout — a 23-byte
  header (function, table, a YYYYMMDDHHMISS timestamp) and 19 data fields: 10 text, zoned numbers
  with overpunched signs and implied decimals, two COMP-3, COMP of 2, 4 and 8 bytes — in a JSON
  Lines dump with ``body_b64``;
* ``ascii``: the earlier 200-character copybook records (12 data fields) as a text-lines dump.

For each, in records/s and MB/s of record bytes:

1. slicing every field, no conversion (the floor);
2. a hand-written per-field decoder for this one layout (slice, ``bytes.decode('cp037')`` or the
   text, ``int()``, ``hex()`` for packed, ``int.from_bytes`` for binary, overpunch by hand): what a
   user writes;
3. msgcap's record decoding (the generated whole-record function of the table);
4. ``FixedParser.parse`` (header items, table, optype, Op);
5. ``msgcap replay`` end to end: dump reading, base64, ids, parser, assembler, trail encoding
   and writing, one fsync at the end;
6. the replay's stages apart (``replay_timing.time_stages``): reading the dump into messages
   (JSON Lines, base64), message ids, parsing, assembling transactions, trail encoding, writing;
   what end to end takes beyond their sum is the pipeline's own bookkeeping.

Targets (issue 13, as same-run ratios on the ebcdic workload): record decoding ≥ 2× the
hand-written decoder; replay end to end ≥ 0.6× it. Cobrix publishes 6–9 MB/s per executor core.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

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

# -- the ebcdic workload ---------------------------------------------------------------------------

EBCDIC_COPYBOOK = """\
       01  HEADER.
           05  HDR-FUNCTION    PIC X.
           05  HDR-REC-ID      PIC X(8).
      * DATEFORMAT YYYYMMDDHHMISS
           05  HDR-TIMESTAMP   PIC 9(14).
       01  ACCOUNT.
      * KEY
           05  ACCT-NO         PIC 9(10).
           05  CUST-NAME       PIC X(30).
           05  ADDR-LINE       PIC X(30).
           05  CITY            PIC X(20).
           05  STATE           PIC X(2).
           05  ZIP             PIC X(10).
           05  COUNTRY         PIC X(3).
           05  STATUS          PIC X.
           05  BRANCH          PIC X(8).
           05  REP             PIC X(12).
           05  NOTE            PIC X(4).
           05  BALANCE         PIC S9(9)V99.
           05  RATE            PIC S9(3)V9(4).
           05  QTY             PIC S9(5).
           05  AMOUNT          PIC S9(9)V99 COMP-3.
           05  FEE             PIC S9(5)V99 COMP-3.
           05  TERM            PIC S9(4) COMP.
           05  LIMIT-CNT       PIC S9(9) COMP.
           05  TXN-COUNT       PIC S9(18) COMP.
"""
# (start, end, kind) of the 19 data fields after the 23-byte header
EBCDIC_FIELDS: list[tuple[int, int, str]] = []
_at = 23
for _width, _kind in ((10, "zoned"), (30, "text"), (30, "text"), (20, "text"), (2, "text"),
                      (10, "text"), (3, "text"), (1, "text"), (8, "text"), (12, "text"),
                      (4, "text"), (11, "signed"), (7, "signed"), (5, "signed"), (6, "packed"),
                      (4, "packed"), (2, "binary"), (4, "binary"), (8, "binary")):
    EBCDIC_FIELDS.append((_at, _at + _width, _kind))
    _at += _width
assert _at == 200


def _zoned(value: int, width: int, signed: bool) -> bytes:
    digits = str(abs(value)).zfill(width).encode("cp037")
    if not signed:
        return digits
    zone = 0xD0 if value < 0 else 0xC0
    return digits[:-1] + bytes([zone | (digits[-1] & 0x0F)])


def _packed(value: int, length: int) -> bytes:
    return bytes.fromhex(str(abs(value)).zfill(2 * length - 1) + ("d" if value < 0 else "c"))


def ebcdic_record(n: int) -> bytes:
    city = ("BOSTON", "CHICAGO", "NEW YORK", "DENVER")[n % 4]
    stamp = f"2024{n % 12 + 1:02d}{n % 28 + 1:02d}10{n // 60 % 60:02d}{n % 60:02d}"
    text = ("I", "ACCOUNT ", stamp)
    data = [f"{n + 1:010d}", f"CUSTOMER {n % 9973}".ljust(30), f"{n % 999} MAIN STREET".ljust(30),
            city.ljust(20), "MA", f"{n % 99999:05d}-0000", "USA", "NSX"[n % 3],
            f"BR{n % 1000:04d}".ljust(8), f"REP {n % 77}".ljust(12), "NOTE"]
    sign = -1 if n % 7 == 0 else 1
    out = "".join(text).encode("cp037") + "".join(data).encode("cp037")
    out += _zoned(sign * (n % 10**9 * 100 + n % 100), 11, True)
    out += _zoned(sign * (n % 10**7), 7, True) + _zoned(n % 10**5 * sign, 5, True)
    out += _packed(sign * (n * 37 % 10**11), 6) + _packed(n % 10**7, 4)
    out += (n % 9999 * sign).to_bytes(2, "big", signed=True)
    out += (n * 13 % 10**9).to_bytes(4, "big", signed=True)
    out += (sign * n * 10**9).to_bytes(8, "big", signed=True)
    assert len(out) == 200, len(out)
    return out


def ebcdic_by_hand(r: bytes) -> list:
    """What a user writes for this one layout: per field, slice and convert."""
    out = []
    for a, b, kind in EBCDIC_FIELDS:
        s = r[a:b]
        if kind == "text":
            out.append(s.decode("cp037"))
        elif kind == "zoned":
            out.append(int(s.decode("cp037")))
        elif kind == "signed":
            last = s[-1]
            value = int(s[:-1].decode("cp037") + str(last & 0x0F))
            out.append(-value if last >> 4 == 0xD else value)
        elif kind == "packed":
            h = s.hex()
            out.append(-int(h[:-1]) if h[-1] == "d" else int(h[:-1]))
        else:
            out.append(int.from_bytes(s, "big", signed=True))
    return out


# -- the ascii workload (the earlier bench_fixed layout) -------------------------------------------

ASCII_COPYBOOK = """\
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
ASCII_FIELDS: list[tuple[int, int, str]] = []
_at = 35
for _width, _kind in ((10, "zoned"), (30, "text"), (20, "text"), (11, "signed"), (6, "zoned"),
                      (1, "text"), (10, "text"), (8, "date"), (55, "text"), (9, "zoned"),
                      (4, "text"), (1, "text")):
    ASCII_FIELDS.append((_at, _at + _width, _kind))
    _at += _width
assert _at == 200
_NEGATIVE = {c: str(i) for i, c in enumerate("}JKLMNOPQR")}
_POSITIVE = {c: str(i) for i, c in enumerate("{ABCDEFGHI")}


def ascii_record(n: int) -> str:
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


def ascii_by_hand(r: str) -> list:
    out = []
    for a, b, kind in ASCII_FIELDS:
        s = r[a:b]
        if kind == "text":
            out.append(s)
        elif kind in ("zoned", "date"):
            out.append(int(s))
        else:
            last = s[-1]
            if last.isdigit():
                out.append(int(s))
            elif last in _NEGATIVE:
                out.append(-int(s[:-1] + _NEGATIVE[last]))
            else:
                out.append(int(s[:-1] + _POSITIVE[last]))
    return out


# -- measuring ---------------------------------------------------------------------------------------

def cpu(fn: Callable[[], object]) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def run(workload: str, n: int) -> dict[str, float]:
    from replay_timing import time_parse_and_replay, time_stages

    from gendef.build import build_definitions
    from msgcap.dumps import read_messages
    from parsers.base import build_parser
    from props.loader import load_settings

    ebcdic = workload == "ebcdic"
    with tempfile.TemporaryDirectory(prefix=f"bench-fixed-{workload}-") as work:
        os.chdir(work)
        os.makedirs("dirprm")
        os.makedirs("dirdef")
        props = PROPS + ("fixed.encoding=cp037\n" if ebcdic else "")
        Path("dirprm/bench.properties").write_text(props)
        Path("dirdef/bench.cpy").write_text(EBCDIC_COPYBOOK if ebcdic else ASCII_COPYBOOK)
        if ebcdic:
            records: list = [ebcdic_record(i) for i in range(n)]
            dump, lines = "messages.jsonl", False
            with open(dump, "w") as fh:
                fh.writelines(json.dumps({"id": f"m{i}", "headers": {},
                                          "body_b64": base64.b64encode(r).decode()}) + "\n"
                              for i, r in enumerate(records))
            fields, by_hand = EBCDIC_FIELDS, ebcdic_by_hand
        else:
            records = [ascii_record(i) for i in range(n)]
            dump, lines = "messages.txt", True
            Path(dump).write_text("\n".join(records) + "\n")
            fields, by_hand = ASCII_FIELDS, ascii_by_hand
        offsets = [(a, b) for a, b, _ in fields]

        settings = load_settings("dirprm/bench.properties")
        parser = build_parser(settings, build_definitions(settings))
        (table,) = parser._tables.values()
        image = table.byte_image if ebcdic else table.ascii_image
        if ebcdic:  # the same values: unscaled integers, text as is
            assert all(image(r) == by_hand(r) for r in records[:1000])

        def floor() -> None:
            for r in records:
                [r[a:b] for a, b in offsets]

        def hand() -> None:
            for r in records:
                by_hand(r)

        def decode() -> None:
            for r in records:
                image(r)

        assert all(image(r) is not None for r in records[:1000])
        messages = list(read_messages([dump], lines=lines))

        def parse() -> None:
            for m in messages:
                parser.parse(m)

        figures = {"slicing, no conversion (floor)": cpu(floor),
                   "hand-written per-field decoder": cpu(hand),
                   "msgcap record decoding": cpu(decode),
                   "FixedParser.parse → Op": cpu(parse)}
        messages.clear()
        timing = time_parse_and_replay(dump, lines, n)
        figures["msgcap replay end to end"] = timing.replay[1]
        stages = time_stages(dump, lines, n)
        for label, seconds in stages.items():
            figures[f"  stage: {label}"] = seconds
        figures["  stage: the rest (pipeline, GC)"] = timing.replay[1] - sum(stages.values())
        os.chdir("/")
    return figures


def report(workload: str, n: int, figures: dict[str, float]) -> None:
    mb = n * 200 / 1e6
    hand = figures["hand-written per-field decoder"]
    print(f"{workload}: {n:,} records of 200 bytes ({mb:.0f} MB), CPU time, one core")
    e2e = figures["msgcap replay end to end"]
    for label, seconds in figures.items():
        if label.startswith("  stage: "):  # µs per record and share of the replay's CPU
            print(f"  {label[9:]:<34} {seconds / n * 1e6:8.2f} µs/record "
                  f"{100 * seconds / e2e:5.1f} % of the replay")
            continue
        print(f"  {label:<34} {n / seconds:>11,.0f} records/s {mb / seconds:7.1f} MB/s "
              f"{hand / seconds:6.2f}× hand-written")
    dec, e2e = hand / figures["msgcap record decoding"], hand / figures["msgcap replay end to end"]
    if workload == "ebcdic":
        print(f"  targets: record decoding ≥ 2× hand-written: {dec:.2f}× "
              f"{'met' if dec >= 2 else 'NOT met'}; replay ≥ 0.6×: {e2e:.2f}× "
              f"{'met' if e2e >= 0.6 else 'NOT met'}")
    print(f"  replay {mb / figures['msgcap replay end to end']:.1f} MB/s per core "
          "(Cobrix publishes 6–9 MB/s per executor core)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--workload", choices=("ebcdic", "ascii", "both"), default="both")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for workload in (("ebcdic", "ascii") if args.workload == "both" else (args.workload,)):
        report(workload, args.records, run(workload, args.records))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
