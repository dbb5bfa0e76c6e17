"""Restart time of ``msgcap run`` with a large trail beside a small one (issue 11, item 8).

    python bench/bench_restart.py [--gigabytes 2] [--repeat 5] [--no-baseline]

Builds two trails of the delimited example's SALES.CUSTOMER inserts, each in one file
(``trail.megabytes=2000``) with a checkpoint at its end, as a run leaves them: a small one (1 MB)
and a large one (``--gigabytes``, 2 GB by default: 2,000,000,000 bytes, one file). Then times
``msgcap run --max-idle 0`` on an empty spool directory — the whole restart: process start,
checkpoint, trail recovery, source, stop — ``--repeat`` times on each, alternating, and prints
the best and the median times and the ratio of the best ones (target: about 1, restart time
independent of the trail's size; on a shared machine the best time is the steadier figure). The
same-run baseline is the large trail restarted without its checkpoint, which scans the whole
newest file (what every start did before; skip it with ``--no-baseline``). The trail files are
written through the page cache; the figures are for warm files. Needs the free disk space.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gendef.defgen import read_defs
from msgcap import __version__
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.fileheader import encode_file_header
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction

EXAMPLE = REPO / "examples" / "delimited"
PROPS = """\
trail.path=dirdat/sa
trail.extract=SALES
trail.megabytes=2000
parser.type=delim
delim.sourcedefs=dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.txid=*txid
jms.url=dir:dirspool
"""
BLOCK = 5_000  # transactions encoded once and repeated (about 0.8 MB)


def build(home: Path, size: int) -> None:
    """A one-file trail of about ``size`` bytes and the checkpoint a run leaves after it."""
    for sub in ("dirdef", "dirprm", "dirspool", "dirdat", "dirchk"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "dirdef" / "sales.def", home / "dirdef")
    (home / "dirprm" / "p.properties").write_text(PROPS)
    table = read_defs(str(home / "dirdef" / "sales.def")).get("SALES.CUSTOMER")
    encoder = TrailEncoder("big")
    block = bytearray()
    last = None
    for n in range(1, BLOCK + 1):
        seqid = f"{n:010d}"
        tx = TrailTransaction(str(n), [TrailRecord(table, IOTYPE_INSERT, "A",
                                                   1_700_000_000_000_000 + n, seqid, 0,
                                                   [n, f"Customer {n}", f"City {n % 97}",
                                                    "2024-03-01:10:15:30"])])
        block += encoder.encode_transaction(tx, n)
        last = tx
    path = home / "dirdat" / "sa000000000"
    header = encode_file_header(byteorder="big", seqno=0, file_name="dirdat/sa000000000",
                                uri="uri:bench::SALES", extract="SALES",
                                created_us=time.time_ns() // 1000, version=__version__)
    repeats = max(1, (size - len(header)) // len(block))
    with open(path, "wb") as fh:
        fh.write(header)
        # the same transactions again and again: a restart reads only the end
        fh.writelines(block for _ in range(repeats))
        fh.flush()
        os.fsync(fh.fileno())
    end = path.stat().st_size
    checkpoint = {"file": "dirdat/sa000000000", "seqno": 0, "rba": end,
                  "last_seqid": last.records[-1].seqid, "last_ordinal": 0,
                  "last_txid": last.txid, "last_message_id": None, "txnum": BLOCK,
                  "messages": BLOCK * repeats, "time": "", "trail": "dirdat/sa"}
    (home / "dirchk" / "SALES.cpj").write_text(json.dumps(checkpoint))


def restart(home: Path) -> float:
    """Seconds of one ``msgcap run --max-idle 0`` (it must succeed)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "msgcap.cli", "run", "--prop",
                           "dirprm/p.properties", "--max-idle", "0"], cwd=home, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"msgcap run failed in {home}:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gigabytes", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args()
    size = int(args.gigabytes * 1e9)
    with tempfile.TemporaryDirectory(prefix="bench_restart_") as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        t0 = time.perf_counter()
        build(small, 1_000_000)
        build(large, size)
        big = (large / "dirdat" / "sa000000000").stat().st_size
        print(f"restart benchmark: trails of {(small / 'dirdat' / 'sa000000000').stat().st_size:,}"
              f" and {big:,} bytes (built in {time.perf_counter() - t0:.1f} s), {args.repeat} "
              f"restarts each, load average {os.getloadavg()[0]:.2f}")
        times: dict[Path, list[float]] = {small: [], large: []}
        for _ in range(args.repeat):  # alternating: a load change hits both alike
            for home in (small, large):
                times[home].append(restart(home))
        t_small, t_large = min(times[small]), min(times[large])
        rows = [("restart, small trail with checkpoint", times[small]),
                (f"restart, {big / 1e9:.2f} GB trail with checkpoint", times[large])]
        for label, seconds in rows:
            print(f"  {label:<44} best {min(seconds):7.3f} s  median "
                  f"{statistics.median(seconds):7.3f} s")
        print(f"  {'ratio large / small (best)':<44} {t_large / t_small:8.2f}")
        if not args.no_baseline:
            (large / "dirchk" / "SALES.cpj").unlink()  # the baseline: a full scan
            t_scan = restart(large)
            label = f"baseline: {big / 1e9:.2f} GB trail, no checkpoint"
            print(f"  {label:<44} {t_scan:8.3f} s ({t_scan / t_large:.0f} x the restart with "
                  "checkpoint)")
        print(f"  load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
