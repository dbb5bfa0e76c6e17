"""Order a downstream can check (issue 36), on real brokers: a JMS producer (tests/java) sends
grouped messages (JMSXGroupID, JMSXGroupSeq), msgcap captures them, ``msgcap dump --json`` shows
the group, its sequence and the capture's partition as tokens of every record, and
``msgcap dump --check-order`` passes; messages numbered out of order, and a group captured by two
partitions' captures, make it name the group and exit 2."""

from __future__ import annotations

import json
import uuid

import pytest

from tests import jms_clients
from tests.jms_providers import Provider
from tests.live.conftest import BODY, Work

pytestmark = pytest.mark.broker


def produce(url: str, destination: str, first: int, count: int, *args: str,
            openwire: bool = False) -> None:
    """Messages first..first+count-1 (SALES inserts) sent by the JMS producer; with ``--group``
    numbered 1..count in their group."""
    jms_clients.produce(url, destination, "--first", str(first), "--count", str(count),
                        "--body", BODY, *args, openwire=openwire)


def order_tokens(work: Work, trail: str) -> list[tuple[str | None, ...]]:
    """(MSGCAP_PARTITION, JMSXGroupID, JMSXGroupSeq) of every record, as dump --json shows."""
    done = work.msgcap("dump", "--json", trail, check=True)
    records = [json.loads(x) for x in done.stdout.splitlines() if '"kind": "record"' in x]
    return [tuple(r["tokens"].get(k) for k in ("MSGCAP_PARTITION", "JMSXGroupID",
                                                "JMSXGroupSeq")) for r in records]


def test_groups_captured_from_artemis_are_tokens_their_order_checked(work, artemis) -> None:
    queues = f"/queue/test-{uuid.uuid4().hex}-"  # and the partition's number
    queue = f"{queues}2"
    produce(artemis.url, queue, 1, 3, "--group", "orders-7")
    produce(artemis.url, queue, 4, 3, "--group", "orders-8")
    work.properties(jms_url=artemis.url, jms_destination=queues + "${PARTITION}",
                    trail_path="dirdat/s${PARTITION}", trail_extract="SALES${PARTITION}")
    run = ("run", "--prop", str(work.prop), "--partition", "2", "--max-idle", "2")
    work.msgcap(*run, check=True)
    assert order_tokens(work, "dirdat/s2") == [("2", g, s) for g in ("orders-7", "orders-8")
                                  for s in ("1", "2", "3")]
    done = work.msgcap("dump", "--check-order", "dirdat/s2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "order check: 6 records, 2 message groups, 1 trails: 0 findings"]

    # the producer numbers orders-7 anew (1, 2 after 3), and orders-8 jumps to 9
    produce(artemis.url, queue, 7, 2, "--group", "orders-7")
    produce(artemis.url, queue, 9, 1, "--group", "orders-8", "--prop", "JMSXGroupSeq=int:{n}")
    work.msgcap(*run, check=True)
    assert order_tokens(work, "dirdat/s2")[6:] == [("2", "orders-7", "1"), ("2", "orders-7", "2"),
                                      ("2", "orders-8", "9")]
    done = work.msgcap("dump", "--check-order", "dirdat/s2")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [x.split(" at ")[0] for x in lines[:-1]] == [
        "dirdat/s2: group 'orders-7' went backwards from 3 to 1",
        "dirdat/s2: group 'orders-8' skipped 4–8 (from 3 to 9)"]
    assert lines[-1] == "order check: 9 records, 2 message groups, 1 trails: 2 findings"
    assert "Traceback" not in done.stderr

    # a second partition's capture takes a message of group orders-8 as well
    produce(artemis.url, f"{queues}3", 10, 1, "--group", "orders-8")
    work.msgcap("run", "--prop", str(work.prop), "--partition", "3", "--max-idle", "2",
                check=True)
    assert order_tokens(work, "dirdat/s3") == [("3", "orders-8", "1")]
    done = work.msgcap("dump", "--check-order", "dirdat/s2", "dirdat/s3")
    assert done.returncode == 2
    assert done.stdout.splitlines()[2].startswith(
        "dirdat/s3: group 'orders-8' is also in trail dirdat/s2 (at dirdat/s3000000000 RBA ")


def test_groups_reach_the_trail_through_each_providers_own_client(work: Work,
                                                                  provider: Provider) -> None:
    """ActiveMQ's OpenWire client and Artemis's core client (the JVM path) give the group and
    its number as a JMS consumer reads them; a message without a group has no group tokens."""
    queue = provider.new_queue()
    produce(provider.url, queue, 1, 2, "--group", "G", openwire=provider.openwire)
    produce(provider.url, queue, 3, 1, openwire=provider.openwire)
    work.properties(**provider.properties(queue))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "3", check=True)
    assert order_tokens(work, "dirdat/sa") == [(None, "G", "1"), (None, "G", "2"), (None, None, None)]
    assert work.msgcap("dump", "--check-order", "dirdat/sa").returncode == 0
