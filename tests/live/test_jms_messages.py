"""Messages as the JMS API gives them, through a provider's own client (msgcap.sources.jms):
what msgcap's JMS source takes of messages Java producers sent equals what a JMS application
reads of the same messages (JmsConsume browsing them, tests/java, is the oracle), header by
header and property by property; TextMessage and BytesMessage bodies as sent; a Map, Stream,
Object or body-less Message a message error keeping its content; a body over jms.maxbytes a
message error without it. A JPype JVM is one per process and its class path is fixed, so the
source runs in a subprocess of its own per capture (``capture``)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import jms_clients
from tests.conftest import Broker
from tests.jms_providers import Provider
from tests.live.conftest import Work

pytestmark = pytest.mark.broker

# msgcap's source in its own process: N messages taken, none acknowledged (they go back to the
# queue when it closes), one JSON line each.
CAPTURE = """
import base64, json, sys
from msgcap.msgid import header_value
from msgcap.sources import source_for
from msgcap.sources.base import Unreadable
from props.loader import load_settings
from tests.live.conftest import taken

NAMES = sys.argv[3].split(",")
source = source_for(load_settings(sys.argv[1]))
source.open()
try:
    for item in taken(source, int(sys.argv[2])):
        message = item.message if isinstance(item, Unreadable) else item
        body = message.body
        print(json.dumps({
            "headers": message.headers, "id": message.id, "namespace": source.namespace,
            "jms": {name: header_value(message, name) for name in NAMES},
            "error": str(item.error) if isinstance(item, Unreadable) else None,
            "text": body if isinstance(body, str) else None,
            "bytes": None if isinstance(body, str) else base64.b64encode(body).decode()}))
finally:
    source.close()
