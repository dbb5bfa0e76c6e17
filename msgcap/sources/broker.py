"""The broker core (properties.md §8): what every message broker source does, whatever its
protocol. A protocol adapter (``msgcap.sources.stomp``) subclasses ``BrokerSource`` and speaks
only its wire: it connects, subscribes, turns what arrives into ``Message`` objects, settles
deliveries and publishes (the hooks ``_connect``, ``_disconnect``, ``_acknowledge``,
``_publish`` and, if its I/O runs on the capture thread, ``_wait``). It says what its wire does
in class attributes: ``protocol`` (its name in messages), ``cumulative_acks`` (one
acknowledgement settles every earlier delivery), ``ack_unit`` (what the closing line counts),
``_default_ack_batch`` (a commit window the broker needs). Its messages carry a ``Delivery``
(connection epoch, the protocol's handle) as ``Message.ack``; ``ConnectFailed`` is a failure to
retry; ``Lost`` in the inbox is a lost connection.

* Failover: ``jms.url`` is a list of ``Endpoint``s tried in turn, one per attempt, with a
  growing delay (``Backoff``) between failed attempts. A connection that worked (up
  ``STABLE_SECONDS``, or a message acknowledged through it) is tried again at once when lost;
  one lost soon after it opened counts as a failed attempt: a broker or proxy that accepts,
  subscribes and drops every connection gets the growing back-off, and the log says it once a
  minute with a count (``Tally``), not once per attempt. Reconnecting happens in later
  ``receive_many`` calls on the capture thread, once the back-off allows, so the capture loop
  keeps control (``--max-idle``, reports) while the broker is away. A failure the adapter
  classifies as ``permanent`` (a refused login or virtual host, TLS to a port without it) stops
  a source that never connected once every entry of its failover list has so failed
  (``SourceError``, one line naming the URL, or each entry with its reason); after a connection
  worked it is retried like any other, logged as an ERROR, and the source is not idle while it
  lasts (``cannot_be_idle``: ``--max-idle`` must not take a queue not looked at for quiet).
* Each connection has an epoch. What arrives (messages, ``Unreadable`` ones, ``Lost`` markers)
  goes into the ``Inbox`` in order; the capture takes all that is there at once
  (``receive_many``), which raises ``Redelivery`` for the loss of the current connection, after
  the messages that came before it, and ``Unreadable`` in its turn (one with no id of its own,
  an AMQP message without message-id, named for its error by the header ``jms.id`` names, else
  by its position since the connection opened: ``_named``). A message of an older connection is
  never acknowledged: the broker redelivers it.
* Nothing is acknowledged before it is durable. ``jms.ack=client`` (the default) settles the
  longest run of delivered messages that are all durable; a message still held (an open
  transaction not yet spilled) stops the run, and what follows it waits. An adapter whose
  acknowledgement is cumulative (``cumulative_acks``) sends one, for the run's last message.
  ``client-individual`` settles each durable message. An adapter whose acknowledgement settles
  every message received so far (``acks_all_received``: a JMS session's) acknowledges only when
  none received is still held. The broker stops at ``jms.prefetch``
  unsettled messages, so the capture ends a commit group before (``window``).
* ``error.destination``: ``dead_letters`` publishes a discarded message there and waits for the
  broker's confirmation before the capture may acknowledge the original. A connection lost
  while it waits is a lost connection like any other (``Redelivery``, raised from the
  capture's handling of the message): the original comes again and is dead-lettered then.
* What no retry cures, found by the adapter as messages arrive (an AMQP delivery sent settled),
  is a ``Lost`` marker with ``fatal``: the capture stops there, with one line.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from msgcap.msgid import header_value, id_header
from msgcap.sources.base import (
    CONNECTED,
    CONNECTING,
    DISCONNECTED,
    Redelivery,
    Source,
    Unreadable,
    duration_text,
    failure_words,
    too_large,
)
from msgcap.tally import Tally
from parsers.model import Message
from props.errors import MsgcapError, SourceError
from props.text import listed

log = logging.getLogger("msgcap.source")

# A connection that stayed up this long, or through which a message was acknowledged, worked:
# after it is lost msgcap reconnects at once and the back-off starts again from its first delay.
STABLE_SECONDS = 10.0
# Why a connection ended when the broker closed it (a ``Lost`` reason).
BROKER_CLOSED = "connection closed by the broker"
ACK_MODES = ("client", "client-individual")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One ``jms.url`` entry."""

    url: str
    host: str
    port: int
    tls: bool


