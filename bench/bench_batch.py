"""``msgcap batch`` throughput beside single-process replay, and the driver's own ceiling.

    python bench/bench_batch.py [--records 1000000] [--partitions 8] [--rounds 3] [--no-cluster]

Writes N one-record delimited messages (the records of ``bench_replay_delim.py``, system seqids)
as a text-lines dump, then, in this run:

* replay: dump reading → ids → parser → assembler → trail writer in this process, as
  ``msgcap replay`` does it (``Pipeline.process_many``);
* batch with ``local[1]``;
* batch on a standalone cluster (``scripts/spark-cluster.sh``: two 1-core workers on loopback,
  executors running this interpreter) with both workers, then the same cluster with one
  (``spark.cores.max=1``);
* the driver's ceiling: pass 1 and pass 2 done beforehand in this process, then only what the
  driver does — plan every segment and append the framed bytes in order into a trail — timed.

Each batch gets a fresh SparkSession; its start, and the executors' (a warm-up job), are not
timed. The runs are repeated ``--rounds`` times, one after the other (replay, local[1], 2
workers, 1 worker, then again), and the best run of each is compared, as ``timeit`` does: on a
shared machine a slower run measures the neighbours (the CPU time of the very same run moves by
±10 % here from one run to the next). Every run's time is printed too.

Prints wall-clock messages/s (Spark work runs in other processes) and the CPU seconds of each
best run (this process, the JVMs and the Python workers: this process's descendants and the
cluster's processes), checks that every trail holds the same records, and the ratios against
their targets: local[1] ≥ 70 % of replay; 2 workers ≥ 1.6× 1 worker; the driver's ceiling ≥ 10×
replay. The load average is printed at the start and at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_replay_delim import PROPS as REPLAY_PROPS
from bench_replay_delim import definitions_text, record

# system seqids: deterministic, so that every run writes the same trail
PROPS = REPLAY_PROPS + "delim.seqid=*seqid\n"


def trail_records(prefix: str) -> bytes:
    """The records of a trail, file headers left out, IO times (*ts, parse time) masked."""
    from msgcap.trail.reader import TrailFile, sequence_files

    parts = []
    for _seqno, path in sequence_files(prefix, 9):
        tf = TrailFile(path)
        with open(path, "rb") as fh:
            body = bytearray(fh.read()[tf.data_start:])
        for rec in tf.records():
            at = rec.rba - tf.data_start + 16
            body[at:at + 8] = bytes(8)
        parts.append(bytes(body))
    return b"".join(parts)


def cpu_seconds(marker: str | None = None) -> dict[str, float]:
    """CPU seconds (user + system, reaped children included) of this process ("driver"), and
    of its descendants and, with ``marker``, of the processes whose environment holds it and
    their descendants (a cluster's daemons, executors and their Python workers): "jvm" for
    Java processes, "python" for the others (PySpark's daemons and workers)."""
    procs: dict[int, tuple[int, str, int]] = {}
    roots = {os.getpid()}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
            if marker is not None:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    if marker.encode() in fh.read():
                        roots.add(int(name))
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        procs[int(name)] = (int(fields[1]), stat[stat.index("(") + 1:stat.rindex(")")],
                            sum(int(f) for f in fields[11:15]))
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen and pid in procs:
            seen.add(pid)
            todo.extend(children.get(pid, ()))
    tick = os.sysconf("SC_CLK_TCK")
    out = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
    for pid in seen:
        _, comm, ticks = procs[pid]
        kind = "driver" if pid == os.getpid() else "jvm" if comm == "java" else "python"
        out[kind] += ticks / tick
    return out


def cpu_since(before: dict[str, float], marker: str | None = None) -> dict[str, float]:
    after = cpu_seconds(marker)
    return {k: max(0.0, after[k] - before.get(k, 0.0)) for k in after}


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
    for _message, _result in pipeline.process_many(read_messages([dump], lines=True)):
        pass  # as ``msgcap replay`` reads them: parsing a batch ahead
    pipeline.finish()
    writer.flush_durable()
    writer.close()
    return time.perf_counter() - t0


def batch(settings, definitions, dump: str, master: str, out: str, partitions: int | None,
          conf: list[tuple[str, str]], marker: str | None
          ) -> tuple[float, str, dict[str, float]]:
    from msgcap.batch.driver import run_batch
    from msgcap.batch.session import spark_session

    spark = spark_session(master, app=f"bench {master}", conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        # a small batch first: executors, Python workers and the JVM's compiled code ready
        run_batch(settings, ["warmup.txt"], out + "-warmup", spark=spark, lines=True,
                  partitions=partitions, definitions=definitions, progress_interval=-1)
        cpu = cpu_seconds(marker)
        t0 = time.perf_counter()
        result = run_batch(settings, [dump], out, spark=spark, lines=True,
                           partitions=partitions, definitions=definitions, progress_interval=-1)
        wall = time.perf_counter() - t0
        cpu = cpu_since(cpu, marker)
    finally:
        spark.stop()
    note = (f"{result.splits} splits, one pass" if result.one_pass else
            f"{result.splits} splits, {result.planned_fast} segments planned from trials")
    return wall, note, cpu


def driver_ceiling(settings, definitions, dump: str, partitions: int
                   ) -> tuple[float, float, int]:
    """Seconds the driver spends planning and appending, the tasks' results ready: pass 1 and
    pass 2 run on local[2] first (not timed), their results brought here."""
    from msgcap.batch.driver import Appender, trail_writer
    from msgcap.batch.inputs import block_size, plan_scans
    from msgcap.batch.jobs import SparkJobs
    from msgcap.batch.parse import Job
    from msgcap.batch.plan import Planner
    from msgcap.batch.session import spark_session
    from msgcap.pipeline import Stats
    from parsers.base import build_parser

    spark = spark_session("local[2]", app="bench driver ceiling")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        jobs = SparkJobs(spark)
        files = jobs.list_inputs([dump], lines=True)
        scans = plan_scans(files, block=block_size(files, target=partitions, cap=None))
        job = Job.create(settings, build_parser(settings, definitions), definitions, files,
                         scans, rows=False, time_base=0)
        bjob = jobs.broadcast(job)
        parsed = jobs.parse(*jobs.source(files, scans), bjob)
        summaries = jobs.summaries(parsed)
        planner = Planner(job.rules, job.policy, files)
        ready = []
        for p, found in enumerate(summaries):
            plans = {s.key: planner.plan(s, None) for s in sorted(found, key=lambda s: s.key)}
            ready.append((sorted(found, key=lambda s: s.key),
                          sorted(jobs.encode(parsed, bjob, plans, p), key=lambda e: e.key)))
        parsed.unpersist()
    finally:
        spark.stop()
    with tempfile.TemporaryDirectory(prefix="ceiling-", dir=".") as out:
        writer = trail_writer(settings, out)
        writer.open()
        appender = Appender(writer, Stats(), os.path.join(out, "errors"))
        t0, c0 = time.perf_counter(), time.process_time()
        planner = Planner(job.rules, job.policy, files)
        for found, encoded in ready:
            for s in found:
                planner.plan(s, None)
            for r in encoded:
                appender.append(r)
        writer.flush_durable()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        writer.close()
    return seconds, cpu, appender.stats.transactions


class Cluster:
    """A standalone cluster of two 1-core workers (scripts/spark-cluster.sh), private dir."""

    def __init__(self, work: str) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"spark://127.0.0.1:{port}"
        venv_bin = os.path.dirname(sys.executable)
        self.dir = os.path.join(work, "cluster")
        self.env = dict(os.environ, MSGCAP_SPARK_DIR=self.dir,
                        MSGCAP_SPARK_PORT=str(port), MSGCAP_SPARK_WORKERS="2",
                        MSGCAP_SPARK_CORES="1", MSGCAP_SPARK_MEMORY="2g",
                        MSGCAP_SPARK_PATH=f"{venv_bin}:/usr/bin:/bin",  # python3: this one
                        MSGCAP_SPARK_OWNER=str(os.getpid()))

    def script(self, action: str) -> None:
        subprocess.run(["bash", str(REPO / "scripts" / "spark-cluster.sh"), action],
                       env=self.env, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=None,
                    help="input splits of every batch (default: msgcap's, twice the cores)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of every run, one after the other (default 3); the best of "
                         "each is compared")
    ap.add_argument("--no-cluster", action="store_true", help="local[1] and the ceiling only")
    args = ap.parse_args()
    n = args.records

    from gendef.build import build_definitions
    from props.loader import load_settings

    load_start = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, dict[str, float]]]] = {}
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as work:
        os.chdir(work)
        os.makedirs("dirprm")
        os.makedirs("dirdef")
        Path("dirprm/bench.properties").write_text(PROPS)
        Path("dirdef/bench.def").write_text(definitions_text())
        with open("messages.txt", "w") as fh:
            fh.writelines(record(i) + "\n" for i in range(n))
        with open("warmup.txt", "w") as fh:
            fh.writelines(record(i) + "\n" for i in range(min(n, 5000)))
        size_mb = os.path.getsize("messages.txt") / 1e6
        print(f"{n} one-record messages, {size_mb:.1f} MB, {os.cpu_count()} cores, "
              f"load average {load_start:.1f} at the start, {args.rounds} rounds")
        settings = load_settings("dirprm/bench.properties")
        definitions = build_definitions(settings)

        batches = [("local[1]", "local[1]", [])]
        cluster = None
        if not args.no_cluster:
            cluster = Cluster(work)
            cluster.script("start")
            batches += [("2 workers", cluster.url, []),
                        ("1 worker", cluster.url, [("spark.cores.max", "1")])]
        reference = None
        try:
            for _ in range(args.rounds):
                shutil.rmtree("dirdat", ignore_errors=True)
                cpu = cpu_seconds()
                wall = replay(settings, definitions, "messages.txt")
                runs.setdefault("replay", []).append((wall, cpu_since(cpu)))
                reference = trail_records("dirdat/bn")
                for label, master, conf in batches:
                    out = "out-" + label.replace(" ", "-").replace("[", "").replace("]", "")
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(out + "-warmup", ignore_errors=True)
                    marker = (f"SPARK_CONF_DIR={cluster.dir}/conf\0"  # spark-cluster.sh's
                              if cluster is not None and master == cluster.url else None)
                    wall, notes[label], cpu_used = batch(settings, definitions, "messages.txt",
                                                         master, out, args.partitions, conf,
                                                         marker)
                    runs.setdefault(label, []).append((wall, cpu_used))
                    if trail_records(f"{out}/trail/bn") != reference:
                        notes[label] += "; TRAIL DIFFERS FROM REPLAY"
                print("  ".join(f"{k} {wall:.2f} s (CPU {sum(c.values()):.1f}, workers "
                                f"{c['python']:.1f})" for k, [*_, (wall, c)] in runs.items()),
                      flush=True)
        finally:
            if cluster is not None:
                cluster.script("stop")
        ceiling_s, ceiling_cpu, ops = driver_ceiling(settings, definitions, "messages.txt",
                                                     args.partitions or 8)
        assert ops == n
        os.chdir("/")

    best = {name: min(got, key=lambda run: run[0]) for name, got in runs.items()}
    figures = {name: wall for name, (wall, _) in best.items()}
    cpus = {name: cpu for name, (_, cpu) in best.items()}
    print("best of each (all runs in brackets):")
    for name, seconds in figures.items():
        note = f"  ({notes[name]})" if name in notes else ""
        every = ", ".join(f"{wall:.2f}" for wall, _ in runs[name])
        print(f"  {name:<10} wall {seconds:7.2f} s  {n / seconds:>10,.0f} messages/s "
              f"[{every}]{note}")
        c = cpus[name]
        print(f"  {'':<10} CPU  {sum(c.values()):7.2f} s = {sum(c.values()) / n * 1e6:5.1f} µs/message"
              f" (driver {c['driver']:.2f} s, JVMs {c['jvm']:.2f} s, Python workers "
              f"{c['python']:.2f} s)")
    rep = figures["replay"]
    ceiling = n / ceiling_s
    print(f"  driver ceiling: {ceiling_s:.2f} s for planning and the ordered append, "
          f"{ceiling:,.0f} operations/s = {ceiling / (n / rep):.1f}× replay (target ≥ 10×)")
    rep_cpu = sum(cpus["replay"].values())
    print(f"  driver ceiling in CPU: {ceiling_cpu:.2f} s, {n / ceiling_cpu:,.0f} operations per "
          f"CPU-second = {rep_cpu / ceiling_cpu:.1f}× replay's {n / rep_cpu:,.0f} messages per "
          "CPU-second")
    print(f"  local[1] / replay = {rep / figures['local[1]']:.0%} (target ≥ 70%); "
          f"CPU: replay / local[1] = {rep_cpu / sum(cpus['local[1]'].values()):.0%}, "
          f"replay / local[1]'s Python workers = {rep_cpu / cpus['local[1]']['python']:.0%}")
    if "2 workers" in figures:
        pairs = [one[0] / two[0]
                 for one, two in zip(runs["1 worker"], runs["2 workers"], strict=True)]
        print(f"  2 workers / 1 worker = {figures['1 worker'] / figures['2 workers']:.2f}× "
              f"(target ≥ 1.6×; round by round: {', '.join(f'{p:.2f}' for p in pairs)})")
        busy = sum(cpus["2 workers"].values()) / figures["2 workers"]
        print(f"  2 workers: {busy:.2f} cores busy on average for the batch (of "
              f"{os.cpu_count()}, shared with the load)")
    print(f"  load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
