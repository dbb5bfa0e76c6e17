"""Project-wide fixtures: real brokers started once per test session, a fresh queue per test.

Tests that need a broker are marked ``@pytest.mark.broker`` and take the ``broker`` (and usually
``queue``) fixture: ActiveMQ, the reference broker, unless the test is parametrised over
``BROKERS`` (``@pytest.mark.parametrize("broker", BROKERS, indirect=True)``), which runs it on
RabbitMQ over STOMP and over AMQP 1.0 and on ActiveMQ Artemis over AMQP 1.0 too
(``STOMP_BROKERS``: the first two, for tests of STOMP itself). Each broker is started once,
lazily, by its script (``scripts/activemq.sh``, ``scripts/rabbitmq.sh``, ``scripts/artemis.sh``)
in a private directory on free loopback ports, so test runs on the same machine never share a
broker; it is stopped by its pid when the session ends (and by itself if the session is
killed). ``rabbitmq-amqp`` is the session's RabbitMQ node seen through its AMQP 1.0 listener,
not a second node. ActiveMQ also takes OpenWire on ``env["MSGCAP_OPENWIRE_PORT"]`` (its own JMS
client, the oracle of tests/live/test_thirdparty.py). ``artemis-amqp`` is the session's Artemis (its core port in ``port``, its
AMQP port in ``amqp_port``). ``MSGCAP_TEST_STOMP_PORT`` pins ActiveMQ's port.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STOMP_BROKERS = ("activemq", "rabbitmq")  # also the kinds of broker scripts
BROKERS = (*STOMP_BROKERS, "rabbitmq-amqp", "artemis-amqp")


@dataclass(slots=True)
class Broker:
    """A broker started by ``scripts/<kind>.sh``; tests may stop and restart it."""

    dir: Path
    port: int
    env: dict[str, str] = field(default_factory=dict)  # more script settings (TLS, owner)
    kind: str = "activemq"  # its script: 'activemq' | 'rabbitmq' | 'artemis'
    amqp_port: int | None = None  # the AMQP 1.0 listener, when the broker has one
    protocol: str = "stomp"  # what ``url`` speaks: 'stomp' | 'amqp'

    @property
    def url(self) -> str:
        if self.protocol == "amqp":
            return f"amqp://127.0.0.1:{self.amqp_port}"
        return f"stomp://127.0.0.1:{self.port}"

    def _script(self, action: str) -> str:
        port = "MSGCAP_CORE_PORT" if self.kind == "artemis" else "MSGCAP_STOMP_PORT"
        env = dict(os.environ, MSGCAP_BROKER_DIR=str(self.dir), **{port: str(self.port)},
                   **self.env)
        if self.amqp_port is not None:
            env["MSGCAP_AMQP_PORT"] = str(self.amqp_port)
        done = subprocess.run(["bash", str(REPO / "scripts" / f"{self.kind}.sh"), action],
                              check=False, env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"{self.kind}.sh {action} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def start(self) -> None:
        self._script("start")

    def stop(self) -> None:
        self._script("stop")

    def kill(self) -> None:
        """A crash: kill -9 of the broker (``scripts/artemis.sh kill``)."""
        self._script("kill")

    def status(self) -> str:
        """The script's status line (its URLs); a RuntimeError when the broker is not running."""
        return self._script("status")

    def queues(self) -> dict[str, tuple[int, bool]]:
        """A RabbitMQ node's queues as rabbitmqctl lists them (not through STOMP or AMQP, which
        may declare one): name -> (messages, durable)."""
        rows = (line.split("\t") for line in self._script("queues").splitlines() if line)
        return {name: (int(messages), durable == "true") for name, messages, durable in rows}

    def running(self) -> bool:
        try:
            self.status()
        except RuntimeError:
            return False
        return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _session_broker(factory: pytest.TempPathFactory, kind: str, port: int,
                    amqp_port: int | None = None, protocol: str = "stomp",
                    env: dict[str, str] | None = None) -> Iterator[Broker]:
    b = Broker(factory.mktemp(kind), port, {"MSGCAP_BROKER_OWNER": str(os.getpid()),
                                            **(env or {})}, kind, amqp_port, protocol)
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def activemq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """The session's ActiveMQ, started on first use and stopped at the end of the session."""
    port = int(os.environ.get("MSGCAP_TEST_STOMP_PORT") or _free_port())
    yield from _session_broker(tmp_path_factory, "activemq", port,
                               env={"MSGCAP_OPENWIRE_PORT": str(_free_port())})


@pytest.fixture(scope="session")
def rabbitmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """The session's RabbitMQ node (STOMP and AMQP 1.0 plugins), started on first use."""
    yield from _session_broker(tmp_path_factory, "rabbitmq", _free_port(), _free_port())


@pytest.fixture(scope="session")
def rabbitmq_amqp(rabbitmq: Broker) -> Broker:
    """The session's RabbitMQ node through its AMQP 1.0 listener: stopping it stops the node."""
    return replace(rabbitmq, protocol="amqp")


@pytest.fixture(scope="session")
def artemis_amqp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """The session's ActiveMQ Artemis, reached over AMQP 1.0 (``url``), its core protocol on
    ``port``; started on first use."""
    yield from _session_broker(tmp_path_factory, "artemis", _free_port(), _free_port(), "amqp")


@pytest.fixture
def broker(request: pytest.FixtureRequest) -> Broker:
    """ActiveMQ, or the broker of ``BROKERS`` the test is parametrised with (indirect)."""
    return request.getfixturevalue(getattr(request, "param", "activemq").replace("-", "_"))


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Tests that configure logging (``configure_logging``, in-process CLI commands) change
    process-wide state: give the other tests theirs back."""
    from gendef.logsetup import PROJECT_LOGGERS

    root = logging.getLogger()
    saved = (list(root.handlers), root.level,
             {n: logging.getLogger(n).level for n in PROJECT_LOGGERS})
    yield
    for h in root.handlers:
        if h not in saved[0]:
            h.close()
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture
def queue(broker: Broker) -> str:
    """A queue name no other test uses (``/queue/test-<uuid>``: RabbitMQ takes it over STOMP and
    AMQP 1.0 alike); makes the broker start."""
    if not broker.running():  # a test that stopped the broker and failed before restarting it
        broker.start()
    return f"/queue/test-{uuid.uuid4().hex}"


BROKER_FIXTURES = frozenset({"broker", "provider", "activemq", "rabbitmq", "artemis_amqp"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With several pytest-xdist workers (``scripts/test.sh`` runs two, ``--dist loadgroup``):
    the tests on a real broker and the rest of tests/live (captures killed, timed, taken over)
    run on one worker, one after another as without xdist (one set of brokers, the module
    fixtures' own brokers started once, no two of those captures at once), the Spark
    sessions' tests on one (one cluster); every other test goes to whichever worker is free."""
    live = REPO / "tests" / "live"
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if (names & BROKER_FIXTURES or item.get_closest_marker("broker")
                or live in Path(item.path).parents):
            item.add_marker(pytest.mark.xdist_group("brokers"))
        elif "sessions" in names:
            item.add_marker(pytest.mark.xdist_group("spark"))
