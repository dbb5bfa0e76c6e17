"""Bytes stay bytes on each real broker: binary records sent as BytesMessages (by ``msgcap send``;
over AMQP as ``data`` sections by a plain proton sender) and captured by ``msgcap run`` give the
values encoded, also for records whose bytes are valid UTF-8, and text sent by ``msgcap send``
still arrives as text (issues 24, 25)."""

from __future__ import annotations

import random

import pytest

from tests.binrec import Layout, trail_rows
from tests.conftest import BROKERS
from tests.live.conftest import send

pytestmark = [pytest.mark.broker,
              pytest.mark.parametrize("broker", BROKERS, indirect=True)]


def test_binary_records_sent_and_captured_decode_to_their_values(work, broker, queue) -> None:
    rng = random.Random(7)
    layout = Layout.random(rng)
    records = layout.records(rng, 20)
    prop = layout.write_home(work.root, **{"jms.url": broker.url, "jms.destination": queue,
                                           "jms.id": "time", "archive.dir": "dirarc"})
    assert send(work, broker, queue, [data for _, data in records], prop) == len(records)
    done = work.msgcap("run", "--prop", str(prop), "--max-idle", "1", check=True)
    assert f"messages {len(records)}" in done.stdout
    dumped = work.msgcap("dump", "--json", "--defs", "dirdat/bn.def", "dirdat/bn000000000",
                         check=True)
    assert trail_rows(dumped.stdout) == [layout.dumped(values) for values, _ in records]
    (archive,) = (work.root / "dirarc").iterdir()
    assert archive.read_text().count('"body_b64"') == len(records)


def test_text_sent_arrives_as_text(work, broker, queue) -> None:
    """A dump's text ``body`` is a TextMessage (ActiveMQ) / ``text/plain`` (RabbitMQ STOMP) / an
    ``amqp-value`` string (AMQP): it is archived as ``body``, as it was sent."""
    work.properties(jms_url=broker.url, jms_destination=queue, archive_dir="dirarc")
    dump = work.dump("in.jsonl", [work.body(i) for i in (1, 2)])
    work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    (archive,) = (work.root / "dirarc").iterdir()
    text = archive.read_text()
    assert text.count('"body": "I,SALES.CUSTOMER,') == 2 and '"body_b64"' not in text
