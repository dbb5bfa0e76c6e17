"""The JMS source: a JMS provider's own client in a JVM inside msgcap (JPype), reached through
JNDI as Oracle's adapter reaches it (properties.md §8.2): the ``java.naming.*`` properties build
the ``InitialContext``, ``jms.connectionFactory`` and ``jms.destination`` are looked up in it,
``jms.user``/``jms.password`` open the connection.

An adapter over the broker core (``msgcap.sources.broker``), like STOMP and AMQP:

* **Exactly once**: one ``CLIENT_ACKNOWLEDGE`` session. JMS's ``acknowledge()`` settles every
  message the session received, so the core calls it only when all of them are durable
  (``acks_all_received``); commit groups are at most ``jms.ack.batch`` messages (100 by
  default: ActiveMQ pages 200 at a time). A topic is subscribed durably, client id and
  subscription name ``trail.extract``.
* **The seam**: the capture thread calls the bridge (``msgcap/sources/java/Bridge.java``) once
  per batch; it receives up to ``DRAIN`` messages, no more than the commit group has room
  for, and packs their headers (one JSON array, under the names of ``props.jmsnames``, as the
  JMS getters return them) and bodies into one byte array. JPype releases the GIL while Java
  runs.
* **Messages as the JMS API gives them**: ``TextMessage`` is text, ``BytesMessage`` bytes; a
  ``MapMessage``, ``StreamMessage``, ``ObjectMessage`` or a body-less ``Message`` is a message
  error whose discard record keeps its content (``BODY_KIND`` says which form) and whose dead
  letter is the message itself, resent whole.
* **Connection loss**: the provider's ``ExceptionListener`` puts a ``Lost`` marker in the inbox;
  a failed receive or acknowledge is one too; the core reconnects with its back-off.
* **Errors**: a name JNDI does not have, a class not on the class path, a refused login, no JVM:
  one line naming the property (``SourceError``); the Java stack trace goes to the log file.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
from typing import Any

from msgcap.sources import jvm
from msgcap.sources.base import BODY_KIND, Unreadable
from msgcap.sources.broker import (
    BrokerSource,
    ConnectFailed,
    ConnectionLost,
    Delivery,
    Endpoint,
    Lost,
)
from parsers.model import Message
from props.errors import MessageError, SourceError
from props.jmsnames import header_key
from props.settings import JvmProvider

log = logging.getLogger("msgcap.source")

DRAIN = 256  # most messages one call into the JVM takes
# The header keys of what the bridge reads with the JMS getters (Bridge's constructor), from the
# one table of JMS names; the JMS message class as the AMQP source names it.
BRIDGE_FIELDS = [*(header_key(name) for name in (
    "JMSMessageID", "JMSCorrelationID", "JMSTimestamp", "JMSType", "JMSPriority",
    "JMSExpiration", "JMSReplyTo", "JMSDestination", "JMSRedelivered", "JMSDeliveryMode")),
    "message-type"]
MESSAGE_ID = BRIDGE_FIELDS[0]
SPILLED_AT = 1000  # msgcap.capture.SPILL_AT: held messages of an open transaction spilled at most
CLOSE_SECONDS = 10.0  # a provider's close() that hangs (broker gone) is left behind after this
# body kinds the bridge writes, and what a message error says of each
_TEXT, _BYTES, _EMPTY, _BROKEN = ord("T"), ord("B"), ord("N"), ord("X")
_UNCAPTURED = {ord("M"): ("MapMessage", "map-json"), ord("S"): ("StreamMessage", "stream-json"),
               ord("O"): ("ObjectMessage", "java-serialized-object"),
               _EMPTY: ("Message without a body", None)}
LISTED = 20  # JNDI names listed in an error
_KIND_LENGTH = struct.Struct(">bi")  # a body's kind and length (-1: over jms.maxbytes)


class JmsSource(BrokerSource):
    """Consumes ``provider.destination`` through the provider's own JMS client (module doc)."""

    protocol = "JMS"
    ack_unit = "acknowledge() calls"
    cumulative_acks = True
    acks_all_received = True

    def __init__(self, provider: JvmProvider, *, user: str | None, password: str | None,
                 client_id: str, selector: str | None, ack: str, ack_batch: int | None,
                 prefetch: int, id_mode: str, max_bytes: int, **core: Any) -> None:
        super().__init__([Endpoint(provider.where, "", 0, False)], provider.destination,
                         prefetch=prefetch, ack=ack, ack_batch=ack_batch, id_mode=id_mode,
                         selector=selector, client_id=client_id, max_bytes=max_bytes, **core)
        self.provider, self.user, self.password = provider, user, password
        self._context: Any = None  # the InitialContext (kept: lookups of error.destination)
        self._conn: Any = None
        self._session: Any = None
        self._bridge: Any = None
        self._producers: dict[str, Any] = {}
        self._received = 0  # messages the bridge delivered on this connection: their numbers
        self.namespace = ""

    # -- connecting -----------------------------------------------------------------------------

    def _connect(self, endpoint: Endpoint, epoch: int) -> str:
        jvm.start(self.provider)  # (first: it says when JPype is missing)
        import jpype

        try:
            return self._open(epoch)
        except jpype.JException as exc:
            self._disconnect()
            raise self._refusal(exc) from None

    def _open(self, epoch: int) -> str:
        import jpype

        self._context = context = self._initial_context()
        factory = self._lookup(context, self.provider.connection_factory, "jms.connectionFactory")
        destination = self._lookup(context, self.provider.destination, "jms.destination")
        self.namespace = ns = jvm.namespace_of(factory)
        bridge_class = jvm.bridge_class(ns)
        connection = (factory.createConnection(self.user, self.password)
                      if self.user is not None else factory.createConnection())
        self._conn = connection
        inbox = self._inbox

        def lost(exception: Any) -> None:
            inbox.put(Lost(epoch, _words(exception)))

        connection.setExceptionListener(jpype.JProxy(f"{ns}.ExceptionListener",
                                                     dict={"onException": lost}))
        topic = isinstance(destination, jpype.JClass(f"{ns}.Topic"))
        if topic:
            connection.setClientID(self.client_id)
        session_class = jpype.JClass(f"{ns}.Session")
        self._session = session = connection.createSession(False,
                                                           session_class.CLIENT_ACKNOWLEDGE)
        consumer = self._consumer(session, destination, topic)
        connection.start()
        self._bridge = bridge_class(session, consumer, self.max_bytes,
                                    jpype.JArray(jpype.java.lang.String)(BRIDGE_FIELDS))
        self._received = 0
        self._producers = {}
        meta = connection.getMetaData()
        return f"{meta.getJMSProviderName()} {meta.getProviderVersion()}"

    def _consumer(self, session: Any, destination: Any, topic: bool) -> Any:
        if topic:
            return session.createDurableSubscriber(destination, self.client_id, self.selector,
                                                   False)
        if self.selector:
            return session.createConsumer(destination, self.selector)
        return session.createConsumer(destination)

    def _initial_context(self) -> Any:
        import jpype

        environment = jpype.JClass("java.util.Hashtable")()
        for key, value in self.provider.environment:
            environment.put(key, value)
        return jpype.JClass("javax.naming.InitialContext")(environment)

    def _lookup(self, context: Any, name: str, prop: str) -> Any:
        import jpype

        try:
            return context.lookup(name)
        except jpype.JClass("javax.naming.NameNotFoundException") as exc:
            log.info("JNDI lookup of %s failed", name, exc_info=exc, extra={"file_only": True})
            words = _words(exc)
            said = f" ({words})" if words != name else ""  # (most say only the name)
            raise SourceError(f"{prop}: JNDI has no {name!r}{said}; {_listing(context)}",
                              url=self.provider.where) from None

    def _refusal(self, exc: Any) -> Exception:
        """A Java exception of connecting: ``ConnectFailed``, permanent for a refused login or
        a TLS handshake the provider refused (``SECURITY_EXCEPTIONS``, ``TLS_EXCEPTIONS``:
        the core stops the run unless a connection worked before), else a ``SourceError``
        naming what to change for a configuration no connection can work with."""
        log.info("connecting to %s failed", self.provider.where, exc_info=exc,
                 extra={"file_only": True})
        name = str(exc.getClass().getName())
        words = _words(exc)
        if name.endswith(("CommunicationException", "ServiceUnavailableException")):
            return ConnectFailed(words)
        if name.endswith("NoInitialContextException") or _class_missing(exc):
            return SourceError(f"java.naming.factory.initial / jvm.bootoptions: {words} "
                               "(is the provider's jar on -Djava.class.path?)",
                               url=self.provider.where)
        if _caused_by(exc, SECURITY_EXCEPTIONS):
            return ConnectFailed(f"jms.user: the provider refused the login: {words}",
                                 permanent=True)
        if _caused_by(exc, NOT_TLS_EXCEPTIONS) or "unrecognized SSL message" in words:
            return ConnectFailed(f"TLS failed: the port does not speak TLS ({words}): use the "
                                 "broker's TLS port, or a URL without TLS", permanent=True)
        if _caused_by(exc, TLS_EXCEPTIONS):
            return ConnectFailed(f"TLS failed: {words}", permanent=True)
        if name.endswith("InvalidDestinationException"):
            return SourceError(f"jms.destination {self.destination}: {words}",
                               url=self.provider.where)
        if name.endswith("InvalidSelectorException"):
            return SourceError(f"jms.selector: {words}", url=self.provider.where)
        if name.startswith("javax.naming."):
            return SourceError(f"JNDI ({self.provider.factory}): {words}",
                               url=self.provider.where)
        return ConnectFailed(words)

    def _disconnect(self) -> None:
        connection, self._conn = self._conn, None
        self._bridge = self._session = None
        self._producers = {}
        if connection is None:
            return
        # a provider may wait long for a broker that went away (ActiveMQ: its closeTimeout)
        closing = threading.Thread(target=_quietly_close, args=(connection,),
                                   name="msgcap-jms-close", daemon=True)
        closing.start()
        closing.join(CLOSE_SECONDS)
        if closing.is_alive():
            log.warning("the JMS connection to %s did not close within %.0f s; left behind",
                        self.provider.where, CLOSE_SECONDS)
            jvm.leave_at_exit()

    @property
    def window(self) -> int:  # type: ignore[override]
        """The core's window, at most ``SPILLED_AT``: the capture spills an open transaction's
        held messages at the smaller of the window and that many (``Capture.spill_at``), and a
        batch received must end there (``_wait``)."""
        return min(super().window, SPILLED_AT)

    # -- messages -------------------------------------------------------------------------------

    def _wait(self, timeout: float, limit: int | None) -> list[Any]:
        items = self._inbox.take(0.0, limit)  # a lost connection, an interrupt
        bridge = self._bridge
        if items or bridge is None:
            return items or self._inbox.take(timeout, limit)
        import jpype

        # acknowledge() settles every message received, so a batch must end where the capture
        # makes all it received durable: where its commit group ends or the open transaction's
        # held messages are spilled, both when ``window`` messages wait to be made durable. A
        # message received past that point would keep the acknowledgement back until a later
        # point happened to fall on a batch's end (a long transaction: never; the provider's
        # unacknowledged messages then pile up until it stops dispatching). When both a group
        # and a transaction hold messages, one message at a time keeps every point a batch end.
        waiting = sum(1 for delivery in self._unacked if not delivery.durable)
        room = self.window - waiting
        count = min(limit or DRAIN, DRAIN, room) if room > 0 else 1
        try:
            packed = bridge.drain(count, int(timeout * 1000))
        except jpype.JException as exc:
            log.info("receiving failed", exc_info=exc, extra={"file_only": True})
            return [Lost(self._epoch, f"receiving failed: {_words(exc)}")]
        if packed is None:
            return []
        return self._unpack(bytes(packed))

    def _unpack(self, data: bytes) -> list[Any]:
        """The bridge's batch: the headers' JSON array, then per message kind, length, body."""
        size = int.from_bytes(data[:4], "big")
        position = 4 + size
        out: list[Any] = []
        epoch, number = self._epoch, self._received
        kind_length = _KIND_LENGTH.unpack_from
        for headers in json.loads(data[4:position]):
            kind, length = kind_length(data, position)
            position += 5
            message = Message(headers.get(MESSAGE_ID, ""), headers, b"",
                              Delivery(epoch, number))
            number += 1
            if length < 0:
                size = int.from_bytes(data[position:position + 8], "big")
                position += 8
                out.append(self._over_limit(message, size))
                continue
            body = data[position:position + length]
            position += length
            if kind == _TEXT:
                message.body = body.decode("utf-8")
                out.append(message)
            elif kind == _BYTES:
                message.body = body
                out.append(message)
            else:
                out.append(_uncaptured(message, kind, body))
        self._received = number
        return out

    def _acknowledge(self, deliveries: list[Delivery]) -> None:
        assert self._bridge is not None  # (the core acknowledges only on a live connection)
        self._bridge.acknowledge()

    def _publish(self, destination: str, message: Message, extra: dict[str, str]) -> str | None:
        """``error.destination`` (a JNDI name): the original resent whole while the bridge holds
        it, else (a message from the spill journal) a new Text or BytesMessage."""
        import jpype

        bridge, session = self._bridge, self._session
        if bridge is None or session is None:
            raise ConnectionLost("not connected")
        try:
            producer = self._producers.get(destination)
            if producer is None:
                target = self._lookup(self._context, destination, "error.destination")
                producer = self._producers[destination] = session.createProducer(target)
            extra = java_names(extra)
            pairs = jpype.JArray(jpype.java.lang.String)(
                [item for pair in extra.items() for item in pair])
            delivery = message.ack
            if isinstance(delivery, Delivery) and delivery.epoch == self._epoch:
                bridge.resend(producer, delivery.token, pairs)
            else:
                send_message(bridge, session, producer, message, extra)
        except jpype.JException as exc:
            log.info("sending to %s failed", destination, exc_info=exc,
                     extra={"file_only": True})
            name = str(exc.getClass().getName())
            if name.endswith(("InvalidDestinationException", "SecurityException",
                              "MessageFormatException", "IllegalArgumentException",
                              "JMSRuntimeException")):
                return _words(exc)
            raise ConnectionLost(f"sending failed: {_words(exc)}") from None
        return None

    def close(self) -> None:
        super().close()
        self._context = None


