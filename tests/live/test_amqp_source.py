"""The AMQP 1.0 source against a real RabbitMQ 3.x (its AMQP 1.0 plugin): body kinds, header
mapping, accept only after ack, close releases, the credit window, selectors refused, dead
letters, durable topics, a refused login, a refused connection retried, send and check."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import proton
import pytest

from msgcap.msgid import header_value
from msgcap.sources.amqp import (
    AmqpSource,
    Connection,
    Node,
    Options,
    existing_node_of,
    node_of,
    outcome,
    parse_urls,
)
from msgcap.sources.amqp import Broker as Peer
from msgcap.sources.amqp_messages import BODY_KIND, amqp_message
from msgcap.sources.base import CONNECTING, Unreadable
from msgcap.sources.broker import Backoff
from parsers.model import Message
from props.errors import MessageError, PropertyError, SourceError
from tests.amqp_client import DurableQueue
from tests.conftest import REPO, Broker, _free_port
from tests.live.conftest import taken

LOGIN = {"user": "guest", "password": "guest"}


@pytest.fixture(scope="module")
def amqp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private RabbitMQ node with its AMQP 1.0 listener: its amqp:// URL."""
    port = _free_port()
    node = Broker(tmp_path_factory.mktemp("rabbitmq-amqp"), _free_port(),
                  {"MSGCAP_BROKER_OWNER": str(os.getpid()), "MSGCAP_AMQP_PORT": str(port)},
                  "rabbitmq")
    node.start()
    try:
        yield f"amqp://127.0.0.1:{port}"
    finally:
        node.stop()


@pytest.fixture
def queue(amqp: str) -> str:
    return f"/queue/test-{uuid.uuid4().hex}"


def _send(url: str, address: str, *messages: Any) -> None:
    """Publish proton messages as any AMQP producer would (not msgcap's own send), each
    confirmed by the broker."""
    conn = Connection(parse_urls([url])[0], Options(mechanisms="PLAIN", **LOGIN))
    try:
        sender = conn.sender(node_of(address, conn.open()))
        for msg in messages:
            assert outcome(conn, sender.send(msg), 10) is None
    finally:
        conn.close()


def _proton(body: Any, **fields: Any) -> Any:
    import proton

    msg = proton.Message(body=body, **fields)
    msg.durable = True
    return msg


def _source(url: str, destination: str, **kwargs: Any) -> AmqpSource:
    kwargs.setdefault("prefetch", 10)
    return AmqpSource([url], destination, **LOGIN, **kwargs)


def no_prefix(raw: str) -> str:
    """The JMSMessageID of a string message-id sent without ``ID:`` (OASIS AMQP JMS Mapping)."""
    return f"ID:AMQP_NO_PREFIX:{raw}"


def _no_more(src: AmqpSource, seconds: float = 1.0) -> bool:
    return not src.receive_many(seconds)


def _utf8_bytes() -> bytes:
    return "caf\u00e9 123".encode()


@pytest.mark.broker
def test_body_kinds_and_headers(amqp, queue) -> None:
    """A data section is bytes even when its bytes are valid UTF-8, an amqp-value string is
    text; a map or a sequence is a message error naming the message and keeping the encoded
    body with its kind; the header fields and application properties resolve as JMS names
    them."""
    sequence = _proton([1, 2], id="seq-1")
    sequence.inferred = True
    data = _proton(_utf8_bytes(), id="ID:data-1", correlation_id=42, subject="Order",
                   creation_time=1700000000.123, reply_to="/queue/replies",
                   properties={"TableName": "SALES.CUSTOMER", "Count": 7, "Flag": True,
                               "Raw": b"\x01\xff"})
    data.inferred = True
    _send(amqp, queue, data, _proton("caf\u00e9", id=uuid.UUID(int=5)),
          _proton({"a": 1}, id="map-1"), sequence, _proton(b"\x00\x01", id="binary-value"))
    src = _source(amqp, queue)
    src.open()
    try:
        got = taken(src, 5)
        first, text, mapped, seq, binary = got
        assert isinstance(first, Message) and first.body == _utf8_bytes()
        assert first.id == "ID:data-1"
        assert header_value(first, "JMSMessageID") == "ID:data-1"
        assert header_value(first, "JMSCorrelationID") == "ID:AMQP_ULONG:42"
        assert header_value(first, "JMSTimestamp") == "1700000000123"
        assert header_value(first, "JMSType") == "Order"
        assert header_value(first, "JMSPriority") == "4"
        assert header_value(first, "JMSDeliveryMode") == "true"
        assert header_value(first, "JMSReplyTo") == "/queue/replies"
        assert first.headers["TableName"] == "SALES.CUSTOMER"
        assert (first.headers["Count"], first.headers["Flag"], first.headers["Raw"]) == (
            "7", "true", "01ff")
        assert isinstance(text, Message) and text.body == "caf\u00e9"
        assert text.id == f"ID:AMQP_UUID:{uuid.UUID(int=5)}"
        for bad, words, sent in ((mapped, "amqp-value map", {"a": 1}),
                                 (seq, "amqp-sequence", [1, 2])):
            assert isinstance(bad, Unreadable) and bad.message.headers[BODY_KIND] == words
            assert isinstance(bad.error, MessageError) and words in str(bad.error)
            assert bad.message.id in str(bad.error)
            kept = proton.Message()
            kept.decode(bad.message.body)
            assert kept.body == sent
        assert isinstance(binary, Message) and binary.body == b"\x00\x01"
        src.ack(got[:2] + [binary], [mapped.message, seq.message])  # type: ignore[union-attr]
        assert src.acknowledged == 5
    finally:
        src.close()


