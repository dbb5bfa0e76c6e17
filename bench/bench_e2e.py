"""End to end CPU per message at the margin, each path beside a hand-written baseline (issue 28).

    python bench/bench_e2e.py [--only fixed,delim,xml,batch,capture] [--messages N]
                              [--xml-messages N] [--batch-messages N] [--capture-messages N]
                              [--rounds R] [--no-cluster]

CPU per message *at the margin*: a run over 2N messages minus a run over N, divided by N, so that
start-up (interpreter, imports, definitions, Spark sessions) does not count. CPU is user + system
time, never wall time (the machine is shared): of the ``msgcap replay`` / ``msgcap run``
subprocess (``RUSAGE_CHILDREN`` deltas), for Spark of this process (the driver), its descendants
(the JVM, PySpark's Python workers) and the standalone cluster's processes (read from /proc,
``bench_batch.cpu_seconds``). Each run is repeated ``--rounds`` times and the least CPU of each
size is kept (a slower run measures the neighbours). Baselines run in this process over the same
messages, their margin taken the same way. Workloads (the tests' data is not used):

* ``fixed``: 200-byte cp037 records, 19 fields (COMP, COMP-3, zoned, text; ``bench_fixed``'s
  ebcdic layout), a JSON Lines dump with ``body_b64``; ``msgcap replay`` into a durable trail
  (default ``trail.sync``) vs the hand-written per-field decoder (slices, ``decode``,
  ``int.from_bytes``, a COMP-3 unpack) decoding the same records and writing nothing.
  Target: baseline / msgcap ≥ 1.0.
* ``delim``: ``--lines``, 10 columns (quoted values with delimiters and doubled quotes, NULLs, a
  ``DD/MM/YYYY`` date, decimals), inserts, updates and deletes; replay vs ``csv.reader``
  tokenizing the same lines. Target: msgcap ≤ 8× csv.reader's CPU. Also printed: the floor of
  a throw-away script (``floor_script``: csv.reader, convert, frame, append, no checks).
* ``xml``: ``bench_xml``'s dynamic rules, 1–3 operations a message, before values, nulls; replay
  vs lxml parsing plus compiled XPath extraction of the same values. Target: ≥ 1.0.
* ``batch``: ``msgcap batch`` (``bench_batch``'s runner: a fresh session, warmed up, per run) on
  the delimited input, ``local[1]`` and the 2-worker standalone cluster
  (``scripts/spark-cluster.sh``), vs replay on the same input; the trails are compared record by
  record. Target: batch ≤ 1.3× replay's CPU.
* ``capture``: ``msgcap run`` on a private ActiveMQ (STOMP) draining the delimited messages,
  vs a bare stomp.py consumer that acknowledges each one (``bench_capture``'s method).
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

PARTS = ("fixed", "delim", "xml", "batch", "capture")

# -- running and measuring ---------------------------------------------------------------------


def children_cpu() -> float:
    """User + system seconds of this process's reaped children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def replay_cpu(home: Path, dump: str, lines: bool, expected_ops: int) -> float:
    """CPU seconds of one ``msgcap replay`` of ``dump`` in ``home`` into a fresh trail."""
    shutil.rmtree(home / "dirdat", ignore_errors=True)
    command = [sys.executable, "-m", "msgcap.cli", "replay", "--prop", "dirprm/bench.properties",
               "--progress-interval", "-1", "--json", *(["--lines"] if lines else []), dump]
    before = children_cpu()
    done = subprocess.run(command, cwd=home, env=dict(os.environ, PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, check=False)
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"msgcap replay of {dump} failed: {done.stderr.strip()}")
    result = json.loads(done.stdout)
    if result["operations_total"] != expected_ops or result["discarded"]:
        raise SystemExit(f"msgcap replay of {dump}: {result}")
    return cpu


@dataclass
class Margin:
    """CPU seconds of the runs over N and 2N messages (least of the rounds) and the margin;
    ``parts``: where a run's CPU went (the Spark batch: driver, JVMs, Python workers), the
    margin of each."""

    n: int
    small: float
    large: float
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def per_message(self) -> float:
        return (self.large - self.small) / self.n

    def text(self) -> str:
        return (f"{self.per_message * 1e6:8.2f} µs/message  (CPU {self.small:.2f} s for "
                f"{self.n:,}, {self.large:.2f} s for {2 * self.n:,})")


