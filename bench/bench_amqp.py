"""Capture throughput over AMQP 1.0 into a durable trail, beside a bare proton consumer.

    python bench/bench_amqp.py [--messages N] [--prefetch P]

On a private RabbitMQ node with its AMQP 1.0 listener (``scripts/rabbitmq.sh`` with
``MSGCAP_AMQP_PORT``, on free loopback ports), in the same run:

1. queues N persistent messages of the delimited example (SALES.CUSTOMER inserts in the example's
   before/after format) with a proton sender keeping a window of unsettled transfers, and drains
   them with a bare proton consumer that accepts each message and writes nothing (link credit
   ``--prefetch``): the baseline;
2. queues the same N messages on a fresh queue and runs ``msgcap run --max-idle`` on them with
   the example's properties and the defaults (``trail.sync=batch``: fsync per group, each message
   accepted once its group is durable) and ``jms.prefetch`` = ``--prefetch``: the capture.

The rates are measured from the connection to the last message (consumer: its acceptance;
capture: the last durable checkpoint). Prints messages/s of each, the ratio (target >= 0.9x),
the CPU per message of each (user+sys of the consumer's thread / the msgcap process; the broker
shares this machine, so this is the figure that holds elsewhere), the broker's CPU per message
in each run (beam.smp's, from /proc, over the drain) and msgcap's peak RSS (target < 100 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_capture import body, free_port
from tests.amqp_client import DurableQueue, send
from tests.live.conftest import wait_peak_rss_mb


def fill(url: str, address: str, n: int) -> float:
    """Queue n persistent messages (text, as amqp-value strings); returns seconds."""
    started = time.monotonic()
    send(url, address, (body(i) for i in range(1, n + 1)), window=1000)
    return time.monotonic() - started


def bare_consumer(url: str, address: str, n: int, prefetch: int) -> tuple[float, float]:
    """Accepts each of n messages and does nothing else; (messages/s from the connection to
    the last acceptance, CPU seconds of this thread)."""
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    class Consumer(MessagingHandler):
        def __init__(self) -> None:
            super().__init__(prefetch=prefetch, auto_accept=False)
            self.count = 0

        def on_start(self, event) -> None:
            self.started = time.monotonic()
            conn = event.container.connect(url, allowed_mechs="ANONYMOUS", reconnect=False)
            event.container.create_receiver(conn, address, options=DurableQueue())

        def on_message(self, event) -> None:
            self.accept(event.delivery)
            self.count += 1
            if self.count == n:
                self.elapsed = time.monotonic() - self.started
                event.connection.close()

    consumer = Consumer()
    cpu = time.thread_time()
    Container(consumer).run()
    cpu = time.thread_time() - cpu
    if consumer.count != n:
        raise SystemExit(f"bare consumer got {consumer.count} messages, expected {n}")
    return n / consumer.elapsed, cpu


def process_cpu(pid: int) -> float:
    """CPU seconds (user+sys) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text()
    utime, stime = fields.rsplit(")", 1)[1].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


def beam_cpu(node_pid_file: Path) -> float:
    """CPU seconds the broker's Erlang VM (beam.smp) has used so far."""
    return process_cpu(int(node_pid_file.read_text().strip()))


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def capture(url: str, address: str, n: int, prefetch: int,
            home: Path) -> tuple[float, float, float]:
    """msgcap run on the delimited example; (messages/s, CPU seconds, peak RSS MB)."""
    shutil.copytree(REPO / "examples" / "delimited", home)
    prop = home / "dirprm" / "jmsvam.properties"
    text = prop.read_text().replace("jms.url=dir:dirspool", f"jms.url={url}")
    text = text.replace("error.policy=discard", "error.policy=abend")
    text += f"\njms.destination={address}\njms.prefetch={prefetch}\n"
    prop.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop", str(prop),
                             "--max-idle", "1"], cwd=home, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_mb = wait_peak_rss_mb(proc)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"msgcap run failed: {proc.stderr.read()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cp = json.loads((home / "dirchk" / "SALES.cpj").read_text())
    if cp["messages"] != n:
        raise SystemExit(f"capture saw {cp['messages']} messages, expected {n}")
    log = (home / "dirrpt" / "SALES.log").read_text().splitlines()
    connected = next(ln for ln in log if "connected to" in ln)
    start = _utc(connected[:23].replace(" ", "T") + "Z")
    return n / (_utc(cp["time"]) - start), cpu, peak_mb