@pytest.mark.broker
def test_accepted_only_after_ack_and_close_releases(amqp, queue) -> None:
    """Messages not acknowledged come back after a reconnect; acknowledged ones do not."""
    _send(amqp, queue, *(_proton(f"m{i}", id=f"id-{i}") for i in range(4)))
    src = _source(amqp, queue)
    src.open()
    try:
        got = taken(src, 4)
        assert [m.body for m in got] == ["m0", "m1", "m2", "m3"]  # type: ignore[union-attr]
        src.ack(got[:2])  # type: ignore[arg-type]
    finally:
        src.close()
    src = _source(amqp, queue)
    src.open()
    try:
        again = taken(src, 2)
        assert [m.id for m in again] == [no_prefix("id-2"), no_prefix("id-3")]  # type: ignore[union-attr]
        assert _no_more(src)
        src.ack(again)  # type: ignore[arg-type]
    finally:
        src.close()
    src = _source(amqp, queue)
    src.open()
    try:
        assert _no_more(src)
    finally:
        src.close()


@pytest.mark.broker
def test_credit_window_bounds_unsettled_deliveries(amqp, queue) -> None:
    """With jms.prefetch=3 the broker delivers 3 messages until some are accepted."""
    _send(amqp, queue, *(_proton(f"m{i}") for i in range(8)))
    src = _source(amqp, queue, prefetch=3)
    src.open()
    try:
        first = taken(src, 3)
        assert len(first) == 3 and _no_more(src)
        src.ack(first[:2])  # type: ignore[arg-type]
        more = taken(src, 2)
        assert [m.body for m in more] == ["m3", "m4"]  # type: ignore[union-attr]
        assert _no_more(src)
    finally:
        src.close()


@pytest.mark.broker
def test_a_subscription_the_broker_refuses_stops_with_one_line(amqp) -> None:
    """A queue RabbitMQ refuses to declare (a reserved name): it ends the attach with an error
    no retry cures, so capture stops saying it, as STOMP does for a refused SUBSCRIBE (not a
    retry every few seconds for ever)."""
    queue = f"/queue/amq.test-{uuid.uuid4().hex}"
    src = _source(amqp, queue)
    with pytest.raises(SourceError) as caught:
        src.open()
    text = str(caught.value)
    assert f"refused the subscription to {queue}" in text and "ACCESS_REFUSED" in text
    assert "\n" not in text


