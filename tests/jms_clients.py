"""The JMS test clients of tests/java (``scripts/jms-clients.sh``) from Python: a producer and a
consumer on the JMS API, through the provider of the URL (Qpid JMS for ``amqp://``, the Artemis
core client for ``tcp://``, or with ``openwire`` ActiveMQ 5's own OpenWire client from Debian's
activemq package for a ``tcp://`` URL of ActiveMQ), so that the live tests see msgcap's captures beside what a JMS
application sends and receives.

Destinations are written as msgcap's ``jms.destination`` (``/queue/NAME``, ``/topic/NAME``).
"""

from __future__ import annotations

import base64
import functools
import json
import subprocess
import tempfile
from collections.abc import Iterable
from typing import Any

from tests import jms_providers
from tests.conftest import REPO

Body = bytes | str
TIMEOUT = 600  # one program run, at most (50,000 messages included)
OPENWIRE_FACTORY = "org.apache.activemq.ActiveMQConnectionFactory"


@functools.cache
def classpath() -> str:
    """The compiled clients and the Artemis distribution's lib/ (compiled once per machine)."""
    done = subprocess.run(["bash", str(REPO / "scripts" / "jms-clients.sh"), "classpath"],
                          cwd=REPO, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"jms-clients.sh classpath failed: {done.stdout}{done.stderr}")
    return done.stdout.strip()


def run(program: str, url: str, destination: str, *args: str, openwire: bool = False) -> str:
    """Run ``program`` (JmsProduce, JmsConsume, JmsBench) on ``destination``: its stdout, or an
    AssertionError with what it said. ``openwire``: through ActiveMQ 5's OpenWire client."""
    path = classpath()
    if openwire:  # Debian's ActiveMQ 5 client, before the Artemis distribution's lib/ (which
        # has a newer activemq-client of its own)
        path = f"{jms_providers.classpath('activemq')}:{path}"
        args = ("--factory", OPENWIRE_FACTORY, *args)
    done = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", path, program,
                           "--url", url, "--destination", destination, *args],
                          capture_output=True, text=True, check=False, timeout=TIMEOUT)
    if done.returncode != 0:
        raise AssertionError(f"{program} {' '.join(args)} failed ({done.returncode}):\n"
                             f"{done.stdout[-2000:]}{done.stderr[-4000:]}")
    return done.stdout


def produce(url: str, destination: str, *args: str, openwire: bool = False) -> list[str]:
    """JmsProduce's options ``args`` (tests/java/JmsProduce.java); the JMSMessageIDs sent."""
    out = run("JmsProduce", url, destination, "--ids", *args, openwire=openwire).splitlines()
    assert out and out[-1].startswith("sent "), out[-5:]
    return out[:-1]


def send(url: str, destination: str, bodies: Iterable[Body], *args: str,
         batch: int = 500, openwire: bool = False) -> int:
    """Send ``bodies`` in order (bytes: a BytesMessage, text: a TextMessage), persistent, in
    transacted batches of ``batch``; how many were sent (and committed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".bodies") as fh:
        for b in bodies:
            kind, data = ("text", b.encode()) if isinstance(b, str) else ("bytes", b)
            fh.write(f"{kind} {base64.b64encode(data).decode()}\n")
        fh.flush()
        out = run("JmsProduce", url, destination, "--bodies", fh.name, "--batch", str(batch),
                  *args, openwire=openwire)
    return int(out.split()[-2])


def consume(url: str, destination: str, *args: str, browse: bool = False,
            openwire: bool = False) -> list[dict[str, Any]]:
    """What a JMS consumer sees of each message (JmsConsume's JSON lines), consumed, or only
    looked at with ``browse``; ``openwire``: ActiveMQ 5's OpenWire client on a ``tcp://`` URL."""
    out = run("JmsConsume", url, destination, *(["--browse"] if browse else []), *args,
              openwire=openwire)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def body(seen: dict[str, Any]) -> Body:
    """The body of a consumed message: text, or the bytes of a BytesMessage."""
    if "bytes" in seen:
        return base64.b64decode(seen["bytes"])
    return seen.get("text") or ""
