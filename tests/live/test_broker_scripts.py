"""The broker scripts clean up after a test run that was killed midway; RabbitMQ's speaks AMQP 1.0
on the port it is given; Artemis's keeps persistent messages across a kill -9."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests import amqp_client, jms_clients
from tests.conftest import STOMP_BROKERS, Broker, _free_port

pytestmark = pytest.mark.broker


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("kind", [*STOMP_BROKERS, "artemis"])
def test_a_broker_stops_by_itself_once_its_owner_is_gone(tmp_path: Path, kind: str) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    broker = Broker(tmp_path / kind, _free_port(), {"MSGCAP_BROKER_OWNER": str(owner.pid)}, kind,
                    _free_port() if kind == "artemis" else None)
    broker.start()
    try:
        pid = int((broker.dir / f"{kind}.pid").read_text())
        assert broker.running() and _alive(pid)
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 90  # the watcher looks every second; the stop takes a few
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _alive(pid), f"{kind} still runs after its owner exited"
        assert not broker.running()
        assert not (broker.dir / "watchdog.pid").exists()
    finally:
        owner.kill()
        owner.wait()
        broker.stop()


def test_stop_ends_the_watcher_too(tmp_path: Path) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    broker = Broker(tmp_path / "activemq", _free_port(),
                    {"MSGCAP_BROKER_OWNER": str(owner.pid)}, "activemq")
    try:
        broker.start()
        watcher = int((broker.dir / "watchdog.pid").read_text())
        assert _alive(watcher)
        broker.stop()
        assert not _alive(watcher) and not broker.running()
    finally:
        owner.kill()
        owner.wait()
        broker.stop()


def test_rabbitmq_given_an_amqp_port_speaks_amqp_1_0_there(rabbitmq_amqp: Broker) -> None:
    """The session's node was started with ``MSGCAP_AMQP_PORT``: its status names both URLs, and
    a plain AMQP 1.0 client puts a message on a queue there and takes it back, body kinds kept."""
    node = rabbitmq_amqp
    if not node.running():  # a test that stopped the node and failed before restarting it
        node.start()
    assert node.status().split()[3:] == [f"stomp://127.0.0.1:{node.port}",
                                         f"amqp://127.0.0.1:{node.amqp_port}"]
    queue = f"/queue/test-{uuid.uuid4().hex}"
    assert amqp_client.send(node.url, queue, [b"\x00\x00\xc3\xa9", "text"], {"k": "v"}) == 2
    assert amqp_client.receive(node.url, queue, quiet=1, consume=True) == [
        ({"k": "v"}, b"\x00\x00\xc3\xa9"), ({"k": "v"}, "text")]


def test_artemis_kill_9_then_start_keeps_persistent_messages(artemis_amqp: Broker) -> None:
    """``artemis.sh kill`` is a crash (SIGKILL, no shutdown hook); the next start recovers the
    journal: what a JMS producer sent persistent is on the queue still. Its status names the
    AMQP and core URLs."""
    broker = artemis_amqp
    if not broker.running():
        broker.start()
    assert broker.status().split()[3:] == [f"amqp://127.0.0.1:{broker.amqp_port}",
                                           f"tcp://127.0.0.1:{broker.port}"]
    queue = f"/queue/test-{uuid.uuid4().hex}"
    sent = jms_clients.produce(broker.url, queue, "--count", "3")
    pid = int((broker.dir / "artemis.pid").read_text())
    broker.kill()
    assert not _alive(pid) and not broker.running()
    broker.start()
    seen = jms_clients.consume(f"tcp://127.0.0.1:{broker.port}", queue)  # the core client
    assert [m["text"] for m in seen] == ["message 1", "message 2", "message 3"]
    assert len(sent) == 3