def java_names(extra: dict[str, str]) -> dict[str, str]:
    """The ``msgcap-error*`` properties of a dead letter under names that are Java identifiers
    (``msgcap_error``, ...): JMS property names must be (Artemis's core client refuses others,
    and a JMS consumer does not see them)."""
    return {name.replace("-", "_"): value for name, value in extra.items()}


def send_message(bridge: Any, session: Any, producer: Any, message: Message,
                 extra: dict[str, str] | None = None) -> None:
    """``message`` as a new TextMessage (a text body) or BytesMessage, persistent, its headers as
    string properties except those the provider sets; correlation id, type and priority as
    JMS has them."""
    import jpype

    headers = message.headers
    properties = [item for key, value in {**headers, **(extra or {})}.items()
                  if key not in NOT_SENT for item in (key, value)]
    text, data = ((message.body, None) if isinstance(message.body, str)
                  else (None, jpype.JArray(jpype.JByte)(message.body)))
    priority = headers.get("priority", "4")
    bridge.send(session, producer, text, data,
                jpype.JArray(jpype.java.lang.String)(properties),
                int(priority) if priority.isdigit() and int(priority) <= 9 else 4,
                headers.get("correlation-id"), headers.get("type"))


# headers a provider sets itself (or JMS has no property for)
NOT_SENT = frozenset({"message-id", "correlation-id", "timestamp", "type", "priority", "expires",
                      "reply-to", "destination", "redelivered", "persistent", "message-type",
                      "content-type", "JMSXDeliveryCount", "JMSXUserID", BODY_KIND,
                      "content-length", "subscription", "ack"})


