"""msgcap's AMQP 1.0 source on a real ActiveMQ Artemis, with messages sent by a JMS application
(Qpid JMS, tests/java): plain queue and topic names with the ``queue``/``topic`` capability as
Qpid JMS sends them, a selector applied by the broker, a durable topic subscription that outlives
a kill -9 of the capture, message groups."""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

from tests import jms_clients
from tests.conftest import Broker
from tests.live.conftest import BODY
from tests.live.test_faults import durable_messages, ids, wait_for

pytestmark = pytest.mark.broker


def name() -> str:
    return f"test-{uuid.uuid4().hex}"


def produce(broker: Broker, destination: str, first: int, count: int, *args: str) -> list[str]:
    """Messages first..first+count-1 (SALES inserts) sent by the JMS producer."""
    return jms_clients.produce(broker.url, destination, "--first", str(first), "--count",
                               str(count), "--body", BODY, *args)


def test_queues_are_plain_names_with_the_queue_capability(work, artemis) -> None:
    """A JMS producer's queue ``orders`` is msgcap's ``/queue/orders``: what it sends is captured
    exactly once, and what msgcap sends there a JMS consumer of ``orders`` receives (no
    ``/queue/`` address of its own, no multicast address that would drop it)."""
    queue = f"/queue/{name()}"
    produce(artemis, queue, 1, 5)
    work.properties(jms_url=artemis.url, jms_destination=queue)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == ids(1, 5)
    assert jms_clients.consume(artemis.url, queue, browse=True) == []
    work.msgcap("send", "--prop", str(work.prop),
                str(work.dump("in.jsonl", [work.body(i) for i in (6, 7)])), check=True)
    seen = jms_clients.consume(artemis.url, queue)
    assert [(m["JMSDestination"], m["text"]) for m in seen] == [
        (queue.removeprefix("/queue/"), work.body(i)) for i in (6, 7)]


def test_selector_applied_by_the_broker_leaves_the_others_on_the_queue(work, artemis) -> None:
    queue = f"/queue/{name()}"
    produce(artemis, queue, 1, 10, "--prop", "n=int:{n}", "--prop", "region=string:east")
    work.properties(jms_url=artemis.url, jms_destination=queue,
                    jms_selector="n > 2 AND n < 8 AND region = 'east'")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == ids(3, 7)
    assert "messages 5" in done.stdout
    left = jms_clients.consume(artemis.url, queue, browse=True)
    assert [m["properties"]["n"] for m in left] == ["1", "2", "8", "9", "10"]


def test_a_selector_artemis_cannot_parse_stops_capture_with_its_reason(work, artemis) -> None:
    queue = f"/queue/{name()}"
    produce(artemis, queue, 1, 1)
    work.properties(jms_url=artemis.url, jms_destination=queue, jms_selector="n >>> 2")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2")
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and queue in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert len(jms_clients.consume(artemis.url, queue, browse=True)) == 1


def test_durable_topic_subscription_outlives_a_kill_9_of_the_capture(work, artemis) -> None:
    """The subscription is made by the first run; what the JMS producer publishes while the capture is killed is captured after the
    restart, every message exactly once."""
    topic = f"/topic/{name()}"
    n = 4_000
    work.properties(jms_url=artemis.url, jms_destination=topic)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    produce(artemis, topic, 1, n, "--batch", "500")
    capture = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: durable_messages(work) >= n // 4, 120, "a quarter of the messages",
                 capture)
        os.kill(capture.pid, signal.SIGKILL)
        capture.wait(timeout=30)
    finally:
        if capture.poll() is None:
            capture.kill()
    assert durable_messages(work) < n, "the capture had all of them before the kill"
    produce(artemis, topic, n + 1, n, "--batch", "500")  # while no capture runs
    # they wait in the subscription's queue (fully qualified ADDRESS::QUEUE: container id and
    # link name, the extract's)
    subscription = f"/queue/{topic.removeprefix('/topic/')}::SALES.SALES"
    assert len(jms_clients.consume(artemis.url, subscription, browse=True)) > n
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == ids(1, 2 * n)
    assert jms_clients.consume(artemis.url, subscription, browse=True) == []


@pytest.mark.parametrize(("header", "expected"), [
    ("$JMSXGroupID", ["orders-7"] * 3 + ["orders-8"] * 3),
    ("$JMSXGroupSeq", ["1", "2", "3"] * 2)])
def test_message_groups_reach_the_trail(work, artemis, header, expected) -> None:
    """Qpid JMS sends JMSXGroupID and JMSXGroupSeq as the AMQP group-id and group-sequence;
    msgcap names them as a JMS consumer does (the trail's transaction id here)."""
    queue = f"/queue/{name()}"
    produce(artemis, queue, 1, 3, "--group", "orders-7")
    produce(artemis, queue, 4, 3, "--group", "orders-8")
    seen = jms_clients.consume(artemis.url, queue, browse=True)
    assert [(m["properties"]["JMSXGroupID"], m["properties"]["JMSXGroupSeq"]) for m in seen] \
        == list(zip(["orders-7"] * 3 + ["orders-8"] * 3, ["1", "2", "3"] * 2, strict=True))
    work.properties(jms_url=artemis.url, jms_destination=queue, delim_txid=header)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert [(s, x) for s, _, x in work.trail()] == list(zip(ids(1, 6), expected, strict=True))


