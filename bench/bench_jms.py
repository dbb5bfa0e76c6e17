"""Capture throughput through the JMS source (ActiveMQ's own OpenWire client in a JVM inside
msgcap), beside a bare Java JMS consumer and msgcap's own STOMP capture of the same broker.

    python bench/bench_jms.py [--messages N] [--ack-batch G] [--xmx SIZE] [--jvm-options OPTS]
                              [--bytes]

On a private ActiveMQ broker (``scripts/activemq.sh`` with STOMP and ``MSGCAP_OPENWIRE_PORT``
on free loopback ports, its own broker directory), in the same run, each drain on a queue of its
own filled with the same N persistent messages of the delimited example (SALES.CUSTOMER inserts;
TextMessages, or BytesMessages with ``--bytes``) by a Java JMS producer (tests/java JmsProduce
over OpenWire, transacted batches of 500):

1. a bare Java JMS consumer (tests/java JmsBench on ActiveMQ's OpenWire client from
   ``scripts/jms-providers.sh classpath activemq``: ``CLIENT_ACKNOWLEDGE``, one acknowledge per
   group of ``--ack-batch``, nothing done with a message but counting it): the baseline;
2. ``msgcap run --max-idle`` through the JMS source with a GoldenGate-style jmsvam.properties
   (``jvm.bootoptions`` with ``-Djava.class.path=`` the same jars, ``-Xmx`` ``--xmx`` and
   ``--jvm-options``, e.g. ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC``,
   ``java.naming.factory.initial``/``java.naming.provider.url``, ``jms.connectionFactory``,
   ``jms.destination``, no ``jms.url``), ``jms.ack.batch`` = ``--ack-batch`` (the source's
   default is 100), the default ``trail.sync`` (a durable trail);
3. msgcap's own STOMP client on the same broker (``jms.url=stomp://``, the same
   ``jms.ack.batch`` and trail), for comparison.

Rates run from the first message (bare consumer) or msgcap's "connected to" (the JVM's start
comes before it) to the last acknowledgement or the last durable checkpoint. Each capture is
checked: its checkpoint and the records in its trail count N. Prints messages/s of each, the
ratio of the JMS capture to the bare consumer (target >= 0.5x), the CPU per message of each
process (the JVM's threads included; the whole process from its start) and of the broker's JVM
over each drain (from /proc: the broker and the consumers share this machine's two cores, so
CPU per message is the figure that holds elsewhere), and the peak RSS of the msgcap processes
(VmHWM, JVM included) with the ``-Xmx`` given.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_amqp import process_cpu
from bench.bench_artemis import bare_consumer, children_cpu, fill
from bench.bench_capture import body, free_port
from msgcap.trail.reader import TrailReader
from tests import jms_providers
from tests.live.conftest import wait_peak_rss_mb

ACTIVEMQ_FACTORY = jms_providers.ACTIVEMQ_FACTORY


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def capture(home: Path, source: str, n: int) -> tuple[float, float, float]:
    """``msgcap run --max-idle`` of the delimited example in ``home`` with the lines ``source``
    instead of ``jms.url``; (messages/s, CPU seconds, peak RSS MB), after checking that the
    checkpoint and the trail hold n messages."""
    shutil.copytree(REPO / "examples" / "delimited", home)
    prop = home / "dirprm" / "jmsvam.properties"
    text = prop.read_text().replace("jms.url=dir:dirspool\n", "")
    text = text.replace("error.policy=discard", "error.policy=abend")
    prop.write_text(text + "\n" + source)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cpu = children_cpu()
    proc = subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop", str(prop),
                             "--max-idle", "2"], cwd=home, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_mb = wait_peak_rss_mb(proc)
    cpu = children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"msgcap run failed: {proc.stderr.read()}")
    cp = json.loads((home / "dirchk" / "SALES.cpj").read_text())
    if cp["messages"] != n:
        raise SystemExit(f"capture saw {cp['messages']} messages, expected {n}")
    files = sorted(str(p) for p in (home / "dirdat").glob("sa[0-9]*"))
    records = sum(1 for _ in TrailReader(files, follow=False))
    if records != n:
        raise SystemExit(f"the trail holds {records} records, expected {n}")
    log = (home / "dirrpt" / "SALES.log").read_text().splitlines()
    connected = next(ln for ln in log if "connected to" in ln)
    start = _utc(connected[:23].replace(" ", "T") + "Z")
    return n / (_utc(cp["time"]) - start), cpu, peak_mb


def jms_source(openwire_url: str, queue: str, group: int, jvm_options: str) -> str:
    """The JNDI lines of a GoldenGate-style jmsvam.properties for ActiveMQ's own client."""
    jars = jms_providers.classpath("activemq")
    return (f"jvm.bootoptions=-Djava.class.path={jars} {jvm_options}\n"
            f"java.naming.factory.initial={ACTIVEMQ_FACTORY}\n"
            f"java.naming.provider.url={openwire_url}\n"
            "jms.connectionFactory=ConnectionFactory\n"
            f"jms.destination=dynamicQueues/{queue}\n"
            f"jms.ack.batch={group}\n")


