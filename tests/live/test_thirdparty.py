"""Real third-party producers against a real JMS consumer (issue 33): every message goes to two
queues, msgcap captures one copy and a JMS consumer (tests/java JmsConsume) reads the other, and
every JMS header field, the message class and every property msgcap gives (``$NAME`` through
``props.jmsnames``, ``msgcap.msgid.header_value``) must be what the JMS consumer saw; end to end,
``msgcap run`` puts ``$NAME`` values into the trail's tokens (and the body's values into its
columns), read back with ``msgcap dump --json``.

* AMQP 1.0 on Artemis: rhea and rhea-promise (tests/node/amqp_producer.js), read by Qpid JMS.
* STOMP on ActiveMQ: stompit, @stomp/stompjs (over a TCP shim) and stomp.py
  (tests/node/stomp_producer.js, ``stomp_py_produce``) to a composite destination
  ``/queue/A,/queue/B``, read by ActiveMQ's own OpenWire JMS client.
* STOMP on RabbitMQ, which has no JMS consumer: the values RabbitMQ's STOMP documentation gives.

The npm packages are pinned by tests/node/package-lock.json (scripts/node-clients.sh).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import uuid
from typing import Any

import pytest

from msgcap.msgid import header_value
from parsers.model import Message
from props.jmsnames import TABLE
from tests import jms_clients
from tests.conftest import REPO, Broker
from tests.live.conftest import Work

pytestmark = pytest.mark.broker

# The JMS header fields (and JMSX properties) JmsConsume prints, by the names of §2.2.
JMS_FIELDS = ("JMSMessageID", "JMSCorrelationID", "JMSTimestamp", "JMSType", "JMSPriority",
              "JMSExpiration", "JMSRedelivered", "JMSReplyTo", "JMSXGroupID", "JMSXGroupSeq",
              "JMSXUserID", "JMSXDeliveryCount")
# Header keys of the table: what msgcap gives besides the application properties.
TABLE_KEYS = {row.header.lower() for row in TABLE}
# AMQP types Qpid JMS hands out as their own Java objects, which getStringProperty refuses
# ("cannot be read as a java.lang.String"): no JMS property type. msgcap gives their text
# (§2.2), which a JMS application gets from String.valueOf(getObjectProperty(name)).
QPID_JMS_REFUSED = {"Character", "Symbol", "Date", "UnsignedByte", "UnsignedShort",
                    "UnsignedInteger", "UnsignedLong", "UUID"}


def node(script: str, *args: str) -> str:
    """Run tests/node/SCRIPT with the pinned npm packages: its stdout."""
    done = subprocess.run(["bash", str(REPO / "scripts" / "node-clients.sh"), "run", script,
                           *args], cwd=REPO, capture_output=True, text=True, check=False,
                          timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"{script} {' '.join(args)} failed ({done.returncode}):\n"
                             f"{done.stdout}{done.stderr}")
    return done.stdout


def seq_of(body: str | bytes) -> int:
    """The message number: the id column of its SALES.CUSTOMER insert."""
    text = body if isinstance(body, str) else body.decode("latin-1")
    return int(text.split(",")[5])


def jms_text(seen: dict[str, Any]) -> str:
    """The body a JMS consumer read, as text (a BytesMessage's bytes as UTF-8, else Latin-1)."""
    body = jms_clients.body(seen)
    if isinstance(body, str):
        return body
    try:
        return body.decode()
    except UnicodeDecodeError:  # a BytesMessage of latin-1 text (its content-type says so)
        return body.decode("latin-1")


def jms_view(seen: dict[str, Any], refused_types: set[str]) -> dict[str, str | None]:
    """What a JMS application reads of one message: each header field, the class, every
    property by getStringProperty; a property whose Java class is in ``refused_types`` (which
    the provider refuses to read as a String: asserted) by String.valueOf of its object."""
    view: dict[str, str | None] = {
        name: None if seen[name] is None else str(seen[name]).lower()
        if isinstance(seen[name], bool) else str(seen[name]) for name in JMS_FIELDS}
    view["message-type"] = seen["class"]
    # JMSDeliveryMode keeps STOMP's rendering (§2.2): PERSISTENT (2) is "true", else no value
    view["JMSDeliveryMode"] = {2: "true", 1: None}[seen["JMSDeliveryMode"]]
    types = seen["propertyTypes"]
    refused = {n for n, t in types.items() if t in refused_types}
    assert set(seen["refusedProperties"]) == refused, seen["refusedProperties"]
    for name in types:
        view[name] = seen["propertyObjects" if name in refused else "properties"][name]
    return view


def msgcap_view(message: Message, names: list[str]) -> dict[str, str | None]:
    """msgcap's value of each name, as ``$NAME`` resolves it."""
    return {name: header_value(message, name) for name in names}


def archived(work: Work) -> list[Message]:
    """The messages ``msgcap run`` archived (``archive.dir=dirarc``), as captured."""
    out = []
    for path in sorted((work.root / "dirarc").iterdir()):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            body = entry["body"] if "body" in entry else base64.b64decode(entry["body_b64"])
            out.append(Message(entry["id"], entry.get("headers", {}), body))
    return out


def dumped(work: Work, trail: str) -> list[dict[str, Any]]:
    """``msgcap dump --json`` of a trail: its data records."""
    done = work.msgcap("dump", "--json", "--defs", "dirdef/sales.def", trail, check=True)
    return [r for r in map(json.loads, done.stdout.splitlines()) if r.get("kind") == "record"]


def token_names(view: dict[str, str | None]) -> list[str]:
    """The names to carry into the trail: every one but the message class (no ``$`` name)."""
    return [n for n in view if n != "message-type"]


def compare_end_to_end(work: Work, broker: Broker, queue: str,
                       jms: dict[int, dict[str, str | None]], texts: dict[int, str]) -> None:
    """``msgcap run`` of ``queue`` (archived), then the archive replayed once for each pair of
    names as ``delim.txname`` / ``delim.txowner``: every TXNAME and TXOWNER token holds the JMS
    consumer's value (no token for a null), every column the JMS body's value."""
    names = sorted({n for view in jms.values() for n in token_names(view)})
    pairs = [names[i:i + 2] for i in range(0, len(names), 2)]
    first, *rest = pairs
    work.properties(jms_url=broker.url, jms_destination=queue, archive_dir="dirarc",
                    delim_txname=f"${first[0]}", delim_txowner=f"${first[-1]}")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert f"messages {len(jms)}" in done.stdout, done.stdout
    records = dumped(work, "dirdat/sa")
    assert sorted(int(r["tokens"]["VAMSEQID"]) for r in records) == sorted(jms)
    for record in records:
        n = int(record["tokens"]["VAMSEQID"])
        assert [str(c["value"]) for c in record["columns"]][:2] == \
            texts[n].rstrip("\n").split(",")[5:7], record
    check_tokens(records, jms, first)
    for i, pair in enumerate(rest):
        trail = f"dirdat/r{i % 10}"
        prop = work.root / "dirprm" / f"replay{i}.properties"
        prop.write_text(work.prop.read_text().replace("trail.path=dirdat/sa", f"trail.path={trail}")
                        .replace(f"delim.txname=${first[0]}", f"delim.txname=${pair[0]}")
                        .replace(f"delim.txowner=${first[-1]}", f"delim.txowner=${pair[-1]}"))
        work.msgcap("replay", "--prop", str(prop), "dirarc", check=True)
        check_tokens(dumped(work, trail), jms, pair)
        for old in (work.root / "dirdat").glob(f"r{i % 10}*"):
            old.unlink()
        for old in (work.root / "dirchk").glob("*"):
            if old.is_file():
                old.unlink()


def check_tokens(records: list[dict[str, Any]], jms: dict[int, dict[str, str | None]],
                 pair: list[str]) -> None:
    got = {int(r["tokens"]["VAMSEQID"]): (r["tokens"].get("TXNAME"), r["tokens"].get("TXOWNER"))
           for r in records}
    want = {n: (dump_text(view.get(pair[0])), dump_text(view.get(pair[-1])))
            for n, view in jms.items()}
    assert got == want, pair


def dump_text(value: str | None) -> str | None:
    """A token as ``msgcap dump --json`` shows it: its text, as hex when not printable
    (trail-format.md)."""
    if value is None or value.isprintable():
        return value
    return value.encode().hex()


@pytest.mark.parametrize("client", ["rhea", "rhea-promise"])
def test_amqp_producers_on_artemis_give_what_qpid_jms_sees(work, artemis, client) -> None:
    """Typed properties of every AMQP type, ids and correlation ids of every kind, group,
    user, subject, charset, priorities, expiry: msgcap's headers and the trail's tokens equal
    Qpid JMS's getJMS…() and getStringProperty(); where Qpid JMS refuses getStringProperty
    (unsigned types, char, symbol, timestamp, uuid), String.valueOf(getObjectProperty)."""
    ours, theirs = f"tp-{uuid.uuid4().hex}", f"tp-{uuid.uuid4().hex}"
    out = node("amqp_producer.js", "--client", client, "--port", str(artemis.amqp_port),
               "--first", "1", "--queue", ours, "--queue", theirs)
    count = int(out.split()[-2])
    seen = jms_clients.consume(artemis.url, f"/queue/{theirs}")
    assert len(seen) == count
    jms = {seq_of(jms_text(m)): jms_view(m, QPID_JMS_REFUSED) for m in seen}
    texts = {seq_of(jms_text(m)): jms_text(m) for m in seen}
    compare_end_to_end(work, artemis, f"/queue/{ours}", jms, texts)
    captured = {seq_of(m.body): m for m in archived(work)}
    assert sorted(captured) == sorted(jms)
    for n, message in captured.items():
        view = jms[n]
        assert msgcap_view(message, list(view)) == view, n
        assert message.body == texts[n] or message.body == texts[n].encode(), n
        # and no property the JMS consumer does not list
        extra = {k for k in message.headers if k.lower() not in TABLE_KEYS} - set(view)
        assert not extra, (n, extra)


# Typed properties a Java producer sets (JmsProduce's --prop), of every JMS property type.
JAVA_TYPED = ("--prop", "p_int=int:-42", "--prop", "p_double=double:1e20", "--prop",
              "p_float=float:0.1", "--prop", "p_boolean=boolean:true", "--prop",
              "p_byte=byte:-3", "--prop", "p_short=short:7", "--prop", "p_long=long:123456789012",
              "--prop", "p_string=string:n{n}", "--prop", "JMSTxId=string:tx-{n}")
# What each JMS message type carries besides its properties, and the body as proton decodes it.
JAVA_BODIES = {
    "map": (("--entry", "a=int:-42", "--entry", "b=string:x", "--entry", "c=double:1e20"),
            {"a": -42, "b": "x", "c": 1e20}),
    "stream": (("--entry", "int:-42", "--entry", "string:x", "--entry", "boolean:true"),
               [-42, "x", True]),
    # a data section of content-type application/x-java-serialized-object: a String's
    # serialized form
    "object": (("--body", "an object {n}"), b"\xac\xed\x00\x05t\x00\x0ban object 1"),
}
@pytest.mark.parametrize("kind", ["text", "bytes"])
def test_java_text_and_bytes_messages_keep_their_typed_properties(work, artemis, kind) -> None:
    """A Java producer's TextMessage and BytesMessage with a property of every JMS type: msgcap
    captures them with the headers and properties Qpid JMS reads, and their bodies."""
    queue = f"/queue/tp-{uuid.uuid4().hex}"
    ids = jms_clients.produce(artemis.url, queue, "--type", kind, "--count", "3", "--body",
                              "I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,{n:010d},{n},"
                              "N{n},C{n},2024-03-01 10:15:30\n", "--correlation-id", "c-{n}",
                              "--jms-type", "Order", "--priority", "6", "--group", "g",
                              *JAVA_TYPED)
    seen = jms_clients.consume(artemis.url, queue, browse=True)
    assert [m["JMSMessageID"] for m in seen] == ids
    jms = {seq_of(jms_text(m)): jms_view(m, set()) for m in seen}
    texts = {seq_of(jms_text(m)): jms_text(m) for m in seen}
    compare_end_to_end(work, artemis, queue, jms, texts)
    for message in archived(work):
        view = jms[seq_of(message.body)]
        assert view["message-type"] == f"{kind.title()}Message"
        assert msgcap_view(message, list(view)) == view


def _kept_body(kept: bytes, headers: dict[str, str]) -> Any:
    """The body a discard record or dead letter keeps (the encoded body section, which
    ``msgcap-body-kind`` names), decoded; a data section's bytes as they are."""
    import proton

    if "msgcap-body-kind" not in headers:
        return kept
    message = proton.Message()
    message.decode(kept)
    return message.body


@pytest.mark.parametrize("kind", ["map", "stream", "object"])
def test_java_map_stream_object_messages_are_discarded_whole_and_named(work, artemis,
                                                                        kind) -> None:
    """Map, Stream and Object messages carry no text msgcap could parse: each is a message
    error whose discard record names it by its JMSMessageID and keeps its whole body and its
    properties as Qpid JMS reads them."""
    queue = f"/queue/tp-{uuid.uuid4().hex}"
    args, body = JAVA_BODIES[kind]
    (message_id,) = jms_clients.produce(artemis.url, queue, "--type", kind, *args, *JAVA_TYPED)
    (seen,) = jms_clients.consume(artemis.url, queue, browse=True)
    work.properties(jms_url=artemis.url, jms_destination=queue, error_policy="discard")
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    (record,) = [json.loads(line) for line in
                 (work.root / "dirrpt" / "msgcap.dsc").read_text().splitlines()]
    assert record["source"] == message_id and record["message"]["id"] == message_id
    headers = record["message"]["headers"]
    assert _kept_body(base64.b64decode(record["message"]["body_b64"]), headers) == body
    view = jms_view(seen, set())
    assert msgcap_view(Message(message_id, headers), list(view)) == view
    assert jms_clients.consume(artemis.url, queue, browse=True) == []


@pytest.mark.parametrize("kind", ["map", "stream", "object"])
def test_java_map_stream_object_messages_dead_letter_whole(work, artemis, kind) -> None:
    """With ``error.destination`` the dead letter holds the whole body (the encoded section,
    ``msgcap-body-kind`` naming it), the original's typed properties and its message id."""
    queue, dead = f"/queue/tp-{uuid.uuid4().hex}", f"/queue/tp-dead-{uuid.uuid4().hex}"
    args, body = JAVA_BODIES[kind]
    (message_id,) = jms_clients.produce(artemis.url, queue, "--type", kind, *args, *JAVA_TYPED)
    work.properties(jms_url=artemis.url, jms_destination=queue, error_policy="discard",
                    error_destination=dead)
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    (letter,) = jms_clients.consume(f"{artemis.url}?jms.validatePropertyNames=false", dead)
    props = letter["properties"]
    assert props["msgcap-source-message-id"] == message_id
    assert {k: props[k] for k in ("p_int", "p_double", "p_float", "p_string")} == {
        "p_int": "-42", "p_double": "1.0E20", "p_float": "0.1", "p_string": "n1"}
    if kind == "object":  # sent back with its content type: an ObjectMessage again
        assert letter["class"] == "ObjectMessage" and letter["object"] == "an object 1"
    else:
        assert _kept_body(base64.b64decode(letter["bytes"]), props) == body
    assert jms_clients.consume(artemis.url, queue, browse=True) == []


def stomp_py_produce(port: int, destination: str, first: int) -> int:
    """stomp.py's producer: frames as its ``send`` makes them (custom headers, escapes, a
    charset, bytes with content-length, persistent, priority, correlation-id, JMSXGroupID)."""
    import stomp

    frames: list[tuple[dict[str, str], str | bytes]] = [
        ({"persistent": "true", "correlation-id": "py-{n}", "JMSXGroupID": "py-group",
          "JMSTxId": "tx-{n}", "amount": "-42", "x-escaped": "a:b\\c\nd", "priority": "9"},
         "Python"),
        ({"content-type": "text/plain;charset=utf-8", "type": "Order", "note": "caf\u00e9"},
         "Caf\u00e9"),
        ({"content-type": "application/octet-stream", "expires": "4102444800000"}, b"Bytes"),
    ]
    conn = stomp.Connection12([("127.0.0.1", port)], vhost="/", auto_content_length=False)
    conn.connect(wait=True)
    for i, (headers, name) in enumerate(frames):
        n = first + i
        body = (insert_text(n, name.decode()).encode() if isinstance(name, bytes)
                else insert_text(n, name))
        sized = {"content-length": str(len(body))} if isinstance(body, bytes) else {}
        conn.send(destination, body, headers={k: v.replace("{n}", str(n))
                                              for k, v in {**headers, **sized}.items()})
    conn.disconnect(receipt="bye")
    return len(frames)


def insert_text(n: int, name: str) -> str:
    return (f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,{n:010d},{n},{name},City {n % 97},"
            "2024-03-01 10:15:30\n")


# Groups of the frames each STOMP producer sends (what the JMS consumer must see).
STOMP_GROUPS = {"stompit": "orders-7", "stompjs": "orders-7", "stomp.py": "py-group"}


def activemq_stomp(view: dict[str, str | None], group: str | None = None
                   ) -> dict[str, str | None]:
    """What msgcap can see over STOMP of what ActiveMQ's OpenWire JMS client read (``view``),
    each difference asserted: ActiveMQ's Destination.toString (``queue://X``, its own client's
    text) is written as STOMP names the destination (``/queue/X``), as msgcap does (§2.2); the
    JMSXGroupID a producer set (``group``) ActiveMQ keeps from STOMP consumers: no value."""
    if view.get("JMSXGroupID") is not None:
        assert view["JMSXGroupID"] == group, view
        view["JMSXGroupID"] = None
    reply_to = view.get("JMSReplyTo")
    if reply_to is not None:
        kind, sep, name = reply_to.partition("://")
        assert sep and kind in ("queue", "topic"), reply_to
        view["JMSReplyTo"] = f"/{kind}/{name}"
    return view


@pytest.fixture
def activemq_broker(activemq: Broker) -> Broker:
    if not activemq.running():
        activemq.start()
    return activemq


@pytest.mark.parametrize("client", ["stompit", "stompjs", "stomp.py"])
def test_stomp_producers_on_activemq_give_what_an_openwire_jms_consumer_sees(
        work, activemq_broker, client) -> None:
    """Each frame goes to a composite destination ``/queue/A,/queue/B`` (one message, the same
    message-id, on two queues): msgcap's headers, the message class, every property and the
    trail's tokens and columns equal what ActiveMQ's own OpenWire JMS client reads."""
    broker = activemq_broker
    ours, theirs = f"tp-{uuid.uuid4().hex}", f"tp-{uuid.uuid4().hex}"
    both = f"/queue/{ours},/queue/{theirs}"
    if client == "stomp.py":
        count = stomp_py_produce(broker.port, both, 1)
    else:
        out = node("stomp_producer.js", "--client", client, "--port", str(broker.port),
                   "--first", "1", "--destination", both)
        count = int(out.split()[-2])
    openwire = f"tcp://127.0.0.1:{broker.env['MSGCAP_OPENWIRE_PORT']}"
    seen = jms_clients.consume(openwire, f"/queue/{theirs}", openwire=True)
    assert len(seen) == count
    jms = {seq_of(jms_text(m)): activemq_stomp(jms_view(m, set()), STOMP_GROUPS[client])
           for m in seen}
    texts = {seq_of(jms_text(m)): jms_text(m) for m in seen}
    compare_end_to_end(work, broker, f"/queue/{ours}", jms, texts)
    captured = {seq_of(m.body): m for m in archived(work)}
    assert sorted(captured) == sorted(jms)
    for n, message in captured.items():
        view = jms[n]
        assert msgcap_view(message, list(view)) == view, n
        extra = {k for k in message.headers if k.lower() not in TABLE_KEYS} - set(view)
        # ActiveMQ's STOMP header naming a composite send's destinations: no JMS property
        assert extra == {"original-destination"}, (n, extra)


@pytest.fixture
def rabbitmq_broker(rabbitmq: Broker) -> Broker:
    if not rabbitmq.running():
        rabbitmq.start()
    return rabbitmq


@pytest.mark.parametrize("client", ["stompit", "stomp.py"])
def test_stomp_producers_on_rabbitmq_give_the_values_its_stomp_docs_give(
        work, rabbitmq_broker, client) -> None:
    """RabbitMQ has no JMS consumer: its STOMP documentation's values. ``message-id`` is its
    own ``T_<subscription>@@session-…@@<n>``, ``redelivered`` is sent always, a producer's
    other headers (escapes undone, ``JMSXGroupID`` too) come through as sent, a ``text/*``
    body in its charset; the trail's tokens hold them."""
    broker = rabbitmq_broker
    queue = f"/queue/tp-{uuid.uuid4().hex}"
    if client == "stomp.py":
        count = stomp_py_produce(broker.port, queue, 1)
        sent = {1: {"correlation-id": "py-1", "JMSXGroupID": "py-group", "JMSTxId": "tx-1",
                    "amount": "-42", "x-escaped": "a:b\\c\nd", "persistent": "true"},
                2: {"type": "Order", "note": "caf\u00e9"}, 3: {"expires": "4102444800000"}}
        names = {1: "Python", 2: "Caf\u00e9", 3: "Bytes"}
    else:
        count = int(node("stomp_producer.js", "--client", client, "--port", str(broker.port),
                         "--first", "1", "--destination", queue).split()[-2])
        sent = {1: {"correlation-id": "order-1", "type": "Order", "JMSXGroupID": "orders-7",
                    "JMSTxId": "tx-1", "count": "42", "ratio": "1.0E20", "flag": "true",
                    "x-escaped": "a:b\\c\nd", "reply-to": "/queue/replies",
                    "persistent": "true"},
                2: {"note": "caf\u00e9", "correlation-id": "ID:not-a-jms-id",
                    "JMSXGroupID": "orders-7"},
                3: {"expires": "4102444800000"}, 4: {"empty": ""}}
        names = {1: "Plain", 2: "Caf\u00e9", 3: "Bytes", 4: "M\u00fcller"}
    work.properties(jms_url=broker.url, jms_destination=queue, archive_dir="dirarc",
                    delim_txname="$JMSMessageID", delim_txowner="$JMSXGroupID")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    assert f"messages {count}" in done.stdout
    captured = {seq_of(m.body): m for m in archived(work)}
    assert sorted(captured) == sorted(sent)
    for n, message in captured.items():
        assert re.fullmatch(r"T_[^@]+@@session-[^@]+@@\d+", message.id), message.id
        assert header_value(message, "JMSMessageID") == message.id
        assert header_value(message, "JMSRedelivered") == "false"
        assert {k: header_value(message, k) for k in sent[n]} == sent[n]
        body = message.body if isinstance(message.body, str) else message.body.decode()
        assert body.split(",")[6] == names[n]  # a text/* body in its charset
    tokens = {int(r["tokens"]["VAMSEQID"]): (r["tokens"]["TXNAME"], r["tokens"].get("TXOWNER"))
              for r in dumped(work, "dirdat/sa")}
    assert tokens == {n: (m.id, sent[n].get("JMSXGroupID")) for n, m in captured.items()}