# What JmsConsume prints for each JMS header, and msgcap's header key of it (the JMS names table).
JMS_FIELDS = {"JMSMessageID": "message-id", "JMSCorrelationID": "correlation-id",
              "JMSTimestamp": "timestamp", "JMSType": "type", "JMSPriority": "priority",
              "JMSExpiration": "expires", "JMSDestination": "destination",
              "JMSReplyTo": "reply-to", "JMSRedelivered": "redelivered",
              "class": "message-type"}
TYPED = ("--prop", "i=int:-42", "--prop", "d=double:1e20", "--prop", "f=float:0.5",
         "--prop", "b=boolean:true", "--prop", "by=byte:-3", "--prop", "sh=short:7",
         "--prop", "l=long:123456789012", "--prop", "s=string:n{n}")
KINDS = ("text", "bytes", "map", "stream", "object", "message")


def captured_headers(broker: Broker, queue: str, n: int) -> list[dict[str, str]]:
    """The headers msgcap's AMQP source gives the first ``n`` messages of ``queue`` (not
    acknowledged: they go back to the queue), those of a body it cannot capture included."""
    from msgcap.sources.amqp import AmqpSource
    from msgcap.sources.base import Unreadable

    source = AmqpSource([broker.url], queue, prefetch=n)
    try:
        got: list = []
        deadline = time.monotonic() + 20
        while len(got) < n and time.monotonic() < deadline:
            try:
                got.extend(source.receive_many(0.5, limit=n - len(got)))
            except Unreadable as exc:
                got.append(exc.message)
        return [m.headers for m in got]
    finally:
        source.close()


def jms_text(value: object) -> str:
    """A JSON value of JmsConsume as msgcap's header text (booleans as Java writes them)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("kind", KINDS)
def test_jms_header_fields_are_what_a_jms_consumer_sees(artemis, kind) -> None:
    queue = f"/queue/{name()}"
    produce(artemis, queue, 1, 2, "--type", kind, "--correlation-id", "order-{n}",
            "--jms-type", "Order", "--priority", "7", "--ttl", "600000",
            "--reply-to", "/queue/replies", "--entry", "string:x" if kind == "stream"
            else "k=string:x")
    seen = jms_clients.consume(artemis.url, queue, browse=True)
    headers = captured_headers(artemis, queue, 2)
    assert [{k: h.get(v) for k, v in JMS_FIELDS.items()} for h in headers] == [
        {k: jms_text(m[k]) for k in JMS_FIELDS} for m in seen]
    assert [h.get("persistent") for h in headers] == ["true", "true"]  # JMSDeliveryMode 2


def test_every_property_is_what_a_jms_consumer_sees(artemis) -> None:
    """Typed properties as Java's String.valueOf, and the JMSX names (group, delivery count)."""
    queue = f"/queue/{name()}"
    produce(artemis, queue, 1, 1, "--group", "g-{n}", *TYPED)
    seen = jms_clients.consume(artemis.url, queue, browse=True)[0]["properties"]
    assert {"JMSXGroupID", "JMSXGroupSeq", "JMSXDeliveryCount", "d", "sh"} <= set(seen)
    headers = captured_headers(artemis, queue, 1)[0]
    assert {k: headers.get(k) for k in seen} == seen


def test_a_core_jms_producers_messages_are_captured_over_amqp(work, artemis) -> None:
    """Artemis converts what its core JMS client sends (TextMessage, BytesMessage) to AMQP."""
    queue = f"/queue/{name()}"
    core = f"tcp://127.0.0.1:{artemis.port}"
    jms_clients.produce(core, queue, "--count", "2", "--body", BODY)
    jms_clients.produce(core, queue, "--first", "3", "--count", "2", "--body", BODY, "--type",
                        "bytes")
    work.properties(jms_url=artemis.url, jms_destination=queue)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == ids(1, 4)


def test_a_fully_qualified_queue_name_captures_one_queue_of_a_topic(work, artemis) -> None:
    """``jms.destination=/queue/ADDRESS::QUEUE``: the queue of a JMS durable subscription to
    the topic ADDRESS (``clientID.name``), captured as a queue; the topic's other
    subscription keeps its own copy."""
    topic = name()
    for client in ("app", "other"):
        assert jms_clients.consume(artemis.url, f"/topic/{topic}", "--durable", "sub",
                                   "--client-id", client, "--timeout", "100") == []
    produce(artemis, f"/topic/{topic}", 1, 3)
    work.properties(jms_url=artemis.url, jms_destination=f"/queue/{topic}::app.sub")
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == ids(1, 3)
    other = jms_clients.consume(artemis.url, f"/topic/{topic}", "--durable", "sub",
                                "--client-id", "other")
    assert [m["text"] for m in other] == [BODY.format(n=i) for i in (1, 2, 3)]