def measure(stomp_url: str, openwire_url: str, args: argparse.Namespace, work: Path,
            broker_pid: int) -> dict[str, float]:
    n, group = args.messages, args.ack_batch
    bodies = work / "bodies.txt"
    kind = "bytes" if args.bytes else "text"
    with bodies.open("w") as fh:
        for i in range(1, n + 1):
            fh.write(f"{kind} {base64.b64encode(body(i).encode()).decode()}\n")
    f: dict[str, float] = {}

    queue = f"bench-bare-{uuid.uuid4().hex}"
    fill_s = fill(openwire_url, queue, bodies, n, openwire=True)
    print(f"  queued {n} persistent {kind} messages with a Java JMS producer (OpenWire) in "
          f"{fill_s:.1f} s ({n / fill_s:,.0f}/s)")
    broker = process_cpu(broker_pid)
    f["bare"], cpu = bare_consumer(openwire_url, queue, n, group, openwire=True)
    f["bare_cpu"], f["bare_broker"] = cpu / n, (process_cpu(broker_pid) - broker) / n
    print(f"  bare Java JMS consumer (OpenWire, client acknowledge per {group}): "
          f"{f['bare']:,.0f} messages/s, {f['bare_cpu'] * 1e6:.1f} µs CPU/message (its JVM); "
          f"broker {f['bare_broker'] * 1e6:.1f} µs/message")

    jvm = f"-Xmx{args.xmx} {args.jvm_options}".strip()
    queue = f"bench-jms-{uuid.uuid4().hex}"
    fill(openwire_url, queue, bodies, n, openwire=True)
    broker = process_cpu(broker_pid)
    f["jms"], cpu, f["jms_rss"] = capture(work / "home-jms",
                                          jms_source(openwire_url, queue, group, jvm), n)
    f["jms_cpu"], f["jms_broker"] = cpu / n, (process_cpu(broker_pid) - broker) / n
    print(f"  msgcap run, JMS source (ActiveMQ's OpenWire client in its JVM, {jvm}, "
          f"jms.ack.batch={group}, durable trail): {f['jms']:,.0f} messages/s, "
          f"{f['jms_cpu'] * 1e6:.1f} µs CPU/message (Python and JVM), peak RSS "
          f"{f['jms_rss']:.0f} MB; broker {f['jms_broker'] * 1e6:.1f} µs/message")
    print(f"  JMS capture / bare = {f['jms'] / f['bare']:.2f}x (target >= 0.5x)")

    queue = f"bench-stomp-{uuid.uuid4().hex}"
    fill(openwire_url, queue, bodies, n, openwire=True)
    broker = process_cpu(broker_pid)
    f["stomp"], cpu, f["stomp_rss"] = capture(
        work / "home-stomp",
        f"jms.url={stomp_url}\njms.destination=/queue/{queue}\njms.ack.batch={group}\n", n)
    f["stomp_cpu"], f["stomp_broker"] = cpu / n, (process_cpu(broker_pid) - broker) / n
    print(f"  msgcap run, STOMP (msgcap's own client, jms.ack.batch={group}, durable trail): "
          f"{f['stomp']:,.0f} messages/s, {f['stomp_cpu'] * 1e6:.1f} µs CPU/message, peak RSS "
          f"{f['stomp_rss']:.0f} MB; broker {f['stomp_broker'] * 1e6:.1f} µs/message")
    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--ack-batch", type=int, default=100,
                    help="the bare consumer's acknowledge group and msgcap's jms.ack.batch "
                         "(default 100, the JMS source's default)")
    ap.add_argument("--xmx", default="256m", help="-Xmx of msgcap's JVM (default 256m)")
    ap.add_argument("--jvm-options", default="",
                    help="more options of msgcap's JVM in jvm.bootoptions (default none)")
    ap.add_argument("--bytes", action="store_true", help="BytesMessages (default TextMessages)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="msgcap-bench-jms-"))
    script = REPO / "scripts" / "activemq.sh"
    stomp_port, openwire_port = free_port(), free_port()
    env = dict(os.environ, MSGCAP_BROKER_DIR=str(work / "activemq"),
               MSGCAP_STOMP_PORT=str(stomp_port), MSGCAP_OPENWIRE_PORT=str(openwire_port),
               MSGCAP_BROKER_HEAP="1g", MSGCAP_BROKER_OWNER=str(os.getpid()))
    stomp_url, openwire_url = f"stomp://127.0.0.1:{stomp_port}", f"tcp://127.0.0.1:{openwire_port}"
    try:
        subprocess.run(["bash", str(script), "start"], env=env, check=True)
        pid = int((work / "activemq" / "activemq.pid").read_text().strip())
        print(f"activemq (OpenWire {openwire_url}, STOMP {stomp_url}):")
        f = measure(stomp_url, openwire_url, args, work, pid)
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)
    us = 1e6
    print(f"{'activemq':<34}{'messages/s':>11}{'ratio':>7}{'CPU µs/msg':>11}"
          f"{'broker µs/msg':>14}{'peak RSS MB':>12}")
    print(f"{'bare Java JMS (OpenWire)':<34}{f['bare']:>11,.0f}{1:>7.2f}"
          f"{f['bare_cpu'] * us:>11.1f}{f['bare_broker'] * us:>14.1f}{'':>12}")
    print(f"{'msgcap JMS source (-Xmx' + args.xmx + ')':<34}{f['jms']:>11,.0f}"
          f"{f['jms'] / f['bare']:>7.2f}{f['jms_cpu'] * us:>11.1f}{f['jms_broker'] * us:>14.1f}"
          f"{f['jms_rss']:>12.0f}")
    print(f"{'msgcap STOMP':<34}{f['stomp']:>11,.0f}{f['stomp'] / f['bare']:>7.2f}"
          f"{f['stomp_cpu'] * us:>11.1f}{f['stomp_broker'] * us:>14.1f}{f['stomp_rss']:>12.0f}")


if __name__ == "__main__":
    main()
