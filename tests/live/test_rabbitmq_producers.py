"""What docs/brokers.md ("RabbitMQ specifics") and docs/guide.md step 13 tell producers: once
msgcap has declared a RabbitMQ 3 queue durable, an AMQP 1.0 producer whose target is not durable
only times out, the reason is in the broker's log alone, and a durable target or the
``/amq/queue/NAME`` address is the fix."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from proton import Message, Terminus, Timeout
from proton.reactor import LinkOption
from proton.utils import BlockingConnection

pytestmark = pytest.mark.broker


class _DurableTarget(LinkOption):
    """A sender's target durable (``configuration``), as msgcap's own declaration is."""

    def apply(self, link: Any) -> None:
        link.target.durability = Terminus.CONFIGURATION


def _send(url: str, address: str, body: str, options: LinkOption | None = None) -> None:
    conn = BlockingConnection(url, timeout=5)
    try:
        conn.create_sender(address, options=options).send(Message(body=body, durable=True))
    finally:
        conn.close()


def test_a_non_durable_producer_fails_where_only_the_broker_log_says_why(rabbitmq_amqp, work):
    broker, name = rabbitmq_amqp, f"test-{uuid.uuid4().hex}"
    queue = f"/queue/{name}"
    if not broker.running():  # a test that stopped the node and failed before restarting it
        broker.start()
    work.properties(jms_url=broker.url, jms_destination=queue)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert broker.queues()[name] == (0, True)  # msgcap declared it durable

    with pytest.raises(Timeout, match="Opening link"):  # proton's default target: not durable
        _send(broker.url, queue, work.body(1))
    log = "".join(p.read_text(errors="replace") for p in (broker.dir / "log").glob("*.log"))
    assert f"inequivalent arg 'durable' for queue '{name}'" in log

    _send(broker.url, queue, work.body(1), _DurableTarget())  # the fixes
    _send(broker.url, f"/amq/queue/{name}", work.body(2))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 2 " in done.stdout and work.seqids() == ["0000000001", "0000000002"]
