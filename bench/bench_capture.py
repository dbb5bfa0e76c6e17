"""End-to-end capture throughput into a durable trail, beside a bare consumer, on each broker.

    python bench/bench_capture.py [--messages N] [--prefetch P] [--brokers activemq,rabbitmq]
                                  [--url stomp://127.0.0.1:61613]

For each broker (a private one started by ``scripts/<broker>.sh`` on a free loopback port, unless
``--url`` names a running one), in the same run:

1. queues N persistent messages of the delimited example (SALES.CUSTOMER inserts in the example's
   before/after format) and drains them with a bare stomp.py consumer that acknowledges each
   message (``client-individual``, ``conn.ack`` per message, same prefetch): the baseline;
2. queues the same N messages on a fresh queue and runs ``msgcap run --max-idle`` on them with
   ``trail.sync=batch`` (fsync per group), the default ``jms.ack=client`` (one cumulative ACK
   per durable group) and ``jms.ack.batch`` (``--ack-batch``): the capture;
3. for scale, queues them once more and drains them with a stomp.py consumer that does nothing
   but acknowledge cumulatively every ``--ack-batch`` messages (``client``): about what the
   broker delivers to one stomp.py subscription on this machine, with no parsing and no trail.

The rates are measured from the subscription to the last message (consumers: its ACK; capture:
the last durable checkpoint). Prints messages/s, the ratio (target >= 1.5x with the 200k backlog
of issue 14, the default), the capture's share of the do-nothing consumer's rate and its peak
RSS (target < 100 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def body(i: int) -> str:
    return (f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,{i:010d},NULL,{i},NULL,"
            f"\"Customer {i}, Inc.\",NULL,City {i % 97},NULL,2024-03-01 10:15:30\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(url: str, listener=None, heartbeats=(0, 0)):
    import stomp

    from msgcap.sources.stomp import parse_urls

    ep = parse_urls([url])[0]
    conn = stomp.Connection12([(ep.host, ep.port)], auto_decode=False, auto_content_length=False,
                              heartbeats=heartbeats, vhost="/")
    if listener is not None:
        conn.set_listener("bench", listener)
    conn.connect(wait=True)
    return conn


def fill(url: str, dest: str, n: int, make_body: Callable[[int], str] = body) -> float:
    """Queue n persistent messages (``make_body(i)``, i from 1); returns seconds (the last one
    with a receipt)."""
    import threading

    done = threading.Event()

    class Receipt:
        def on_receipt(self, frame):
            done.set()

    conn = connect(url, Receipt())
    started = time.monotonic()
    for i in range(1, n + 1):
        headers = {"persistent": "true"}
        if i == n:
            headers["receipt"] = "last"
        conn.send(dest, make_body(i).encode(), headers=headers)
    done.wait(600)
    elapsed = time.monotonic() - started
    conn.disconnect()
    return elapsed


def bare_consumer(url: str, dest: str, n: int, prefetch: int, ack_every: int = 0) -> float:
    """client-individual, one ACK per message (``ack_every`` > 0: ``client``, one cumulative
    ACK per ``ack_every`` messages and the last), a queue between receiver thread and consumer
    (as msgcap does); returns messages/s from SUBSCRIBE to the last ACK."""
    frames: queue.SimpleQueue = queue.SimpleQueue()

    class Listener:
        def on_message(self, frame):
            frames.put(frame)

    conn = connect(url, Listener(), heartbeats=(10000, 10000))
    started = time.monotonic()
    conn.subscribe(dest, id="1", ack="client" if ack_every else "client-individual",
                   headers={"activemq.prefetchSize": str(prefetch),
                            "prefetch-count": str(prefetch)})
    for i in range(1, n + 1):
        frame = frames.get(timeout=120)
        if not ack_every or i % ack_every == 0 or i == n:
            conn.ack(frame.headers["ack"])
    elapsed = time.monotonic() - started
    conn.disconnect()
    return n / elapsed


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _wait_peak_rss_mb(proc: subprocess.Popen) -> float:
    """Wait for ``proc``; its own peak RSS in MB (VmHWM sampled every 50 ms). ``ru_maxrss`` would
    include this benchmark's own RSS, which Linux keeps across the child's exec."""
    peak_kb, status = 0, Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    return peak_kb / 1024


def capture(url: str, dest: str, n: int, prefetch: int, ack_batch: int,
            home: Path) -> tuple[float, float]:
    """msgcap run on the delimited example; returns (messages/s, peak RSS MB)."""
    shutil.copytree(REPO / "examples" / "delimited", home)
    prop = home / "dirprm" / "jmsvam.properties"
    text = prop.read_text().replace("jms.url=dir:dirspool", f"jms.url={url}")
    text += (f"\njms.destination={dest}\njms.prefetch={prefetch}\njms.ack.batch={ack_batch}\n"
             "trail.sync=batch\n")
    text += "error.policy=abend\n"
    prop.write_text(text)
    return run_capture(prop, home, n, "SALES")


def run_capture(prop: Path, home: Path, n: int, extract: str) -> tuple[float, float]:
    """``msgcap run --max-idle 2`` of ``prop`` in ``home`` (``trail.extract`` ``extract``) until
    the queue is drained, n messages expected; returns (messages/s from the connection to the
    last durable checkpoint, peak RSS MB)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop", str(prop),
                             "--max-idle", "2"], cwd=home, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_mb = _wait_peak_rss_mb(proc)
    if proc.returncode != 0:
        raise SystemExit(f"msgcap run failed: {proc.stderr.read()}")
    cp = json.loads((home / "dirchk" / f"{extract}.cpj").read_text())
    if cp["messages"] != n:
        raise SystemExit(f"capture saw {cp['messages']} messages, expected {n}")
    log = (home / "dirrpt" / f"{extract}.log").read_text().splitlines()
    connected = next(ln for ln in log if "connected to" in ln)
    start = _utc(connected[:23].replace(" ", "T") + "Z")
    return n / (_utc(cp["time"]) - start), peak_mb


