"""``msgcap run`` against each real broker (session fixtures), fed by a producer (``msgcap send``;
over AMQP a plain proton sender) and by ``msgcap send`` to a topic."""

from __future__ import annotations

import pytest

from tests.conftest import BROKERS, STOMP_BROKERS
from tests.live.conftest import send

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("broker", BROKERS, indirect=True)
def test_send_then_run_captures_everything_in_order(work, broker, queue) -> None:
    work.properties(jms_url=broker.url, jms_destination=queue)
    assert send(work, broker, queue, [work.body(i) for i in range(1, 201)]) == 200
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 200" in done.stdout
    assert [s for s, _, _ in work.trail()] == [f"{i:010d}" for i in range(1, 201)]
    # all acknowledged: a second run finds nothing
    again = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 0" in again.stdout


# RabbitMQ 3.x cannot keep a topic subscription over AMQP 1.0: msgcap refuses it at start
# (tests/live/test_amqp_source.py::test_durable_topic_refused_on_rabbitmq_3_at_start).
@pytest.mark.parametrize("broker", STOMP_BROKERS, indirect=True)
def test_a_topic_is_subscribed_durably_under_the_extract_name(work, broker, queue) -> None:
    topic = queue.replace("/queue/", "/topic/")
    work.properties(jms_url=broker.url, jms_destination=topic)
    first = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "messages 0" in first.stdout  # the durable subscription now exists
    dump = work.dump("in.jsonl", [work.body(i) for i in (1, 2, 3)])
    work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)  # while we are away
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 3" in done.stdout
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]
