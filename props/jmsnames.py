"""The one table of JMS names (properties.md §2.2): how a message's JMS header fields and
properties are named in ``Message.headers`` and read by ``$NAME`` and ``jms.id``.

Every source (STOMP, AMQP 1.0, a JMS provider's own client, the spool directory, dumps) delivers
headers as text under these keys, rendered as a JMS consumer's ``getJMS…()`` /
``getStringProperty()`` would return them, so a properties file means the same on every
transport. The standard header fields keep the STOMP names ActiveMQ gives them (dumps and spool
files written before carry those); the JMS-defined ``JMSX…`` properties keep their own names;
an application property is its own name. ``absent`` is what JMS returns for a field the
transport leaves out (``getJMSRedelivered()`` is ``false``, ``getJMSExpiration()``,
``getJMSTimestamp()`` and ``getStringProperty("JMSXGroupSeq")`` ``0``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JmsName:
    """One row of the table: the JMS name(s) a ``$NAME`` may use (none for what JMS has no
    name for: ``$content-type``, ``$message-type``), the header key, what JMS returns when the
    transport leaves it out, and the value in words (docs/properties.md)."""

    names: tuple[str, ...]
    header: str
    value: str
    absent: str | None = None


TABLE: tuple[JmsName, ...] = (
    JmsName(("JMSMessageID",), "message-id", "the provider's id; over AMQP the OASIS mapping's"
            " `ID:AMQP_…` forms"),
    JmsName(("JMSCorrelationID",), "correlation-id", "as set by the producer"),
    JmsName(("JMSTimestamp", "JMSTimeStamp"), "timestamp", "epoch milliseconds, `0` when the"
            " producer set none", absent="0"),
    JmsName(("JMSType",), "type", "as set by the producer"),
    JmsName(("JMSPriority",), "priority", "`0`–`9`"),
    JmsName(("JMSExpiration",), "expires", "epoch milliseconds, `0` = never", absent="0"),
    JmsName(("JMSReplyTo",), "reply-to", "the destination"),
    JmsName(("JMSDestination",), "destination", "the destination"),
    JmsName(("JMSRedelivered",), "redelivered", "`true` or `false`", absent="false"),
    JmsName(("JMSDeliveryMode",), "persistent", "`true` for a persistent message"),
    JmsName(("JMSXGroupID",), "JMSXGroupID", "the message group"),
    JmsName(("JMSXGroupSeq",), "JMSXGroupSeq", "the message's number in its group, `0` when"
            " none", absent="0"),
    JmsName(("JMSXUserID",), "JMSXUserID", "the user who sent it"),
    JmsName(("JMSXDeliveryCount",), "JMSXDeliveryCount", "deliveries so far, `1` the first"),
    JmsName((), "content-type", "the MIME type the producer gave the body"),
    JmsName((), "message-type", "`TextMessage`, `BytesMessage`, `MapMessage`, "
            "`StreamMessage`, `ObjectMessage` or `Message`"),
)

# lower-cased JMS name -> header key (a ``$NAME`` not in it is looked up as written)
JMS_HEADERS: dict[str, str] = {name.lower(): row.header for row in TABLE for name in row.names}
# header key -> JMS's value when the transport leaves it out
ABSENT: dict[str, str] = {row.header: row.absent for row in TABLE if row.absent is not None}


def header_key(name: str) -> str:
    """The ``Message.headers`` key a ``$NAME`` reads: the table's, else NAME itself."""
    return JMS_HEADERS.get(name.lower(), name)


def header_text(headers: Mapping[str, str], key: str, *, jms_default: bool = True
                ) -> str | None:
    """The value under ``key`` (exactly, then in any case), else JMS's value for a field the
    transport left out (unless not ``jms_default``: what identifies a message must be sent),
    else None."""
    value = headers.get(key)
    if value is None:
        lower = key.lower()
        for name, candidate in headers.items():
            if name.lower() == lower:
                return candidate
        return ABSENT.get(key) if jms_default else None
    return value
