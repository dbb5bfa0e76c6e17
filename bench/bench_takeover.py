"""Takeover time of a hot standby (``msgcap run --standby``, issue 36): from ``kill -9`` of the
active capture to the standby's first durable commit.

    python bench/bench_takeover.py [--rounds 20] [--rate 1000]

On a private RabbitMQ node with its AMQP 1.0 listener (``scripts/rabbitmq.sh``, free loopback
ports), a producer thread sends the delimited example's SALES.CUSTOMER inserts at about
``--rate`` messages/s for the whole run. Two ``msgcap run --standby`` share one properties file:
the first captures, the second waits. Each round lets the active one capture for 0.5 to 1.5 s,
kills it with SIGKILL, waits for the standby's first durable commit (the checkpoint file
replaced) and starts the killed one again as the new standby, so the roles alternate. The parts
come from the standby's log lines (millisecond times): lock wait (kill → ``took over``), recovery
(→ ``msgcap run SALES: trail … from seqno``: checkpoint, trail recovery, definitions, pipeline),
connection (→ ``connected to``), first commit (→ the checkpoint's time: the first group received,
written and fsynced). Prints the median and the worst of each over ``--rounds`` takeovers, then
checks that the trail holds every message sent exactly once, in order.

One machine, local file system: the lock wait is the kernel dropping the dead process's locks
plus the standby's poll (0.1 s). On NFS add up to the lease period for a lost machine
(docs/operations.md, *Hot standby*). The broker, the producer and the captures share the
machine's cores.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_capture import body, free_port
from msgcap.lock import holder
from tests.amqp_client import send

PARTS = ("lock wait", "recovery", "connection", "first commit", "total")


def producer(url: str, address: str, rate: int, stop: threading.Event, sent: list[int]) -> None:
    """Sends ids 1, 2, ... in chunks of rate/10 every 0.1 s until ``stop``; ``sent[0]``: how many."""
    chunk = max(1, rate // 10)
    while not stop.is_set():
        began = time.monotonic()
        first = sent[0] + 1
        sent[0] += send(url, address, (body(i) for i in range(first, first + chunk)))
        stop.wait(max(0.0, 0.1 - (time.monotonic() - began)))


def _log_time(line: str) -> float:
    """Unix time of a log line (``2026-12-06 08:44:21.123Z ...``)."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def _checkpoint(home: Path) -> dict | None:
    try:
        return json.loads((home / "dirchk" / "SALES.cpj").read_text())
    except (FileNotFoundError, ValueError):
        return None


def _registered(home: Path, pid: int) -> bool:
    return any(p.endswith(f".{pid}") for p in glob.glob(str(home / "dirchk" / "SALES.standby.*")))


def _wait(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.005)


class Pair:
    """The two ``msgcap run --standby`` processes of one home directory."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = dict(os.environ, PYTHONPATH=str(REPO))
        self.procs: list[subprocess.Popen] = []

    def start(self) -> subprocess.Popen:
        out = open(self.home / f"run{len(self.procs)}.out", "w")  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop",
                                 "dirprm/jmsvam.properties", "--standby"], cwd=self.home,
                                env=self.env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def holder(self) -> int | None:
        return holder(str(self.home / "dirchk" / "SALES.lock"))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=90)


def takeover(pair: Pair, active: subprocess.Popen, standby: subprocess.Popen) -> dict[str, float]:
    """Kill ``active``; the parts of ``standby``'s takeover, in seconds."""
    log = pair.home / "dirrpt" / "SALES.log"
    offset = log.stat().st_size
    killed = time.time()
    os.kill(active.pid, signal.SIGKILL)
    active.wait()
    before = (pair.home / "dirchk" / "SALES.cpj").read_text()  # the dead one's last
    _wait(lambda: (pair.home / "dirchk" / "SALES.cpj").read_text() != before,
          "the standby's first durable commit")
    committed = datetime.fromisoformat(_checkpoint(pair.home)["time"]).timestamp()
    with open(log, encoding="utf-8") as fh:
        fh.seek(offset)
        lines = fh.read().splitlines()
    took = next(i for i, ln in enumerate(lines) if f"standby (pid {standby.pid}): took over" in ln)
    recovered = next(i for i in range(took, len(lines)) if "msgcap run SALES: trail" in lines[i])
    connected = next(i for i in range(recovered, len(lines)) if "connected to" in lines[i])
    t_took, t_rec, t_conn = (_log_time(lines[i]) for i in (took, recovered, connected))
    return {"lock wait": t_took - killed, "recovery": t_rec - t_took,
            "connection": t_conn - t_rec, "first commit": committed - t_conn,
            "total": committed - killed}