def margin(n: int, rounds: int, run: Callable[[int], float]) -> Margin:
    """``run(count)`` → CPU seconds, for N and 2N, ``rounds`` times each (interleaved)."""
    small, large = [], []
    for _ in range(rounds):
        small.append(run(n))
        large.append(run(2 * n))
    return Margin(n, min(small), min(large))


def in_process(work: Callable[[int], object]) -> Callable[[int], float]:
    """A baseline's run: CPU seconds of ``work(count)`` in this process."""
    def run(count: int) -> float:
        c0 = time.process_time()
        work(count)
        return time.process_time() - c0
    return run


def ratio_line(label: str, value: float, target: str, met: bool) -> str:
    return f"  {label} = {value:.2f} (target {target}: {'met' if met else 'NOT met'})"


def workdir(root: Path, name: str, props: str, definitions: dict[str, str]) -> Path:
    """A working directory with ``dirprm/bench.properties`` and the definitions files."""
    home = root / name
    (home / "dirprm").mkdir(parents=True)
    (home / "dirdef").mkdir()
    (home / "dirprm" / "bench.properties").write_text(props)
    for file, text in definitions.items():
        (home / "dirdef" / file).write_text(text)
    return home


# -- fixed-width -------------------------------------------------------------------------------


def fixed(root: Path, n: int, rounds: int) -> dict[str, Margin]:
    from bench_fixed import EBCDIC_COPYBOOK, ebcdic_by_hand, ebcdic_record
    from bench_fixed import PROPS as FIXED_PROPS

    props = FIXED_PROPS.replace("trail.sync=none\n", "") + "fixed.encoding=cp037\n"
    home = workdir(root, "fixed", props, {"bench.cpy": EBCDIC_COPYBOOK})
    records = [ebcdic_record(i) for i in range(2 * n)]
    for count in (n, 2 * n):
        with open(home / f"m{count}.jsonl", "w") as fh:
            fh.writelines(json.dumps({"id": f"m{i}", "headers": {},
                                      "body_b64": base64.b64encode(r).decode()}) + "\n"
                          for i, r in enumerate(records[:count]))

    def decode(count: int) -> None:
        for r in records[:count]:
            ebcdic_by_hand(r)

    return {"baseline": margin(n, rounds, in_process(decode)),
            "msgcap": margin(n, rounds,
                             lambda count: replay_cpu(home, f"m{count}.jsonl", False, count))}


def report_fixed(m: dict[str, Margin]) -> None:
    print("fixed-width: 200-byte cp037 records, 19 fields, replay → durable trail")
    print(f"  hand-written per-field decoder {m['baseline'].text()}")
    print(f"  msgcap replay                  {m['msgcap'].text()}")
    ratio = m["baseline"].per_message / m["msgcap"].per_message
    print(ratio_line("baseline / msgcap", ratio, "≥ 1.0", ratio >= 1.0))


# -- delimited ---------------------------------------------------------------------------------

DELIM_TABLE = "BENCH.ACCOUNTS"
DELIM_PROPS = f"""\
trail.path=dirdat/bd
parser.type=delim
delim.sourcedefs=dirdef/bench.def
delim.header=optype,schemaandtable,timestamp
delim.seqid=*seqid
delim.nullindicator=NULL
delim.timestamp.format=YYYY-MM-DD HH:MI:SS.FFFFFF
delim.dateformat.{DELIM_TABLE}.OPENED=DD/MM/YYYY
"""


def delim_definitions() -> str:
    from gendef.defgen import format_defs
    from gendef.model import (
        Definitions,
        Table,
        char_column,
        datetime_column,
        number_column,
        varchar_column,
    )

    table = Table.build(DELIM_TABLE, [
        number_column("ACCT_ID", 12, key=True), varchar_column("NAME", 40),
        varchar_column("CITY", 24), number_column("BALANCE", 13, 2), number_column("QTY", 8),
        char_column("STATUS", 1), varchar_column("CODE", 10), datetime_column("OPENED", 10),
        number_column("RATE", 9, 4), varchar_column("NOTE", 60)])
    return format_defs(Definitions((table,)), created="2024-03-01 00:00:00")


