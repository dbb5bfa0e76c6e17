"""Capture throughput over AMQP 1.0 from ActiveMQ Artemis, beside a bare Qpid JMS consumer.

    python bench/bench_artemis.py [--messages N] [--prefetch P]

On a private Artemis broker (``scripts/artemis.sh`` on free loopback ports), in the same run:

1. a Java JMS producer (tests/java JmsProduce, Qpid JMS over AMQP, transacted batches of 500)
   queues N persistent TextMessages of the delimited example (SALES.CUSTOMER inserts), and a
   bare Java JMS consumer (tests/java JmsBench: Qpid JMS, client acknowledge once per group of
   half ``--prefetch``, the group msgcap commits) drains them: the baseline;
2. the same producer queues the same N messages on a fresh queue and ``msgcap run --max-idle``
   captures them with the example's properties (``trail.sync=batch``: fsync per group, each
   message accepted once its group is durable) and ``jms.prefetch`` = ``--prefetch``.

Rates run from the first message (consumer) or the connection (capture) to the last
acknowledgement (consumer) or the last durable checkpoint (capture). Prints messages/s of each,
the ratio, the CPU per message of each consumer process (the JVM's threads included for the
bare consumer) and of the broker's JVM over each drain (from /proc: broker and consumers share
this machine's two cores, so CPU per message is the figure that holds elsewhere), and msgcap's
peak RSS.
"""

from __future__ import annotations

import argparse
import base64
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_amqp import capture, process_cpu
from bench.bench_capture import body, free_port
from tests import jms_clients


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def fill(url: str, queue: str, bodies: Path, n: int, *, openwire: bool = False) -> float:
    """Queue the n messages of ``bodies`` with the Java JMS producer (``openwire``: ActiveMQ's
    OpenWire client); seconds."""
    started = time.monotonic()
    sent = jms_clients.run("JmsProduce", url, f"/queue/{queue}", "--bodies", str(bodies),
                           "--batch", "500", openwire=openwire)
    if f"sent {n} " not in sent:
        raise SystemExit(f"JmsProduce: {sent[-500:]}")
    return time.monotonic() - started


def bare_consumer(url: str, queue: str, n: int, group: int, *, openwire: bool = False
                  ) -> tuple[float, float]:
    """(messages/s, CPU seconds of its JVM) of the bare JMS consumer: Qpid JMS, or with
    ``openwire`` ActiveMQ's OpenWire client."""
    cpu = children_cpu()
    out = jms_clients.run("JmsBench", url, f"/queue/{queue}", "--ack", str(group),
                          "--count", str(n), "--timeout", "10000", openwire=openwire)
    cpu = children_cpu() - cpu
    words = out.split()
    got = int(words[words.index("received") + 1])
    if got != n:
        raise SystemExit(f"bare consumer got {got} messages, expected {n}: {out}")
    return float(words[words.index("messages/s") - 1]), cpu


def measure(url: str, n: int, prefetch: int, work: Path, broker_pid: int) -> dict:
    bodies = work / "bodies.txt"
    with bodies.open("w") as fh:
        for i in range(1, n + 1):
            fh.write(f"text {base64.b64encode(body(i).encode()).decode()}\n")
    q1, q2 = f"bench-bare-{uuid.uuid4().hex}", f"bench-cap-{uuid.uuid4().hex}"
    fill_s = fill(url, q1, bodies, n)
    print(f"  queued {n} persistent messages with a Java JMS producer in {fill_s:.1f} s "
          f"({n / fill_s:,.0f}/s)")
    group = max(1, prefetch // 2)
    broker = process_cpu(broker_pid)
    bare, bare_cpu = bare_consumer(url, q1, n, group)
    broker_bare = process_cpu(broker_pid) - broker
    print(f"  bare Qpid JMS consumer (client acknowledge per {group}): {bare:,.0f} messages/s, "
          f"{bare_cpu / n * 1e6:.1f} µs CPU/message (JVM); broker {broker_bare / n * 1e6:.1f} "
          f"µs/message")
    fill(url, q2, bodies, n)
    broker = process_cpu(broker_pid)
    rate, cpu, rss = capture(url, f"/queue/{q2}", n, prefetch, work / "home")
    broker_cap = process_cpu(broker_pid) - broker
    print(f"  msgcap run (delimited example, durable trail, trail.sync=batch, jms.prefetch="
          f"{prefetch}): {rate:,.0f} messages/s, {cpu / n * 1e6:.1f} µs CPU/message, peak RSS "
          f"{rss:.0f} MB; broker {broker_cap / n * 1e6:.1f} µs/message")
    print(f"  capture / bare = {rate / bare:.2f}x")
    return {"bare": bare, "bare_cpu": bare_cpu / n, "broker_bare": broker_bare / n,
            "rate": rate, "cpu": cpu / n, "broker_cap": broker_cap / n, "rss": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--prefetch", type=int, default=1000,
                    help="msgcap's jms.prefetch; the bare consumer acknowledges per half of it")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="msgcap-bench-artemis-"))
    script = REPO / "scripts" / "artemis.sh"
    amqp_port = free_port()
    env = dict(os.environ, MSGCAP_BROKER_DIR=str(work / "artemis"),
               MSGCAP_AMQP_PORT=str(amqp_port), MSGCAP_CORE_PORT=str(free_port()),
               MSGCAP_BROKER_HEAP="1g", MSGCAP_BROKER_OWNER=str(os.getpid()))
    url = f"amqp://127.0.0.1:{amqp_port}"
    try:
        subprocess.run(["bash", str(script), "start"], env=env, check=True)
        pid = int((work / "artemis" / "artemis.pid").read_text().strip())
        print(f"artemis AMQP 1.0 ({url}):")
        f = measure(url, args.messages, args.prefetch, work, pid)
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(f"artemis-amqp: bare Qpid JMS {f['bare']:,.0f}/s, msgcap run {f['rate']:,.0f}/s, "
          f"{f['rate'] / f['bare']:.2f}x, msgcap {f['cpu'] * 1e6:.1f} µs CPU/message (bare JVM "
          f"{f['bare_cpu'] * 1e6:.1f}), broker {f['broker_cap'] * 1e6:.1f} µs/message (bare "
          f"{f['broker_bare'] * 1e6:.1f}), peak RSS {f['rss']:.0f} MB")


if __name__ == "__main__":
    main()
