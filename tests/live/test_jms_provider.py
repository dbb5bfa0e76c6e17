"""msgcap's JMS source on real providers through their own client jars (msgcap.sources.jms):
a GoldenGate-style jmsvam.properties (jvm.bootoptions, java.naming.*, jms.connectionFactory,
jms.destination, no jms.url) captures what Java JMS producers send, exactly once."""

from __future__ import annotations

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