def delim_line(i: int) -> str:
    """Record i: 6 in 10 inserts, 3 updates (after image), 1 delete (before image)."""
    op = "IIUIUDIUII"[i % 10]
    key = i // 2 + 1 if op != "I" else i + 1
    name = "NULL" if i % 17 == 0 else f'"Smith, John {i % 997}"'
    city = "NULL" if i % 5 == 0 else ("Boston", "Chicago", "Denver", "Austin")[i % 4]
    sign = "-" if i % 7 == 0 else ""
    note = ("NULL" if i % 11 == 0 else f'"said ""hi"", then {i % 101}"' if i % 3 == 0
            else f"plain note {i % 313}")
    return (f"{op},{DELIM_TABLE},2024-03-01 10:{i // 60 % 60:02d}:{i % 60:02d}.{i % 10**6:06d},"
            f"{key},{name},{city},{sign}{i % 10**9}.{i % 100:02d},{i % 5000},{'NSX'[i % 3]},"
            f"C{i % 10000:05d},{i % 28 + 1:02d}/{i % 12 + 1:02d}/{1990 + i % 30},"
            f"{i % 1000}.{i % 10**4:04d},{note}")


def delim_home(root: Path, n: int) -> Path:
    home = root / f"delim-{n}"
    if home.exists():
        return home
    home = workdir(root, home.name, DELIM_PROPS, {"bench.def": delim_definitions()})
    lines = [delim_line(i) + "\n" for i in range(2 * n)]
    for count in (n, 2 * n):
        (home / f"m{count}.txt").write_text("".join(lines[:count]))
    (home / "warmup.txt").write_text("".join(lines[:min(n, 5000)]))  # bench_batch's warm-up
    return home


_replays: dict[tuple[Path, int], Margin] = {}


def delim_replay(home: Path, n: int, rounds: int) -> Margin:
    """The margin of replay on the delimited input (measured once, for delim and batch)."""
    if (home, n) not in _replays:
        _replays[home, n] = margin(n, rounds,
                                   lambda count: replay_cpu(home, f"m{count}.txt", True, count))
    return _replays[home, n]


_HEAD = struct.Struct(">BBHBBBBHHBq")  # (the sizes of a record head, not its fields)
_COLUMN = struct.Struct(">HH")
_INT64 = struct.Struct(">q")
_OPTYPES = {"I": 5, "U": 15, "D": 3}


def floor_script(rows: Iterable[list[str]]) -> bytearray:
    """The least a throw-away script does per line of the delimited workload: convert the 10
    columns (NULL, integers, decimals as scaled integers, the date reordered, texts), frame a
    record (a head, each column's index and length, a seqid) and append it. No checks, no
    ids, no transactions, no errors: the floor beside which ``msgcap replay`` is measured."""
    out = bytearray()
    days: dict[str, int] = {}
    seq = 0
    for row in rows:
        op, _, ts, *values = row
        day = days.get(ts[:10])
        if day is None:
            day = days[ts[:10]] = len(days)
        micros = (day * 86_400_000_000 + int(ts[11:13]) * 3_600_000_000
                  + int(ts[14:16]) * 60_000_000 + int(ts[17:19]) * 1_000_000 + int(ts[20:26]))
        seq += 1
        parts = [_HEAD.pack(71, 1, 0, 72, 49, 69, _OPTYPES[op], 0, 0, 255, micros)]
        for i, (value, kind) in enumerate(zip(values, (0, 1, 1, 2, 0, 1, 1, 3, 2, 1),
                                              strict=True)):
            if value == "NULL":
                parts.append(_COLUMN.pack(i, 0xFFFF))
                continue
            data = (_INT64.pack(int(value)) if kind == 0 else value.encode() if kind == 1 else
                    _INT64.pack(int(value.replace(".", ""))) if kind == 2 else
                    f"{value[6:]}-{value[3:5]}-{value[:2]}".encode())
            parts.append(_COLUMN.pack(i, len(data)))
            parts.append(data)
        parts.append(str(seq).zfill(20).encode())
        out += b"".join(parts)
    return out


def delim(root: Path, n: int, rounds: int) -> dict[str, Margin]:
    home = delim_home(root, n)
    text = (home / f"m{2 * n}.txt").read_text().splitlines()

    def tokenize(count: int) -> None:
        for _row in csv.reader(text[:count]):
            pass

    return {"baseline": margin(n, rounds, in_process(tokenize)),
            "floor": margin(n, rounds, in_process(
                lambda count: floor_script(csv.reader(text[:count])))),
            "msgcap": delim_replay(home, n, rounds)}