def _uncaptured(message: Message, kind: int, body: bytes) -> Unreadable:
    """A message msgcap does not capture, its content kept for the discard record."""
    kept: str | bytes = body
    if kind == _BROKEN:
        reason = f"the provider could not read the body: {body.decode('utf-8', 'replace')}"
        kept = b""
    else:
        what, form = _UNCAPTURED.get(kind, ("message of an unknown kind", None))
        reason = f"a JMS {what}: only TextMessage and BytesMessage records can be captured"
        if form is not None:
            message.headers[BODY_KIND] = form
        if form in ("map-json", "stream-json"):  # JSON text: the discard record's ``body``
            kept = body.decode("utf-8")
    message.body = kept
    return Unreadable(message, MessageError(reason, source=message.name, position="body"))


def _quietly_close(connection: Any) -> None:
    try:
        connection.close()
    except Exception as exc:  # noqa: BLE001 - a Java exception of a connection already gone
        log.debug("closing the JMS connection: %s", exc)


def _words(exc: Any) -> str:
    """A Java exception in one line: its message (else its class) and its cause's."""
    said: list[str] = []
    current = exc
    while current is not None and len(said) < 3:
        text = current.getMessage()
        said.append(str(text) if text is not None else str(current.getClass().getSimpleName()))
        cause = current.getCause()
        if cause is None and hasattr(current, "getLinkedException"):
            cause = current.getLinkedException()
        current = cause if cause is not current else None
    words = ": ".join(dict.fromkeys(" ".join(s.split()) for s in said))
    return words or "failed"


