"""docs/brokers.md's recipe for a topic on RabbitMQ, followed as written: a durable queue bound to
``amq.topic`` through the management plugin's HTTP API (the marked ``rabbitmq-http`` block, run
with curl), then a capture of that queue over AMQP 1.0, where msgcap refuses ``/topic/``.

The node is a private one of this module (``scripts/rabbitmq.sh`` with ``MSGCAP_HTTP_PORT``: the
session's node has no management plugin), so the recipe's fixed queue name is its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Broker, _free_port, _session_broker
from tests.docs.markdown import run_shell, steps, user_env

pytestmark = pytest.mark.broker

BROKERS_MD = Path(__file__).resolve().parents[2] / "docs" / "brokers.md"
DOC_API = "http://rabbit1.example.com:15672"
QUEUE = "orders.prices"


@pytest.fixture(scope="module")
def rabbit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, int]]:
    """A RabbitMQ node with STOMP, AMQP 1.0 and the management HTTP API; its HTTP port."""
    http = _free_port()
    yield from ((b, http) for b in _session_broker(
        tmp_path_factory, "rabbitmq", _free_port(), _free_port(), "amqp",
        env={"MSGCAP_HTTP_PORT": str(http)}))


def _recipe() -> str:
    found = [s.text for s in steps(BROKERS_MD) if s.kind == "run" and s.arg == "rabbitmq-http"]
    assert len(found) == 1 and DOC_API in found[0] and QUEUE in found[0]
    return found[0]


def test_the_recipe_binds_a_durable_queue_that_captures_the_topic(rabbit, work, tmp_path):
    broker, http = rabbit
    done = run_shell(_recipe().replace(DOC_API, f"http://127.0.0.1:{http}"), tmp_path,
                     user_env(tmp_path, MQ_USER="guest", MQ_PASSWORD="guest"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert broker.queues()[QUEUE] == (0, True)  # declared durable, empty

    def publish(topic: str, seq: int) -> None:
        work.properties(jms_url=broker.url, jms_destination=f"/topic/{topic}")
        work.msgcap("send", "--prop", str(work.prop),
                    str(work.dump(f"m{seq}.jsonl", [work.body(seq)])), check=True)

    def capture() -> str:
        work.properties(jms_url=broker.url, jms_destination=f"/queue/{QUEUE}")
        return work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True).stdout

    publish("prices.eu", 1)
    publish("stock.eu", 2)  # a routing key the binding does not match
    assert "messages 1 " in capture()
    publish("prices.us", 3)  # while msgcap is away: the queue keeps it
    assert "messages 1 " in capture()
    assert work.seqids() == ["0000000001", "0000000003"]
    assert broker.queues()[QUEUE] == (0, True)