"""

# JMS header fields as JmsConsume prints them (getJMS...()), and the JMSX properties (a
# browser's JMSXDeliveryCount is no delivery's: Artemis says 0, ActiveMQ the next one's, so
# msgcap's is compared with a consumer's, test_headers_and_properties_...)
FIELDS = ("JMSMessageID", "JMSCorrelationID", "JMSTimestamp", "JMSType", "JMSPriority",
          "JMSExpiration", "JMSRedelivered")
JMSX = ("JMSXGroupID", "JMSXGroupSeq")


def capture(work: Work, count: int) -> list[dict[str, Any]]:
    """What msgcap's JMS source takes of the first ``count`` messages (not acknowledged)."""
    done = subprocess.run([sys.executable, "-c", CAPTURE, str(work.prop), str(count),
                           ",".join(FIELDS + JMSX + ("JMSXDeliveryCount", "JMSDeliveryMode",
                                                     "JMSReplyTo"))],
                          cwd=work.root, env=work.env(), capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    got = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(got) == count, (got, done.stderr[-4000:])
    return got


def browse(provider: Provider, queue: str) -> list[dict[str, Any]]:
    """What a JMS application sees of every message on ``queue`` (a QueueBrowser)."""
    return jms_clients.consume(provider.url, queue, "--timeout", "1000", browse=True,
                               openwire=provider.openwire)


def as_text(value: object) -> str | None:
    """A JmsConsume value as msgcap's headers render it (JMS's getters, as text)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def assert_same(taken: dict[str, Any], seen: dict[str, Any], *, reply_to: str | None = None
                ) -> None:
    """msgcap's message ``taken`` is the JMS application's ``seen``, by JMS name."""
    jms = taken["jms"]
    for name in FIELDS + JMSX:
        assert jms[name] == as_text(seen[name]), (name, jms[name], seen[name])
    assert taken["id"] == seen["JMSMessageID"]
    assert jms["JMSDeliveryMode"] == ("true" if seen["JMSDeliveryMode"] == 2 else None)
    assert jms["JMSReplyTo"] == reply_to
    assert taken["headers"]["message-type"] == seen["class"]
    for name, value in seen["properties"].items():  # every property under its own name
        if name != "JMSXDeliveryCount":
            assert taken["headers"].get(name) == value, (name, taken["headers"].get(name), value)


def test_headers_and_properties_are_what_a_jms_consumer_reads(work: Work,
                                                              provider: Provider) -> None:
    queue, replies = provider.new_queue(), provider.new_queue()
    work.properties(**provider.properties(queue))
    sent = jms_clients.produce(
        provider.url, queue, "--count", "2", "--body", "h\u00e9llo {n} \u20ac \U0001f600",
        "--prop", "Region=string:EU-{n}", "--prop", "Count=int:{n}", "--prop",
        "Flag=boolean:true", "--prop", "Ratio=double:1.5", "--prop", "Scale=float:2.5",
        "--prop", "Small=short:-7", "--prop", "Tiny=byte:3", "--prop", "Big=long:9000000000",
        "--group", "G-{n}", "--correlation-id", "corr-{n}", "--jms-type", "Order",
        "--priority", "7", "--reply-to", replies, "--ttl", "600000",
        openwire=provider.openwire)
    first = browse(provider, queue)
    taken = capture(work, 2)
    assert [m["id"] for m in taken] == sent
    for got, seen in zip(taken, first, strict=True):
        assert_same(got, seen, reply_to=replies)
        assert got["text"] == seen["text"]
        assert got["jms"]["JMSRedelivered"] == "false" and got["jms"]["JMSXDeliveryCount"] == "1"
    assert [m["text"] for m in taken] == [f"h\u00e9llo {n} \u20ac \U0001f600" for n in (1, 2)]
    assert [m["headers"]["Region"] for m in taken] == ["EU-1", "EU-2"]
    assert taken[0]["jms"]["JMSXGroupID"] == "G-1" and taken[1]["jms"]["JMSXGroupSeq"] == "2"

    # not acknowledged: delivered again, and then a third time to a JMS consumer (a browser
    # is no delivery: Artemis's says JMSRedelivered false)
    again = capture(work, 2)
    third = jms_clients.consume(provider.url, queue, "--timeout", "1000",
                                openwire=provider.openwire)
    for got, seen in zip(again, third, strict=True):
        assert_same(got, seen, reply_to=replies)
        assert got["jms"]["JMSRedelivered"] == "true" and got["jms"]["JMSXDeliveryCount"] == "2"
        assert seen["JMSXDeliveryCount"] == "3"


def test_a_bytes_message_is_its_bytes(work: Work, provider: Provider, tmp_path: Path) -> None:
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    data = bytes(range(256)) + "caf\u00e9".encode("latin-1")
    (tmp_path / "body").write_bytes(data)
    jms_clients.produce(provider.url, queue, "--type", "bytes", "--body-file",
                        str(tmp_path / "body"), "--prop", "TableName=string:SALES.CUSTOMER",
                        openwire=provider.openwire)
    [seen] = browse(provider, queue)
    [got] = capture(work, 1)
    assert_same(got, seen)
    assert got["error"] is None and got["text"] is None
    assert base64.b64decode(got["bytes"]) == data == base64.b64decode(seen["bytes"])
    assert got["headers"]["TableName"] == "SALES.CUSTOMER"


def test_other_message_kinds_are_message_errors_keeping_their_content(
        work: Work, provider: Provider) -> None:
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    for args in (("--type", "map", "--entry", "id=int:42", "--entry", "name=string:caf\u00e9",
                  "--entry", "ok=boolean:true"),
                 ("--type", "stream", "--entry", "int:1", "--entry", "string:two",
                  "--entry", "long:3"),
                 ("--type", "object", "--body", "an object {n}"),
                 ("--type", "message", "--prop", "Only=string:headers")):
        jms_clients.produce(provider.url, queue, *args, openwire=provider.openwire)
    seen = browse(provider, queue)
    taken = capture(work, 4)
    for got, oracle in zip(taken, seen, strict=True):
        assert_same(got, oracle)
    mapped, stream, obj, bare = taken
    expected = [(mapped, "MapMessage", "map-json"), (stream, "StreamMessage", "stream-json"),
                (obj, "ObjectMessage", "java-serialized-object"),
                (bare, "Message without a body", None)]
    for got, what, form in expected:
        assert got["error"] == (f"message {got['id']}: body: a JMS {what}: only TextMessage "
                                "and BytesMessage records can be captured")
        assert got["headers"].get("msgcap-body-kind") == form
    # a map and a stream as JSON text, an object as the bytes of its Java serialization
    assert json.loads(mapped["text"]) == {"id": 42, "name": "caf\u00e9", "ok": True}
    assert json.loads(stream["text"]) == [1, "two", 3]
    assert obj["text"] is None and bare["text"] is None
    serialized = base64.b64decode(obj["bytes"])
    assert serialized.startswith(b"\xac\xed\x00\x05t") and serialized.endswith(b"an object 1")
    assert bare["bytes"] == "" and bare["headers"]["Only"] == "headers"


def test_a_body_over_jms_maxbytes_is_a_message_error_without_it(work: Work,
                                                                provider: Provider) -> None:
    queue = provider.new_queue()
    work.properties(**provider.properties(queue), jms_maxbytes=1000)
    big, small = "x" * 999 + "\u00e9", "y" * 1000  # 1001 bytes in UTF-8, and 1000
    jms_clients.send(provider.url, queue, [big, big.encode(), small, small.encode()],
                     openwire=provider.openwire)
    taken = capture(work, 4)
    for got in taken[:2]:
        assert got["error"] == (f"message {got['id']}: jms.maxbytes: message of 1001 bytes "
                                "exceeds jms.maxbytes=1000"), got
        assert got["bytes"] == "" and got["headers"]["message-type"] in ("TextMessage",
                                                                          "BytesMessage")
    assert taken[2]["error"] is None and taken[2]["text"] == small
    assert taken[3]["error"] is None and base64.b64decode(taken[3]["bytes"]) == small.encode()


def test_a_jakarta_messaging_client_works_the_same(work: Work, artemis_amqp: Broker) -> None:
    """Artemis's jakarta.jms client-all jar: the bridge is compiled for jakarta.jms."""
    provider = Provider("artemis-jakarta", artemis_amqp)
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    sent = jms_clients.produce(provider.url, queue, "--count", "2", "--body", "caf\u00e9 {n}",
                               "--prop", "Count=int:{n}", "--correlation-id", "c-{n}")
    jms_clients.produce(provider.url, queue, "--type", "bytes", "--body", "raw")
    seen = browse(provider, queue)
    taken = capture(work, 3)
    assert {m["namespace"] for m in taken} == {"jakarta.jms"}
    assert [m["id"] for m in taken[:2]] == sent
    for got, oracle in zip(taken, seen, strict=True):
        assert_same(got, oracle)
    assert [m["text"] for m in taken[:2]] == ["caf\u00e9 1", "caf\u00e9 2"]
    assert base64.b64decode(taken[2]["bytes"]) == b"raw"
