"""An AMQP 1.0 peer that sends what no well-behaved broker sends (issue 33): a body in several
data sections, a payload that is no AMQP message, bodies of other kinds without a message-id, a
message far over the max-message-size msgcap asked for. A fake broker (``tests.fake_amqp_peer``,
proton on loopback) plays it; msgcap's source and ``msgcap run`` face it. Nothing is accepted in
silence, nothing is lost, an oversized message is never held whole."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time

from proton import Message as ProtonMessage

from msgcap.sources.amqp import AmqpSource
from msgcap.sources.amqp_messages import BODY_KIND, NOT_A_MESSAGE
from msgcap.sources.base import Unreadable
from parsers.model import Message
from tests.conftest import REPO, _free_port
from tests.fake_amqp_peer import FakeBroker, Stream, data_message, encoded, huge_message
from tests.hostile.conftest import wait_for
from tests.live.conftest import Work, body, taken, wait_peak_rss_mb

GARBAGE = b'{"not": "an AMQP message"}'


def _map(**fields: object) -> bytes:
    return encoded(ProtonMessage(body={"not": "a record"}, durable=True, **fields))


def test_every_transfer_is_a_message_or_a_named_message_error() -> None:
    """Several data sections are one body; the rest is Unreadable, named by its message-id,
    else by the property jms.id names, else by its position since connecting, and keeping
    what it held; nothing is accepted before the capture acknowledges it."""
    transfers = [data_message(b"abc", b"def", message_id="ID:m1"), GARBAGE,
                 _map(properties={"SEQNO": "0000000042"}), _map(),
                 _map(id="ID:m5", properties={"SEQNO": "0000000043"})]
    with FakeBroker(transfers) as broker:
        src = AmqpSource([broker.url], "/queue/q", prefetch=10, id_mode="SEQNO")
        src.open()
        try:
            got = taken(src, 5)
            joined, garbage, by_seqno, by_position, by_id = got
            assert isinstance(joined, Message) and joined.body == b"abcdef"
            assert isinstance(garbage, Unreadable) and garbage.message.body == GARBAGE
            assert garbage.message.headers[BODY_KIND] == NOT_A_MESSAGE
            assert garbage.error.source == (f"#2 since connecting to {broker.url} "
                                            "(no message-id)")
            assert isinstance(by_seqno, Unreadable)
            assert str(by_seqno.error).startswith("message SEQNO=0000000042: body: AMQP body "
                                                  "is an amqp-value map")
            assert isinstance(by_position, Unreadable)
            assert by_position.error.source == (f"#4 since connecting to {broker.url} "
                                                "(no message-id)")
            assert isinstance(by_id, Unreadable) and by_id.error.source == "ID:m5"
            for bad in (by_seqno, by_position, by_id):
                assert bad.message.headers[BODY_KIND] == "amqp-value map"
                decoded = ProtonMessage()
                decoded.decode(bad.message.body)
                assert decoded.body == {"not": "a record"}
            time.sleep(0.3)
            assert broker.outcomes == []  # nothing settled yet
            src.ack([joined], [g.message for g in got[1:]])  # type: ignore[union-attr]
            wait_for(lambda: src.receive_many(0.1) == [] and len(broker.outcomes) == 5,
                     "the five acceptances", 10)
            assert broker.outcomes == [(n, "accepted") for n in range(1, 6)]
        finally:
            src.close()


def test_a_message_without_properties_has_no_message_id_of_the_one_before() -> None:
    """A producer that sends no properties section (rhea, a bare data section): its message has
    no message-id, not the previous message's (proton's decode keeps what a payload does not
    set; with jms.id=JMSMessageID the capture would drop it as a redelivery)."""
    transfers = [data_message(b"first", message_id="ID:first"), b"\x00Su\xa0\x06second"]
    with FakeBroker(transfers) as broker:
        src = AmqpSource([broker.url], "/queue/q", prefetch=10)
        src.open()
        try:
            first, second = taken(src, 2)
            assert isinstance(first, Message) and first.id == "ID:first"
            assert isinstance(second, Message) and second.body == b"second"
            assert second.id == "" and "message-id" not in second.headers
        finally:
            src.close()


def test_a_transfer_the_broker_aborts_is_dropped_and_gives_its_credit_back() -> None:
    """A broker that aborts a large delivery half way (AMQP 1.0 §2.6.14): what came of it is
    dropped, nothing is captured of it, and with jms.prefetch=1 the next messages still come."""
    head = huge_message(3_000_000, "ID:aborted-1")
    transfers = [Stream(head.head, head.size, abort_after=2_000_000),
                 data_message(b"next", message_id="ID:m2"), data_message(b"last", message_id="ID:m3")]
    with FakeBroker(transfers) as broker:
        src = AmqpSource([broker.url], "/queue/q", prefetch=1, max_bytes=1_000_000)
        src.open()
        try:
            got: list[Message] = []
            deadline = time.monotonic() + 20
            while len(got) < 2 and time.monotonic() < deadline:
                for message in src.receive_many(0.2):
                    got.append(message)
                    src.ack([message])
            assert [(m.id, m.body) for m in got] == [("ID:m2", b"next"), ("ID:m3", b"last")]
        finally:
            src.close()


def _capture(work: Work, url: str, **props: object) -> subprocess.CompletedProcess[str]:
    work.properties(jms_url=url, jms_destination="/queue/sales", error_policy="discard",
                    **props)
    return work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)


def test_run_discards_what_it_cannot_capture_keeping_the_whole_content(work: Work) -> None:
    """msgcap run: a record split over data sections is captured whole; an undecodable
    payload and a map body go to the discard file with their content as body_b64 and its kind
    named; every message is accepted once recorded."""
    record = body(1).encode()
    transfers = [data_message(record[:7], record[7:], message_id="ID:r1"), GARBAGE,
                 _map(id="ID:poison")]
    with FakeBroker(transfers) as broker:
        done = _capture(work, broker.url)
        wait_for(lambda: len(broker.outcomes) == 3, "the acceptances", 10)
        assert broker.outcomes == [(n, "accepted") for n in range(1, 4)]
    assert "messages 3" in done.stdout and "discarded 2" in done.stdout, done.stdout
    assert work.seqids() == ["0000000001"]
    garbage, poison = [json.loads(line) for line in
                       (work.root / "dirrpt" / "msgcap.dsc").read_text().splitlines()]
    assert "not an AMQP message" in garbage["error"] and garbage["source"].startswith("#2 ")
    assert base64.b64decode(garbage["message"]["body_b64"]) == GARBAGE
    assert garbage["message"]["headers"] == {BODY_KIND: NOT_A_MESSAGE}
    assert "amqp-value map" in poison["error"] and poison["source"] == "ID:poison"
    assert poison["message"]["headers"][BODY_KIND] == "amqp-value map"
    decoded = ProtonMessage()
    decoded.decode(base64.b64decode(poison["message"]["body_b64"]))
    assert decoded.body == {"not": "a record"}


def test_dead_letters_keep_the_whole_content(work: Work) -> None:
    """error.destination: the dead letter of an undecodable payload or a map body holds it as
    its (data) body, with msgcap-body-kind, and names the message that had no id."""
    with FakeBroker([GARBAGE, _map(id="ID:poison")]) as broker:
        _capture(work, broker.url, error_destination="/queue/dead")
        wait_for(lambda: len(broker.outcomes) == 2, "the acceptances", 10)
        letters = broker.received
    assert [address for address, _ in letters] == ["dead", "dead"]
    (_, garbage), (_, poison) = letters
    assert bytes(garbage.body) == GARBAGE and garbage.inferred
    assert garbage.properties[BODY_KIND] == NOT_A_MESSAGE
    assert garbage.properties["msgcap-source-message-id"].startswith("#1 since connecting")
    assert poison.properties[BODY_KIND] == "amqp-value map" and poison.id == "ID:poison"
    decoded = ProtonMessage()
    decoded.decode(bytes(poison.body))
    assert decoded.body == {"not": "a record"}


def test_a_message_far_over_the_max_message_size_is_never_held(work: Work) -> None:
    """A broker that ignores the max-message-size msgcap asks for sends a 150 MiB message:
    the capture reads it past as it comes (peak RSS far below its size), records it as too
    large with its headers, and captures the next message."""
    port = _free_port()
    size = 150 << 20
    peer = subprocess.Popen([sys.executable, "-m", "tests.fake_amqp_peer", str(port), "huge",
                             str(size), body(1)], cwd=REPO, env=work.env())
    try:
        work.properties(jms_url=f"amqp://127.0.0.1:{port}", jms_destination="/queue/sales",
                        error_policy="discard", jms_maxbytes=1 << 20)
        wait_for(lambda: _listening(port), "the fake broker", 20)
        proc = work.start("run", "--prop", str(work.prop), "--max-idle", "10")
        peak = wait_peak_rss_mb(proc)
        assert proc.returncode == 0, (work.root / "run.out").read_text()
    finally:
        peer.kill()
        peer.wait()
    assert peak < 100, f"peak RSS {peak:.0f} MB for a {size >> 20} MiB message"
    out = (work.root / "run.out").read_text()
    assert "messages 2" in out and "discarded 1" in out, out
    assert work.seqids() == ["0000000001"]
    (record,) = [json.loads(line) for line in
                 (work.root / "dirrpt" / "msgcap.dsc").read_text().splitlines()]
    assert record["source"] == "ID:huge-1" and record["position"] == "jms.maxbytes"
    assert f"message of {size} bytes exceeds jms.maxbytes={1 << 20}" in record["error"]
    assert record["message"]["body_b64"] == "" and record["message"]["id"] == "ID:huge-1"


def _listening(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
    except OSError:
        return False
    return True