@pytest.mark.broker
def test_a_queue_a_producer_declared_non_durable_is_consumed(amqp, queue) -> None:
    """Another client declared the queue non-durable first: msgcap consumes it as it is
    (``/amq/queue/NAME``), where the durable ``/queue/NAME`` attach was refused (issue 33);
    a queue that does not exist is still declared durable."""
    from proton.utils import BlockingConnection

    other = BlockingConnection(amqp, allowed_mechs="PLAIN", **LOGIN)
    sender = other.create_sender(queue)  # a non-durable terminus declares a transient queue
    sender.send(_proton("first"))
    sender.send(_proton("second"))
    other.close()
    src = _source(amqp, queue)
    src.open()
    try:
        got = taken(src, 2)
        assert [m.body for m in got] == ["first", "second"]  # type: ignore[union-attr]
        src.ack(got)  # type: ignore[arg-type]
        assert _no_more(src)
        assert src.connection.state == "connected"
    finally:
        src.close()
    fresh = f"/queue/test-{uuid.uuid4().hex}"
    src = _source(amqp, fresh)
    src.open()  # not there: declared, durable, on the same connection
    try:
        assert src.connection.state == "connected" and _no_more(src)
    finally:
        src.close()
    durable = BlockingConnection(amqp, allowed_mechs="PLAIN", **LOGIN)
    try:  # a durable attach to it is taken: it was declared durable
        durable.create_receiver(fresh, options=DurableQueue())
    finally:
        durable.close()


@pytest.mark.broker
def test_selector_refused_on_rabbitmq_3_before_consuming(amqp, queue) -> None:
    _send(amqp, queue, _proton("kept"))
    src = _source(amqp, queue, selector="color = 'red'")
    with pytest.raises(PropertyError, match="jms.selector") as caught:
        src.open()
    assert "RabbitMQ/3.10" in str(caught.value)
    src = _source(amqp, queue)
    src.open()
    try:
        assert [m.body for m in taken(src, 1)] == ["kept"]  # type: ignore[union-attr]
    finally:
        src.close()


@pytest.mark.broker
def test_dead_letter_confirmed_before_the_original_is_accepted(amqp, queue) -> None:
    """The dead letter arrives with the original's body kind and headers plus msgcap-error*;
    when the broker refuses it, the original stays on the queue."""
    dead = f"/queue/dead-{uuid.uuid4().hex}"
    data = _proton(b"\xc3\xa9", id="bad-1", properties={"TableName": "T"})
    data.inferred = True
    _send(amqp, queue, data)
    src = _source(amqp, queue)
    src.open()
    try:
        (bad,) = taken(src, 1)
        assert isinstance(bad, Message)
        src.dead_letters(dead).write(bad, MessageError("no such table", position="line 1"))
        src.ack([], [bad])
    finally:
        src.close()
    src = _source(amqp, dead)
    src.open()
    try:
        (letter,) = taken(src, 1)
        assert isinstance(letter, Message) and letter.body == b"\xc3\xa9"
        assert letter.headers["TableName"] == "T" and letter.id == no_prefix("bad-1")  # the same id, sent back
        assert letter.headers["msgcap-error"] == "no such table"
        assert letter.headers["msgcap-error-position"] == "line 1"
        assert letter.headers["msgcap-source-destination"] == queue
        assert letter.headers["persistent"] == "true"
        src.ack([letter])
    finally:
        src.close()


@pytest.mark.broker
def test_text_content_types_decode_in_their_charset(amqp, queue) -> None:
    """A data section whose content-type is text/* is text in its charset (UTF-8 when it names
    none), as a JMS consumer reading it as text would see it; a charset Python does not know, or
    bytes that are not that text, is a message error naming the message and keeping the bytes."""
    latin = "\u00c4\u00d6\u00dc\u00e4\u00f6\u00fc\u00df\u00e9\u00e8\u00e0"
    sent = [("text/plain;charset=iso-8859-1", latin.encode("latin-1"), "latin-1"),
            ("text/plain", "caf\u00e9".encode(), "utf-8"),
            ("text/plain;charset=no-such-set", b"abc", "unknown"),
            ("text/plain;charset=utf-8", b"\xff\xfe", "bad")]
    messages = []
    for content_type, data, name in sent:
        msg = _proton(data, id=name)
        msg.inferred = True
        msg.content_type = proton.symbol(content_type)
        messages.append(msg)
    _send(amqp, queue, *messages)
    src = _source(amqp, queue)
    src.open()
    try:
        got = taken(src, 4)
        latin_text, utf8_text, unknown, bad = got
        assert isinstance(latin_text, Message) and latin_text.body == latin
        assert isinstance(utf8_text, Message) and utf8_text.body == "caf\u00e9"
        for refused, data, words in ((unknown, b"abc", "no character set no-such-set"),
                                     (bad, b"\xff\xfe", "byte 0 of the body is not utf-8")):
            assert isinstance(refused, Unreadable) and words in str(refused.error)
            assert f"message {refused.message.id}" in str(refused.error)
            assert refused.message.body == data
        src.ack(got[:2], [unknown.message, bad.message])  # type: ignore[union-attr]
    finally:
        src.close()


