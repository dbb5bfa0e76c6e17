"""The JMS providers the tests reach through their own client jars (msgcap's JMS source,
``msgcap.sources.jms``): ActiveMQ over OpenWire (Debian's client) and Artemis over its core
protocol (Maven Central's client-all jars, javax.jms or jakarta.jms), each as the properties of a
GoldenGate-style ``jmsvam.properties`` without ``jms.url``.

``PROVIDERS`` parametrises a test over them (``provider`` fixture of tests/live/conftest.py); a
``Provider`` writes the JNDI properties for a queue or topic of the test's own and the URL its
Java test clients (``tests.jms_clients``) use for the same broker.
"""

from __future__ import annotations

import functools
import subprocess
import uuid
from dataclasses import dataclass

from tests.conftest import REPO, Broker

PROVIDERS = ("activemq", "artemis", "artemis-jakarta")
ACTIVEMQ_FACTORY = "org.apache.activemq.jndi.ActiveMQInitialContextFactory"
ARTEMIS_FACTORY = "org.apache.activemq.artemis.jndi.ActiveMQInitialContextFactory"


@functools.cache
def classpath(kind: str) -> str:
    """``scripts/jms-providers.sh classpath KIND``: the provider's client jars."""
    done = subprocess.run(["bash", str(REPO / "scripts" / "jms-providers.sh"), "classpath",
                           kind], cwd=REPO, capture_output=True, text=True, check=False,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"jms-providers.sh classpath {kind} failed: {done.stderr}")
    return done.stdout.strip()


@dataclass
class Provider:
    """One provider on its broker: ``kind`` one of ``PROVIDERS``."""

    kind: str
    broker: Broker

    @property
    def openwire(self) -> bool:
        return self.kind == "activemq"

    @property
    def url(self) -> str:
        """The broker URL of the Java test clients (``tests.jms_clients``, with ``openwire``)."""
        if self.openwire:
            return f"tcp://127.0.0.1:{self.broker.env['MSGCAP_OPENWIRE_PORT']}"
        return f"tcp://127.0.0.1:{self.broker.port}"

    def new_queue(self) -> str:
        """A queue no other test uses, as the test clients name it: ``/queue/test-<uuid>``."""
        if not self.broker.running():  # a test that stopped the broker and failed before
            self.broker.start()
        return f"/queue/test-{uuid.uuid4().hex}"

    def jndi_name(self, destination: str) -> str:
        """The JNDI name of ``/queue/NAME`` or ``/topic/NAME`` in ``properties``."""
        kind, _, name = destination.strip("/").partition("/")
        if self.openwire:
            return f"dynamic{kind.capitalize()}s/{name}"
        return f"{kind}-{name}"

    def properties(self, destination: str, *, error_destination: str | None = None,
                   options: str = "") -> dict[str, str]:
        """The JNDI properties of a capture of ``destination`` (and ``error.destination``):
        ``jvm.bootoptions`` (with ``options``), ``java.naming.*``, the provider's JNDI entries,
        ``jms.connectionFactory`` and ``jms.destination``; for ``Work.properties(**...)``."""
        out = {"jvm.bootoptions": f"-Djava.class.path={classpath(self.kind)} -Xmx256m {options}"
               .strip()}
        names = [d for d in (destination, error_destination) if d]
        if self.openwire:
            out["java.naming.factory.initial"] = ACTIVEMQ_FACTORY
            out["java.naming.provider.url"] = self.url
            out["jms.connectionFactory"] = "ConnectionFactory"
        else:
            out["java.naming.factory.initial"] = ARTEMIS_FACTORY
            out["connectionFactory.CF"] = self.url
            out["jms.connectionFactory"] = "CF"
            for name in names:
                kind, _, bare = name.strip("/").partition("/")
                out[f"{kind}.{self.jndi_name(name)}"] = bare
        out["jms.destination"] = self.jndi_name(destination)
        if error_destination:
            out["error.destination"] = self.jndi_name(error_destination)
        return out
