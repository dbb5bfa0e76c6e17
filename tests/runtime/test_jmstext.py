"""AMQP values as a JMS consumer reads them (msgcap.sources.jmstext, the AMQP source's
headers_of): typed properties as Java's String.valueOf, ids per the OASIS AMQP JMS Mapping,
null as no value. Doubles and floats are checked against a real JVM."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
import uuid
from pathlib import Path

import proton
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgcap.sources.amqp_messages import headers_of
from msgcap.sources.jmstext import (
    correlation_id_text,
    id_object,
    java_double,
    java_float,
    java_text,
    message_id_text,
)

JAVA_SOURCE = Path(__file__).parents[1] / "java" / "JavaText.java"


@pytest.fixture(scope="module")
def java_text_of(tmp_path_factory: pytest.TempPathFactory):
    """String.valueOf of doubles ("d") and floats ("f") as this machine's Java prints them."""
    javac = shutil.which("javac")
    assert javac, "the tests need a JDK (Java 17): scripts/test.sh installs the project's needs"
    out = tmp_path_factory.mktemp("javatext")
    subprocess.run([javac, "-d", str(out), str(JAVA_SOURCE)], check=True)

    def run(lines: list[str]) -> list[str]:
        done = subprocess.run(["java", "-cp", str(out), "JavaText"], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, check=True)
        return done.stdout.splitlines()
    return run


def _double_bits(value: float) -> str:
    return f"d {struct.unpack('>Q', struct.pack('>d', value))[0]:x}"


def _float_bits(value: float) -> str:
    return f"f {struct.unpack('>I', struct.pack('>f', value))[0]:x}"


def _single(value: float) -> float:
    return struct.unpack(">f", struct.pack(">f", value))[0]


def test_doubles_read_as_java_prints_them(java_text_of) -> None:
    rnd = random.Random(33)
    values = [1e20, 1e7, 9999999.999, 1e-3, 0.00099999, 0.0, -0.0, 1.0, -42.5, 0.1, 1e-5,
              float("inf"), float("-inf"), float("nan"), 1.7976931348623157e308, 2.0 ** 62,
              123456789012345678.0, 2.0 ** 53 + 2]
    values += [struct.unpack(">d", rnd.getrandbits(64).to_bytes(8, "big"))[0] for _ in range(4000)]
    values += [rnd.uniform(-1e8, 1e8) for _ in range(2000)]
    values += [round(rnd.uniform(0, 1e6), rnd.randint(0, 6)) for _ in range(2000)]
    values += [float(rnd.randint(-2 ** 63, 2 ** 63)) for _ in range(2000)]
    java = java_text_of([_double_bits(v) for v in values])
    wrong = [(v, j, java_double(v)) for v, j in zip(values, java, strict=True) if java_double(v) != j]
    assert not wrong, wrong[:10]


def test_floats_read_as_java_prints_them(java_text_of) -> None:
    """Below 10^25 (above it Java 17's FloatingDecimal now and then prints a last digit one
    lower than the shortest; Java 19 and later print what msgcap does)."""
    rnd = random.Random(34)
    values = [_single(v) for v in (0.5, 0.1, 3.4e24, 1e-3, 1e7, 74621368.0, -2.5, 1e-40, 1.0)]
    values += [_single(v) for v in (struct.unpack(">f", rnd.getrandbits(32).to_bytes(4, "big"))[0]
                                    for _ in range(6000)) if abs(v) < 1e25]
    values += [_single(rnd.uniform(-1e4, 1e4)) for _ in range(2000)]
    values += [_single(float(rnd.randint(-2 ** 40, 2 ** 40))) for _ in range(2000)]
    java = java_text_of([_float_bits(v) for v in values])
    wrong = [(v, j, java_float(v)) for v, j in zip(values, java, strict=True) if java_float(v) != j]
    assert not wrong, wrong[:10]


def test_floats_next_to_the_largest_read_as_text() -> None:
    """A float whose shorter decimal texts round past Float.MAX_VALUE (3.4025e38: ``3.403e38``
    is no float) has a text that reads back as itself; it stopped the headers' conversion with
    an OverflowError."""
    for value in (_single(3.4025001647762064e38), _single(3.4028234663852886e38),
                  -_single(3.4027e38)):
        text = java_float(value)
        assert _single(float(text)) == value, (value, text)
    assert java_float(_single(3.4028234663852886e38)) == "3.4028235E38"  # Float.MAX_VALUE