@pytest.mark.broker
def test_dead_letter_of_a_map_body_keeps_it(amqp, queue, work) -> None:
    """msgcap run with error.destination: a map body's dead letter holds the encoded body
    section as its data, its kind in msgcap-body-kind, and names a message without message-id
    by the property jms.id names."""
    dead = f"/queue/dead-{uuid.uuid4().hex}"
    work.properties(jms_url=amqp, jms_destination=queue, error_policy="discard",
                    error_destination=dead, jms_id="SEQNO")
    _send(amqp, queue, _proton({"not": "a record"}, properties={"SEQNO": "0000000007"}))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    src = _source(amqp, dead)
    src.open()
    try:
        (letter,) = taken(src, 1)
        assert isinstance(letter, Message) and letter.headers[BODY_KIND] == "amqp-value map"
        assert letter.headers["msgcap-source-message-id"] == "SEQNO=0000000007"
        assert letter.headers["SEQNO"] == "0000000007"
        kept = proton.Message()
        kept.decode(letter.body)
        assert kept.body == {"not": "a record"}
        src.ack([letter])
    finally:
        src.close()
    assert not _holds_a_message(amqp, queue)  # the original was accepted


def _holds_a_message(url: str, address: str) -> bool:
    """Whether ``address`` still holds a message."""
    src = _source(url, address)
    src.open()
    try:
        return not _no_more(src)
    finally:
        src.close()


@pytest.mark.broker
def test_dead_letter_refused_leaves_the_original(amqp, queue) -> None:
    """An address the broker refuses (RabbitMQ 3.x: no /exchange/missing) is a failure in
    words; the original, not accepted, comes back."""
    _send(amqp, queue, _proton("poison", id="p-1"))
    src = _source(amqp, queue)
    src.open()
    try:
        (bad,) = taken(src, 1)
        with pytest.raises(SourceError, match="did not confirm message ID:AMQP_NO_PREFIX:p-1.*stays on the queue"):
            src.dead_letters(f"/exchange/missing-{uuid.uuid4().hex}").write(
                bad, MessageError("bad"))  # type: ignore[arg-type]
    finally:
        src.close()
    src = _source(amqp, queue)
    src.open()
    try:
        assert [m.id for m in taken(src, 1)] == [no_prefix("p-1")]  # type: ignore[union-attr]
    finally:
        src.close()


@pytest.mark.broker
def test_durable_topic_refused_on_rabbitmq_3_at_start(amqp) -> None:
    """RabbitMQ 3.x gives each attach of /topic/X a new amq.gen queue: no subscription would
    outlive a disconnect, so capture refuses to start instead of losing messages."""
    src = _source(amqp, f"/topic/test-{uuid.uuid4().hex}", client_id="SALES")
    with pytest.raises(PropertyError, match="jms.destination") as caught:
        src.open()
    assert "amq.topic" in str(caught.value) and "\n" not in str(caught.value)


def test_addresses_per_broker() -> None:
    """RabbitMQ 3.x: the address as written, queues durable as STOMP declares them, an existing
    queue's address that never declares it; other brokers: the bare name with the capability, a
    topic as a durable subscription."""
    rabbit3, artemis = Peer("RabbitMQ", "3.10.8"), Peer("apache-activemq-artemis", "2.31")
    assert node_of("/queue/orders", rabbit3) == Node("/queue/orders", "queue", 1)
    assert node_of("/topic/prices", artemis, subscribe=True) == Node("prices", "topic", 2)
    assert node_of("/topic/prices", artemis) == Node("prices", "topic", 0)
    assert node_of("/queue/orders/Subscriptions/msgcap", Peer("ServiceBus", "")) == Node(
        "orders/Subscriptions/msgcap", "queue", 0)
    rabbit4 = Peer("RabbitMQ", "4.0.5")
    assert node_of("/queue/orders/eu", rabbit4) == Node("/queues/orders%2Feu", "queue", 0)
    assert node_of("/queue//exchanges/amq.topic/k", rabbit4) == Node(
        "/exchanges/amq.topic/k", "queue", 0)
    # consumed only if it exists: RabbitMQ 3.x's /amq/queue/NAME, of a plain queue name only
    assert existing_node_of("/queue/orders", rabbit3) == Node("/amq/queue/orders", "queue", 0)
    for destination in ("/queue/orders/eu", "/topic/prices", "orders"):
        assert existing_node_of(destination, rabbit3) is None
    assert existing_node_of("/queue/orders", rabbit4) is None