def measure(url: str, n: int, prefetch: int, ack_batch: int,
            home: Path) -> tuple[float, float, float, float]:
    """(bare messages/s, capture messages/s, capture peak RSS MB, do-nothing consumer
    messages/s) on the broker at ``url``."""
    q1, q2 = f"/queue/bench-bare-{uuid.uuid4().hex}", f"/queue/bench-cap-{uuid.uuid4().hex}"
    q3 = f"/queue/bench-idle-{uuid.uuid4().hex}"
    fill_s = fill(url, q1, n)
    print(f"  queued {n} persistent messages in {fill_s:.1f} s ({n / fill_s:,.0f}/s)")
    bare = bare_consumer(url, q1, n, prefetch)
    print(f"  bare stomp.py consumer (client-individual, ACK per message): {bare:,.0f} messages/s")
    fill(url, q2, n)
    rate, rss = capture(url, q2, n, prefetch, ack_batch, home)
    print(f"  msgcap run (delimited example, durable trail, jms.ack=client, jms.ack.batch="
          f"{ack_batch}): {rate:,.0f} messages/s, peak RSS {rss:.0f} MB")
    print(f"  capture / bare = {rate / bare:.2f}x (target >= 1.5x), peak RSS "
          f"{'<' if rss < 100 else '>='} 100 MB")
    fill(url, q3, n)
    idle = bare_consumer(url, q3, n, prefetch, ack_every=ack_batch)
    print(f"  do-nothing stomp.py consumer (client, ACK per {ack_batch}): {idle:,.0f} messages/s;"
          f" the capture reaches {rate / idle:.0%} of it")
    return bare, rate, rss, idle


@contextmanager
def broker(kind: str, work: Path, url: str | None = None) -> Iterator[str]:
    """The STOMP URL of a private ``kind`` broker (``scripts/<kind>.sh``, a free loopback port,
    its files under ``work``) for the block, stopped afterwards; ``url``: a running one."""
    if url is not None:
        yield url
        return
    script = REPO / "scripts" / f"{kind}.sh"
    port = free_port()
    env = dict(os.environ, MSGCAP_BROKER_DIR=str(work / kind), MSGCAP_STOMP_PORT=str(port),
               MSGCAP_BROKER_OWNER=str(os.getpid()))
    subprocess.run(["bash", str(script), "start"], env=env, check=True)
    try:
        yield f"stomp://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--prefetch", type=int, default=1000)
    ap.add_argument("--ack-batch", type=int, default=500,
                    help="jms.ack.batch of the capture (default 500: scripts/activemq.sh gives "
                         "ActiveMQ a maxPageSize of 1000)")
    ap.add_argument("--brokers", default="activemq,rabbitmq",
                    help="comma-separated: activemq, rabbitmq (default both)")
    ap.add_argument("--url", help="an already running broker (with one of --brokers)")
    args = ap.parse_args()
    kinds = [k.strip() for k in args.brokers.split(",") if k.strip()]
    work = Path(tempfile.mkdtemp(prefix="msgcap-bench-"))
    figures = []
    try:
        for kind in kinds:
            with broker(kind, work, args.url) as url:
                print(f"{kind} ({url}):")
                figures.append((kind, *measure(url, args.messages, args.prefetch,
                                               args.ack_batch, work / f"home-{kind}")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for kind, bare, rate, rss, idle in figures:
        print(f"{kind}: bare {bare:,.0f}/s, msgcap run {rate:,.0f}/s, {rate / bare:.2f}x, "
              f"peak RSS {rss:.0f} MB; do-nothing consumer {idle:,.0f}/s ({rate / idle:.0%})")


if __name__ == "__main__":
    main()
