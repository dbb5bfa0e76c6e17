"""AMQP 1.0 messages as msgcap reads and writes them: the header fields and properties under the
names of ``props.jmsnames`` as a JMS consumer reads them (``headers_of``, the OASIS AMQP JMS
Mapping through ``msgcap.sources.jmstext``), the body exactly as AMQP 1.0 defines it
(``message_of``), and what ``msgcap send`` and dead letters publish (``amqp_message``). The
connection and the source are ``msgcap.sources.amqp``'s.

* Bodies as AMQP 1.0 §3.2 defines them, without guessing: the data sections joined are bytes,
  text in its charset when ``content-type`` is ``text/*`` (``text_charset``, as on STOMP); an
  ``amqp-value`` binary is bytes, an ``amqp-value`` string text, no body (or an ``amqp-value``
  null) empty bytes. Anything else (a sequence, a map, a number), text that does not decode and
  a payload that is no AMQP message are ``Unreadable``, keeping the body in another form (the
  encoded body sections, the payload as it came; ``BODY_KIND`` names it) for the discard record
  or dead letter. proton keeps only the last of several data sections and decodes anything as a
  message, so ``body_of`` reads the framing: the usual shapes (one data section, an
  ``amqp-value``) are told from a few bytes, the others walked section by section.
* A message larger than ``jms.maxbytes`` that a broker sends all the same is read as it comes
  by the connection; ``oversized_of`` makes the message error of the head it kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from msgcap.sources.base import BODY_KIND, Unreadable, body_size, text_charset, too_large
from msgcap.sources.jmstext import correlation_id_text, id_object, java_text, message_id_text
from parsers.model import Message
from props.errors import MessageError, SourceError

try:  # the optional amqp extra: without it, amqp:// is one line saying how to install it
    import proton
    from cproton import (  # type: ignore[import-untyped]
        pn_message_clear,
        pn_message_get_content_type,
        pn_message_get_creation_time,
        pn_message_get_delivery_count,
        pn_message_get_expiry_time,
        pn_message_get_group_id,
        pn_message_get_group_sequence,
    )
except ImportError:
    raise SourceError("amqp:// and amqps:// need the AMQP 1.0 client, python-qpid-proton: "
                      "pip install 'msgcap[amqp]' (it builds with gcc and the Python and "
                      "OpenSSL headers)") from None

# Headers a broker sets or that describe one delivery: not sent as application properties.
NOT_SENT = frozenset(("message-id", "correlation-id", "destination", "timestamp", "redelivered",
                      "expires", "persistent", "priority", "type", "reply-to", "subscription",
                      "ack", "content-length", "receipt", "transaction", "content-type",
                      "message-type", "jmsxdeliverycount", "jmsxgroupid", "jmsxgroupseq",
                      "jmsxuserid"))

# x-opt-jms-msg-type (Qpid JMS, Artemis): the JMS message class a producer sent.
JMS_MESSAGE_TYPES = ("Message", "ObjectMessage", "MapMessage", "BytesMessage", "StreamMessage",
                     "TextMessage")
SERIALIZED_OBJECT = "application/x-java-serialized-object"


def headers_of(msg: proton.Message) -> dict[str, str]:
    """A received message's header fields and properties under the names of
    ``props.jmsnames`` and as a JMS consumer reads them (the OASIS AMQP JMS Mapping:
    ``msgcap.sources.jmstext``); a null property is left out, as JMS has no value for it."""
    handle = msg._msg  # the times in ms as sent (proton's properties turn them into float s)
    headers = {}
    properties = msg.properties
    if properties:
        for key, value in properties.items():
            text = value if type(value) is str else java_text(value)
            if text is not None:
                headers[str(key)] = text
    if msg.id is not None:
        headers["message-id"] = message_id_text(msg.id)
    if msg.correlation_id is not None:
        headers["correlation-id"] = correlation_id_text(msg.correlation_id)
    created = pn_message_get_creation_time(handle)
    if created:
        headers["timestamp"] = str(created)
    annotations: Any = msg.annotations or {}
    jms_type = annotations.get("x-opt-jms-type") or msg.subject
    if jms_type is not None:
        headers["type"] = str(jms_type)
    headers["priority"] = str(msg.priority)
    if msg.durable:
        headers["persistent"] = "true"
    expires = pn_message_get_expiry_time(handle)
    if expires:
        headers["expires"] = str(expires)
    if msg.address is not None:
        headers["destination"] = msg.address
    if msg.reply_to is not None:
        headers["reply-to"] = msg.reply_to
    deliveries = pn_message_get_delivery_count(handle)
    headers["redelivered"] = "true" if deliveries else "false"
    headers["JMSXDeliveryCount"] = str(deliveries + 1)
    group = pn_message_get_group_id(handle)
    if group is not None:
        headers["JMSXGroupID"] = group
        sequence = pn_message_get_group_sequence(handle)
        if sequence:  # 0 is no sequence (Qpid JMS)
            headers["JMSXGroupSeq"] = str(sequence)
    user = msg.user_id
    if user:
        headers["JMSXUserID"] = bytes(user).decode("utf-8", "replace")
    content_type = pn_message_get_content_type(handle)
    if content_type:
        headers["content-type"] = content_type
    headers["message-type"] = message_type(msg, annotations.get("x-opt-jms-msg-type"),
                                           content_type)
    return headers


def message_type(msg: proton.Message, annotated: Any, content_type: str | None) -> str:
    """The JMS message class: the producer's ``x-opt-jms-msg-type``, else what Qpid JMS makes
    of the body (AmqpJmsMessageBuilder): text or bytes by section and content type, a map
    ``MapMessage``, a list ``StreamMessage``, any other value ``ObjectMessage``."""
    if isinstance(annotated, int) and 0 <= annotated < len(JMS_MESSAGE_TYPES):
        return JMS_MESSAGE_TYPES[annotated]
    body: Any = msg.body
    if body is None or isinstance(body, (bytes, memoryview)):
        if content_type == SERIALIZED_OBJECT:
            return "ObjectMessage"
        if content_type and text_charset(content_type) is not None:
            return "TextMessage"
        return "BytesMessage" if msg.inferred or body is not None else "Message"
    if isinstance(body, str):
        return "TextMessage"
    if isinstance(body, dict):
        return "MapMessage"
    if isinstance(body, list):
        return "StreamMessage"
    return "ObjectMessage"


# Message sections (AMQP 1.0 §3.2) by their descriptor codes: the header sections come first, in
# this order, then the body (one or more data sections, one or more amqp-sequence sections, or one
# amqp-value section), then a footer.
DATA, SEQUENCE, VALUE, FOOTER = 0x75, 0x76, 0x77, 0x78
SECTION_NAMES = {b"amqp:header:list": 0x70, b"amqp:delivery-annotations:map": 0x71,
                 b"amqp:message-annotations:map": 0x72, b"amqp:properties:list": 0x73,
                 b"amqp:application-properties:map": 0x74, b"amqp:data:binary": DATA,
                 b"amqp:amqp-sequence:list": SEQUENCE, b"amqp:amqp-value:*": VALUE,
                 b"amqp:footer:map": FOOTER}
SHORT_DATA = b"\x00Su"  # a data section's head as every client writes it (smallulong descriptor)
# A body section's descriptor in any form (smallulong, ulong, symbol), or bytes that may be one.
BODY_DESCRIPTOR = re.compile(rb"\x00S[u-w]|\x80\x00{7}[u-w]|amqp:(?:data:|amqp-)")
FIXED_WIDTHS = (0, 1, 2, 4, 8, 16)  # of the format codes 0x4_ to 0x9_ (AMQP 1.0 §1.6)
NOT_A_MESSAGE = "transfer payload (not an AMQP message)"


class Uncaptured(Exception):
    """A body msgcap does not capture (``reason``): ``kept`` is what the discard record or dead
    letter holds instead, ``kind`` what it is (the ``BODY_KIND`` header), None for the body's
    own bytes."""

    def __init__(self, reason: str, kept: bytes, kind: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kept, self.kind = reason, kept, kind


def _value_end(payload: bytes, at: int) -> int:
    """Where the AMQP-encoded value at ``payload[at]`` ends: its format code says its width, or
    that a 1- or 4-byte size follows (AMQP 1.0 §1.6); a described value is its descriptor and its
    value."""
    code = payload[at]
    if code == 0:
        return _value_end(payload, _value_end(payload, at + 1))
    kind = code >> 4
    if kind >= 0xA:  # variable width, compound, array
        if kind & 1:
            return at + 5 + int.from_bytes(payload[at + 1:at + 5])
        return at + 2 + payload[at + 1]
    if kind < 4:
        raise ValueError(f"byte {at}: 0x{code:02x} is no AMQP format code")
    return at + 1 + FIXED_WIDTHS[kind - 4]


def _section_code(payload: bytes, at: int, end: int) -> int:
    """The section a descriptor (``payload[at:end]``) names; 0 for one that names none."""
    code = payload[at]
    if code == 0x53:  # smallulong
        return payload[at + 1]
    if code == 0x80:  # ulong
        return int.from_bytes(payload[at + 1:end])
    if code in (0xA3, 0xB3):  # sym8, sym32
        return SECTION_NAMES.get(payload[at + (2 if code == 0xA3 else 5):end], 0)
    return 0


def sections_of(payload: bytes) -> list[tuple[int, int, int, int]]:
    """The sections of an encoded message, each (its code, where it starts, where its value
    starts, where it ends); ``ValueError`` for a payload that is not a message (AMQP 1.0 §3.2):
    anything but sections, a section cut short, sections out of order or repeated (only data
    and amqp-sequence sections repeat), a body of two kinds, a data section not binary."""
    return list(_sections(payload))


def _sections(payload: bytes) -> Iterator[tuple[int, int, int, int]]:
    """``sections_of``, one section at a time (the start of a message cut short is read up to
    the section cut)."""
    at, size, previous = 0, len(payload), 0
    try:
        while at < size:
            if payload[at] != 0:
                raise ValueError(f"byte {at} does not start a section")
            value = _value_end(payload, at + 1)
            code = _section_code(payload, at + 1, value)
            end = _value_end(payload, value)
            if end > size:
                raise ValueError(f"the section at byte {at} ends after the payload")
            if not 0x70 <= code <= FOOTER:
                raise ValueError(f"byte {at} starts no message section")
            if code < previous or (code == previous and code not in (DATA, SEQUENCE)) or (
                    DATA <= previous < FOOTER and DATA <= code < FOOTER and code != previous):
                raise ValueError(f"the section at byte {at} is out of order")
            if code == DATA and payload[value] not in (0xA0, 0xB0):
                raise ValueError(f"the data section at byte {at} holds no binary")
            yield code, at, value, end
            at, previous = end, code
    except IndexError:
        raise ValueError(f"the section at byte {at} ends after the payload") from None


def headers_end(payload: bytes) -> int:
    """Where the header sections of ``payload`` (the start of a message, maybe cut short) end:
    the start of its first body section, or of the first section cut short or not valid."""
    end = 0
    try:
        for code, _, _, section_end in _sections(payload):
            if code >= DATA:
                break
            end = section_end
    except ValueError:
        pass
    return end


def _only_data_section(payload: bytes, size: int) -> bool:
    """Whether ``payload`` ends with a data section of ``size`` bytes and has no other body
    section: the usual message, told from its framing (that section's head right before its
    last ``size`` bytes, no body-section descriptor in any of its forms before) without walking
    its sections."""
    end = len(payload)
    head = end - size - 5  # 0x00 0x53 0x75 0xa0 size
    if head < 0 or payload[head + 3] != 0xA0 or payload[head + 4] != size:
        head -= 3  # 0x00 0x53 0x75 0xb0 size (4 bytes)
        if (head < 0 or payload[head + 3] != 0xB0
                or int.from_bytes(payload[head + 4:head + 8]) != size):
            return False
    return payload.startswith(SHORT_DATA, head) and BODY_DESCRIPTOR.search(payload, 0, head) is None


def body_of(msg: proton.Message, payload: bytes, content_type: str | None) -> str | bytes:
    """The body of ``payload`` (decoded into ``msg``) as captured: the data sections' bytes
    joined (AMQP 1.0 §3.2), text in its charset when ``content_type`` is ``text/*``; an
    ``amqp-value`` string as text, binary as bytes; no body (or an ``amqp-value`` null) as
    empty bytes. ``Uncaptured`` for a body of another kind or text that does not decode,
    ``ValueError`` for a payload that is not an AMQP message.

    The usual messages (one data section, an ``amqp-value`` string or binary) are taken as
    proton decoded them, told from their framing; only the others are walked section by
    section (``sections_of``), as proton keeps only the last of several data sections and
    decodes what is no message as one without a body."""
    body: Any = msg.body
    kind = type(body)
    if payload[:1] == b"\x00":
        if kind is str and not msg.inferred:
            return body
        if kind is memoryview or kind is bytes:
            if not msg.inferred:
                return bytes(body)
            if _only_data_section(payload, len(body)):
                return _text_or_bytes(bytes(body), content_type)
    sections = sections_of(payload)
    body_sections = [s for s in sections if DATA <= s[0] < FOOTER]
    if not body_sections or (body_sections[0][0] == VALUE and body is None):
        return b""
    if body_sections[0][0] == DATA:
        return _text_or_bytes(b"".join(
            payload[value + (2 if payload[value] == 0xA0 else 5):end]
            for _, _, value, end in body_sections), content_type)
    if kind is str or kind is memoryview or kind is bytes:
        return body if kind is str else bytes(body)
    what = body_kind(msg)
    raise Uncaptured(f"AMQP body is an {what}: only data sections, an amqp-value string or an "
                     "amqp-value binary can be captured",
                     payload[body_sections[0][1]:body_sections[-1][3]], what)


def _text_or_bytes(data: bytes, content_type: str | None) -> str | bytes:
    """A data body: text in its charset when ``content_type`` is ``text/*`` (as on STOMP), else
    the bytes; ``Uncaptured`` when the charset is unknown or the bytes are not such text, and
    for a serialized Java object (a JMS ObjectMessage: no record, whatever its bytes)."""
    if content_type == SERIALIZED_OBJECT:
        raise Uncaptured(f"AMQP body is a serialized Java object (content-type {content_type}, "
                         "a JMS ObjectMessage): only records can be captured", data)
    charset = text_charset(content_type) if content_type else None
    if charset is None:
        return data
    try:
        return data.decode(charset)
    except LookupError:
        raise Uncaptured(f"content-type {content_type}: no character set {charset} is known",
                         data) from None
    except UnicodeDecodeError as exc:
        raise Uncaptured(f"content-type {content_type}: byte {exc.start} of the body is not "
                         f"{charset} text", data) from None


def body_kind(msg: proton.Message) -> str:
    """Words for a body ``body_of`` does not take: ``amqp-value map``, ``amqp-sequence``."""
    body: Any = msg.body
    if isinstance(body, list) and msg.inferred:
        return "amqp-sequence"
    kinds: dict[Any, str] = {dict: "map", list: "list"}
    kind = kinds.get(type(body), type(body).__name__)
    return f"amqp-value {kind}"


def message_of(msg: proton.Message, payload: bytes, ack: Any, max_bytes: int
               ) -> Message | Unreadable:
    """A transfer's ``payload`` as a ``Message`` (decoded into ``msg``, reused message after
    message). ``Unreadable`` for a body msgcap does not capture, kept in another form (the
    ``BODY_KIND`` header says which), for a payload that is no AMQP message (kept as it came, with
    no other header) and for a body over ``max_bytes`` (not kept)."""
    try:
        pn_message_clear(msg._msg)  # proton keeps fields of the previous message that this
        msg.decode(payload)  # one's sections do not set (a message-id, without properties)
        headers = headers_of(msg)
        body = body_of(msg, payload, headers.get("content-type"))
    except (ValueError, proton.ProtonException) as exc:
        message = Message("", {BODY_KIND: NOT_A_MESSAGE}, b"", ack, None)
        return _uncaptured(message, Uncaptured(
            f"the transfer's payload is not an AMQP message: {exc}", payload), max_bytes)
    except Uncaptured as exc:
        return _uncaptured(Message(headers.get("message-id", ""), headers, b"", ack, None),
                           exc, max_bytes)
    message = Message(headers.get("message-id", ""), headers, b"", ack, None)
    size = body_size(body)
    if size > max_bytes:
        return Unreadable(message, too_large(size, max_bytes, source=message.name))
    message.body = body
    return message


def _uncaptured(message: Message, why: Uncaptured, max_bytes: int) -> Unreadable:
    """``message`` for ``error.policy``, holding what ``why`` keeps (unless over ``max_bytes``)."""
    size = len(why.kept)
    if size > max_bytes:
        return Unreadable(message, too_large(size, max_bytes, source=message.name))
    message.body = bytes(why.kept)
    if why.kind is not None:
        message.headers[BODY_KIND] = why.kind
    return Unreadable(message, MessageError(why.reason, source=message.name, position="body"))


def oversized_of(msg: proton.Message, head: bytes, size: int, ack: Any, max_bytes: int
                 ) -> Unreadable:
    """A transfer of ``size`` bytes, more than ``max_bytes`` + ``HEADER_BYTES``, of which only
    ``head`` was kept: its header sections decoded (those ``head`` holds whole), its body not
    held, for ``error.policy``."""
    end = headers_end(head)
    try:
        pn_message_clear(msg._msg)
        msg.decode(head[:end])
        headers = headers_of(msg)
    except proton.ProtonException:
        headers = {}
    message = Message(headers.get("message-id", ""), headers, b"", ack, None)
    body = size - end  # the body's bytes: those of its sections, less the framing of the first
    if head.startswith(SHORT_DATA, end) and len(head) > end + 3:
        body -= 5 if head[end + 3] == 0xA0 else 8
    return Unreadable(message, too_large(body, max_bytes, source=message.name))


def amqp_message(message: Message, extra: dict[str, str] | None = None) -> proton.Message:
    """What msgcap publishes for ``message``: bytes as a data section, text as an
    ``amqp-value`` string, headers as application properties except those a broker sets
    (``NOT_SENT``), the ids, type, group and content type in their fields (ids as
    ``id_object`` gives them, so that they read back alike), durable unless
    ``persistent: false``."""
    headers = message.headers
    properties = {k: v for k, v in headers.items() if k.lower() not in NOT_SENT}
    if extra:
        properties.update(extra)
    body = message.body
    out = proton.Message(body=body if isinstance(body, str) else bytes(body),
                         properties=properties or None)
    out.inferred = not isinstance(body, str)  # bytes: a data section
    out.durable = headers.get("persistent", "true").strip().lower() != "false"
    if "message-id" in headers:
        out.id = id_object(headers["message-id"])
    if "correlation-id" in headers:
        out.correlation_id = id_object(headers["correlation-id"])
    if "type" in headers:
        out.subject = headers["type"]
    if headers.get("priority", "").isdigit():
        out.priority = min(int(headers["priority"]), 255)
    if "JMSXGroupID" in headers:
        out.group_id = headers["JMSXGroupID"]
        sequence = headers.get("JMSXGroupSeq", "")
        if sequence.isdigit():
            out.group_sequence = int(sequence)
    if "content-type" in headers:
        out.content_type = headers["content-type"]
    return out
