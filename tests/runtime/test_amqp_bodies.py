"""AMQP 1.0 message bodies exactly as the spec defines them (issue 33), on encoded transfers built
by hand: several data sections joined (AMQP 1.0 §3.2), a ``text/*`` data section decoded in its
charset, a body of another kind kept whole for ``error.policy``, a payload that is no message a
message error, an oversized delivery never held whole. No broker: ``message_of`` and
``oversized_of`` are fed payloads, as ``Connection.on_delivery`` feeds them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from proton import Message as ProtonMessage
from proton import symbol

from msgcap.sources.amqp import Arriving
from msgcap.sources.amqp_messages import (
    BODY_KIND,
    NOT_A_MESSAGE,
    message_of,
    oversized_of,
    sections_of,
)
from msgcap.sources.base import HEADER_BYTES, Unreadable
from parsers.model import Message
from tests.fake_amqp_peer import data_message, data_section, encoded

LIMIT = 1 << 20


def _of(payload: bytes, max_bytes: int = LIMIT) -> Message | Unreadable:
    return message_of(ProtonMessage(), payload, "ack", max_bytes)


def _value(body: object, **fields: object) -> bytes:
    """An encoded message whose body is an amqp-value (an amqp-sequence when ``inferred``)."""
    return encoded(ProtonMessage(body=body, **fields))


def test_several_data_sections_are_one_body_joined_in_order() -> None:
    """AMQP 1.0 §3.2: the body is the data sections' concatenation; proton keeps the last."""
    got = _of(data_message(b"0000000001,", b"I,", b"x" * 300, message_id="ID:m1"))
    assert isinstance(got, Message) and got.body == b"0000000001,I," + b"x" * 300
    assert got.id == "ID:m1" and got.headers["message-id"] == "ID:m1"


@pytest.mark.parametrize("descriptor", [
    b"\x00\x80" + (0x75).to_bytes(8),  # ulong
    b"\x00\xa3\x10amqp:data:binary",  # symbol
])
def test_data_sections_with_other_descriptor_forms_are_joined_too(descriptor: bytes) -> None:
    head = encoded(ProtonMessage(id="m2"))
    first = descriptor + b"\xa0\x03abc"
    assert isinstance(got := _of(head + first + data_section(b"def")), Message)
    assert got.body == b"abcdef"
    assert isinstance(got := _of(head + data_section(b"abc") + descriptor + b"\xb0"
                                 + (3).to_bytes(4) + b"def"), Message)
    assert got.body == b"abcdef"


def test_a_footer_after_the_data_sections_is_not_body() -> None:
    footer = b"\x00Sx\xc1\x01\x00"  # an empty map
    got = _of(data_message(b"ab", b"cd", message_id="m3") + footer)
    assert isinstance(got, Message) and got.body == b"abcd"


def test_one_data_section_is_bytes_even_when_it_reads_as_text() -> None:
    got = _of(data_message("caf\u00e9".encode(), message_id="m4"))
    assert isinstance(got, Message) and got.body == "caf\u00e9".encode()


@pytest.mark.parametrize(("content_type", "data", "text"), [
    ("text/plain;charset=iso-8859-1", "\u00c4\u00d6\u00dc\u00e9".encode("latin-1"),
     "\u00c4\u00d6\u00dc\u00e9"),
    ("text/plain; charset=\"cp500\"", "ABC 123".encode("cp500"), "ABC 123"),
    ("text/plain", "caf\u00e9".encode(), "caf\u00e9"),  # no charset: UTF-8
    ("TEXT/XML;charset=UTF-8", b"<a/>", "<a/>"),
])
def test_a_text_content_type_makes_the_data_text_in_its_charset(
        content_type: str, data: bytes, text: str) -> None:
    for payload in (data_message(data, message_id="t1", content_type=content_type),
                    data_message(data[:1], data[1:], message_id="t1",
                                 content_type=content_type)):
        got = _of(payload)
        assert isinstance(got, Message) and got.body == text


def test_another_content_type_leaves_the_data_bytes() -> None:
    got = _of(data_message(b"\xc1\xc2", message_id="b1",
                           content_type="application/octet-stream"))
    assert isinstance(got, Message) and got.body == b"\xc1\xc2"