# a refused login, whatever subclass the provider throws (Qpid JMS: JMSSecuritySaslException)
SECURITY_EXCEPTIONS = frozenset({"javax.jms.JMSSecurityException",
                                 "jakarta.jms.JMSSecurityException",
                                 "java.lang.SecurityException"})


# a TLS handshake that failed (a certificate refused), and an answer that is no TLS at all (Qpid
# JMS's Netty; the JDK's own engine says "Unsupported or unrecognized SSL message")
TLS_EXCEPTIONS = frozenset({"javax.net.ssl.SSLHandshakeException"})
NOT_TLS_EXCEPTIONS = frozenset({"io.netty.handler.ssl.NotSslRecordException"})


def _caused_by(exc: Any, names: frozenset[str]) -> bool:
    """Whether ``exc`` or one of its causes is of a class named in ``names`` or a subclass."""
    current = exc
    while current is not None:
        kind = current.getClass()
        while kind is not None:
            if str(kind.getName()) in names:
                return True
            kind = kind.getSuperclass()
        cause = current.getCause()
        current = cause if cause is not current else None
    return False


def _class_missing(exc: Any) -> bool:
    """Whether a class not found is at the root of ``exc``."""
    current = exc
    while current is not None:
        name = str(current.getClass().getName())
        if name in ("java.lang.ClassNotFoundException", "java.lang.NoClassDefFoundError"):
            return True
        cause = current.getCause()
        current = cause if cause is not current else None
    return False