def endpoints_of(urls: Sequence[str], schemes: Mapping[str, tuple[int, bool]]) -> list[Endpoint]:
    """The ``jms.url`` entries of one protocol, a failover list in order; ``schemes``: each
    scheme the protocol takes, with its default port and whether it means TLS."""
    out = []
    for url in urls:
        parts = urlsplit(url.strip())
        if parts.scheme not in schemes or not parts.hostname:
            forms = " or ".join(f"{scheme}://host:port" for scheme in schemes)
            raise SourceError(f"expected {forms}", url=url)
        default_port, tls = schemes[parts.scheme]
        try:
            port = parts.port or default_port
        except ValueError:
            raise SourceError("bad port", url=url) from None
        out.append(Endpoint(url.strip(), parts.hostname, port, tls))
    if not out:
        raise SourceError("jms.url names no broker")
    return out


def rabbitmq_existing_queue(destination: str) -> str | None:
    """RabbitMQ's address, over STOMP and AMQP 1.0 alike, that consumes the queue
    ``/queue/NAME`` only if it exists, whatever its durability, and never declares it:
    ``/amq/queue/NAME`` (``/queue/NAME`` declares it). None for a destination that is no plain
    queue name."""
    name = destination.removeprefix("/queue/")
    if name == destination or not name or "/" in name:
        return None
    return f"/amq/queue/{name}"


class Backoff:
    """Delay before the next connection attempt: 0.1 s doubling to 30 s, plus up to 10 % jitter
    (``rand`` is injectable so tests know the delays)."""

    def __init__(self, first: float = 0.1, cap: float = 30.0, jitter: float = 0.1,
                 rand: Callable[[], float] = random.random) -> None:
        self.first, self.cap, self.jitter, self._rand = first, cap, jitter, rand
        self._next = first

    def delay(self) -> float:
        """The next delay (and advance)."""
        base = self._next
        self._next = min(self._next * 2, self.cap)
        return base * (1.0 + self.jitter * self._rand())

    def reset(self) -> None:
        self._next = self.first


class ConnectFailed(Exception):
    """Raised by ``_connect`` for a failed attempt: ``why`` in words ("connection refused");
    ``subscribing``: the connection was made, the subscription failed. ``permanent``: no retry
    cures it unless the broker or the properties change (a refused login, a virtual host that
    does not exist, TLS to a port that does not speak it): before a connection ever worked in
    this run it stops the run once every entry of the list has failed so, after one did it is retried with the back-off and logged as an
    ERROR (the broker may be coming back with its configuration not yet loaded)."""

    def __init__(self, why: str, *, subscribing: bool = False, permanent: bool = False) -> None:
        super().__init__(why)
        self.why, self.subscribing, self.permanent = why, subscribing, permanent


class Lost:
    """Marker put in the inbox when connection ``epoch`` is gone; with ``fatal``, the broker did
    what no retry cures (it sent a delivery settled): ``receive_many`` raises ``fatal`` when it
    comes to the marker, after the messages before it, and the capture stops."""

    __slots__ = ("epoch", "fatal", "reason")

    def __init__(self, epoch: int, reason: str, fatal: MsgcapError | None = None) -> None:
        self.epoch, self.reason, self.fatal = epoch, reason, fatal


