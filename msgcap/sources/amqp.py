"""The AMQP 1.0 source (properties.md §8, docs/guide.md "AMQP 1.0"): Artemis, IBM MQ, Azure
Service Bus, Solace, Qpid and RabbitMQ over python-qpid-proton, a protocol adapter on the broker
core (``msgcap.sources.broker``), which owns failover, back-off, redelivery, the ack policy and
dead letters.

* Threading: proton's objects are not thread-safe, and its reactor
  (``proton.reactor.Container``) does its I/O inside ``process()``. The capture thread runs it,
  in ``_wait`` (as ``proton.utils.BlockingConnection`` does): receiving, settling and publishing
  happen on the capture thread, with no hand-off between threads and no GIL switch per batch,
  which a 2-core machine shared with the broker feels. But the capture may be busy for long
  between two pumps (one large message or transaction parsed and written), and a broker with a
  short idle timeout would drop it, a reset would go unseen. So a keep-alive thread
  (``Connection.keep_alive``) pumps without waiting whenever the capture thread has not pumped
  for ``KEEPALIVE_PART`` of the shorter idle timeout (ours or the broker's; ``KEEPALIVE_SECONDS``
  without one): empty frames go out, the broker's are read, the idle timeouts are checked, and a
  reset or close becomes a ``Lost`` in ``arrived`` at once. Every use of proton's objects holds
  ``Connection.lock`` (an RLock): the hot path takes it uncontended once per pump and once per
  group of acceptances, and the keep-alive thread never waits for it (held, the capture thread
  is doing the I/O itself), so the capture pays a few hundred nanoseconds per batch and no
  thread switch. TCP keep-alive on the socket notices a broker that vanished without a reset
  when neither side has an idle timeout.
* Settlement: the receiver asks for snd-settle-mode ``unsettled`` and rcv-settle-mode ``first``:
  the broker keeps each message until msgcap accepts it. A broker that attaches with another
  sender settle mode is refused at the attach (``_subscribe``); one that sends a delivery
  settled all the same (it may have deleted the message as it sent it) stops the capture at
  that delivery, before anything of it is read (``Connection._settled_by_broker``, a fatal
  ``Lost``), with one line naming the broker's URL.
* Exactly once: the receiver's link credit is ``jms.prefetch``, given back as messages are
  accepted, so no more than that many are ever unsettled. A delivery is accepted (disposition
  ``accepted``, settled) only in ``_acknowledge``, once it is durable; closing the connection
  gives back whatever is unsettled. Redeliveries are recognised by ``jms.id`` (RabbitMQ keeps the
  delivery count at 0). AMQP settles per delivery, so ``jms.ack=client`` and
  ``client-individual`` both settle each durable message (proton coalesces the dispositions).
* Addresses: on RabbitMQ 3.x (its AMQP 1.0 plugin) ``jms.destination`` is the address as written
  (``/queue/NAME``, ``/topic/NAME``), but a queue that exists is consumed through
  ``/amq/queue/NAME``, which takes it whatever its durability and never declares it
  (``existing_node_of``); elsewhere the address is NAME and the terminus capability
  ``queue`` or ``topic`` says which, as Qpid JMS sends it. A topic is a durable subscription:
  container id and link name ``trail.extract``, terminus durable with expiry ``never``; a
  connection closed (not the link) keeps it.
* Messages: headers and bodies are read and written by ``msgcap.sources.amqp_messages``
  (names of ``props.jmsnames``, bodies as AMQP 1.0 §3.2 defines them).
* ``jms.maxbytes``: the receiver asks for a max-message-size of ``jms.maxbytes`` +
  ``HEADER_BYTES``, so a conforming broker refuses a larger message before sending it. One that
  sends it all the same is read as it comes (``Arriving``): its first ``jms.maxbytes`` +
  ``HEADER_BYTES`` bytes are kept, the rest counted and dropped, and it is ``Unreadable`` with
  the headers it holds and an empty body (``oversized_of``); a body over the limit in a smaller
  transfer is the same.
* Failures: a refused login (SASL), virtual host or certificate, or a port without TLS, is a
  failure no retry cures (``ConnectFailed`` ``permanent``: the core's policy); anything else
  (refused connection, lost connection, a detached link) is retried by the core, also a
  connection lost while a dead letter waits for its outcome (``ConnectionLost`` from
  ``_publish``: the core reconnects and the original comes again). After a failed
  TLS connection ``msgcap.sources.tls.diagnose`` says why; a certificate only proton refuses is
  one whose IP address proton cannot match (``proton_refusal``).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from msgcap.sources.base import (
    HEADER_BYTES,
    QueueFacts,
    failure_words,
    unreachable,
)
from msgcap.sources.broker import (
    BROKER_CLOSED,
    Backoff,
    BrokerSource,
    ConnectFailed,
    ConnectionLost,
    Delivery,
    Endpoint,
    Lost,
    endpoints_of,
    rabbitmq_existing_queue,
)
from msgcap.sources.tls import TlsFiles, diagnose, tls_files
from msgcap.tally import Tally
from parsers.model import Message
from props.errors import PropertyError, SourceError

# (before proton: without the amqp extra it raises the one line saying how to install it)
from msgcap.sources.amqp_messages import amqp_message, message_of, oversized_of  # isort: skip
import proton

log = logging.getLogger("msgcap.source")
_pumping = threading.local()  # ``url``: the connection this thread is driving (``pump``)


class _ProtonLines(logging.Filter):
    """proton logs what befalls a connection as ERROR lines of its own that name no broker
    ("Couldn't recv: ConnectionResetError(...)", a transport's error condition), also for a
    disconnect msgcap retries. msgcap says what happened to the connection itself, with the URL
    (a WARNING when it is retried, one line when it stops the run): proton's lines are said
    again under ``msgcap.source`` at DEBUG, with the URL of the connection the thread is
    driving, and dropped from proton's logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        url = getattr(_pumping, "url", None) or "AMQP 1.0"
        log.debug("%s: python-qpid-proton: %s", url, record.getMessage())
        return False


logging.getLogger("proton").setLevel(logging.WARNING)  # (its INFO and DEBUG lines: none)
logging.getLogger("proton").addFilter(_ProtonLines())

PORTS = {"amqp": 5672, "amqps": 5671}
OPEN_TIMEOUT = 10.0  # connection, login and attach
CONFIRM_TIMEOUT = 30.0  # the broker's outcome of a message we publish
CLOSE_TIMEOUT = 2.0
# The JMS selector filter of the AMQP JMS Mapping (Qpid JMS, Artemis, Solace, IBM MQ, Qpid).
SELECTOR_DESCRIPTOR = 0x0000468C00000004
SELECTOR_KEY = "jms-selector"
# The longest wait in proton's select before ``_wait`` looks whether it was interrupted.
SLICE = 0.25
SEND_WINDOW = 500  # messages msgcap send leaves unconfirmed at most
# The keep-alive thread pumps when the capture thread has not for this part of the shorter idle
# timeout (ours, jms.heartbeat's second number, or the broker's), or for KEEPALIVE_SECONDS
# when neither side has one (a reset is then still noticed while the capture is busy).
KEEPALIVE_PART = 0.25
KEEPALIVE_SECONDS = 1.0
# TCP keep-alive on the socket (s): a broker that vanished without a reset (its host gone, a
# link cut) is noticed within about IDLE + INTERVAL * COUNT even with jms.heartbeat=0,0.
TCP_KEEPALIVE = {"TCP_KEEPIDLE": 10, "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 3}


def parse_urls(urls: Sequence[str]) -> list[Endpoint]:
    """``amqp://host:port`` / ``amqps://host:port`` entries (a failover list, in order)."""
    return endpoints_of(urls, {"amqp": (PORTS["amqp"], False), "amqps": (PORTS["amqps"], True)})


def mechanisms_for(configured: Sequence[str], *, user: str | None,
                    client_cert: str | None) -> str:
    """The SASL mechanisms to offer: ``jms.sasl.mechanisms`` when set; else PLAIN with a user,
    EXTERNAL with a client certificate and no user, else ANONYMOUS."""
    if configured:
        return " ".join(m.strip().upper() for m in configured)
    if user:
        return "PLAIN"
    return "EXTERNAL" if client_cert else "ANONYMOUS"


@dataclass(frozen=True, slots=True)
class Broker:
    """What the open frame's properties say about the broker (``product``, ``version``)."""

    product: str
    version: str

    @property
    def rabbitmq3(self) -> bool:
        """RabbitMQ before 4: its AMQP 1.0 plugin, with ``/queue/`` and ``/topic/`` addresses,
        no selectors."""
        major = self.version.split(".", 1)[0]
        return self.product == "RabbitMQ" and major.isdigit() and int(major) < 4

    @property
    def rabbitmq4(self) -> bool:
        """RabbitMQ 4 or later: native AMQP 1.0 with v2 addresses (``/queues/NAME``); the v1
        forms of 3.x are deprecated there."""
        return self.product == "RabbitMQ" and not self.rabbitmq3

    @property
    def artemis(self) -> bool:
        """ActiveMQ Artemis: it creates a queue a receiver attaches to (its default address
        settings), and answers management requests sent to ``activemq.management``."""
        return self.product == "apache-activemq-artemis"

    @property
    def name(self) -> str:
        if not self.product:
            return "a broker that does not name itself"
        return f"{self.product}/{self.version}" if self.version else self.product


def broker_of(properties: dict[Any, Any] | None) -> Broker:
    """The ``Broker`` of an open frame's properties."""
    props = {str(k): v for k, v in (properties or {}).items()}
    return Broker(str(props.get("product") or ""), str(props.get("version") or ""))


NOT_FOUND = "amqp:not-found"  # the error condition of an attach to a node that does not exist
UNAUTHORIZED = "amqp:unauthorized-access"  # a refused login, virtual host or permission

# Terminus durability (AMQP 1.0 §3.5.5): none, configuration, unsettled-state.
NOT_DURABLE, DURABLE_CONFIGURATION, DURABLE_DELIVERIES = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Node:
    """Where ``jms.destination`` is on a broker: the AMQP address, the terminus capability
    (``queue`` or ``topic``) that says which it is, and the terminus durability to ask for."""

    address: str
    capability: str
    durability: int


def node_of(destination: str, broker: Broker, *, subscribe: bool = False) -> Node:
    """The ``Node`` of ``jms.destination`` (``/queue/NAME`` or ``/topic/NAME``) on ``broker``
    (``subscribe``: a durable subscription to a topic). RabbitMQ 3.x takes the address as
    written and declares a ``/queue/`` with the terminus's durability: durable, as STOMP
    declares it (it refuses a non-durable attach to a durable queue). RabbitMQ 4 gets the v2
    address of a queue, ``/queues/NAME`` with NAME percent-encoded. A NAME that is itself an
    address (it starts with ``/``: ``/queue//exchanges/x/k``) is sent as written."""
    kind = "topic" if destination.startswith("/topic/") else "queue"
    durability = DURABLE_DELIVERIES if subscribe and kind == "topic" else NOT_DURABLE
    if broker.rabbitmq3:
        return Node(destination, kind, durability or (DURABLE_CONFIGURATION if kind == "queue"
                                                      else NOT_DURABLE))
    name = destination.removeprefix(f"/{kind}/")
    if broker.rabbitmq4 and kind == "queue" and not name.startswith("/"):
        name = f"/queues/{quote(name, safe='')}"
    return Node(name, kind, durability)


def existing_node_of(destination: str, broker: Broker) -> Node | None:
    """Where the broker has one, the address that consumes the queue ``jms.destination`` names
    only if it exists, whatever its durability, and never declares it: RabbitMQ 3.x's
    ``/amq/queue/NAME`` (its ``/queue/NAME`` declares the queue durable, and that attach is
    refused for a queue a producer declared non-durable). None elsewhere."""
    address = rabbitmq_existing_queue(destination) if broker.rabbitmq3 else None
    return None if address is None else Node(address, "queue", NOT_DURABLE)


def queue_name(destination: str) -> str:
    """The queue's own name in ``jms.destination``: NAME of ``/queue/NAME``, QUEUE of an
    Artemis ``ADDRESS::QUEUE``."""
    return destination.removeprefix("/queue/").rpartition("::")[2]


# -- the connection -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Options:
    """How to connect: login, TLS, idle timeout, virtual host, container id."""

    user: str | None = None
    password: str | None = None
    mechanisms: str = "ANONYMOUS"
    tls: TlsFiles | None = None
    idle_timeout: float = 0.0  # seconds, 0: none
    vhost: str = "/"
    container_id: str | None = None  # None: proton makes one up


def options_for(endpoints: Sequence[Endpoint], *, user: str | None, password: str | None,
                sasl_mechanisms: Sequence[str], ssl_ca: str | None, ssl_cert: str | None,
                ssl_key: str | None, heartbeat: tuple[int, int], vhost: str,
                container_id: str | None) -> Options:
    """The ``Options`` of the ``jms.*`` properties; the TLS files are checked here, at start,
    when an endpoint uses TLS; ``heartbeat``'s second number is the idle timeout (ms)."""
    url = ",".join(e.url for e in endpoints)
    tls = (tls_files(ssl_ca, ssl_cert, ssl_key, url=url) if any(e.tls for e in endpoints)
           else None)
    return Options(user=user, password=password, tls=tls, vhost=vhost,
                   container_id=container_id, idle_timeout=heartbeat[1] / 1000,
                   mechanisms=mechanisms_for(sasl_mechanisms, user=user, client_cert=ssl_cert))


class LinkRefused(ConnectFailed):
    """The broker refused an attach with an error (a queue declared with other arguments, an
    address that does not exist, no permission): for the capture's own receiver no retry
    cures it, as a STOMP ERROR frame in answer to SUBSCRIBE; for a dead letter's sender it is
    one more failure to confirm."""


def _ssl_domain(files: TlsFiles) -> proton.SSLDomain:
    """The broker verified against ``files.ca`` (else the system's CAs), host name included;
    our certificate shown if configured."""
    import proton

    domain = proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
    ca = files.ca or ssl.get_default_verify_paths().cafile
    if ca:
        domain.set_trusted_ca_db(ca)
    domain.set_peer_authentication(proton.SSLDomain.VERIFY_PEER_NAME, ca)
    if files.cert:
        domain.set_credentials(files.cert, files.key or files.cert, None)
    return domain


VERIFY_FAILED = "certificate verify failed"  # in proton's words for a refused certificate


def proton_refusal(host: str, why: str) -> str:
    """Why proton refused a broker certificate that Python's ``ssl`` (``diagnose``) accepts:
    proton matches the host against the certificate's DNS names and common name only, never
    against its IP addresses. No retry changes a certificate."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"TLS: the broker's certificate is not accepted ({why})"
    return (f"TLS: host name mismatch: {host} is an IP address, and python-qpid-proton checks "
            "the host only against the DNS names in the broker's certificate: put a DNS name "
            f"of the certificate in jms.url ({why})")


class Arriving:
    """A delivery coming in several transfers, read as they come (proton would otherwise hold
    it whole, whatever its size): its first ``keep`` bytes are kept, the rest only counted
    (``size``: all its bytes so far)."""

    __slots__ = ("head", "keep", "size")

    def __init__(self, keep: int) -> None:
        self.head, self.keep, self.size = bytearray(), keep, 0

    def add(self, data: bytes) -> None:
        self.size += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data if len(data) <= room else data[:room]


class Connection:
    """One AMQP connection whose I/O runs on the calling thread (``pump``): its events are
    recorded, never acted on from inside proton; received deliveries go to ``arrived`` as
    ``Message``/``Unreadable`` objects, the end of the connection as ``Lost``."""

    def __init__(self, endpoint: Endpoint, options: Options, *, epoch: int = 0,
                 max_bytes: int = 1 << 62) -> None:
        from proton import Message as ProtonMessage
        from proton.reactor import Container

        self.endpoint, self.options, self.epoch, self.max_bytes = endpoint, options, epoch, max_bytes
        self.arrived: list[Any] = []
        self.failure: str | None = None  # why the connection (or an attach) ended, in words
        # a login, virtual host or certificate refused: no retry cures it
        self.refused: str | None = None
        # the error the broker closed a link or session with (an attach it refused: a queue
        # declared otherwise, an address that does not exist, no permission), and its condition
        self.link_refusal: str | None = None
        self.refusal_condition: str | None = None  # e.g. amqp:not-found
        self.opened = False
        self.closing = False
        self.ended = False  # the connection itself ended (not only a link or a session)
        self.receiver: Any = None
        # every use of proton's objects holds it: the capture thread's (pump, settle, publish)
        # and the keep-alive thread's pump (see the module doc)
        self.lock = threading.RLock()
        self.pumped = time.monotonic()  # when a pump last ended
        self._keepalive: threading.Thread | None = None
        self._keepalive_stop = threading.Event()
        self._senders: dict[str, Any] = {}
        self._scratch = ProtonMessage()  # decoded into, message after message
        self._arriving: Arriving | None = None  # a delivery coming in several transfers
        self.container: Any = Container(self)
        self.container.start()
        kwargs: dict[str, Any] = {
            "reconnect": False, "container_id": options.container_id,
            "sasl_enabled": True, "allowed_mechs": options.mechanisms,
            "allow_insecure_mechs": True, "sni": endpoint.host}
        if options.user:
            kwargs.update(user=options.user, password=options.password or "")
        if options.idle_timeout:
            kwargs["heartbeat"] = options.idle_timeout
        if options.vhost and options.vhost != "/":
            kwargs["virtual_host"] = f"vhost:{options.vhost}"
        if endpoint.tls:
            assert options.tls is not None
            kwargs["ssl_domain"] = _ssl_domain(options.tls)
        scheme = "amqps" if endpoint.tls else "amqp"
        self.conn = self.container.connect(f"{scheme}://{endpoint.host}:{endpoint.port}",
                                           **kwargs)

    # -- proton's events (recorded only) --

    def on_connection_remote_open(self, event: Any) -> None:
        self.opened = True

    def on_connection_remote_close(self, event: Any) -> None:
        self.ended = True
        condition = event.connection.remote_condition
        text = _condition_text(condition)
        if condition is not None and condition.name == UNAUTHORIZED and not self.receiver:
            # RabbitMQ 3.x: a virtual host that does not exist, or one the user may not use
            vhost = (f" (jms.vhost={self.options.vhost}: does it exist, and may the user use "
                     "it?)" if self.options.vhost != "/" else "")
            self.refused = f"the broker refused access: {text}{vhost}"
        self._ended(text or BROKER_CLOSED)

    def on_session_remote_close(self, event: Any) -> None:
        condition = _condition_text(event.session.remote_condition)
        self._refused_with(event.session.remote_condition)
        self.link_refusal = self.link_refusal or condition or None
        self._ended("the broker ended the session" + (f" ({condition})" if condition else ""))

    def on_link_remote_close(self, event: Any) -> None:
        condition = _condition_text(event.link.remote_condition)
        self._refused_with(event.link.remote_condition)
        self.link_refusal = self.link_refusal or condition or None
        what = "receiver" if event.link.is_receiver else "sender"
        self._ended(f"the broker closed the {what} link" + (f" ({condition})" if condition
                                                            else ""))

    def on_transport_error(self, event: Any) -> None:
        condition = event.transport.condition
        name = condition.name if condition is not None else ""
        text = _condition_text(condition)
        if name == UNAUTHORIZED:
            self.refused = f"the broker refused the login (SASL {self.options.mechanisms}): {text}"
        elif name == "proton:io" or not self.opened:
            text = unreachable(self.endpoint.host, self.endpoint.port, OPEN_TIMEOUT) or text
        self.ended = True
        self._ended(text or BROKER_CLOSED)

    def on_transport_closed(self, event: Any) -> None:
        self.ended = True
        self._ended(BROKER_CLOSED)

    def on_delivery(self, event: Any) -> None:
        """A transfer came: what it holds is read at once, whole or not (``Arriving``), and
        once the delivery is complete it is a ``Message`` or ``Unreadable`` in ``arrived``."""
        if self._settled_by_broker(event.delivery):
            return
        delivery = event.delivery
        link = delivery.link
        if not link.is_receiver or not delivery.readable:
            return  # a sender's delivery (its outcome is looked at where it is awaited), or
            # news of one read already
        if delivery.aborted:  # the broker gave up sending it: nothing to capture; settled
            self._arriving = None  # by us, it gives back the credit it took (AMQP 1.0 §2.6.14)
            delivery.settle()
            link.flow(1)
            return
        data = link.recv(delivery.pending) or b""
        arriving = self._arriving
        if delivery.partial:
            if arriving is None:
                arriving = self._arriving = Arriving(self.max_bytes + HEADER_BYTES)
            arriving.add(data)
            return
        link.advance()
        ack = Delivery(self.epoch, delivery)
        if arriving is not None:
            self._arriving = None
            arriving.add(data)
            if arriving.size > arriving.keep:
                self.arrived.append(oversized_of(self._scratch, bytes(arriving.head),
                                                 arriving.size, ack, self.max_bytes))
                return
            data = bytes(arriving.head)
        self.arrived.append(message_of(self._scratch, data, ack, self.max_bytes))

    def _refused_with(self, condition: Any) -> None:
        if self.link_refusal is None and condition is not None and condition.name:
            self.refusal_condition = str(condition.name)

    def _settled_by_broker(self, delivery: Any) -> bool:
        """Whether the broker sent this delivery settled though the receiver asked for
        unsettled ones: it may have deleted the message as it sent it, so a crash before the
        trail holds it would lose it. Nothing of it is read; the capture stops at it (a fatal
        ``Lost``), with one line naming the broker."""
        if not delivery.settled or delivery.aborted or not delivery.link.is_receiver:
            return False  # (an aborted transfer is settled by the abort: nothing was sent)
        if self.failure is None:
            self.failure = "a delivery sent settled"
            self.arrived.append(Lost(self.epoch, self.failure, SourceError(
                "the broker sent a message settled though msgcap asked for unsettled "
                "deliveries: it may delete a message before msgcap has it in the trail, so "
                "msgcap does not capture from it; this message may be gone from the broker, "
                "and no more is taken",
                url=self.endpoint.url)))
        return True

    def _ended(self, why: str) -> None:
        if self.failure is None:
            self.failure = why
            if not self.closing:
                self.arrived.append(Lost(self.epoch, why))

    # -- driving it --

    def pump(self, timeout: float) -> None:
        """Do the I/O that is ready, waiting up to ``timeout`` s for some; run the events."""
        with self.lock:
            container = self.container
            if container is None:
                return
            container.timeout = timeout
            _pumping.url = self.endpoint.url
            try:
                container.process()
            except OSError as exc:  # resolving the host name, opening the socket
                self.ended = True
                self._ended(failure_words(exc))
            finally:
                _pumping.url = None
            self.pumped = time.monotonic()

    def take_arrived(self) -> list[Any]:
        """What arrived since the last call (the keep-alive thread's pumps add to it too)."""
        with self.lock:
            arrived, self.arrived = self.arrived, []
        return arrived

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Pump until ``condition()`` or the connection ends or ``timeout`` s pass."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if condition():
                    return True
            left = deadline - time.monotonic()
            if self.failure is not None or left <= 0:
                return False
            self.pump(min(left, 1.0))

    def _keep_alive_loop(self, period: float) -> None:
        """The keep-alive thread: every ``period`` s, pump (without waiting) unless the capture
        thread pumped in the last half of it, so that empty frames go out, the broker's are read, the idle
        timeout is checked and a reset is seen while the capture is busy with a large message
        or transaction. It never waits for the lock: held, the capture thread is pumping or
        settling itself."""
        stop = self._keepalive_stop
        while not stop.wait(period):
            if (time.monotonic() - self.pumped < period / 2
                    or not self.lock.acquire(blocking=False)):
                continue
            try:
                if self.container is None:
                    return
                # one process() is one select: the first runs what is due (an empty frame is
                # made, the broker's read), the second writes it out
                self.pump(0)
                self.pump(0)
            finally:
                self.lock.release()

    def keep_alive(self) -> None:
        """Start the keep-alive thread (once open: the broker's idle timeout is known) and turn
        on TCP keep-alive on the socket. For the capture, whose thread may be busy for long
        between pumps; from then on every use of proton's objects must hold ``lock``."""
        transport = self.conn.transport
        timeouts = [t for t in (self.options.idle_timeout,
                                transport.remote_idle_timeout if transport else 0) if t]
        period = min(timeouts) * KEEPALIVE_PART if timeouts else KEEPALIVE_SECONDS
        self._keepalive = threading.Thread(target=self._keep_alive_loop, args=(period,),
                                           name="msgcap-amqp-keepalive", daemon=True)
        self._keepalive.start()
        selectable = getattr(transport, "_selectable", None)  # proton keeps the socket there
        sock = getattr(selectable, "_delegate", None)
        if isinstance(sock, socket.socket):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for name, seconds in TCP_KEEPALIVE.items():
                if hasattr(socket, name):
                    sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), seconds)

    def open(self) -> Broker:
        """Wait for the broker's open frame: the broker it names. ``ConnectFailed``, permanent
        for a login, virtual host, certificate or port without TLS no retry cures."""
        if not self.wait_for(lambda: self.opened, OPEN_TIMEOUT):
            self._failed_open()
        return broker_of(self.conn.remote_properties)

    def _failed_open(self) -> None:
        why = self.failure or f"no open frame in {OPEN_TIMEOUT:.0f} s"
        self.close()
        if self.refused is not None:
            raise ConnectFailed(self.refused, permanent=True)
        if self.endpoint.tls and self.options.tls is not None:
            problem = diagnose(self.endpoint.host, self.endpoint.port, self.options.tls,
                               url=self.endpoint.url, speaks_plain=_speaks_amqp)
            if problem is None and VERIFY_FAILED in why:
                raise ConnectFailed(proton_refusal(self.endpoint.host, why), permanent=True)
            if problem is not None:
                raise ConnectFailed(problem.reason, permanent=problem.permanent)
        raise ConnectFailed(why)

    def attach_receiver(self, node: Node, *, name: str, selector: str | None) -> Any:
        """Attach a receiver from ``node`` (no credit yet; a durable subscription never
        expires; unsettled deliveries, settled by us first: snd-settle-mode ``unsettled``,
        rcv-settle-mode ``first``); the attached link, or ``ConnectFailed`` when the broker
        refuses it."""
        from proton import Described, Link, Terminus, symbol, ulong

        with self.lock:
            session = self.conn.session()
            session.open()
            receiver = session.receiver(name)
            receiver.snd_settle_mode = Link.SND_UNSETTLED
            receiver.rcv_settle_mode = Link.RCV_FIRST
            _terminus(receiver.source, node)
            if node.durability == Terminus.DELIVERIES:
                receiver.source.expiry_policy = Terminus.EXPIRE_NEVER
            if selector:
                receiver.source.filter.put_dict(
                    {symbol(SELECTOR_KEY): Described(ulong(SELECTOR_DESCRIPTOR), selector)})
            receiver.max_message_size = self.max_bytes + HEADER_BYTES
            receiver.open()
            self._attached(receiver, node.address)
            self.receiver = receiver
            return receiver

    def _attached(self, link: Any, address: str) -> None:
        """Wait for the broker's attach: a link it refuses comes back without a terminus and
        is detached at once (or its session or connection ends)."""
        from proton import Endpoint as ProtonEndpoint

        remote = ProtonEndpoint.REMOTE_UNINIT
        answered = self.wait_for(lambda: not (link.state & remote), OPEN_TIMEOUT)
        if self.refused is not None:  # the connection closed: access refused
            raise ConnectFailed(self.refused, subscribing=True, permanent=True)
        if not answered and self.link_refusal is None:
            raise ConnectFailed(self.failure or f"no answer to the attach in {OPEN_TIMEOUT:.0f} s",
                                subscribing=True)
        terminus = link.remote_source if link.is_receiver else link.remote_target
        if not answered or terminus.address is None or self.failure is not None:
            self.wait_for(lambda: self.failure is not None, 0.5)  # its detach says why
            why = f"the broker refused {address}: {self.failure or 'no terminus attached'}"
            if self.link_refusal is not None:
                raise LinkRefused(why, subscribing=True)
            raise ConnectFailed(why, subscribing=True)

    def forget_refusal(self) -> bool:
        """After an attach the broker refused by ending only its session or link, with the
        connection still open: forget that end (``failure``, the ``Lost`` it queued), so that
        another attach can follow. False when the connection itself is gone."""
        if not self._still_open():
            return False
        self.failure = self.link_refusal = self.refusal_condition = None
        self.arrived = [item for item in self.arrived if not isinstance(item, Lost)]
        return True

    def sender(self, node: Node) -> Any:
        """A sender link to ``node`` (one per address, attached once)."""
        with self.lock:
            sender = self._senders.get(node.address)
            if sender is None:
                session = self.conn.session()
                session.open()
                sender = session.sender(f"msgcap-send-{node.address}")
                _terminus(sender.target, node)
                sender.open()
                self._attached(sender, node.address)
                self._senders[node.address] = sender
            return sender

    def close(self) -> None:
        """Close the connection (not its links: a durable subscription stays), waiting at most
        ``CLOSE_TIMEOUT`` for the broker; unsettled deliveries go back to the broker."""
        self._keepalive_stop.set()
        with self.lock:
            self._close()
        if self._keepalive is not None:
            self._keepalive.join()

    def _close(self) -> None:
        container = self.container
        if container is None:
            return
        self.closing = True
        try:
            if self._still_open():  # also after a refused sender, whose session alone ended:
                self.conn.close()  # a clean close first sends what is pending (acceptances)
                deadline = time.monotonic() + CLOSE_TIMEOUT
                while self._still_open() and time.monotonic() < deadline:
                    self.pump(min(deadline - time.monotonic(), 0.25))
            transport = self.conn.transport
            if transport is not None:
                transport.close_tail()
                transport.close_head()
            container.timeout = 0
            _pumping.url = self.endpoint.url
            container.process()
        except Exception as exc:  # noqa: BLE001 - best effort on a connection we are leaving
            log.debug("%s: closing the AMQP connection failed: %s", self.endpoint.url, exc)
        finally:
            _pumping.url = None
            self.container = None
            container.stop_events()

    def _still_open(self) -> bool:
        """Whether the broker has the connection open still (its transport up, no close)."""
        conn, transport = self.conn, self.conn.transport
        return bool(conn.state & conn.REMOTE_ACTIVE) and transport is not None and not transport.closed


def _terminus(terminus: Any, node: Node) -> None:
    from proton import symbol

    terminus.address = node.address
    terminus.capabilities.put_symbol(symbol(node.capability))
    terminus.durability = node.durability


def _speaks_amqp(sock: socket.socket) -> bool:
    """Whether the socket answers a plain AMQP protocol header with one (AMQP 1.0 §2.2)."""
    sock.sendall(b"AMQP\x00\x01\x00\x00")
    return sock.recv(4) == b"AMQP"


def _condition_text(condition: Any) -> str:
    """An AMQP error condition in words (its description, else its name)."""
    if condition is None:
        return ""
    return str(condition.description or condition.name or "")


def outcome(connection: Connection, delivery: Any, timeout: float) -> str | None:
    """Wait for the broker's outcome of a message we sent: None once accepted, else the
    failure in words."""
    from proton import Delivery as ProtonDelivery

    if not connection.wait_for(lambda: delivery.remote_state or delivery.settled, timeout):
        return connection.failure or f"no outcome within {timeout:.0f} s"
    state = delivery.remote_state
    delivery.settle()
    if state == ProtonDelivery.ACCEPTED:
        return None
    return outcome_text(state, delivery)


def outcome_text(state: Any, delivery: Any) -> str:
    from proton import Delivery as ProtonDelivery

    names: dict[Any, str] = {ProtonDelivery.REJECTED: "rejected",
                             ProtonDelivery.RELEASED: "released",
                             ProtonDelivery.MODIFIED: "modified (not delivered)"}
    condition = _condition_text(getattr(delivery.remote, "condition", None))
    return (f"the broker {names.get(state, f'gave outcome {state} to')} it"
            + (f" ({condition})" if condition else ""))


# -- the source -----------------------------------------------------------------------------------

class AmqpSource(BrokerSource):
    """Consumes one destination over AMQP 1.0 from the first reachable broker of ``jms.url``
    (see the module doc)."""

    protocol = "AMQP 1.0"
    ack_unit = "dispositions"
    cumulative_acks = False

    def __init__(self, urls: Sequence[str], destination: str, *, user: str | None = None,
                 password: str | None = None, sasl_mechanisms: Sequence[str] = (),
                 prefetch: int = 1000, heartbeat: tuple[int, int] = (10000, 10000),
                 ssl_ca: str | None = None, ssl_cert: str | None = None,
                 ssl_key: str | None = None, client_id: str = "MSGCAP",
                 backoff: Backoff | None = None, failures: Tally | None = None,
                 vhost: str = "/", selector: str | None = None, ack: str = "client",
                 ack_batch: int | None = None, id_mode: str = "time",
                 max_bytes: int = 16777216) -> None:
        endpoints = parse_urls(urls)
        super().__init__(endpoints, destination, prefetch=prefetch, ack=ack,
                         ack_batch=ack_batch, id_mode=id_mode, selector=selector,
                         client_id=client_id, max_bytes=max_bytes, backoff=backoff,
                         failures=failures)
        self.options = options_for(endpoints, user=user, password=password,
                                   sasl_mechanisms=sasl_mechanisms, ssl_ca=ssl_ca,
                                   ssl_cert=ssl_cert, ssl_key=ssl_key, heartbeat=heartbeat,
                                   vhost=vhost, container_id=client_id)
        self._conn: Connection | None = None
        self.broker: Broker | None = None

    @property
    def topic(self) -> bool:
        return self.destination.startswith("/topic/")

    def _open(self, endpoint: Endpoint, epoch: int, options: Options) -> tuple[Connection,
                                                                              Broker]:
        """Connect and log in; ``ConnectFailed`` (permanent for a refusal no retry cures)."""
        conn = Connection(endpoint, options, epoch=epoch, max_bytes=self.max_bytes)
        return conn, conn.open()

    def _connect(self, endpoint: Endpoint, epoch: int) -> str:
        """Open, log in, check what the broker can do, attach the receiver and give it
        ``jms.prefetch`` credit."""
        conn, broker = self._open(endpoint, epoch, self.options)
        try:
            self._subscribe(conn, broker, endpoint, durable=True).flow(self.prefetch)
            conn.keep_alive()
        except BaseException:
            conn.close()
            raise
        self._conn, self.broker = conn, broker
        return broker.name

    def _subscribe(self, conn: Connection, broker: Broker, endpoint: Endpoint, *,
                   durable: bool, declare: bool = True) -> Any:
        """Attach the receiver (a topic as a durable subscription if ``durable``), refusing
        what cannot work (``_refuse``) and a selector the broker did not take. A queue that
        does not exist is declared only if ``declare`` (see ``_attach``); otherwise that is
        one line naming it."""
        self._refuse(broker, endpoint)
        try:
            receiver = self._attach(conn, broker, durable=durable, declare=declare)
        except LinkRefused:
            if declare or conn.refusal_condition != NOT_FOUND or self.topic:
                raise SourceError(f"{broker.name} refused the subscription to "
                                  f"{self.destination}: {conn.link_refusal}",
                                  url=endpoint.url) from None
            receiver = None  # (an address that does not declare, e.g. RabbitMQ 4's /queues/)
        if receiver is None:
            raise SourceError(f"queue {queue_name(self.destination)} does not exist on "
                              f"{broker.name} at {endpoint.url}")
        mode = receiver.remote_snd_settle_mode
        if mode != receiver.SND_UNSETTLED:
            said = {receiver.SND_SETTLED: "settled", receiver.SND_MIXED: "mixed"}.get(mode, mode)
            raise SourceError(f"{broker.name} attached {self.destination} with sender settle "
                              f"mode {said}, not the unsettled msgcap asked for: it may send a "
                              "message settled and delete it before msgcap has it in the trail, "
                              "so msgcap does not capture from it", url=endpoint.url)
        if self.selector and not _has_selector(receiver):
            raise PropertyError(f"{broker.name} at {endpoint.url} did not take the JMS selector "
                                "filter (it would deliver every message); remove jms.selector",
                                prop="jms.selector")
        return receiver

    def _attach(self, conn: Connection, broker: Broker, *, durable: bool,
                declare: bool) -> Any:
        """The attached receiver. Where the broker can consume an existing queue without
        declaring it (``existing_node_of``), that first, so a queue a producer declared
        non-durable is consumed as it is; only when it does not exist (``amqp:not-found``) is
        the queue declared as ``node_of`` says (durable), or, unless ``declare``, None."""
        existing = existing_node_of(self.destination, broker)
        if existing is not None:
            try:
                return conn.attach_receiver(existing, name=self.client_id,
                                            selector=self.selector)
            except LinkRefused:
                if conn.refusal_condition != NOT_FOUND or not conn.forget_refusal():
                    raise
            if not declare:
                return None
        return conn.attach_receiver(node_of(self.destination, broker, subscribe=durable),
                                    name=self.client_id, selector=self.selector)

    def _refuse(self, broker: Broker, endpoint: Endpoint) -> None:
        """What cannot work on ``broker`` stops capture before anything is consumed."""
        if self.topic and broker.product == "RabbitMQ":
            name = self.destination.removeprefix("/topic/")
            why = ("each attach gets a new amq.gen queue" if broker.rabbitmq3
                   else "it consumes from queues only")
            raise PropertyError(
                f"{broker.name} at {endpoint.url} cannot keep a subscription to "
                f"{self.destination} over AMQP 1.0 ({why}, so messages sent while msgcap is "
                "away would be lost): bind a durable queue to amq.topic with routing key "
                f"{name} and set jms.destination=/queue/QUEUE, or use STOMP",
                prop="jms.destination")
        if self.id_mode.strip().lower() == "activemq" and broker.product.lower() != "activemq":
            raise PropertyError(f"{broker.name} at {endpoint.url} does not give ActiveMQ "
                                "Classic's message ids (ID:host-port-start-instance:conn:"
                                "session:producer:seq), so every message would be a message "
                                "error: use jms.id=time, ogg, a header the producer sets "
                                "(JMSMessageID: the AMQP message-id) or module:function",
                                prop="jms.id")
        if self.selector and broker.product == "RabbitMQ":
            raise PropertyError(f"{broker.name} at {endpoint.url} does not apply JMS selectors "
                                "over AMQP 1.0 (it would deliver every message); RabbitMQ "
                                "applies no JMS selectors to queues, in 3.x or 4.x (its AMQP "
                                "filter expressions, from 4.1, apply to streams only): remove "
                                "jms.selector, have only the wanted messages routed to the "
                                "queue, or use a broker that applies them (Artemis, IBM MQ, "
                                "Solace, Qpid)", prop="jms.selector")

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _wait(self, timeout: float, limit: int | None) -> list[Any]:
        """Pump the connection until something arrives, ``timeout`` s pass or ``interrupt``
        (checked every ``SLICE`` s: a signal does not end proton's select)."""
        conn, inbox = self._conn, self._inbox
        items = inbox.take(0, limit)
        if items or conn is None:
            return items
        deadline = time.monotonic() + timeout
        while not conn.arrived and not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            conn.pump(min(left, SLICE))
        inbox.extend(conn.take_arrived())
        return inbox.take(0, limit)

    def _acknowledge(self, deliveries: list[Delivery]) -> None:
        """Accept and settle each durable delivery, give the receiver as much credit back."""
        from proton import Delivery as ProtonDelivery

        conn = self._conn
        if conn is None or conn.receiver is None:
            return
        accepted = ProtonDelivery.ACCEPTED
        with conn.lock:
            for delivery in deliveries:
                token = delivery.token
                token.update(accepted)
                token.settle()
            conn.receiver.flow(len(deliveries))
            conn.pump(0)  # the dispositions go out now, not at the next wait

    def _publish(self, destination: str, message: Message, extra: dict[str, str]) -> str | None:
        conn, broker = self._conn, self.broker
        if conn is None or broker is None:
            return "not connected"
        with conn.lock:
            try:
                sender = conn.sender(node_of(destination, broker))
            except ConnectFailed as exc:
                return exc.why
            delivery = sender.send(amqp_message(message, extra))
            failure = outcome(conn, delivery, CONFIRM_TIMEOUT)
            if failure is not None and conn.ended:
                raise ConnectionLost(failure)
        self._inbox.extend(conn.take_arrived())  # what came while we waited, in its turn
        return failure


def _has_selector(receiver: Any) -> bool:
    """Whether the source the broker attached holds our selector filter."""
    remote = receiver.remote_source.filter
    remote.rewind()
    if not remote.next():
        return False
    value = remote.get_object()
    return isinstance(value, dict) and any(str(k) == SELECTOR_KEY for k in value)


class AmqpProbe(AmqpSource):
    """``msgcap check``'s look over AMQP 1.0: connect, log in and attach the receiver as
    ``msgcap run`` does (same refusals, the selector filter checked), but without credit, so
    the broker delivers nothing; a topic without a durable subscription (one under the
    capture's name would take its place); container id and link name the extract's with
    ``-check`` added, so a running capture is not disturbed. Nothing is created: a queue is
    attached only where that cannot declare it (RabbitMQ 3.x's ``/amq/queue/NAME``) or once the
    broker said it exists (Artemis's management address); a missing queue is one line. How
    many messages wait is what the broker tells (``QueueFacts``). Each ``jms.url`` entry is
    tried once, without back-off."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.capture_id = kwargs.get("client_id", "MSGCAP")
        kwargs["client_id"] = f"{self.capture_id}-check"
        super().__init__(*args, **kwargs)

    def probe(self) -> str:
        """What was reached; ``SourceError`` / ``PropertyError`` when nothing works or the
        queue does not exist."""
        failures = []
        for endpoint in self.endpoints:
            try:
                conn, broker = self._open(endpoint, 0, self.options)
            except ConnectFailed as exc:
                if exc.permanent:
                    raise SourceError(exc.why, url=endpoint.url) from None
                failures.append(f"cannot connect to {endpoint.url}: {exc.why}")
                continue
            try:
                looked = self._look(conn, broker, endpoint)
                return f"{endpoint.url}: connected to {broker.name}, {looked}"
            except ConnectFailed as exc:
                if exc.permanent:
                    raise SourceError(exc.why, url=endpoint.url) from None
                failures.append(f"cannot subscribe at {endpoint.url}: {exc.why}")
            finally:
                conn.close()
        raise SourceError("; ".join(failures), url=self.url)

    def _look(self, conn: Connection, broker: Broker, endpoint: Endpoint) -> str:
        """Subscribe without creating anything, and say what the destination holds."""
        said: list[str] = []
        if broker.artemis:
            facts, said = self._ask_artemis(conn, broker, endpoint)
            if facts.exists is None:  # an attach would create it if it does not exist
                return f"not subscribed to {self.destination}: {facts}"
        receiver = self._subscribe(conn, broker, endpoint, durable=False, declare=False)
        if not self.topic and not broker.artemis:
            known = broker.rabbitmq4 or existing_node_of(self.destination, broker) is not None
            said.append(str(QueueFacts(True if known else None, drained_available(conn, receiver),
                                       f"{broker.name} does not say over AMQP 1.0")))
        if self.selector:
            said.append("jms.selector accepted")
        return (f"subscribed to {self.destination}" + (f" ({'; '.join(said)})" if said else "")
                + "; disconnected, nothing consumed")

    def _ask_artemis(self, conn: Connection, broker: Broker,
                     endpoint: Endpoint) -> tuple[QueueFacts, list[str]]:
        """What Artemis's management address says of the queue (or the topic's address, and
        the capture's durable subscription, a queue named ``CONTAINER-ID.LINK-NAME``), and the
        words for it; a queue or address that does not exist is one line."""
        kind = "topic" if self.topic else "queue"
        name = (self.destination.removeprefix("/topic/") if self.topic
                else queue_name(self.destination))
        facts = artemis_count(conn, f"address.{name}" if self.topic else f"queue.{name}",
                              "getNumberOfMessages" if self.topic else "getMessageCount")
        if facts.exists is False:
            raise SourceError(f"{kind} {name} does not exist on {broker.name} at {endpoint.url}")
        if not self.topic or facts.exists is None:
            return facts, [str(facts)]
        subscription = f"{self.capture_id}.{self.capture_id}"
        held = artemis_count(conn, f"queue.{subscription}", "getMessageCount")
        if held.exists is False:
            return facts, ["it exists", f"no durable subscription {subscription} yet"]
        return facts, ["it exists",
                       f"durable subscription {subscription}: {str(held).removeprefix('it exists, ')}"]


DRAIN_TIMEOUT = 2.0  # for the broker's answer to a drain without credit
_AVAILABLE = re.compile(r"<- @flow\(19\) \[.*\bavailable=(0x[0-9a-f]+|\d+)")


def drained_available(conn: Connection, receiver: Any) -> int | None:
    """How many messages the broker says wait for ``receiver``: the ``available`` field of
    the flow it answers a drain without credit with (AMQP 1.0 §2.7.4; RabbitMQ 3.x sends the
    queue's length there). proton keeps that field for senders only, so it is read from the
    frame trace of this one exchange. None when the broker leaves it out."""
    from proton import Transport

    transport = conn.conn.transport
    if transport is None:  # (the connection is gone)
        return None
    frames: list[str] = []
    transport.tracer = lambda _transport, frame: frames.append(frame)
    transport.trace(Transport.TRACE_FRM)
    try:
        receiver.drain(0)  # no credit: nothing is delivered
        conn.wait_for(lambda: any(_AVAILABLE.search(f) for f in frames), DRAIN_TIMEOUT)
    finally:
        transport.trace(Transport.TRACE_OFF)
    for frame in frames:
        found = _AVAILABLE.search(frame)
        if found:
            return int(found[1], 0)
    return None


ARTEMIS_MANAGEMENT = "activemq.management"
MANAGEMENT_TIMEOUT = 10.0
ARTEMIS_NOT_FOUND = "AMQ229067"  # "Cannot find resource with name queue.NAME"


def artemis_count(conn: Connection, resource: str, operation: str) -> QueueFacts:
    """Ask Artemis's management address for ``operation`` (a count) of ``resource``
    (``queue.NAME``, ``address.NAME``) without attaching to it, which would create it: the
    request carries ``_AMQ_ResourceName`` and ``_AMQ_OperationName``, the reply comes to a
    dynamic receiver (a temporary queue, gone with the connection). Whether the resource
    exists and the count; both unknown without an answer (the login needs the ``manage``
    permission)."""
    import proton

    session = conn.conn.session()
    session.open()
    replies = session.receiver(f"msgcap-check-reply-{resource}")
    replies.source.dynamic = True
    replies.open()
    requests = session.sender(f"msgcap-check-request-{resource}")
    requests.target.address = ARTEMIS_MANAGEMENT
    requests.open()
    try:
        conn._attached(replies, "a temporary queue for the management reply")
        conn._attached(requests, ARTEMIS_MANAGEMENT)
    except ConnectFailed as exc:
        return QueueFacts(None, None, f"Artemis's management address: {exc.why}")
    replies.flow(1)
    request = proton.Message(body="[]", reply_to=replies.remote_source.address, properties={
        "_AMQ_ResourceName": resource, "_AMQ_OperationName": operation})
    failure = outcome(conn, requests.send(request), MANAGEMENT_TIMEOUT)
    if failure is not None:
        return QueueFacts(None, None, f"Artemis's management address: {failure}")
    conn.wait_for(lambda: any(isinstance(m, Message) for m in conn.arrived), MANAGEMENT_TIMEOUT)
    reply = next((m for m in conn.arrived if isinstance(m, Message)), None)
    conn.arrived = []
    if reply is None:
        return QueueFacts(None, None, "Artemis's management address did not answer in "
                                      f"{MANAGEMENT_TIMEOUT:.0f} s")
    text = reply.body if isinstance(reply.body, str) else bytes(reply.body).decode(errors="replace")
    if reply.headers.get("_AMQ_OperationSucceeded") == "true":
        try:
            [count] = json.loads(text)
            return QueueFacts(True, int(count))
        except (ValueError, TypeError):
            return QueueFacts(True, None, f"Artemis's management address answered {text!r}")
    if ARTEMIS_NOT_FOUND in text:
        return QueueFacts(False, None)
    return QueueFacts(None, None, f"Artemis's management address: {text}")
