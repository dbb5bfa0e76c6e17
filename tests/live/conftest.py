"""Helpers for the live-capture tests: a working directory with the SALES definitions, delimited
change messages whose id column is the seqid, the msgcap command as a subprocess, a reader
that lists what the trail holds, messages put on a broker's queue as a producer does, and what the
queue holds, read by a plain client of the broker's protocol (stomp.py or proton), consumed or
left there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from msgcap.sources.base import Unreadable
from msgcap.sources.broker import BrokerSource
from parsers.model import Message
from tests.amqp_client import Body, Received
from tests.conftest import Broker
from tests.jms_providers import Provider

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "delimited"

BASE_PROPS = """\
gg.log.level=INFO
trail.path=dirdat/sa
trail.extract=SALES
parser.type=delim
delim.sourcedefs=dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.txid=*txid
delim.nullindicator=NULL
"""


def body(seq: int, txind: str = "W") -> str:
    """One SALES.CUSTOMER insert; ``seq`` is both the 10-digit id (seqid) and the customer id."""
    return (f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,{txind},{seq:010d},{seq},"
            f"Customer {seq},City {seq % 97},2024-03-01 10:15:30\n")


# ``body`` as a template of the Java JMS producer (JmsProduce --body): the same insert of message
# number n, for n < 97.
BODY = ("I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,{n:010d},{n},Customer {n},City {n},"
        "2024-03-01 10:15:30\n")


def wait_for(predicate, what: str, timeout: float = 120.0, procs=()) -> None:
    """Poll ``predicate`` every 50 ms until it holds: an AssertionError naming ``what`` after
    ``timeout`` seconds, or as soon as one of ``procs`` (captures it depends on) has ended."""
    deadline = time.monotonic() + timeout
    while not predicate():
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"process {proc.pid} ended ({proc.returncode}) while "
                                     f"waiting for {what}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def wait_peak_rss_mb(proc: subprocess.Popen) -> float:
    """Wait for ``proc`` to end; its own peak RSS in MB (VmHWM, sampled every 50 ms).

    Not ``ru_maxrss`` from wait4: Linux keeps the pre-exec high-water mark, so a child forked by
    a large pytest process would report pytest's own RSS.
    """
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


class Work:
    """A GoldenGate-style home directory (dirprm/, dirdef/, dirdat/, ...) for one test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "dirdef").mkdir(parents=True, exist_ok=True)
        (root / "dirprm").mkdir(exist_ok=True)
        shutil.copy(EXAMPLE / "dirdef" / "sales.def", root / "dirdef" / "sales.def")
        self.prop = root / "dirprm" / "jmsvam.properties"

    body = staticmethod(body)
    wait_peak_rss_mb = staticmethod(wait_peak_rss_mb)

    def properties(self, **items: object) -> Path:
        """Write the properties file: BASE_PROPS plus ``items`` (``jms_url`` → ``jms.url``)."""
        lines = [BASE_PROPS] + [f"{k.replace('_', '.')}={v}" for k, v in items.items()]
        self.prop.write_text("\n".join(lines) + "\n")
        return self.prop

    def spool(self, **items: object) -> Path:
        """The properties of a capture from ``dirspool`` (plus ``items``); the directory."""
        (self.root / "dirspool").mkdir(exist_ok=True)
        self.properties(jms_url="dir:dirspool", **items)
        return self.root / "dirspool"

    def dump(self, name: str, bodies: Iterable[str]) -> Path:
        import json

        path = self.root / name
        with open(path, "w") as fh:
            fh.writelines(json.dumps({"id": f"m{i}", "headers": {}, "body": b}) + "\n"
                          for i, b in enumerate(bodies))
        return path

    def env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get(
            "PYTHONPATH", ""))

    def msgcap(self, *args: str, timeout: float = 300, check: bool = False
               ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=self.root,
                              env=self.env(), capture_output=True, text=True, timeout=timeout,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"msgcap {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def start(self, *args: str) -> subprocess.Popen[str]:
        """``msgcap`` in the background (stdout/stderr to files in the work dir)."""
        out = open(self.root / "run.out", "a")  # noqa: SIM115 - owned by the process
        return subprocess.Popen([sys.executable, "-m", "msgcap.cli", *args], cwd=self.root,
                                env=self.env(), stdout=out, stderr=subprocess.STDOUT, text=True)

    def seqids(self) -> list[str]:
        """The VAMSEQID of every record, in trail order."""
        return [seqid for seqid, _, _ in self.trail()]

    def trail(self) -> list[tuple[str, int, str]]:
        """(VAMSEQID, TransInd, TRANID) of every record, in trail order."""
        sys.path.insert(0, str(REPO))
        from msgcap.trail.reader import TrailFile, sequence_files

        out = []
        for _, path in sequence_files(str(self.root / "dirdat" / "sa"), 9):
            with TrailFile(path) as tf:
                out.extend((r.seqid, r.transind, r.txid) for r in tf.records())
        return out


def send(work: Work, broker: Broker, queue: str, bodies: Iterable[Body],
         prop: Path | None = None) -> int:
    """Put ``bodies`` (bytes: a BytesMessage, text: a TextMessage) on ``queue``; how many the
    broker confirmed. On Artemis a JMS producer (Qpid JMS, tests/java), over AMQP elsewhere a
    plain proton sender, so that msgcap's source is checked against another producer; over STOMP
    ``msgcap send --prop prop`` (``work.prop`` by default), which must name the same broker and
    queue."""
    if broker.kind == "artemis":
        from tests import jms_clients

        return jms_clients.send(broker.url, queue, bodies)
    if broker.protocol == "amqp":
        from tests import amqp_client

        return amqp_client.send(broker.url, queue, bodies)
    import base64
    import json

    dump = work.root / f"send-{time.monotonic_ns()}.jsonl"
    with open(dump, "w") as fh:
        for n, b in enumerate(bodies):
            entry = {"body": b} if isinstance(b, str) else {
                "body_b64": base64.b64encode(b).decode()}
            fh.write(json.dumps({"id": f"m{n}", "headers": {}, **entry}) + "\n")
    done = work.msgcap("send", "--prop", str(prop or work.prop), str(dump), check=True)
    found = re.search(r"sent (\d+) messages", done.stdout)
    assert found, done.stdout
    return int(found[1])


def drain(broker: Broker, destination: str, quiet: float = 2.0) -> list[Received]:
    """Every message on ``destination``, consumed: (headers, body) in order, until none came
    for ``quiet`` seconds. STOMP bodies are bytes; AMQP's are as sent (data: bytes, text: str)."""
    return _receive(broker, destination, quiet, consume=True)


def peek(broker: Broker, destination: str, quiet: float = 2.0) -> list[Received]:
    """What :func:`drain` gives, but taken without acknowledgement: it stays on the queue."""
    return _receive(broker, destination, quiet, consume=False)


def text(body: Body) -> str:
    return body if isinstance(body, str) else body.decode()


def taken(src: BrokerSource, n: int, timeout: float = 20.0) -> list[Message | Unreadable]:
    """The first ``n`` messages msgcap's source ``src`` receives (an ``Unreadable`` in its
    message's place), or fewer when ``timeout`` s pass first."""
    got: list[Message | Unreadable] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        try:
            got.extend(src.receive_many(0.2, limit=n - len(got)))
        except Unreadable as exc:
            got.append(exc)
    return got


def _receive(broker: Broker, destination: str, quiet: float, consume: bool) -> list[Received]:
    if broker.kind == "artemis":  # a JMS consumer, or a queue browser
        from tests import jms_clients

        # names that are no Java identifiers (msgcap-error) are hidden from getPropertyNames
        # unless the consumer turns Qpid JMS's name validation off
        url = f"{broker.url}?jms.validatePropertyNames=false"
        seen = jms_clients.consume(url, destination, "--timeout", str(int(quiet * 1000)),
                                   browse=not consume)
        return [({k: v for k, v in m["properties"].items() if v is not None},
                 jms_clients.body(m)) for m in seen]
    if broker.protocol == "amqp":
        from tests import amqp_client

        return amqp_client.receive(broker.url, destination, quiet, consume)
    import stomp

    got: list[Received] = []
    came = threading.Event()

    class Listener:
        def on_message(self, frame):
            got.append((dict(frame.headers), frame.body))
            came.set()

    conn = stomp.Connection12([("127.0.0.1", broker.port)], auto_decode=False, vhost="/")
    conn.set_listener("receive", Listener())
    conn.connect(wait=True)
    conn.subscribe(destination, id="1", ack="auto" if consume else "client-individual")
    while came.wait(quiet):  # until no message came for ``quiet`` seconds
        came.clear()
    conn.disconnect()  # unacknowledged messages go back to the queue
    return got


@pytest.fixture
def work(tmp_path: Path) -> Work:
    return Work(tmp_path / "home")


@pytest.fixture
def artemis(artemis_amqp: Broker) -> Broker:
    """The session's Artemis, started again if a test stopped it and failed before restarting
    it."""
    if not artemis_amqp.running():
        artemis_amqp.start()
    return artemis_amqp


@pytest.fixture(params=("activemq", "artemis"))
def provider(request: pytest.FixtureRequest) -> Provider:
    """A JMS provider reached through its own client jars (tests.jms_providers): ActiveMQ over
    OpenWire, Artemis over its core protocol (javax.jms)."""
    broker = request.getfixturevalue("activemq" if request.param == "activemq"
                                     else "artemis_amqp")
    return Provider(request.param, broker)