def test_a_serialized_java_object_is_a_message_error_keeping_its_bytes() -> None:
    """A Qpid JMS ObjectMessage: a data section no parser reads as a record, refused as the JMS
    source refuses an ObjectMessage, its bytes kept for the discard record or dead letter."""
    data = b"\xac\xed\x00\x05t\x00\x05hello"  # java.io.ObjectOutputStream of "hello"
    got = _of(data_message(data, message_id="ID:obj-1",
                           content_type="application/x-java-serialized-object"))
    assert isinstance(got, Unreadable) and "serialized Java object" in str(got.error)
    assert "message ID:obj-1" in str(got.error) and got.message.body == data
    assert BODY_KIND not in got.message.headers  # the body's own bytes, its content type kept
    assert got.message.headers["content-type"] == "application/x-java-serialized-object"


@pytest.mark.parametrize(("content_type", "data", "words"), [
    ("text/plain;charset=no-such-set", b"abc", "no character set no-such-set is known"),
    ("text/plain;charset=utf-8", b"ab\xff", "byte 2 of the body is not utf-8 text"),
    ("text/plain;charset=base64", b"YWJj", "no character set base64 is known"),
])
def test_text_that_does_not_decode_is_a_message_error_keeping_the_bytes(
        content_type: str, data: bytes, words: str) -> None:
    got = _of(data_message(data, message_id="ID:bad-text", content_type=content_type))
    assert isinstance(got, Unreadable) and words in str(got.error)
    assert "message ID:bad-text" in str(got.error) and got.error.position == "body"
    assert got.message.body == data and BODY_KIND not in got.message.headers


@pytest.mark.parametrize(("body", "inferred", "kind"), [
    ({"a": 1, "b": "two"}, False, "amqp-value map"),
    ([1, "x"], False, "amqp-value list"),
    (42, False, "amqp-value int"),
    ([1, 2], True, "amqp-sequence"),
])
def test_a_body_of_another_kind_is_a_message_error_keeping_it_encoded(
        body: object, inferred: bool, kind: str) -> None:
    payload = _value(body, id="ID:poison-1", inferred=inferred, properties={"SEQNO": "7"})
    got = _of(payload)
    assert isinstance(got, Unreadable) and f"AMQP body is an {kind}" in str(got.error)
    assert "message ID:poison-1" in str(got.error)
    assert got.message.headers[BODY_KIND] == kind and got.message.headers["SEQNO"] == "7"
    sections = sections_of(payload)
    body_start = next(start for code, start, _, _ in sections if code >= 0x75)
    assert got.message.body == payload[body_start:]  # the encoded body section, whole
    decoded = ProtonMessage()
    decoded.decode(got.message.body)
    assert decoded.body == body


def test_several_amqp_sequence_sections_are_all_kept() -> None:
    first = _value([1], inferred=True, id="s1")
    second = first[first.index(b"\x00Sv"):]  # the same sequence section again
    got = _of(first + second)
    assert isinstance(got, Unreadable) and got.message.headers[BODY_KIND] == "amqp-sequence"
    assert got.message.body == second + second


@pytest.mark.parametrize("payload", [
    b"garbage, not AMQP",
    b'{"json": "instead of a message"}',
    b"zz" + data_message(b"x", message_id="m"),  # proton skips what leads
    data_message(b"abc", message_id="m")[:-1],  # cut short
    b"\x00Sw\xa1\x01a\x00Su\xa0\x01b",  # an amqp-value and a data section
    b"\x00Ss\x45\x00SpE",  # properties before header
    b"\x00Su\xa1\x01a",  # a data section holding a string
])
def test_a_payload_that_is_no_amqp_message_is_a_message_error_keeping_it(
        payload: bytes) -> None:
    got = _of(payload)
    assert isinstance(got, Unreadable), got
    assert "not an AMQP message" in str(got.error)
    assert got.message.body == payload and type(got.message.body) is bytes
    assert got.message.headers == {BODY_KIND: NOT_A_MESSAGE} and got.message.id == ""


def test_no_body_and_an_amqp_value_null_are_empty() -> None:
    for payload in (encoded(ProtonMessage(id="e1")), b"\x00Sw\x40", b""):
        got = _of(payload)
        assert isinstance(got, Message) and got.body == b""


