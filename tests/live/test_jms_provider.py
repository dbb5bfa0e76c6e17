"""msgcap's JMS source on real providers through their own client jars (msgcap.sources.jms):
a GoldenGate-style jmsvam.properties (jvm.bootoptions, java.naming.*, jms.connectionFactory,
jms.destination, no jms.url) captures what Java JMS producers send, exactly once."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests import jms_clients
from tests.jms_providers import Provider
from tests.live.conftest import BODY, Work
from tests.live.test_faults import (
    EXPECTED_ORDER,
    durable_messages,
    free_port,
    health,
    ids,
    wait_for,
)

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


# -- faults (issue 34): what the STOMP/AMQP fault tests (test_faults.py) prove, on the JMS path --

POISON = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,{n:010d},{n}\n"


def produce(provider: Provider, destination: str, first: int, count: int, *args: str
            ) -> list[str]:
    """Messages first..first+count-1 (SALES inserts unless ``args`` say otherwise) sent by the
    JMS producer through the provider's client; their JMSMessageIDs."""
    return jms_clients.produce(provider.url, destination, "--first", str(first), "--count",
                               str(count), "--body", BODY, *args, openwire=provider.openwire)


def left(provider: Provider, destination: str, *args: str, browse: bool = True
         ) -> list[dict[str, Any]]:
    """What a JMS consumer sees on ``destination`` (browsed: it stays there)."""
    return jms_clients.consume(provider.url, destination, "--timeout", "500", *args,
                               browse=browse, openwire=provider.openwire)


def texts(seen: list[dict[str, Any]]) -> list[str]:
    return [str(jms_clients.body(m)) for m in seen]


