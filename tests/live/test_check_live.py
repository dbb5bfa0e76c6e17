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
    assert (f"source {broker.url}: connected to " in checked.stdout
            and f"subscribed to {queue}; disconnected, nothing consumed" in checked.stdout
            ), checked.stdout
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
    assert "(jms.selector accepted)" in accepted.stdout