def test_every_amqp_type_reads_as_its_java_value() -> None:
    """The issue's list: no Python repr reaches a header."""
    expected = {
        proton.int32(-42): "-42", proton.short(12): "12", proton.byte(-3): "-3",
        proton.float32(0.5): "0.5", proton.ulong(18): "18", proton.ubyte(200): "200",
        proton.ushort(65535): "65535", proton.uint(4000000000): "4000000000",
        proton.timestamp(1700000000999): "1700000000999", 1e20: "1.0E20", 2.5: "2.5",
        7: "7", True: "true", False: "false", proton.char("x"): "x",
        proton.symbol("sym"): "sym", "text": "text", uuid.UUID(int=5): str(uuid.UUID(int=5)),
        proton.decimal32(0x32800005): "5", proton.decimal64(0x31A0000000000019): "2.5",
    }
    for value, text in expected.items():
        assert java_text(value) == text, repr(value)
    assert java_text(None) is None


ID_KINDS = st.one_of(
    st.text(min_size=1).map(lambda s: s),
    st.text(min_size=1).map(lambda s: "ID:" + s),
    st.sampled_from(["ID:AMQP_ULONG:7", "ID:AMQP_NO_PREFIX:x", "ID:AMQP_STRING:y",
                     "ID:AMQP_UUID:z", "ID:AMQP_BINARY:00"]),
    st.integers(0, 2 ** 64 - 1).map(proton.ulong),
    st.uuids(),
    st.binary(min_size=1, max_size=16),
)


@given(ID_KINDS)
def test_ids_follow_the_mapping_and_read_back(value) -> None:
    """Every id kind has its ID:AMQP_ form, distinct from any string that looks like it, and
    msgcap publishes (id_object) the very id it read."""
    text = message_id_text(value)
    assert text.startswith("ID:")
    back = id_object(text)
    assert back == (bytes(value) if isinstance(value, (bytes, memoryview)) else value)
    assert type(back) is type(value) or isinstance(value, bytes)
    if isinstance(value, str):
        assert correlation_id_text(value) == (text if value.startswith("ID:") else value)


def test_ids_as_the_oasis_mapping_names_them() -> None:
    assert message_id_text("abc") == "ID:AMQP_NO_PREFIX:abc"
    assert message_id_text("ID:abc") == "ID:abc"
    assert message_id_text("ID:AMQP_ULONG:7") == "ID:AMQP_STRING:ID:AMQP_ULONG:7"
    assert message_id_text("ID:AMQP_OTHER") == "ID:AMQP_OTHER"
    assert message_id_text(proton.ulong(7)) == "ID:AMQP_ULONG:7"
    assert message_id_text(b"\x00\xab\x09\xff") == "ID:AMQP_BINARY:00AB09FF"
    assert message_id_text(uuid.UUID(int=1)) == f"ID:AMQP_UUID:{uuid.UUID(int=1)}"
    assert correlation_id_text("order-77") == "order-77"
    assert correlation_id_text("ID:AMQP_UUID:x") == "ID:AMQP_STRING:ID:AMQP_UUID:x"
    assert correlation_id_text(proton.ulong(5)) == "ID:AMQP_ULONG:5"


def _decoded(msg: proton.Message) -> proton.Message:
    out = proton.Message()
    out.decode(msg.encode())
    return out


PROPERTY_VALUES = st.one_of(
    st.none(), st.booleans(), st.text(), st.integers(-2 ** 63, 2 ** 63 - 1),
    st.integers(-2 ** 31, 2 ** 31 - 1).map(proton.int32),
    st.integers(-2 ** 15, 2 ** 15 - 1).map(proton.short),
    st.integers(-128, 127).map(proton.byte), st.integers(0, 255).map(proton.ubyte),
    st.integers(0, 2 ** 32 - 1).map(proton.uint), st.integers(0, 2 ** 64 - 1).map(proton.ulong),
    st.integers(0, 2 ** 62).map(proton.timestamp),
    st.floats(allow_nan=False), st.floats(width=32, allow_nan=False).map(proton.float32),
    st.characters(codec="utf-8").map(proton.char), st.uuids(),
)


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=8).map("p_".__add__), PROPERTY_VALUES, max_size=6), ID_KINDS,
       st.one_of(st.none(), ID_KINDS))
def test_headers_of_every_type_and_id_kind(properties, message_id, correlation_id) -> None:
    """What the AMQP source makes of a message's application properties and ids, through
    proton's own encoding: each property as java_text gives it, null left out."""
    msg = proton.Message(body=b"x", properties=properties or None, id=message_id,
                         correlation_id=correlation_id)
    headers = headers_of(_decoded(msg))
    for key, value in properties.items():
        if value is None:
            assert key not in headers
        else:
            assert headers[key] == java_text(value)
            assert f"{type(value).__name__}(" not in headers[key]  # never a Python repr
    assert headers["message-id"] == message_id_text(message_id)
    if correlation_id is not None:
        assert headers["correlation-id"] == correlation_id_text(correlation_id)