def test_a_message_without_properties_does_not_inherit_the_previous_message_id() -> None:
    """proton's decode keeps the fields a payload does not set: the scratch message is
    cleared first (a message after one with a message-id would otherwise carry that id)."""
    scratch = ProtonMessage()
    first = message_of(scratch, data_message(b"a", message_id="ID:first"), None, LIMIT)
    assert isinstance(first, Message) and first.id == "ID:first"
    second = message_of(scratch, b"\x00Su\xa0\x01b", None, LIMIT)  # no header sections at all
    assert isinstance(second, Message) and second.id == "" and second.body == b"b"
    assert "message-id" not in second.headers


def test_the_kept_body_of_a_refused_message_over_the_limit_is_not_kept() -> None:
    got = _of(_value({"k": "v" * 200}, id="ID:big-map"), max_bytes=100)
    assert isinstance(got, Unreadable) and "exceeds jms.maxbytes=100" in str(got.error)
    assert got.message.body == b"" and got.message.id == "ID:big-map"


def test_an_oversized_delivery_keeps_its_headers_and_never_its_body() -> None:
    """What ``on_delivery`` does with a delivery larger than jms.maxbytes + HEADER_BYTES:
    only the first bytes are kept, the header sections decoded from them."""
    max_bytes = 1000
    head = encoded(ProtonMessage(id="ID:huge-1", properties={"SEQNO": "42"}))
    size = 5 * (max_bytes + HEADER_BYTES)
    arriving = Arriving(max_bytes + HEADER_BYTES)
    arriving.add(head + b"\x00Su\xb0" + (size - len(head) - 8).to_bytes(4))
    while arriving.size < size:
        arriving.add(b"x" * min(65536, size - arriving.size))
    assert arriving.size == size and len(arriving.head) == arriving.keep
    got = oversized_of(ProtonMessage(), bytes(arriving.head), arriving.size, None, max_bytes)
    assert isinstance(got, Unreadable) and got.message.body == b""
    assert got.message.id == "ID:huge-1" and got.message.headers["SEQNO"] == "42"
    assert f"message of {size - len(head) - 8} bytes exceeds jms.maxbytes={max_bytes}" in str(
        got.error)


def test_an_oversized_delivery_has_the_header_sections_it_kept_whole() -> None:
    scratch = ProtonMessage()
    message_of(scratch, data_message(b"a", message_id="ID:before", P="old"), None, LIMIT)
    head = encoded(ProtonMessage(id="ID:x", properties={"P": "v" * 5000}))
    got = oversized_of(scratch, head[:3000], 10**9, None, 100)  # application-properties cut
    assert isinstance(got, Unreadable) and got.message.id == "ID:x"
    assert "P" not in got.message.headers
    got = oversized_of(scratch, b"\x00Ss\xc0", 10**9, None, 100)  # not even the properties
    assert isinstance(got, Unreadable) and got.message.id == ""
    assert "message-id" not in got.message.headers and "P" not in got.message.headers


# -- the framing shortcut agrees with the section walk ---------------------------------------------

_sections = st.lists(st.binary(max_size=300), min_size=1, max_size=4)


@given(_sections, st.booleans(), st.booleans(),
       st.sampled_from([None, "SEQ\x00Su", "amqp:data:binary", "amqp://host/q", "x"]))
def test_the_one_section_shortcut_agrees_with_walking_the_sections(
        parts: list[bytes], wide: bool, footer: bool, text: str | None) -> None:
    """Whatever the data (even bytes that look like a section's head) and however its sections
    are written, the body is the sections joined."""
    head = encoded(ProtonMessage(id="p", properties={"T": text} if text else None))
    if wide:
        body = b"".join(b"\x00Su\xb0" + len(p).to_bytes(4) + p for p in parts)
    else:
        body = b"".join(data_section(p) for p in parts)
    payload = head + body + (b"\x00Sx\xc1\x01\x00" if footer else b"")
    got = _of(payload)
    assert isinstance(got, Message) and got.body == b"".join(parts)


def test_symbol_content_type_as_proton_sends_it() -> None:
    msg = ProtonMessage(body=b"\xe9", id="s")
    msg.inferred = True
    msg.content_type = symbol("text/plain;charset=latin-1")
    got = _of(encoded(msg))
    assert isinstance(got, Message) and got.body == "\u00e9"
