"""``msgcap check`` against the real broker: it connects and subscribes as ``run`` does, and a
message waiting on the queue is still there for the capture afterwards (issue 26)."""

from __future__ import annotations

import pytest

from tests.conftest import BROKERS

pytestmark = [pytest.mark.broker]


@pytest.mark.parametrize("broker", BROKERS, indirect=True)
def test_check_subscribes_without_consuming_what_waits(work, broker, queue) -> None:
    work.properties(jms_url=broker.url, jms_destination=queue)
    dump = work.dump("in.jsonl", [work.body(1)])
    work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    checked = work.msgcap("check", "--prop", str(work.prop), check=True)
    said = {"activemq": "whether it existed and how many messages wait is unknown: ActiveMQ/",
            "rabbitmq": "it exists; how many messages wait is unknown: RabbitMQ/",
            "rabbitmq-amqp": "it exists, 1 message waiting",
            "artemis-amqp": "it exists, 1 message waiting"}[broker.kind + (
                "-amqp" if broker.protocol == "amqp" else "")]
    assert (f"source {broker.url}: connected to " in checked.stdout
            and f"subscribed to {queue} ({said}" in checked.stdout
            and "; disconnected, nothing consumed" in checked.stdout), checked.stdout
    assert not (work.root / "dirdat").exists()
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 1 " in done.stdout
    assert work.seqids() == ["0000000001"]


def test_check_refuses_a_selector_activemq_cannot_parse(work, broker, queue) -> None:
    work.properties(jms_url=broker.url, jms_destination=queue, jms_selector="region = = 'EU'")
    done = work.msgcap("check", "--prop", str(work.prop))
    assert done.returncode == 2, done.stdout
    [line] = done.stderr.splitlines()
    assert line.startswith("msgcap check: error: ") and "refused the subscription" in line
    work.properties(jms_url=broker.url, jms_destination=queue, jms_selector="region = 'EU'")
    accepted = work.msgcap("check", "--prop", str(work.prop), check=True)
    assert "; jms.selector accepted); disconnected, nothing consumed" in accepted.stdout


RABBITMQ = ("rabbitmq", "rabbitmq-amqp")


@pytest.mark.parametrize("broker", (*RABBITMQ, "artemis-amqp"), indirect=True)
def test_check_of_a_queue_that_does_not_exist_creates_none_and_says_so(work, broker,
                                                                        queue) -> None:
    """A mistyped queue is one problem line, and the broker still has no such queue: RabbitMQ's
    ``/queue/NAME`` (STOMP and AMQP 1.0) would have declared it, and Artemis creates a queue a
    receiver attaches to (issue 33)."""
    work.properties(jms_url=broker.url, jms_destination=queue)
    done = work.msgcap("check", "--prop", str(work.prop))
    name = queue.removeprefix("/queue/")
    product = "apache-activemq-artemis/2." if broker.kind == "artemis" else "RabbitMQ/3.10.8"
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"msgcap check: error: queue {name} does not exist on {product}")
    assert line.endswith(f" at {broker.url}")
    assert name not in _queues(broker)


def _queues(broker) -> dict[str, int]:
    """The broker's queues and the messages in each, as its own tools list them (rabbitmqctl,
    Artemis's CLI over the core protocol), not through STOMP or AMQP, which may create one."""
    if broker.kind != "artemis":
        return {name: messages for name, (messages, _) in broker.queues().items()}
    import subprocess

    home = broker._script("home").strip()
    done = subprocess.run([f"{home}/bin/artemis", "queue", "stat", "--silent", "--url",
                           f"tcp://127.0.0.1:{broker.port}", "--maxColumnSize", "-1"],
                          capture_output=True, text=True, timeout=120, check=True)
    rows = [[cell.strip() for cell in line.split("|")[1:-1]]
            for line in done.stdout.splitlines() if line.startswith("|")]
    return {row[0]: int(row[3]) for row in rows[2:]}  # (two header lines)


@pytest.mark.parametrize("broker", RABBITMQ, indirect=True)
def test_check_says_the_queue_exists_and_how_many_messages_wait(work, broker, queue) -> None:
    """A queue a producer declared non-durable: check subscribes without declaring it (which
    RabbitMQ would refuse: it is not durable) and counts what waits, where AMQP says it."""
    name = queue.removeprefix("/queue/")
    _produce_transient(broker, queue, ["a", "b", "c"])
    assert broker.queues()[name] == (3, False)
    work.properties(jms_url=broker.url, jms_destination=queue)
    done = work.msgcap("check", "--prop", str(work.prop), check=True)
    said = ("it exists, 3 messages waiting" if broker.protocol == "amqp" else
            "it exists; how many messages wait is unknown: RabbitMQ/3.10.8 does not say over STOMP")
    assert f"subscribed to {queue} ({said}); disconnected, nothing consumed" in done.stdout
    assert broker.queues()[name] == (3, False)


def _produce_transient(broker, queue: str, bodies: list[str]) -> None:
    """``bodies`` on ``queue``, which the producer declares non-durable: over AMQP 1.0 with a
    non-durable terminus, over STOMP with ``durable:false`` on SEND (and neither exclusive nor
    auto-delete, which RabbitMQ takes by default for a non-durable queue)."""
    if broker.protocol == "amqp":
        import proton
        from proton.utils import BlockingConnection

        conn = BlockingConnection(broker.url, allowed_mechs="ANONYMOUS")
        sender = conn.create_sender(queue)  # a non-durable terminus declares a transient queue
        for body in bodies:
            sender.send(proton.Message(body=body))
        conn.close()
        return
    import stomp

    conn = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    conn.connect(wait=True)
    for body in bodies:
        conn.send(queue, body, headers={"durable": "false", "exclusive": "false",
                                        "auto-delete": "false", "receipt": f"sent-{body}"})
    conn.disconnect(receipt="bye")


def test_check_of_an_artemis_topic_creates_no_address_and_counts_the_subscription(
        work, artemis_amqp) -> None:
    """A topic whose address does not exist is one problem line, and Artemis still has no such
    address; once ``msgcap run`` made its durable subscription, check counts what waits in it."""
    import uuid

    from tests import jms_clients

    broker = artemis_amqp
    if not broker.running():  # a test that stopped it and failed before restarting it
        broker.start()
    topic = f"/topic/test-{uuid.uuid4().hex}"
    name = topic.removeprefix("/topic/")
    work.properties(jms_url=broker.url, jms_destination=topic)
    done = work.msgcap("check", "--prop", str(work.prop))
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"msgcap check: error: topic {name} does not exist on "
                           "apache-activemq-artemis/2.") and line.endswith(f" at {broker.url}")
    assert name not in _addresses(broker)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    jms_clients.send(broker.url, topic, [work.body(i) for i in (1, 2, 3)])
    checked = work.msgcap("check", "--prop", str(work.prop), check=True)
    assert (f"subscribed to {topic} (it exists; durable subscription SALES.SALES: 3 messages "
            "waiting); disconnected, nothing consumed") in checked.stdout, checked.stdout
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert work.seqids() == [f"{i:010d}" for i in (1, 2, 3)]


def _addresses(broker) -> list[str]:
    """Artemis's addresses as its own CLI lists them over the core protocol."""
    import subprocess

    home = broker._script("home").strip()
    done = subprocess.run([f"{home}/bin/artemis", "address", "show", "--silent", "--url",
                           f"tcp://127.0.0.1:{broker.port}"],
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.split()