def report_delim(m: dict[str, Margin]) -> None:
    print("delimited: --lines, 10 columns, I/U/D, replay → durable trail")
    print(f"  csv.reader tokenizing          {m['baseline'].text()}")
    print(f"  a script's floor (no checks)   {m['floor'].text()}")
    print(f"  msgcap replay                  {m['msgcap'].text()}")
    print(f"  the floor / csv.reader CPU = "
          f"{m['floor'].per_message / m['baseline'].per_message:.2f}; msgcap / the floor = "
          f"{m['msgcap'].per_message / m['floor'].per_message:.2f}")
    ratio = m["msgcap"].per_message / m["baseline"].per_message
    print(ratio_line("msgcap / csv.reader CPU", ratio, "≤ 8", ratio <= 8))


# -- XML ---------------------------------------------------------------------------------------


def xml(root: Path, n: int, rounds: int) -> dict[str, Margin]:
    from bench_xml import PROPS as XML_PROPS
    from bench_xml import baseline, definitions, message_body

    from gendef.defgen import format_defs

    home = workdir(root, "xml", XML_PROPS,
                   {"bench.def": format_defs(definitions(), created="2024-03-01 00:00:00")})
    rng = random.Random(7)
    bodies, ops = [], [0]
    for i in range(2 * n):
        body, k = message_body(i, rng)
        bodies.append(body)
        ops.append(ops[-1] + k)
    for count in (n, 2 * n):
        with open(home / f"m{count}.jsonl", "w") as fh:
            fh.writelines(json.dumps({"id": f"m{i}", "headers": {"SEQNO": f"{i + 1:012d}"},
                                      "body": body}) + "\n"
                          for i, body in enumerate(bodies[:count]))

    def extract(count: int) -> None:
        assert baseline(bodies[:count]) == ops[count]

    return {"baseline": margin(n, rounds, in_process(extract)),
            "msgcap": margin(n, rounds, lambda count: replay_cpu(home, f"m{count}.jsonl", False,
                                                                 ops[count]))}


def report_xml(m: dict[str, Margin]) -> None:
    print("XML: dynamic rules, 1–3 operations a message, replay → durable trail")
    print(f"  lxml + compiled XPath          {m['baseline'].text()}")
    print(f"  msgcap replay                  {m['msgcap'].text()}")
    ratio = m["baseline"].per_message / m["msgcap"].per_message
    print(ratio_line("baseline / msgcap", ratio, "≥ 1.0", ratio >= 1.0))


# -- Spark batch -------------------------------------------------------------------------------


def batch(root: Path, n: int, rounds: int, cluster: bool) -> tuple[dict[str, Margin], list[str]]:
    """Margins of replay, local[1] and (``cluster``) 2 workers on the delimited input, and the
    runs whose trail differs from replay's."""
    from bench_batch import Cluster, trail_records
    from bench_batch import batch as run_batch

    from gendef.build import build_definitions
    from props.loader import load_settings

    home = delim_home(root, n)
    cwd = os.getcwd()
    os.chdir(home)  # the properties' relative paths, bench_batch's warm-up input
    try:
        settings = load_settings("dirprm/bench.properties")
        definitions = build_definitions(settings)
        figures = {"replay": delim_replay(home, n, rounds)}
        # the replay of 2N ran last: its trail is the reference
        reference = trail_records("dirdat/bd")
        differs: list[str] = []
        masters: list[tuple[str, str, str | None]] = [("local[1]", "local[1]", None)]
        spark_cluster = None
        if cluster:
            spark_cluster = Cluster(str(root))
            spark_cluster.script("start")
            masters.append(("2 workers", spark_cluster.url,
                            f"SPARK_CONF_DIR={spark_cluster.dir}/conf\0"))
        try:
            for label, master, marker in masters:
                out = f"out-{len(figures)}"

                least: dict[int, dict[str, float]] = {}  # the parts of each size's least run

                def run(count: int, master: str = master, marker: str | None = marker,
                        out: str = out, least: dict[int, dict[str, float]] = least) -> float:
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(out + "-warmup", ignore_errors=True)
                    _, _, cpu = run_batch(settings, definitions, f"m{count}.txt", master, out,
                                          None, [], marker)
                    if count not in least or sum(cpu.values()) < sum(least[count].values()):
                        least[count] = cpu
                    return sum(cpu.values())

                figures[label] = found = margin(n, rounds, run)
                found.parts = {k: (least[2 * n][k] - least[n][k]) / n for k in least[n]}
                if trail_records(f"{out}/trail/bd") != reference:
                    differs.append(label)
        finally:
            if spark_cluster is not None:
                spark_cluster.script("stop")
    finally:
        os.chdir(cwd)
    return figures, differs