def _listing(context: Any) -> str:
    """The names the context lists at its root (some providers list none)."""
    try:
        names: list[str] = []
        listing = context.list("")
        while listing.hasMore() and len(names) <= LISTED:
            names.append(str(listing.next().getName()))
    except Exception:  # noqa: BLE001 - a provider that cannot list its names
        return "the provider does not list its names"
    if not names:
        return "the provider lists no names"
    more = ", …" if len(names) > LISTED else ""
    return f"names there: {', '.join(names[:LISTED])}{more}"


# Messages ``msgcap check`` counts at most, browsing: a broker pages into memory what a browser
# looks at, and ActiveMQ, its queue's memory full of browsed messages, stopped dispatching to the
# capture (seen with 50,000 browsed).
BROWSE_LIMIT = 1_000
# A browser may be shown only the head of a long queue (ActiveMQ: its maxBrowsePageSize, 400):
# a count this high is a lower bound.
BROWSE_SHOWN = 400


class JmsProbe(JmsSource):
    """``msgcap check``'s look: the JVM started, the JNDI lookups, a connection, and on a queue a
    ``QueueBrowser`` that counts what waits (up to ``BROWSE_LIMIT``); nothing is consumed, and
    a topic's durable subscription is left as it is."""

    def probe(self) -> str:
        jvm.start(self.provider)  # (first: it says when JPype is missing)
        import jpype

        try:
            context = self._initial_context()
            factory = self._lookup(context, self.provider.connection_factory,
                                   "jms.connectionFactory")
            destination = self._lookup(context, self.provider.destination, "jms.destination")
            ns = jvm.namespace_of(factory)
            connection = (factory.createConnection(self.user, self.password)
                          if self.user is not None else factory.createConnection())
            self._conn = connection
            session = connection.createSession(False, jpype.JClass(f"{ns}.Session")
                                               .AUTO_ACKNOWLEDGE)
            connection.start()
            meta = connection.getMetaData()
            name = f"{meta.getJMSProviderName()} {meta.getProviderVersion()}"
            if isinstance(destination, jpype.JClass(f"{ns}.Topic")):
                facts = "a topic: its durable subscription is left as it is"
            else:
                facts = self._count(session, destination)
        except jpype.JException as exc:
            refusal = self._refusal(exc)
            if isinstance(refusal, ConnectFailed):
                raise SourceError(refusal.why, url=self.provider.where) from None
            raise refusal from None
        finally:
            self._disconnect()
        said = [facts]
        if self.selector:
            said.append("jms.selector accepted")
        return (f"{self.provider.where}: connected to {name}, found {self.destination} in JNDI "
                f"({'; '.join(said)}); disconnected, nothing consumed")

    def _count(self, session: Any, queue: Any) -> str:
        browser = (session.createBrowser(queue, self.selector) if self.selector
                   else session.createBrowser(queue))
        try:
            waiting = browser.getEnumeration()
            count = 0
            while count < BROWSE_LIMIT and waiting.hasMoreElements():
                waiting.nextElement()
                count += 1
        finally:
            browser.close()
        plural = "" if count == 1 else "s"
        how = f"browsed{', selected' if self.selector else ''}"
        if count >= BROWSE_SHOWN:
            return (f"at least {count} messages waiting ({how}: a browser may be shown only "
                    "the head of a long queue)")
        return f"{count} message{plural} waiting ({how})"