class ConnectionLost(Exception):
    """Raised by ``_publish`` when the connection ended while it waited for the broker's
    confirmation (``why`` in words): a reconnect like any other, not a refusal."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class Delivery:
    """``Message.ack`` of a broker message: its connection (``epoch``), the protocol's handle
    (``token``: STOMP's ``ack`` header, an AMQP delivery) and whether it is durable
    (``jms.ack=client`` settles up to the first one that is not)."""

    __slots__ = ("durable", "epoch", "token")

    def __init__(self, epoch: int, token: Any) -> None:
        self.epoch, self.token, self.durable = epoch, token, False


class Inbox:
    """What the receiver thread hands to the capture thread, in order: messages, ``Unreadable``
    and ``Lost``.

    The receiver adds a whole read's messages at once and the capture takes all there is at once;
    the capture waits (on an Event) only when there is nothing, and only then is the Event set. A
    ``queue.Queue`` takes a lock and a condition per message on both sides, and with them a switch
    of the GIL.
    """

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._ready = threading.Event()
        self._waiting = False  # set before the capture's last look at _items, then it waits

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._ready.set()

    def extend(self, items: list[Any]) -> None:
        self._items.extend(items)
        if self._waiting:
            self._ready.set()

    def put_back(self, items: list[Any]) -> None:
        """Items taken but not used go back in front, in their order."""
        self._items.extendleft(reversed(items))

    def take(self, timeout: float, limit: int | None = None) -> list[Any]:
        """All items there are (at most ``limit``); none after ``timeout`` seconds without one."""
        items = self._items
        if not items:
            self._ready.clear()
            self._waiting = True
            if not items:  # (items added before _waiting was set are seen here)
                self._ready.wait(timeout)
            self._waiting = False
        count = len(items) if limit is None else min(limit, len(items))
        popleft = items.popleft
        return [popleft() for _ in range(count)]

    def clear(self) -> None:
        self._items.clear()


class DeadLetters:
    """``error.destination`` (§10.4): where ``error.policy=discard`` puts a bad message instead
    of the discard file, with why in ``msgcap-error*`` headers. ``write`` returns once the broker
    confirmed it, so the capture may then acknowledge the original; same interface as
    ``msgcap.pipeline.DiscardFile``."""

    def __init__(self, source: BrokerSource, destination: str) -> None:
        self.source, self.path = source, destination

    def write(self, message: Message, error: MsgcapError, *, raw_id: str | None = None) -> None:
        extra = {"msgcap-error": getattr(error, "reason", str(error)),
                 "msgcap-source-destination": self.source.destination,
                 "msgcap-source-message-id": raw_id or message.name}
        position = getattr(error, "position", None)
        if position:
            extra["msgcap-error-position"] = position
        self.source.publish_confirmed(self.path, message, extra)

    def close(self) -> None:
        """Nothing to release: the source's connection carries the messages."""


class BrokerSource(Source):
    """Consumes one destination from the first reachable broker of ``jms.url`` (see the module
    doc); a protocol adapter fills in the hooks.

    ``backoff`` (the delays between attempts) and ``failures`` (how often failures are logged)
    are injectable so tests need not wait for their real times."""

    protocol = "STOMP"  # in messages: "a STOMP source"
    ack_unit = "ACK frames"  # what acknowledges messages on the wire, for the closing log line
    cumulative_acks = True  # one acknowledgement settles every earlier delivery (jms.ack=client)
    # one acknowledgement settles every delivery received so far, later ones too (a JMS
    # session's acknowledge()): it waits until every message received is durable
    acks_all_received = False

    def __init__(self, endpoints: Sequence[Endpoint], destination: str, *, prefetch: int,
                 ack: str, ack_batch: int | None, id_mode: str, selector: str | None,
                 client_id: str, max_bytes: int, backoff: Backoff | None = None,
                 failures: Tally | None = None) -> None:
        self.endpoints = list(endpoints)
        self.url = ",".join(e.url for e in self.endpoints)
        if not destination:
            raise SourceError(f"jms.destination is required for a {self.protocol} source",
                              url=self.url)
        self.destination = destination
        if ack not in ACK_MODES:
            raise ValueError(f"ack mode {ack!r}")
        self.prefetch, self.ack_mode, self.ack_batch = prefetch, ack, ack_batch
        self.id_mode, self.selector, self.client_id = id_mode, selector, client_id
        self.max_bytes = max_bytes
        self._unacked: collections.deque[Delivery] = collections.deque()  # client: in order
        self._backoff = backoff or Backoff()
        self._next_attempt = 0.0  # monotonic time of the next connection attempt
        self._up_since, self._proven = 0.0, False  # the connection's start; whether it worked
        self._connection = ""  # where it is, for the log
        self._failures = failures or Tally()  # failed attempts and lost connections: the log
        self._failures_since: float | None = None  # the first since a connection last worked
        self._failure_count = 0
        self._permanent: str | None = None  # the last failure, when no retry cures it
        # before any connection worked: the entries of the list that failed for such a reason
        self._refused: dict[str, str] = {}
        self._inbox = Inbox()
        self._stop = threading.Event()
        self._epoch = 0
        self._next_endpoint = 0
        self.endpoint: Endpoint | None = None
        self.reconnects = 0
        self._delivered = 0  # messages delivered since the connection opened: their positions
        self.acknowledged = 0  # messages acknowledged, and the acknowledgements that took
        self.ack_frames = 0
        self._connection_is(CONNECTING)

    # -- the adapter's hooks --------------------------------------------------------------------

    @abstractmethod
    def _connect(self, endpoint: Endpoint, epoch: int) -> str:
        """Connect, authenticate and subscribe (credit/prefetch ``self.prefetch``); the broker's
        name for the log ("ActiveMQ/5.17.2"). Raise ``ConnectFailed`` for a failure a retry may
        cure, ``SourceError`` / ``PropertyError`` for one no retry cures. Messages go into
        ``self._inbox`` with a ``Delivery`` of ``epoch`` as their ``ack``."""

    @abstractmethod
    def _disconnect(self) -> None:
        """Drop the current connection (if any) quietly, never waiting long."""

    @abstractmethod
    def _acknowledge(self, deliveries: list[Delivery]) -> None:
        """Settle these durable deliveries of the current connection, in delivery order (with
        ``cumulative_acks`` and ``jms.ack=client``: only the last of the run). Raise on a failed
        send: the core treats the connection as lost."""

    @abstractmethod
    def _publish(self, destination: str, message: Message, extra: dict[str, str]) -> str | None:
        """Send ``message`` persistent, ``extra`` added to its headers, and wait for the
        broker's confirmation: None, or the failure in words; ``ConnectionLost`` when the
        connection ended before the broker answered."""

    def _wait(self, timeout: float, limit: int | None) -> list[Any]:
        """What arrived (messages, ``Unreadable``, ``Lost``), at most ``limit``: taken from the
        inbox, which a receiver thread fills. An adapter whose I/O runs on the capture thread
        pumps it here."""
        return self._inbox.take(timeout, limit)

    @property
    def _default_ack_batch(self) -> int | None:
        """The ``jms.ack.batch`` the broker needs when none is set (None: half the prefetch)."""
        return None

    # -- the policy -----------------------------------------------------------------------------

    @property
    def window(self) -> int:  # type: ignore[override]
        """Unacknowledged messages after which the capture ends its commit group: half the
        prefetch window, at most ``jms.ack.batch`` (by default ``_default_ack_batch``)."""
        half = max(1, self.prefetch // 2)
        batch = self.ack_batch if self.ack_batch is not None else self._default_ack_batch
        return half if batch is None else min(half, batch)

    def open(self) -> None:
        """The first connection attempt; if it fails, ``receive_many`` tries again."""
        self._attempt()

    def _attempt(self) -> None:
        """One attempt: connect to the next endpoint of the list and subscribe. A failure that
        a retry may cure is logged (``_failed``) and the next attempt scheduled; one that no
        retry can cure raises ``SourceError`` / ``PropertyError``."""
        endpoint = self.endpoints[self._next_endpoint]
        self._next_endpoint = (self._next_endpoint + 1) % len(self.endpoints)
        self._epoch += 1
        try:
            broker = self._connect(endpoint, self._epoch)
        except ConnectFailed as exc:
            if exc.permanent and self.connection.state == CONNECTING:  # never connected
                self._refused[endpoint.url] = exc.why
                if len(self._refused) == len(self.endpoints):  # no entry of the list is left
                    raise self._every_entry_refused() from None
            what = (f"cannot subscribe at {endpoint.url}" if exc.subscribing
                    else f"cannot connect to {endpoint.url}")
            self._failed(what, exc.why, permanent=exc.permanent)
            return
        self.endpoint = endpoint
        self._permanent = None
        self._connection_is(CONNECTED)
        self._up_since, self._proven = time.monotonic(), False
        self._delivered = 0
        self._connection = f"{endpoint.url} ({broker}), consuming {self.destination}"
        # after failures, said once it worked (``_worked``), not at each attempt
        (log.debug if self._failures_since is not None else log.info)(
            "connected to %s", self._connection)

    def _every_entry_refused(self) -> SourceError:
        """Every entry of the list failed, before any connection worked, for a reason no retry
        cures: the run stops, each entry named with its reason (a bounded few)."""
        if len(self._refused) == 1:
            (url, why), = self._refused.items()
            return SourceError(why, url=url)
        return SourceError(listed([f"{url}: {why}" for url, why in self._refused.items()],
                                  sep="; "))

    def _failed(self, what: str, why: str, *, at_once: bool = False,
                permanent: bool = False) -> None:
        """A connection attempt failed, or a connection was lost (``what``, ``why`` in words):
        the connection state says why, the next attempt is scheduled (``at_once``, or after the
        back-off's next delay) and logged, the first failure since a connection last worked at
        once, the others once per ``TALLY_SECONDS`` with a count; a ``permanent`` one (after a
        connection worked: see ``ConnectFailed``) as an ERROR, and remembered until the next
        connection (``cannot_be_idle``)."""
        self._connection_is(CONNECTING if self.connection.state == CONNECTING else DISCONNECTED,
                            why)
        what = f"{what}: {why}"
        delay = 0.0 if at_once else self._backoff.delay()
        now = time.monotonic()
        self._next_attempt = now + delay
        if self._failures_since is None:
            self._failures_since, self._failure_count = now, 0
        self._failure_count += 1
        count = self._failures.add()
        retry = "reconnecting" if at_once else f"retrying in {delay:.1f} s"
        newly_permanent = permanent and self._permanent is None
        self._permanent = why if permanent else None
        if permanent:
            retry += " (no retry cures this unless the broker or the properties change)"
        say = log.error if permanent else log.warning
        if newly_permanent and not count:  # said at once, whatever the tally
            say("%s; %s", what, retry)
        elif count and not self._failures.span:
            say("%s; %s (until a connection works, failures are logged once a minute)",
                what, retry)
        elif count:
            say("%s in the last %.0f s, the last: %s; %s", _failure_text(count),
                self._failures.span, what, retry)

    def _worked(self) -> None:
        """The connection stayed up ``STABLE_SECONDS`` or a message was acknowledged through
        it: the back-off and the count of failures start again."""
        self._proven = True
        self._backoff.reset()
        self._failures.reset()
        if self._failures_since is not None:
            log.info("connected to %s, after %s in %.0f s", self._connection,
                     _failure_text(self._failure_count), time.monotonic() - self._failures_since)
        self._failures_since = None

    def _reconnect(self, timeout: float) -> None:
        """Not connected: the next attempt once it is due, if that is within ``timeout``."""
        wait = self._next_attempt - time.monotonic()
        if wait > 0:
            self._stop.wait(min(wait, timeout))
            if time.monotonic() < self._next_attempt:
                return
        if not self._stop.is_set():
            self._attempt()

    def _lost(self, reason: str) -> None:
        """The connection is gone: a connection that worked is tried again at once, one that
        failed soon after it opened after the back-off's next delay (a broker or proxy that
        accepts, subscribes and drops each connection must not be hammered)."""
        url = self.endpoint.url if self.endpoint else self.url
        up = time.monotonic() - self._up_since
        proven = self._proven or up >= STABLE_SECONDS
        if proven:
            self._worked()
        self._drop_connection()
        self.reconnects += 1
        lasted = duration_text(up)
        self._failed(url, f"{BROKER_CLOSED} after {lasted}" if reason == BROKER_CLOSED
                     else f"{reason}; connection closed after {lasted}", at_once=proven)

    def _drop_connection(self) -> None:
        self._connection_is(DISCONNECTED)
        self._disconnect()
        self._unacked.clear()
        self._inbox.clear()  # it came over the old connection and will be redelivered

    def _over_limit(self, message: Message, size: int) -> Unreadable:
        """A message whose body of ``size`` bytes was over ``jms.maxbytes`` and not kept: for
        ``error.policy``, with its headers and an empty body, so that it can be recorded and
        acknowledged in its turn."""
        message.body = b""
        return Unreadable(message, too_large(size, self.max_bytes, source=message.name))

    # -- messages -------------------------------------------------------------------------------

    def cannot_be_idle(self) -> str | None:
        """Also while the last failure, after a connection worked, is one no retry cures."""
        if self._permanent is not None and not self.connected:
            return f"not connected to the source, for a reason no retry cures: {self._permanent}"
        return super().cannot_be_idle()

    def receive(self, timeout: float) -> Message | None:
        messages = self.receive_many(timeout, limit=1)
        return messages[0] if messages else None

    def receive_many(self, timeout: float, limit: int | None = None) -> list[Message]:
        if not self.connected:
            self._reconnect(timeout)
            if not self.connected:
                return []
        if not self._proven and time.monotonic() - self._up_since >= STABLE_SECONDS:
            self._worked()
        items = self._wait(timeout, limit)
        epoch = self._epoch
        messages: list[Message] = []
        unacked = self._unacked if self.ack_mode == "client" else None
        for index, item in enumerate(items):
            if isinstance(item, Lost):
                if item.epoch != epoch:
                    continue  # a marker of a connection we closed ourselves
                if messages:  # first the messages that came before the loss
                    self._inbox.put_back(items[index:])
                    break
                if item.fatal is not None:
                    raise item.fatal
                self._lost(item.reason)
                raise Redelivery(item.reason)
            if isinstance(item, Unreadable):  # in its turn, acknowledged in its turn
                self._inbox.put_back(items[index if messages else index + 1:])
                if messages:
                    break
                if unacked is not None and item.message.ack.epoch == epoch:
                    unacked.append(item.message.ack)
                self._delivered += 1
                raise self._named(item) if not item.message.name else item
            if unacked is not None and item.ack.epoch == epoch:
                unacked.append(item.ack)
            messages.append(item)
        self._delivered += len(messages)
        return messages

    def _named(self, unread: Unreadable) -> Unreadable:
        """``unread``, whose message has no id (an AMQP message without message-id), named for
        its error, discard record and dead letter: by the header ``jms.id`` takes the id from,
        when the message has it, else by its position (the ``_delivered``-th message since the
        connection opened)."""
        message = unread.message
        header = id_header(self.id_mode)
        value = header_value(message, header) if header is not None else None
        url = self.endpoint.url if self.endpoint else self.url
        message.origin = (f"{header}={value}" if value else
                          f"#{self._delivered} since connecting to {url} (no message-id)")
        return Unreadable(message, unread.error.located(message.origin))

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        epoch, connected = self._epoch, self.connected
        durable = []
        for message in (*done, *discarded):
            delivery = message.ack
            if delivery is None or delivery.epoch != epoch or not connected:
                continue  # acknowledged already (spilled), or of a lost connection
            delivery.durable = True
            durable.append(delivery)
            message.ack = None
        if not durable:
            return
        if not self._proven:
            self._worked()
        self.acknowledged += len(durable)
        if self.ack_mode == "client":  # the delivered messages up to the first not durable
            unacked, run = self._unacked, []
            while unacked and unacked[0].durable:
                run.append(unacked.popleft())
            if self.acks_all_received and unacked:  # a message received later is held
                unacked.extendleft(reversed(run))
                return
            durable = run[-1:] if self.cumulative_acks else run
        if not durable:
            return
        try:
            self._acknowledge(durable)
        except Exception as exc:  # noqa: BLE001 - client libraries raise plain Exception subclasses
            self._lost_while_sending(exc)
            return
        self.ack_frames += len(durable)

    def dead_letters(self, destination: str) -> DeadLetters:
        """``error.destination`` on this source's connection (see ``DeadLetters``)."""
        return DeadLetters(self, destination)

    def publish_confirmed(self, destination: str, message: Message,
                          extra: dict[str, str]) -> None:
        """Publish ``message`` (persistent, plus ``extra`` headers) and wait for the broker's
        confirmation; raises ``SourceError`` when the broker does not confirm it, and
        ``Redelivery`` when the connection ended first: then, as after any lost connection, the
        original comes again (its dead letter may then be sent twice: both carry the original's
        message-id)."""
        failure: str | None = "not connected"
        if self.connected:
            try:
                failure = self._publish(destination, message, extra)
            except ConnectionLost as lost:
                self._lost(lost.why)
                raise Redelivery(lost.why) from None
            except Exception as exc:  # noqa: BLE001 - client libraries raise plain Exceptions
                failure = str(exc) or type(exc).__name__
        if failure is not None:
            raise SourceError(f"error.destination {destination}: the broker did not confirm "
                              f"message {message.name} ({failure}); it stays on the queue",
                              url=self.endpoint.url if self.endpoint else self.url)

    def _lost_while_sending(self, exc: Exception) -> None:
        """A send failed: the receiver reports the loss too; make sure it is seen."""
        why = failure_words(exc) if isinstance(exc, OSError) else str(exc) or "connection closed"
        self._inbox.put(Lost(self._epoch, f"sending failed ({why})"))

    def interrupt(self) -> None:
        self._stop.set()
        self._inbox.put(Lost(-1, "interrupted"))

    def close(self) -> None:
        self._connection_is(DISCONNECTED)
        self._disconnect()
        if self.acknowledged:
            log.info("%d messages acknowledged with %d %s (jms.ack=%s)",
                     self.acknowledged, self.ack_frames, self.ack_unit, self.ack_mode)


def _failure_text(count: int) -> str:
    return f"{count} connection failure{'' if count == 1 else 's'}"