@pytest.mark.broker
def test_wrong_password_is_one_line_and_never_the_password(amqp, queue) -> None:
    src = AmqpSource([amqp], queue, user="guest", password="s3cret-wrong")
    with pytest.raises(SourceError) as caught:
        src.open()
    text = str(caught.value)
    assert "refused the login (SASL PLAIN)" in text and "s3cret-wrong" not in text
    assert "\n" not in text


@pytest.mark.broker
def test_refused_connection_is_retried_with_backoff(amqp, queue) -> None:
    """Nothing listens on the first URL: the failure is in words, the state connecting, and
    the next attempt (after the back-off) reaches the second URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"amqp://127.0.0.1:{s.getsockname()[1]}"
    _send(amqp, queue, _proton("after failover"))
    src = AmqpSource([dead, amqp], queue, **LOGIN,
                     backoff=Backoff(first=0.2, jitter=0.0))
    src.open()
    try:
        state = src.connection
        assert (state.state, state.error) == (CONNECTING, "connection refused")
        assert taken(src, 1, timeout=10)[0].body == "after failover"  # type: ignore[union-attr]
        assert src.connected
    finally:
        src.close()


def test_amqp_message_kinds_and_fields() -> None:
    """What msgcap publishes: bytes a data section, text an amqp-value string, message-id in
    its field, the broker's headers left out, persistent unless said otherwise."""
    out = amqp_message(Message("x", {"message-id": "ID:7", "destination": "/queue/q",
                                     "timestamp": "1", "persistent": "false", "k": "v"},
                               b"\x00"), {"msgcap-error": "e"})
    assert out.inferred and out.body == b"\x00" and out.id == "ID:7" and not out.durable
    assert out.properties == {"k": "v", "msgcap-error": "e"}
    text = amqp_message(Message("y", {}, "t"))
    assert not text.inferred and text.body == "t" and text.durable and text.id is None


@pytest.mark.broker
def test_send_over_amqp_round_trip(amqp, queue, work) -> None:
    """msgcap send: bytes (valid UTF-8 too) as a data section, text as an amqp-value string,
    headers as application properties, message-id in its field; the confirmed count."""
    import base64
    import json

    work.properties(jms_url=amqp, jms_destination=queue)
    dump = work.root / "in.jsonl"
    dump.write_text("\n".join(json.dumps(e) for e in (
        {"id": "t", "headers": {"message-id": "ID:t-1", "JMSTxId": "TX-7"}, "body": "caf\u00e9"},
        {"id": "b", "headers": {"persistent": "false"},
         "body_b64": base64.b64encode(_utf8_bytes()).decode()},
    )) + "\n")
    done = work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    assert f"sent 2 messages to {amqp} {queue}" in done.stdout
    src = _source(amqp, queue)
    src.open()
    try:
        text, data = taken(src, 2)
        assert isinstance(text, Message) and text.body == "caf\u00e9" and text.id == "ID:t-1"
        assert text.headers["JMSTxId"] == "TX-7" and text.headers["persistent"] == "true"
        assert isinstance(data, Message) and data.body == _utf8_bytes()
        assert "persistent" not in data.headers
        src.ack([text, data])
    finally:
        src.close()


@pytest.mark.broker
def test_send_over_amqp_refused_says_how_many_were_confirmed(amqp, work) -> None:
    """A destination the broker refuses: one line, no traceback, nothing confirmed."""
    work.properties(jms_url=amqp, jms_destination=f"/exchange/missing-{uuid.uuid4().hex}")
    dump = work.dump("in.txt", ["a", "b"])
    done = work.msgcap("send", "--prop", str(work.prop), "--lines", str(dump))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "refused" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.broker