def run(work: Work, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A capture to the end of what waits (``--max-idle 2``)."""
    return work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", *args, check=check)


def kill9(capture: subprocess.Popen[str]) -> None:
    os.kill(capture.pid, signal.SIGKILL)
    capture.wait(timeout=30)


def test_kill9_twice_mid_stream_then_a_run_to_the_end_writes_every_message_once(
        work: Work, provider: Provider) -> None:
    n = 3_000
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    with ThreadPoolExecutor(1) as pool:  # the producer sends while the capture is killed
        sent = pool.submit(produce, provider, queue, 1, n, "--batch", "100")
        killed_at = []
        for part in (1, 2):
            capture = work.start("run", "--prop", str(work.prop))
            try:
                floor = killed_at[-1] if killed_at else 0
                wait_for(lambda floor=floor: durable_messages(work) > floor + 200, 120,
                         f"capture {part} to make progress", capture)
                kill9(capture)
            finally:
                if capture.poll() is None:
                    capture.kill()
            killed_at.append(durable_messages(work))
        assert len(sent.result(timeout=120)) == n
    assert killed_at[-1] < n, f"the capture had everything before the second kill: {killed_at}"
    run(work)
    assert work.seqids() == ids(1, n), EXPECTED_ORDER
    assert left(provider, queue) == []


def test_broker_restart_mid_stream_reconnects_through_the_exception_listener(
        work: Work, provider: Provider) -> None:
    """ActiveMQ is stopped and started, Artemis killed (kill -9) and started: the same capture
    process reconnects with its back-off, and writes every message once."""
    n = 3_000
    queue = provider.new_queue()
    port = free_port()
    # a commit group per message (an acknowledge() and a trail sync each): slow enough for the
    # outage to come mid-stream
    work.properties(**provider.properties(queue), report_http=f"127.0.0.1:{port}",
                    jms_ack_batch=1)
    produce(provider, queue, 1, n, "--batch", "500")
    capture = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: durable_messages(work) >= n // 10, 120, "a tenth of the stream",
                 capture)
        assert health(port) == 200
        assert durable_messages(work) < n, "the capture had everything before the outage"
        (provider.broker.kill if provider.kind == "artemis" else provider.broker.stop)()
        wait_for(lambda: health(port) == 503, 60, "/health to report the outage", capture)
        provider.broker.start()
        produce(provider, queue, n + 1, 500)  # taken by the reconnected capture
        wait_for(lambda: durable_messages(work) >= n + 500, 180, "the whole stream", capture)
        capture.send_signal(signal.SIGTERM)
        assert capture.wait(timeout=60) == 0
    finally:
        if capture.poll() is None:
            capture.kill()
        if not provider.broker.running():
            provider.broker.start()
    assert work.seqids() == ids(1, n + 500), EXPECTED_ORDER
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    assert "reconnecting" in log or "retrying in" in log, log[-3000:]
    assert left(provider, queue) == []


def test_poison_message_abend_keeps_it_queued_then_discard_moves_on(
        work: Work, provider: Provider) -> None:
    queue, dlq = provider.new_queue(), provider.new_queue()
    sent = produce(provider, queue, 1, 4)
    sent += produce(provider, queue, 5, 1, "--body", POISON)
    sent += produce(provider, queue, 6, 5)
    work.properties(**provider.properties(queue), error_policy="abend")
    done = run(work, check=False)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "message " in errors[0] and "NOSUCH" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert work.seqids() == ids(1, 4)
    # the poison message and what follows stay on the queue; 1-4 are in the trail, and may be
    # there too (acknowledge() would have settled the poison message, received in the same
    # batch): then they come again and are skipped as duplicates
    waiting = texts(left(provider, queue))
    assert waiting[-6:] == [POISON.format(n=5)] + [BODY.format(n=n) for n in range(6, 11)]
    # discard: a record in error.file, the rest captured
    work.properties(**provider.properties(queue), error_policy="discard",
                    error_file="dirrpt/SALES.dsc")
    done = run(work)
    assert "discarded 1" in done.stdout
    assert work.seqids() == ids(1, 4) + ids(6, 10)
    records = [json.loads(x) for x in (work.root / "dirrpt" / "SALES.dsc").read_text()
               .splitlines()]
    assert len(records) == 1 and records[0]["message"]["body"] == POISON.format(n=5)
    assert records[0]["message"]["id"] == sent[4] and "NOSUCH" in records[0]["error"]
    assert left(provider, queue) == []
    # discard to error.destination (a JNDI name): a dead letter with the original body
    poison = produce(provider, queue, 11, 1, "--body", POISON, "--prop", "batch=string:B7")
    produce(provider, queue, 12, 1)
    work.properties(**provider.properties(queue, error_destination=dlq), error_policy="discard")
    done = run(work)
    assert "discarded 1" in done.stdout
    assert work.seqids() == ids(1, 4) + ids(6, 10) + ids(12, 12)
    dead = left(provider, dlq, browse=False)
    assert len(dead) == 1 and texts(dead) == [POISON.format(n=11)]
    properties = dead[0]["properties"]
    assert "NOSUCH" in properties["msgcap_error"]  # JMS property names: Java identifiers
    assert properties["msgcap_source_message_id"] == poison[0]
    assert properties["msgcap_source_destination"] == provider.jndi_name(queue)
    assert properties["batch"] == "B7"  # the message's own properties travel with it
    assert left(provider, queue) == []


# the messages msgcap does not capture: JmsProduce's --type, its --entry options, msgcap-body-kind
UNCAPTURED = {"map": (["region=string:EU", "qty=int:{n}", "ok=boolean:true"], "map-json"),
              "stream": (["string:EU", "long:{n}", "double:2.5"], "stream-json"),
              "object": ([], "java-serialized-object")}


def test_messages_msgcap_does_not_capture_are_dead_lettered_as_they_are(
        work: Work, provider: Provider) -> None:
    """A MapMessage, StreamMessage and ObjectMessage under error.policy=discard: each dead
    letter is the same message, as a JMS consumer reads it; captured from the dead-letter queue
    in turn, their discard records keep the content (JSON for a map or a stream) and say what it
    is."""
    queue, dlq = provider.new_queue(), provider.new_queue()
    produce(provider, queue, 1, 1)
    for n, (kind, (entries, _)) in enumerate(UNCAPTURED.items(), start=2):
        produce(provider, queue, n, 1, "--type", kind,
                *[a for e in entries for a in ("--entry", e)])
    produce(provider, queue, 5, 1)
    originals = left(provider, queue)[1:4]
    work.properties(**provider.properties(queue, error_destination=dlq), error_policy="discard")
    assert "discarded 3" in run(work).stdout
    assert work.seqids() == ids(1, 1) + ids(5, 5)
    dead = left(provider, dlq)
    assert [m["class"] for m in dead] == [m["class"] for m in originals]
    for kind, letter, original in zip(UNCAPTURED, dead, originals, strict=True):
        assert letter[kind] == original[kind], kind
        assert letter["properties"]["msgcap_source_message_id"] == original["JMSMessageID"]
    assert left(provider, queue) == []
    # the dead letters captured with error.file: the records of their content
    work.properties(**provider.properties(dlq), error_policy="discard",
                    error_file="dirrpt/SALES.dsc")
    assert "discarded 3" in run(work).stdout
    records = [json.loads(x)["message"] for x in (work.root / "dirrpt" / "SALES.dsc")
               .read_text().splitlines()]
    assert [r["headers"]["msgcap-body-kind"] for r in records] == [
        form for _, form in UNCAPTURED.values()]
    assert [r["headers"]["message-type"] for r in records] == [m["class"] for m in originals]
    assert json.loads(records[0]["body"]) == {"region": "EU", "qty": 2, "ok": True}
    assert json.loads(records[1]["body"]) == ["EU", 3, "2.5"]
    serialized = base64.b64decode(records[2]["body_b64"])  # the String the producer sent
    assert serialized.startswith(b"\xac\xed") and originals[2]["object"].encode() in serialized
    assert left(provider, dlq) == []


def test_a_50000_message_transaction_survives_a_kill9_inside_it(
        work: Work, provider: Provider) -> None:
    """txind B, M x 49,998, E: the open transaction's messages go to the spill journal and are
    acknowledged while it is open; a kill -9 inside it and a restart write it once, whole."""
    if provider.kind != "activemq":  # 50,000 messages through a second provider add ~40 s
        pytest.skip("one provider is enough for the long transaction (ActiveMQ)")
    n, before = 50_000, 30
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    spill = work.root / "dirchk" / "SALES.spill.jsonl"
    # 30 transactions of one message before it: the open transaction's spills fall inside the
    # batches the source receives, unless it receives no further than each spill
    bodies = [work.body(i, "W" if i <= before else "B" if i == before + 1 else
                        "E" if i == n else "M") for i in range(1, n + 1)]
    assert jms_clients.send(provider.url, queue, bodies, batch=5_000,
                            openwire=provider.openwire) == n
    capture = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: spill.exists() and spill.stat().st_size > 10_000 * 100, 120,
                 "10,000 messages in the spill journal", capture)
        kill9(capture)
    finally:
        if capture.poll() is None:
            capture.kill()
    assert work.seqids() == ids(1, before), "the transaction is in the trail once it ends"
    journaled = len(spill.read_text().splitlines())
    checked = work.msgcap("check", "--prop", str(work.prop), check=True)
    assert "(at least 400 messages waiting (browsed: a browser may be shown only the head of " \
           "a long queue)" in checked.stdout.replace("\n", " ")
    done = run(work)
    # spilled messages were acknowledged while the transaction was open: of the journal's,
    # only the last group's come again (skipped as in the journal, counted as duplicates)
    again = int(re.search(r"duplicates (\d+)", done.stdout)[1])  # type: ignore[index]
    assert journaled >= 2_000 and again <= 200, (journaled, again)
    trail = work.trail()
    assert [s for s, _, _ in trail] == ids(1, n), EXPECTED_ORDER
    assert [t for _, t, _ in trail[before:]] == [0] + [1] * (n - before - 2) + [2]
    assert len({x for _, _, x in trail[before:]}) == 1
    assert not spill.exists()
    assert left(provider, queue) == []


def test_a_durable_topic_keeps_what_is_published_while_the_capture_is_killed(
        work: Work, provider: Provider) -> None:
    topic = provider.new_queue().replace("/queue/", "/topic/")
    n = 2_000
    work.properties(**provider.properties(topic))
    run(work)  # the durable subscription (client id and name: trail.extract)
    produce(provider, topic, 1, n, "--batch", "500")
    capture = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: durable_messages(work) >= 200, 120, "the capture to make progress",
                 capture)
        kill9(capture)
    finally:
        if capture.poll() is None:
            capture.kill()
    produce(provider, topic, n + 1, n, "--batch", "500")  # while no capture runs
    run(work)
    assert work.seqids() == ids(1, 2 * n), EXPECTED_ORDER
    assert left(provider, topic, "--client-id", "SALES", "--durable", "SALES",
                browse=False) == []


def test_a_selector_captures_only_what_it_selects(work: Work, provider: Provider) -> None:
    queue = provider.new_queue()
    produce(provider, queue, 1, 8, "--prop", "n=int:{n}")
    work.properties(**provider.properties(queue), jms_selector="n BETWEEN 3 AND 6")
    assert "messages 4" in run(work).stdout
    assert work.seqids() == ids(3, 6)
    assert texts(left(provider, queue)) == [BODY.format(n=n) for n in (1, 2, 7, 8)]


def test_an_open_transaction_holds_back_the_acknowledgement_of_what_came_before(
        work: Work, provider: Provider) -> None:
    """JMS acknowledge() settles every message the session received: with messages 1-5 in the
    trail and 6-7 (an open transaction) only received, acknowledging would settle 6-7 too, and a
    kill -9 would lose them. Nothing is acknowledged: after the kill they come again."""
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    produce(provider, queue, 1, 5)
    produce(provider, queue, 6, 1, "--body", BODY.replace(",W,", ",B,"))
    produce(provider, queue, 7, 1, "--body", BODY.replace(",W,", ",M,"))
    capture = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: durable_messages(work) >= 5, 60, "messages 1-5 in the trail", capture)
        kill9(capture)
    finally:
        if capture.poll() is None:
            capture.kill()
    assert work.seqids() == ids(1, 5)
    assert len(left(provider, queue)) == 7  # nothing acknowledged: 1-5 are skipped at restart
    produce(provider, queue, 8, 1, "--body", BODY.replace(",W,", ",E,"))
    run(work)
    trail = work.trail()
    assert [s for s, _, _ in trail] == ids(1, 8), EXPECTED_ORDER
    assert [t for _, t, _ in trail][5:] == [0, 1, 2]
    assert left(provider, queue) == []