def measure(url: str, n: int, prefetch: int, home: Path, node_pid_file: Path) -> dict:
    """The figures of one run on the broker at ``url``."""
    q1, q2 = f"/queue/bench-bare-{uuid.uuid4().hex}", f"/queue/bench-cap-{uuid.uuid4().hex}"
    fill_s = fill(url, q1, n)
    print(f"  queued {n} persistent messages in {fill_s:.1f} s ({n / fill_s:,.0f}/s)")
    beam = beam_cpu(node_pid_file)
    bare, bare_cpu = bare_consumer(url, q1, n, prefetch)
    beam_bare = beam_cpu(node_pid_file) - beam
    print(f"  bare proton consumer (accepts each, credit {prefetch}): {bare:,.0f} messages/s, "
          f"{bare_cpu / n * 1e6:.1f} µs CPU/message; broker {beam_bare / n * 1e6:.1f} µs/message")
    fill(url, q2, n)
    beam = beam_cpu(node_pid_file)
    rate, cpu, rss = capture(url, q2, n, prefetch, home)
    beam_cap = beam_cpu(node_pid_file) - beam
    print(f"  msgcap run (delimited example, durable trail, trail.sync=batch, jms.prefetch="
          f"{prefetch}): {rate:,.0f} messages/s, {cpu / n * 1e6:.1f} µs CPU/message, "
          f"peak RSS {rss:.0f} MB; broker {beam_cap / n * 1e6:.1f} µs/message")
    print(f"  capture / bare = {rate / bare:.2f}x (target >= 0.9x), peak RSS "
          f"{'<' if rss < 100 else '>='} 100 MB")
    return {"bare": bare, "bare_cpu": bare_cpu / n, "beam_bare": beam_bare / n, "rate": rate,
            "cpu": cpu / n, "beam_cap": beam_cap / n, "rss": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--prefetch", type=int, default=1000,
                    help="link credit of both consumers (msgcap's jms.prefetch; default 1000)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="msgcap-bench-amqp-"))
    script = REPO / "scripts" / "rabbitmq.sh"
    amqp_port = free_port()
    node_env = dict(os.environ, MSGCAP_BROKER_DIR=str(work / "rabbitmq"),
                    MSGCAP_STOMP_PORT=str(free_port()), MSGCAP_AMQP_PORT=str(amqp_port),
                    MSGCAP_BROKER_OWNER=str(os.getpid()))
    url = f"amqp://127.0.0.1:{amqp_port}"
    try:
        subprocess.run(["bash", str(script), "start"], env=node_env, check=True)
        print(f"rabbitmq AMQP 1.0 ({url}):")
        f = measure(url, args.messages, args.prefetch, work / "home",
                    work / "rabbitmq" / "node.pid")
    finally:
        subprocess.run(["bash", str(script), "stop"], env=node_env, check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(f"rabbitmq-amqp: bare {f['bare']:,.0f}/s, msgcap run {f['rate']:,.0f}/s, "
          f"{f['rate'] / f['bare']:.2f}x, msgcap {f['cpu'] * 1e6:.1f} µs CPU/message "
          f"(bare {f['bare_cpu'] * 1e6:.1f}), broker {f['beam_cap'] * 1e6:.1f} µs/message "
          f"(bare {f['beam_bare'] * 1e6:.1f}), peak RSS {f['rss']:.0f} MB")


if __name__ == "__main__":
    main()