def test_check_over_amqp_consumes_nothing(amqp, queue, work) -> None:
    _send(amqp, queue, _proton("stays", id="s-1"))
    work.properties(jms_url=amqp, jms_destination=queue)
    done = work.msgcap("check", "--prop", str(work.prop))
    assert done.returncode == 0, done.stderr
    assert (f"source {amqp}: connected to RabbitMQ/3.10.8, subscribed to {queue} (it exists, "
            "1 message waiting); disconnected, nothing consumed") in done.stdout
    src = _source(amqp, queue)
    src.open()
    try:
        assert [m.id for m in taken(src, 1)] == [no_prefix("s-1")]  # type: ignore[union-attr]
    finally:
        src.close()
    work.properties(jms_url=amqp, jms_destination=queue, jms_selector="a = 1")
    done = work.msgcap("check", "--prop", str(work.prop))
    assert done.returncode == 2 and "jms.selector" in done.stderr


@pytest.mark.broker
def test_send_then_run_over_amqp_captures_everything_once(amqp, queue, work) -> None:
    """msgcap run from an AMQP queue: every message in the trail in order, all accepted (a
    second run finds nothing); a poison message (a map body) discarded by error.policy."""
    import base64
    import json

    work.properties(jms_url=amqp, jms_destination=queue, error_policy="discard")
    dump = work.dump("in.jsonl", [work.body(i) for i in range(1, 301)])
    work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    _send(amqp, queue, _proton({"not": "a record"}, id="poison-1"))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 301" in done.stdout, done.stdout + done.stderr
    assert [s for s, _, _ in work.trail()] == [f"{i:010d}" for i in range(1, 301)]
    (record,) = [json.loads(line) for line in
                 (work.root / "dirrpt" / "msgcap.dsc").read_text().splitlines()]
    assert "amqp-value map" in record["error"] and record["message"]["id"] == no_prefix("poison-1")
    assert record["message"]["headers"][BODY_KIND] == "amqp-value map"
    kept = proton.Message()
    kept.decode(base64.b64decode(record["message"]["body_b64"]))
    assert kept.body == {"not": "a record"}
    again = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 0" in again.stdout


@pytest.mark.broker
def test_kill9_holding_part_of_a_transaction_loses_nothing(amqp, queue, work) -> None:
    """msgcap asks for unsettled deliveries (RabbitMQ agrees): a capture killed while it holds
    3 of a transaction's 4 messages leaves them on the queue, and the next run writes the
    whole transaction once."""
    import signal

    from tests.hostile.conftest import wait_for

    work.properties(jms_url=amqp, jms_destination=queue, jms_user="guest",
                    jms_password="guest")
    _send(amqp, queue, *(_proton(work.body(n, "B" if n == 1 else "M"), id=f"tx-{n}")
                         for n in range(1, 4)))
    capture = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: "running" in work.msgcap("status", "--prop", str(work.prop)).stdout,
                 "the capture running", 60)
        time.sleep(3)  # the three are delivered and held by the open transaction
    finally:
        os.kill(capture.pid, signal.SIGKILL)
        capture.wait()
    _send(amqp, queue, _proton(work.body(4, "E"), id="tx-4"))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert work.seqids() == [f"{n:010d}" for n in range(1, 5)]


@pytest.mark.parametrize("command", ["run", "send", "check"])
def test_without_the_amqp_client_an_amqp_url_is_one_line_saying_how_to_install_it(
        tmp_path, command) -> None:
    """A runtime-only install (no ``msgcap[amqp]``): run, send and check say what to install,
    in one line with exit status 2, not a traceback."""
    prop = tmp_path / "jmsvam.properties"
    (tmp_path / "x.def").write_text("")
    prop.write_text("parser.type=delim\ndelim.sourcedefs=x.def\ndelim.header=optype,schemaandtable\n"
                    "trail.path=dirdat/aa\njms.url=amqp://127.0.0.1:5672\njms.destination=q\n")
    dump = tmp_path / "one.jsonl"
    dump.write_text('{"id": "1", "body": "x"}\n')
    args = {"run": ["run", "--prop", str(prop), "--max-idle", "1"],
            "send": ["send", "--prop", str(prop), str(dump)],
            "check": ["check", "--prop", str(prop)]}[command]
    blocked = ("import sys; sys.modules['proton'] = sys.modules['cproton'] = None; "
               "from msgcap.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", blocked, *args], cwd=tmp_path, check=False,
                          text=True,
                          capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 2, done.stderr
    assert "pip install 'msgcap[amqp]'" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
