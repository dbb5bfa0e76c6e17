"""msgcap's JMS source on real providers through their own client jars (msgcap.sources.jms):
a GoldenGate-style jmsvam.properties (jvm.bootoptions, java.naming.*, jms.connectionFactory,
jms.destination, no jms.url) captures what Java JMS producers send, exactly once."""

from __future__ import annotations

import re

import pytest

from tests import jms_clients
from tests.jms_providers import Provider
from tests.live.conftest import Work

pytestmark = pytest.mark.broker


def test_a_goldengate_properties_file_captures_from_the_providers_own_client(
        work: Work, provider: Provider) -> None:
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    jms_clients.send(provider.url, queue, [work.body(n) for n in range(1, 6)],
                     openwire=provider.openwire)
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "3", check=True)
    assert "messages 5" in done.stdout
    assert work.seqids() == [f"{n:010d}" for n in range(1, 6)]
    assert jms_clients.consume(provider.url, queue, "--timeout", "1000",
                               openwire=provider.openwire) == []


def test_each_commit_group_is_acknowledged_when_durable(work: Work, provider: Provider) -> None:
    """acknowledge() settles every message the session received: the source receives no more
    than the commit group (jms.ack.batch, 100 by default) has room for, so each group is
    acknowledged once durable, not only when a group happens to end where a batch received
    from the JVM ends (the provider's messages would pile up unacknowledged meanwhile)."""
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    jms_clients.send(provider.url, queue, [work.body(n) for n in range(1, 1001)],
                     openwire=provider.openwire)  # all there before: batches come full
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "3", check=True)
    assert work.seqids() == [f"{n:010d}" for n in range(1, 1001)]
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    found = re.findall(r"(\d+) messages acknowledged with (\d+) acknowledge\(\) calls", log)
    assert found, log
    assert int(found[-1][0]) == 1000 and int(found[-1][1]) >= 10, found