def trail_seqids(home: Path) -> list[str]:
    from msgcap.trail.reader import TrailFile, sequence_files

    out = []
    for _, path in sequence_files(str(home / "dirdat" / "sa"), 9):
        with TrailFile(path) as tf:
            out.extend(r.seqid for r in tf.records())
    return out


def measure(url: str, home: Path, rounds: int, rate: int) -> dict[str, list[float]]:
    address = f"/queue/bench-takeover-{uuid.uuid4().hex}"
    shutil.copytree(REPO / "examples" / "delimited", home)
    prop = home / "dirprm" / "jmsvam.properties"
    text = prop.read_text().replace("jms.url=dir:dirspool", f"jms.url={url}")
    prop.write_text(text.replace("error.policy=discard", "error.policy=abend")
                    + f"\njms.destination={address}\n")
    stop, sent = threading.Event(), [0]
    thread = threading.Thread(target=producer, args=(url, address, rate, stop, sent))
    pair = Pair(home)
    figures: dict[str, list[float]] = {part: [] for part in PARTS}
    try:
        active = pair.start()
        _wait(lambda: pair.holder() == active.pid, "the first capture")
        thread.start()
        _wait(lambda: (_checkpoint(home) or {}).get("last_seqid"), "the first commit")
        standby = pair.start()
        _wait(lambda: _registered(home, standby.pid), "the first standby")
        for n in range(1, rounds + 1):
            time.sleep(random.uniform(0.5, 1.5))
            parts = takeover(pair, active, standby)
            for part, seconds in parts.items():
                figures[part].append(seconds)
            print(f"  takeover {n:2d}: " + ", ".join(f"{p} {parts[p]:.3f} s" for p in PARTS),
                  flush=True)
            active, standby = standby, pair.start()
            _wait(lambda p=standby.pid: _registered(home, p), "the new standby")
        stop.set()
        thread.join()
        _wait(lambda: int((_checkpoint(home) or {}).get("last_seqid") or 0) == sent[0],
              "every message durable", timeout=300)
    finally:
        stop.set()
        pair.stop()
    seqids = trail_seqids(home)
    ok = seqids == [f"{i:010d}" for i in range(1, sent[0] + 1)]
    print(f"  {sent[0]} messages sent, {len(seqids)} records in the trail: "
          f"{'every message once, in order' if ok else 'LOSS, DUPLICATE OR DISORDER'}")
    if not ok:
        raise SystemExit("the trail does not hold every message once, in order")
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rate", type=int, default=1000, help="producer messages/s (default 1000)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="msgcap-bench-takeover-"))
    script = REPO / "scripts" / "rabbitmq.sh"
    amqp_port = free_port()
    node_env = dict(os.environ, MSGCAP_BROKER_DIR=str(work / "rabbitmq"),
                    MSGCAP_STOMP_PORT=str(free_port()), MSGCAP_AMQP_PORT=str(amqp_port),
                    MSGCAP_BROKER_OWNER=str(os.getpid()))
    url = f"amqp://127.0.0.1:{amqp_port}"
    try:
        subprocess.run(["bash", str(script), "start"], env=node_env, check=True)
        print(f"takeover: rabbitmq AMQP 1.0 ({url}), producer {args.rate} messages/s, "
              f"{args.rounds} kill -9 of the active capture, load average "
              f"{os.getloadavg()[0]:.2f}")
        figures = measure(url, work / "home", args.rounds, args.rate)
    finally:
        subprocess.run(["bash", str(script), "stop"], env=node_env, check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(f"takeover over {args.rounds} kills (seconds):")
    for part in PARTS:
        values = figures[part]
        print(f"  {part:<13} median {statistics.median(values):7.3f}  worst {max(values):7.3f}")
    print(f"  load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
