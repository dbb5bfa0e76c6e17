"""Four partitions' aggregate capture rate beside one partition's, on the same RabbitMQ node.

    python bench/bench_partitions.py [--messages N] [--partitions P] [--keys K]

On a private RabbitMQ node (``scripts/rabbitmq.sh`` with its AMQP 1.0 listener and the
management HTTP API, on free loopback ports), the recipe of docs/brokers.md: a consistent-hash
exchange into single-active-consumer queues. In the same run:

1. one partition: an exchange bound to one queue; N persistent messages of the delimited
   example are queued through it (K keys, the key as the routing key, from a proton sender),
   then one ``msgcap run --partition 0 --max-idle 1`` drains the backlog into its trail;
2. P partitions: an exchange bound to P queues, the same N messages queued through it, then P
   ``msgcap run --partition n`` drain them at the same time, each into its own trail.

Each capture uses the example's properties (``trail.sync=batch``: an fsync per group, each
message accepted once its group is durable). The rate runs from the first capture's connection
to the last durable checkpoint of all of them. Prints messages/s of each setup and their ratio,
each msgcap process's CPU per message it captured (from wait4), the broker's (beam.smp's, from
/proc) per message over each drain, how many cores the captures and the broker kept busy
together from the captures' start to their exit and how many the whole machine did (/proc/stat: other work on the machine shows as the
difference), and the ceiling the CPU per message sets on this machine's cores (cores / (msgcap
+ broker CPU per message), and at most one core per msgcap process): what bounds the aggregate
rate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from base64 import b64encode
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_amqp import _utc, process_cpu
from bench.bench_capture import body, free_port
from tests.amqp_client import send


def declare(api: str, exchange: str, queues: list[str]) -> None:
    """docs/brokers.md's recipe through the management HTTP API (guest on loopback)."""
    auth = "Basic " + b64encode(b"guest:guest").decode()

    def call(method: str, path: str, data: dict) -> None:
        request = urllib.request.Request(f"{api}/api/{path}", method=method,
                                         data=json.dumps(data).encode(),
                                         headers={"content-type": "application/json",
                                                  "authorization": auth})
        with urllib.request.urlopen(request, timeout=30):
            pass

    call("PUT", f"exchanges/%2F/{exchange}", {"type": "x-consistent-hash", "durable": True})
    for queue in queues:
        call("PUT", f"queues/%2F/{queue}",
             {"durable": True, "arguments": {"x-single-active-consumer": True}})
        call("POST", f"bindings/%2F/e/{exchange}/q/{queue}", {"routing_key": "1"})


def fill(url: str, exchange: str, n: int, keys: int) -> float:
    """Queue n messages through the exchange, key by key (seqids rise in every queue);
    seconds."""
    started, first = time.monotonic(), 1
    for key in range(keys):
        count = n // keys + (1 if key < n % keys else 0)
        send(url, f"/exchange/{exchange}/key{key}",
             (body(i) for i in range(first, first + count)), window=1000)
        first += count
    return time.monotonic() - started


def home(root: Path, url: str, queue_prefix: str) -> Path:
    """A copy of the delimited example whose properties serve every partition."""
    shutil.copytree(REPO / "examples" / "delimited", root)
    prop = root / "dirprm" / "jmsvam.properties"
    text = prop.read_text().replace("jms.url=dir:dirspool", f"jms.url={url}")
    text = text.replace("error.policy=discard", "error.policy=abend")
    text = text.replace("trail.path=dirdat/sa", "trail.path=dirdat/p${PARTITION}/sa")
    text = text.replace("trail.extract=SALES", "trail.extract=SALES${PARTITION}")
    text += f"\njms.destination=/queue/{queue_prefix}.${{PARTITION}}\njms.prefetch=1000\n"
    prop.write_text(text)
    return prop