def test_headers_of_the_jms_header_fields() -> None:
    """group, user, delivery count, content type and the JMS message type under their JMS
    names (props.jmsnames)."""
    msg = proton.Message(body="hello", id="ID:1", group_id="g1", group_sequence=3,
                         user_id=b"alice", content_type="text/plain", delivery_count=2,
                         annotations={proton.symbol("x-opt-jms-msg-type"): proton.byte(5)})
    headers = headers_of(_decoded(msg))
    assert headers["JMSXGroupID"] == "g1" and headers["JMSXGroupSeq"] == "3"
    assert headers["JMSXUserID"] == "alice" and headers["JMSXDeliveryCount"] == "3"
    assert headers["redelivered"] == "true" and headers["content-type"] == "text/plain"
    assert headers["message-type"] == "TextMessage"
    plain = headers_of(_decoded(proton.Message(body=b"x", inferred=True)))
    assert plain["redelivered"] == "false" and plain["JMSXDeliveryCount"] == "1"
    assert plain["message-type"] == "BytesMessage" and "JMSXGroupID" not in plain
    mapped = headers_of(_decoded(proton.Message(body={"a": 1})))
    assert mapped["message-type"] == "MapMessage"


def test_what_jms_returns_for_fields_a_message_lacks() -> None:
    """A message without creation-time, group sequence or any id: ``$JMSTimestamp`` and
    ``$JMSXGroupSeq`` are ``0`` (getJMSTimestamp(), getStringProperty("JMSXGroupSeq")) and
    ``$JMSMessageID`` has no value (getJMSMessageID() is null), as Qpid JMS reads them."""
    from msgcap.msgid import header_value
    from parsers.model import Message

    headers = headers_of(_decoded(proton.Message(body=b"x", inferred=True)))
    bare = Message(headers.get("message-id", ""), headers, b"x")
    assert header_value(bare, "JMSTimestamp") == "0"
    assert header_value(bare, "JMSXGroupSeq") == "0"
    assert header_value(bare, "JMSMessageID") is None


def _stomp_escaped(text: str) -> str:
    """A STOMP 1.2 header value as a broker writes it on the wire."""
    return (text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")
            .replace(":", "\\c"))


JAVA_VALUES = st.one_of(  # a JMS producer's typed property, as ActiveMQ writes it: String.valueOf
    st.booleans().map(lambda b: "true" if b else "false"),
    st.integers(-2 ** 63, 2 ** 63 - 1).map(str),
    st.floats(allow_nan=False).map(java_double),
    st.floats(width=32, allow_nan=False).map(java_float),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
)


@settings(max_examples=200)
@given(st.dictionaries(st.text(st.characters(whitelist_categories=("Lu", "Ll")), min_size=1,
                               max_size=8).map("p_".__add__), JAVA_VALUES, max_size=6),
       st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20),
       st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)),
       st.booleans(), st.booleans())
def test_stomp_frames_give_what_the_jms_consumer_reads(properties, message_id, correlation_id,
                                                        redelivered, sized) -> None:
    """The STOMP source, ActiveMQ's mapping: a MESSAGE frame's header lines (escaped as on the
    wire) resolve through the table of JMS names to what ActiveMQ's JMS client returns: each
    property and header as sent, JMSRedelivered false and JMSExpiration 0 when the frame has
    none, the message class from content-length, JMSXDeliveryCount 1 on a first delivery."""
    from msgcap.msgid import header_value
    from msgcap.sources.stomp import _message, parse_headers

    wire = {"message-id": f"ID:{message_id}", "destination": "/queue/q", "priority": "4",
            "timestamp": "1700000000123", **properties}
    if correlation_id is not None:
        wire["correlation-id"] = correlation_id
    if redelivered:
        wire["redelivered"] = "true"
    if sized:
        wire["content-length"] = "1"
    lines = [f"{_stomp_escaped(k)}:{_stomp_escaped(v)}" for k, v in wire.items()]
    message = _message(parse_headers(lines), b"x", 0, always_sized=False)
    for name, text in properties.items():
        assert header_value(message, name) == text
    assert header_value(message, "JMSMessageID") == f"ID:{message_id}"
    assert header_value(message, "JMSCorrelationID") == correlation_id
    assert header_value(message, "JMSTimestamp") == "1700000000123"
    assert header_value(message, "JMSRedelivered") == ("true" if redelivered else "false")
    assert header_value(message, "JMSExpiration") == "0"
    assert header_value(message, "message-type") == ("BytesMessage" if sized else "TextMessage")
    assert header_value(message, "JMSXDeliveryCount") == (None if redelivered else "1")