def send_to_provider(provider: JvmProvider, messages: Any, *, user: str | None,
                     password: str | None) -> int:
    """``msgcap send`` through the provider's own client: each message a persistent Text or
    BytesMessage on ``jms.destination``; returns how many the provider took (a persistent
    send returns once the broker has it)."""
    jvm.start(provider)  # (first: it says when JPype is missing)
    import jpype

    source = JmsSource(provider, user=user, password=password, client_id="msgcap-send",
                       selector=None, ack="client", ack_batch=None, prefetch=1, id_mode="time",
                       max_bytes=1)
    count = 0
    try:
        context = source._initial_context()
        factory = source._lookup(context, provider.connection_factory, "jms.connectionFactory")
        destination = source._lookup(context, provider.destination, "jms.destination")
        ns = jvm.namespace_of(factory)
        bridge = jvm.bridge_class(ns)
        connection = (factory.createConnection(user, password) if user is not None
                      else factory.createConnection())
        source._conn = connection
        session = connection.createSession(False, jpype.JClass(f"{ns}.Session").AUTO_ACKNOWLEDGE)
        producer = session.createProducer(destination)
        for message in messages:
            send_message(bridge, session, producer, message)
            count += 1
    except jpype.JException as exc:
        refusal = source._refusal(exc)
        why = refusal.why if isinstance(refusal, ConnectFailed) else str(refusal)
        raise SourceError(f"{why}; {count} messages were sent before (--skip {count} resends "
                          "from there)", url=provider.where) from None
    finally:
        source._disconnect()
    return count