def machine_cpu() -> float:
    """CPU seconds all processes of the machine have used so far (/proc/stat, idle excluded)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def drain(prop: Path, partitions: int, n: int, node_pid: int) -> dict:
    """P captures at once on the backlog; the figures."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    root = prop.parent.parent
    machine, wall = machine_cpu(), time.monotonic()
    beam = process_cpu(node_pid)
    procs = [subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop", str(prop),
                               "--partition", str(p), "--max-idle", "1"], cwd=root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for p in range(partitions)]
    cpus = []
    for proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"msgcap run failed: {proc.stderr.read()}")
        cpus.append(usage.ru_utime + usage.ru_stime)
    beam = process_cpu(node_pid) - beam
    wall = time.monotonic() - wall  # start-up to exit: the span the CPU figures cover
    machine = (machine_cpu() - machine) / wall
    counts, starts, ends = [], [], []
    for p in range(partitions):
        cp = json.loads((root / "dirchk" / f"SALES{p}.cpj").read_text())
        counts.append(cp["messages"])
        ends.append(_utc(cp["time"]))
        log = (root / "dirrpt" / f"SALES{p}.log").read_text().splitlines()
        connected = next(ln for ln in log if "connected to" in ln)
        starts.append(_utc(connected[:23].replace(" ", "T") + "Z"))
    if sum(counts) != n:
        raise SystemExit(f"captures saw {sum(counts)} messages, expected {n}")
    elapsed = max(ends) - min(starts)
    return {"rate": n / elapsed, "elapsed": elapsed, "counts": counts, "cpus": cpus,
            "beam": beam, "cores": (sum(cpus) + beam) / wall, "machine": machine,
            "ceiling": ceiling(partitions, sum(cpus) / n, beam / n)}


def ceiling(partitions: int, msgcap: float, broker: float) -> float:
    """The messages/s this machine's cores allow at these CPU seconds per message: all cores
    shared by the captures and the broker, and at most one core per msgcap process (its
    capture thread holds the GIL)."""
    return min((os.cpu_count() or 1) / (msgcap + broker), partitions / msgcap)


def report(label: str, n: int, f: dict) -> None:
    per = ", ".join(f"{c:,} msgs {cpu / c * 1e6:.1f} µs" for c, cpu in zip(f["counts"],
                                                                          f["cpus"], strict=True))
    print(f"  {label}: {f['rate']:,.0f} messages/s ({n:,} in {f['elapsed']:.1f} s); msgcap "
          f"CPU/message of each process: {per}; all msgcap {sum(f['cpus']) / n * 1e6:.1f} "
          f"µs/message; broker {f['beam'] / n * 1e6:.1f} µs/message; cores busy: msgcap and "
          f"broker {f['cores']:.2f}, whole machine {f['machine']:.2f} of {os.cpu_count()}; "
          f"CPU ceiling {f['ceiling']:,.0f} messages/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--keys", type=int, default=64, help="distinct routing keys (default 64)")
    args = ap.parse_args()
    n = args.messages
    work = Path(tempfile.mkdtemp(prefix="msgcap-bench-partitions-"))
    script = REPO / "scripts" / "rabbitmq.sh"
    amqp_port, http_port = free_port(), free_port()
    node_env = dict(os.environ, MSGCAP_BROKER_DIR=str(work / "rabbitmq"),
                    MSGCAP_STOMP_PORT=str(free_port()), MSGCAP_AMQP_PORT=str(amqp_port),
                    MSGCAP_HTTP_PORT=str(http_port), MSGCAP_BROKER_OWNER=str(os.getpid()))
    url, api = f"amqp://127.0.0.1:{amqp_port}", f"http://127.0.0.1:{http_port}"
    try:
        subprocess.run(["bash", str(script), "start"], env=node_env, check=True)
        node_pid = int((work / "rabbitmq" / "node.pid").read_text().strip())
        figures = {}
        for partitions in (1, args.partitions):
            name = f"bench.p{partitions}"
            declare(api, name, [f"{name}.{p}" for p in range(partitions)])
            seconds = fill(url, name, n, args.keys)
            print(f"{partitions} partition(s): queued {n:,} persistent messages over "
                  f"{args.keys} keys in {seconds:.1f} s")
            prop = home(work / f"home{partitions}", url, name)
            figures[partitions] = drain(prop, partitions, n, node_pid)
            report(f"{partitions} msgcap run", n, figures[partitions])
    finally:
        subprocess.run(["bash", str(script), "stop"], env=node_env, check=False)
        shutil.rmtree(work, ignore_errors=True)
    one, many = figures[1], figures[args.partitions]
    print(f"rabbitmq partitions: 1 partition {one['rate']:,.0f}/s, {args.partitions} partitions "
          f"{many['rate']:,.0f}/s aggregate ({many['rate'] / one['rate']:.2f}x); cores busy "
          f"{one['cores']:.2f} and {many['cores']:.2f} (machine {one['machine']:.2f} and "
          f"{many['machine']:.2f}) of {os.cpu_count()}; CPU/message "
          f"msgcap {sum(one['cpus']) / n * 1e6:.1f} and {sum(many['cpus']) / n * 1e6:.1f} µs, "
          f"broker {one['beam'] / n * 1e6:.1f} and {many['beam'] / n * 1e6:.1f} µs; CPU "
          f"ceiling {one['ceiling']:,.0f} and {many['ceiling']:,.0f} messages/s")


if __name__ == "__main__":
    main()