def report_batch(m: dict[str, Margin], differs: Sequence[str]) -> None:
    print("Spark batch on the delimited input (driver, JVMs and Python workers), beside replay")
    for label, figure in m.items():
        print(f"  {label:<30} {figure.text()}")
        if figure.parts:
            print(f"  {'':<30} of which " + ", ".join(
                f"{part} {seconds * 1e6:.2f}" for part, seconds in figure.parts.items()))
    for label, figure in m.items():
        if label != "replay":
            ratio = figure.per_message / m["replay"].per_message
            print(ratio_line(f"{label} / replay CPU", ratio, "≤ 1.3", ratio <= 1.3))
    print(f"  trails: {'DIFFER from replay: ' + ', '.join(differs) if differs else 'the same'}")


# -- live capture ------------------------------------------------------------------------------


def capture(root: Path, n: int, rounds: int, prefetch: int = 1000,
            ack_batch: int = 500) -> dict[str, Margin]:
    """``msgcap run`` draining the delimited messages from a private ActiveMQ vs the bare
    consumer (``bench_capture``: prefetch 1000, ACK batch 500 as there)."""
    from bench_capture import bare_consumer, broker, fill, run_capture

    home = delim_home(root, n)

    def message(i: int) -> str:
        return delim_line(i - 1) + "\n"

    with broker("activemq", root) as url:
        def bare(count: int) -> float:
            dest = f"/queue/bench-bare-{uuid.uuid4().hex}"
            fill(url, dest, count, message)
            c0 = time.process_time()
            bare_consumer(url, dest, count, prefetch)
            return time.process_time() - c0

        def run(count: int) -> float:
            dest = f"/queue/bench-cap-{uuid.uuid4().hex}"
            fill(url, dest, count, message)
            cap = root / f"capture-{uuid.uuid4().hex}"
            shutil.copytree(home / "dirdef", cap / "dirdef")
            (cap / "dirprm").mkdir()
            prop = cap / "dirprm" / "bench.properties"
            prop.write_text(DELIM_PROPS + f"jms.url={url}\njms.destination={dest}\n"
                            f"jms.prefetch={prefetch}\njms.ack.batch={ack_batch}\n"
                            "trail.extract=BENCH\nerror.policy=abend\n")
            before = children_cpu()
            run_capture(prop, cap, count, "BENCH")
            cpu = children_cpu() - before
            shutil.rmtree(cap)
            return cpu

        return {"baseline": margin(n, rounds, bare), "msgcap": margin(n, rounds, run)}


def report_capture(m: dict[str, Margin]) -> None:
    print("live capture on ActiveMQ (STOMP), the delimited messages, durable trail")
    print(f"  bare stomp.py consumer, ACK each {m['baseline'].text()}")
    print(f"  msgcap run                     {m['msgcap'].text()}")
    ratio = m["msgcap"].per_message / m["baseline"].per_message
    print(f"  msgcap / bare consumer CPU = {ratio:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(PARTS),
                    help=f"comma-separated, of: {', '.join(PARTS)} (default all)")
    ap.add_argument("--messages", type=int, default=100_000,
                    help="N of the fixed-width and delimited replays (default 100000)")
    ap.add_argument("--xml-messages", type=int, default=20_000, help="N of XML (default 20000)")
    ap.add_argument("--batch-messages", type=int, default=100_000,
                    help="N of the Spark batch and its replay (default 100000)")
    ap.add_argument("--capture-messages", type=int, default=20_000,
                    help="N of the live capture (default 20000)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="runs of each size; the least CPU is kept (default 2)")
    ap.add_argument("--no-cluster", action="store_true", help="batch: local[1] only")
    args = ap.parse_args()
    only = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = set(only) - set(PARTS)
    if unknown:
        ap.error(f"unknown part {', '.join(sorted(unknown))} (of: {', '.join(PARTS)})")
    print(f"CPU per message at the margin (2N − N), least of {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    try:
        for part in PARTS:
            if part not in only:
                continue
            if part == "fixed":
                report_fixed(fixed(root, args.messages, args.rounds))
            elif part == "delim":
                report_delim(delim(root, args.messages, args.rounds))
            elif part == "xml":
                report_xml(xml(root, args.xml_messages, args.rounds))
            elif part == "batch":
                report_batch(*batch(root, args.batch_messages, args.rounds,
                                    not args.no_cluster))
            else:
                report_capture(capture(root, args.capture_messages, args.rounds))
            sys.stdout.flush()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
