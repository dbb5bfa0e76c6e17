"""``msgcap batch`` throughput with local[1] and local[2], beside single-process replay.

    python bench/bench_batch.py [--records 1000000] [--partitions N]

Writes N one-record delimited messages (the records of ``bench_replay_delim.py``) as a text-lines
dump, then, in this run:

* replay: dump reading → ids → parser → assembler → trail writer in this process;
* batch with ``local[1]`` and with ``local[2]`` (a fresh SparkSession each; JVM start-up is not
  timed), ``--format trail``.

Prints wall-clock messages/s of each (Spark work runs in other processes, so CPU time of this one
says little; the machine may be shared — compare figures of the same run), the step times of the
batch runs (they overlap: a split is planned and encoded while later ones are parsed, so a
step's time is what the driver waited in it), and checks that every trail holds the same records. Targets: local[2] ≥ 1.6× local[1];
local[1] ≥ 50% of replay.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_replay_delim import PROPS as REPLAY_PROPS
from bench_replay_delim import definitions_text, record

# system seqids: deterministic, so that every run writes the same trail
PROPS = REPLAY_PROPS + "delim.seqid=*seqid\n"


def trail_records(prefix: str) -> bytes:
    """The records of a trail, file headers left out."""
    from msgcap.trail.reader import TrailFile, sequence_files

    parts = []
    for _seqno, path in sequence_files(prefix, 9):
        tf = TrailFile(path)
        with open(path, "rb") as fh:
            body = bytearray(fh.read()[tf.data_start:])
        for rec in tf.records():  # IO times are *ts (the time of parsing): masked
            at = rec.rba - tf.data_start + 16
            body[at:at + 8] = bytes(8)
        parts.append(bytes(body))
    return b"".join(parts)


def replay(settings, definitions, dump: str) -> float:
    from msgcap.dumps import read_messages
    from msgcap.pipeline import build_pipeline
    from msgcap.trail.writer import TrailWriter
    from parsers.base import build_parser

    trail = settings.trail
    t0 = time.perf_counter()
    writer = TrailWriter(trail.path, seqlen=trail.seqlen, megabytes=trail.megabytes,
                         byteorder=trail.byteorder, sync=trail.sync, extract=trail.extract)
    pipeline = build_pipeline(settings, writer, writer.open(), definitions=definitions,
                              parser=build_parser(settings, definitions))
    for message in read_messages([dump], lines=True):
        pipeline.process(message)
    pipeline.finish()
    writer.close()
    return time.perf_counter() - t0


def batch(settings, definitions, dump: str, master: str, out: str,
          partitions: int | None) -> tuple[float, list[tuple[str, float]]]:
    from msgcap.batch import run_batch, spark_session

    spark = spark_session(master, app=f"bench {master}")
    spark.sparkContext.setLogLevel("ERROR")
    starts: list[tuple[str, float]] = []
    try:
        t0 = time.perf_counter()
        run_batch(settings, [dump], out, spark=spark, lines=True, partitions=partitions,
                  definitions=definitions,
                  progress=lambda text: starts.append((text, time.perf_counter())),
                  progress_interval=-1)
        end = time.perf_counter()
        wall = end - t0
        bounds = [t for _, t in starts[1:]] + [end]
        steps = [(text, b - t) for (text, t), b in zip(starts, bounds, strict=True)]
    finally:
        spark.stop()
    return wall, steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=None,
                    help="input splits (default: twice the default parallelism)")
    args = ap.parse_args()
    n = args.records

    from gendef.build import build_definitions
    from props.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as work:
        os.chdir(work)
        os.makedirs("dirprm")
        os.makedirs("dirdef")
        Path("dirprm/bench.properties").write_text(PROPS)
        Path("dirdef/bench.def").write_text(definitions_text())
        with open("messages.txt", "w") as fh:
            fh.writelines(record(i) + "\n" for i in range(n))
        size_mb = os.path.getsize("messages.txt") / 1e6
        print(f"{n} one-record messages, {size_mb:.1f} MB, {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f}")
        settings = load_settings("dirprm/bench.properties")
        definitions = build_definitions(settings)

        replay_s = replay(settings, definitions, "messages.txt")
        reference = trail_records("dirdat/bn")
        figures = {"replay": replay_s}
        for master in ("local[1]", "local[2]"):
            out = f"out-{master[6]}"
            wall, steps = batch(settings, definitions, "messages.txt", master, out,
                                args.partitions)
            figures[master] = wall
            same = trail_records(f"{out}/trail/bn") == reference
            print(f"  {master} steps: " + "; ".join(f"{s.split(' ')[0]} {t:.1f} s"
                                                    for s, t in steps)
                  + " (encoding includes the ordered append)")
            if not same:
                print(f"  {master}: TRAIL DIFFERS FROM REPLAY")
        os.chdir("/")

    for name, seconds in figures.items():
        print(f"  {name:<9} wall {seconds:7.2f} s  {n / seconds:>10,.0f} messages/s")
    one, two, rep = figures["local[1]"], figures["local[2]"], figures["replay"]
    print(f"  local[2] / local[1] = {one / two:.2f}× (target ≥ 1.6×); "
          f"local[1] / replay = {rep / one:.0%} (target ≥ 50%); "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
