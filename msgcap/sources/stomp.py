"""The STOMP source (properties.md §8): any STOMP 1.2 broker over stomp.py, exactly-once friendly.

* Nothing is acknowledged before it is durable. ``jms.ack=client`` (the default) acknowledges
  cumulatively: one ACK, for the last message of the longest run of delivered messages that are
  all durable, so a commit group costs one frame; a message still held (an open transaction not
  yet spilled) stops the run, and what follows it waits. ``client-individual`` sends one ACK per
  durable message. The broker stops at ``jms.prefetch`` unacknowledged messages (ActiveMQ also
  at 200, its page size), so the capture ends a commit group before (``window``). STOMP
  transactions are not used: ActiveMQ 5.17 slows down and stops dispatching after many
  transacted ACKs on one subscription.
* The broker is known from the CONNECTED frame's ``server`` header (``BrokerKind``): it decides
  the prefetch header, how a durable topic subscription is asked for, whether ``jms.selector``
  can be honoured and which ``jms.id`` modes give producer-assigned ids; what cannot work stops
  capture at start (``refusal``) instead of capturing the wrong messages.
* ``error.destination``: ``dead_letters`` publishes a discarded message there and waits for the
  broker's receipt before the capture may acknowledge the original.
* stomp.py's receiver thread only records: ``_FrameReader`` splits what it reads into frames and
  puts a read's messages into the ``_Inbox`` at once, a lost connection becomes a marker there
  too. The capture takes all that is there at once (``receive_many``), which raises
  ``Redelivery`` for a loss. Reconnecting (next ``jms.url`` entry) and re-subscribing happen in
  later ``receive_many`` calls on the capture thread, once the back-off allows, so the capture
  loop keeps control (``--max-idle``, reports) while the broker is away. A connection that
  worked (up ``STABLE_SECONDS``, or a message acknowledged through it) is tried again at once
  when lost; one lost soon after it opened counts as a failed attempt: a broker or proxy that
  accepts, subscribes and drops every connection gets the growing back-off, and the log says
  it once a minute with a count (``Tally``), not once per attempt.
* A body is text only where the transport says so, never because its bytes look like UTF-8 (a
  binary record can): ActiveMQ sends ``content-length`` for BytesMessages only, so a frame
  without it is a TextMessage; other brokers send it always, and there a ``content-type`` of
  ``text/*`` says text (in its ``charset``, UTF-8 by default, as STOMP 1.2 has it). Anything
  else stays bytes, for the parser to decode with its declared encoding.
* A MESSAGE frame whose body is over ``jms.maxbytes`` is read past, never held whole
  (``_FrameReader``), and comes out of ``receive_many`` in its turn as ``Unreadable``, with its
  headers and an empty body, for ``error.policy``; it is acknowledged like any other message.
* An ``ERROR`` frame in answer to CONNECT (authentication, protocol) stops capture, except
  "client-id already connected": the broker still holds our previous connection, whose
  unacknowledged messages it has not yet put back; we wait (back-off) so that they are
  redelivered before anything newer and the order on the queue is kept.
* stomp.py's receiver thread spends most of its time per message outside the socket: it
  re-slices its receive buffer and runs two regular expressions per frame, parses every header
  line with regular expressions, makes a ``Frame`` and notifies every listener twice. The
  ``_FrameReader`` takes the place of its frame loop (the socket, heart-beats, TLS and
  reconnection stay stomp.py's): frames are found by offset in what was read, a MESSAGE becomes a
  ``Message`` without a ``Frame``, any other frame goes through stomp.py's own ``process_frame``.
* TLS (``stomp+ssl``): a certificate the broker or we refuse (unknown CA, expired, host name
  mismatch, client certificate missing or refused) stops capture like an ERROR frame: no retry
  can cure it. ``msgcap.sources.tls`` finds out which it is.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import random
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from msgcap.sources.base import (
    CONNECTED,
    CONNECTING,
    DISCONNECTED,
    HEADER_BYTES,
    Redelivery,
    Source,
    Unreadable,
    duration_text,
    failure_words,
    too_large,
    unreachable,
)
from msgcap.sources.tls import TlsFiles, diagnose, tls_files
from msgcap.tally import Tally
from parsers.model import Message
from props.errors import MsgcapError, PropertyError, SourceError

log = logging.getLogger("msgcap.source")


class _ReraisedSendFailure(logging.Filter):
    """stomp.py logs a failed send at ERROR with its traceback and then raises it again; msgcap
    reports that failure itself in one line, so the record is a duplicate (and a traceback on
    the user's stderr, e.g. when a broker closes a TLS connection it refused)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "error sending frame"


logging.getLogger("stomp.py").addFilter(_ReraisedSendFailure())

# Headers that describe the delivery to this subscriber, not the message.
_DELIVERY_HEADERS = frozenset(("ack", "subscription", "content-length"))
CONNECT_TIMEOUT = 10.0
RECEIPT_TIMEOUT = 30.0
# ActiveMQ pages a queue in from its store 200 messages at a time (maxPageSize, by default): a
# consumer that holds 200 unacknowledged ones, whatever its prefetch, gets nothing more for about
# a second. A broker configured with a larger page size lets jms.ack.batch go higher.
ACTIVEMQ_WINDOW = 150
_RECV_BYTES = 1 << 16
# A connection that stayed up this long, or through which a message was acknowledged, worked:
# after it is lost msgcap reconnects at once and the back-off starts again from its first delay.
STABLE_SECONDS = 10.0
# Why a connection ended when the broker closed it (a ``_Lost`` reason).
BROKER_CLOSED = "connection closed by the broker"
# How often frames count as a heart-beat for stomp.py's monitor (which waits 1.5 heart-beats).
SIGN_OF_LIFE_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One ``jms.url`` entry."""

    url: str
    host: str
    port: int
    tls: bool


def parse_urls(urls: Sequence[str]) -> list[Endpoint]:
    """``stomp://host:port`` / ``stomp+ssl://host:port`` entries (a failover list, in order)."""
    out = []
    for url in urls:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("stomp", "stomp+ssl") or not parts.hostname:
            raise SourceError("expected stomp://host:port or stomp+ssl://host:port", url=url)
        try:
            port = parts.port or 61613
        except ValueError:
            raise SourceError("bad port", url=url) from None
        out.append(Endpoint(url.strip(), parts.hostname, port, parts.scheme == "stomp+ssl"))
    if not out:
        raise SourceError("jms.url names no broker")
    return out


@dataclass(frozen=True, slots=True)
class BrokerKind:
    """What the CONNECTED frame's ``server`` header (``product/version``) says about a broker."""

    server: str

    @property
    def activemq(self) -> bool:
        """ActiveMQ Classic (and Artemis): selectors, ``activemq.*`` headers, producer ids."""
        return self.server.lower().startswith("activemq")

    @property
    def name(self) -> str:
        return self.server or "a broker that does not name itself"

    def subscribe_headers(self, prefetch: int, durable_name: str | None) -> dict[str, str]:
        """The prefetch window, and a durable topic subscription named ``durable_name``."""
        if self.activemq:
            headers = {"activemq.prefetchSize": str(prefetch)}
            if durable_name:
                headers["activemq.subscriptionName"] = durable_name
            return headers
        headers = {"prefetch-count": str(prefetch)}
        if durable_name:
            headers.update({"durable": "true", "auto-delete": "false"})
        return headers


def refusal(broker: BrokerKind, url: str, *, selector: str | None,
            id_mode: str) -> PropertyError | None:
    """Why capture cannot run as configured on ``broker`` at ``url`` (None: it can)."""
    if selector and not broker.activemq:
        return PropertyError(f"{broker.name} at {url} does not apply JMS selectors over STOMP "
                             "(it would deliver every message); remove jms.selector or use "
                             "ActiveMQ", prop="jms.selector")
    mode = id_mode.strip().lower()
    if not broker.activemq and mode in ("activemq", "jmsmessageid", "message-id"):
        return PropertyError(f"{broker.name} at {url} gives each delivery its own message-id, "
                             "not the producer's: use jms.id=time, ogg, a header the producer "
                             "sets, or module:function", prop="jms.id")
    return None


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


class _Lost:
    """Marker put in the inbox when connection ``epoch`` is gone."""

    __slots__ = ("epoch", "reason")

    def __init__(self, epoch: int, reason: str) -> None:
        self.epoch, self.reason = epoch, reason


class _Inbox:
    """What the receiver thread hands to the capture thread, in order: messages and ``_Lost``.

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


class _Listener:
    """stomp.py callbacks for frames other than MESSAGE: record, never block, never decide."""

    def __init__(self, source: StompSource, epoch: int) -> None:
        self._source, self._epoch = source, epoch
        self.connect_error: str | None = None
        self.answered = threading.Event()  # CONNECTED, ERROR or loss: connect() stops waiting
        self.server = ""
        self.receipts: dict[str, threading.Event] = {}  # receipt id -> set when it comes
        self.received: set[str] = set()  # receipts that came
        self.refused: str | None = None  # an ERROR frame while a receipt was awaited
        self.heard = time.monotonic()  # when the broker last sent anything

    def on_connected(self, frame: Any) -> None:
        self.server = frame.headers.get("server", "")
        self.answered.set()

    def on_receipt(self, frame: Any) -> None:
        receipt = frame.headers.get("receipt-id", "")
        event = self.receipts.get(receipt)
        if event is not None:
            self.received.add(receipt)
            event.set()

    def on_error(self, frame: Any) -> None:
        text = (frame.headers.get("message") or "") + (
            f": {frame.body.decode('utf-8', 'replace').strip()}"
            if isinstance(frame.body, bytes) and frame.body.strip() else "")
        if self._source._connected_epoch != self._epoch:
            self.connect_error = text or "ERROR frame"
            self.answered.set()
            return
        if self.receipts:
            self.refused = text or "ERROR frame"
            for event in self.receipts.values():
                event.set()
        self._source._inbox.put(_Lost(self._epoch, f"ERROR frame from the broker ({text})"))

    def on_disconnected(self) -> None:
        self.answered.set()
        for event in self.receipts.values():
            event.set()
        self._source._inbox.put(_Lost(self._epoch, self._loss()))

    def on_heartbeat(self) -> None:
        self.heard = time.monotonic()  # (``_FrameReader``: anything read, at most every 0.1 s)

    def on_heartbeat_timeout(self) -> None:
        log.warning("no heart-beat from the broker")

    def _loss(self) -> str:
        """Why the connection ended, in words. stomp.py reports a heart-beat timeout (after
        closing the connection itself) only after the loss: a broker silent for longer than
        the heart-beats allow is that, anything else the broker closing the connection."""
        silent, allowed = time.monotonic() - self.heard, self._source._heartbeat[1] / 1000
        if allowed and silent >= allowed:
            return f"no heart-beat from the broker for {duration_text(silent)}"
        return BROKER_CLOSED


class StompSource(Source):
    """Consumes one destination from the first reachable broker of ``jms.url``.

    ``backoff`` (the delays between attempts) and ``failures`` (how often failures are logged)
    are injectable so tests need not wait for their real times."""

    def __init__(self, urls: Sequence[str], destination: str, *, user: str | None = None,
                 password: str | None = None, prefetch: int = 1000,
                 heartbeat: tuple[int, int] = (10000, 10000), ssl_ca: str | None = None,
                 ssl_cert: str | None = None, ssl_key: str | None = None,
                 client_id: str = "MSGCAP", backoff: Backoff | None = None,
                 failures: Tally | None = None,
                 vhost: str = "/", selector: str | None = None, ack: str = "client",
                 ack_batch: int | None = None, id_mode: str = "time",
                 max_bytes: int = 16777216) -> None:
        self.endpoints = parse_urls(urls)
        self.url = ",".join(e.url for e in self.endpoints)
        if not destination:
            raise SourceError("jms.destination is required for a STOMP source", url=self.url)
        self.destination = destination
        self._user, self._password = user, password
        self._prefetch = prefetch
        self._heartbeat = heartbeat
        self._ssl = (ssl_ca, ssl_cert, ssl_key)
        self._tls: TlsFiles | None = None  # checked once, by _tls_files()
        self._client_id = client_id
        self._vhost, self._selector, self._id_mode = vhost, selector, id_mode
        if ack not in ("client", "client-individual"):
            raise ValueError(f"ack mode {ack!r}")
        self._ack_mode, self._ack_batch = ack, ack_batch
        self.max_bytes = max_bytes
        self._unacked: collections.deque[_Delivery] = collections.deque()  # client: in order
        self._listener: _Listener | None = None
        self.broker: BrokerKind | None = None
        self._backoff = backoff or Backoff()
        self._next_attempt = 0.0  # monotonic time of the next connection attempt
        self._up_since, self._proven = 0.0, False  # the connection's start; whether it worked
        self._connection = ""  # where it is, for the log
        self._failures = failures or Tally()  # failed attempts and lost connections: the log
        self._failures_since: float | None = None  # the first since a connection last worked
        self._failure_count = 0
        self._inbox = _Inbox()
        self._stop = threading.Event()
        self._conn: Any = None
        self._epoch = 0
        self._connected_epoch = -1
        self._next_endpoint = 0
        self.endpoint: Endpoint | None = None
        self.reconnects = 0
        self.acknowledged = 0  # messages acknowledged, and the ACK frames that took
        self.ack_frames = 0
        self._connection_is(CONNECTING)
        if any(e.tls for e in self.endpoints):
            self._tls_files()  # fail at start, not at the first connection

    @property
    def window(self) -> int:  # type: ignore[override]
        """Unacknowledged messages after which the capture ends its commit group: half the
        prefetch window, at most ``jms.ack.batch`` (on ActiveMQ by default ``ACTIVEMQ_WINDOW``)."""
        half = max(1, self._prefetch // 2)
        batch = self._ack_batch
        if batch is None and self.broker is not None and self.broker.activemq:
            batch = ACTIVEMQ_WINDOW
        return half if batch is None else min(half, batch)

    @property
    def topic(self) -> bool:
        return self.destination.startswith("/topic/")

    # -- connection ---------------------------------------------------------------------------

    def open(self) -> None:
        """The first connection attempt; if it fails, ``receive_many`` tries again."""
        self._attempt()

    def _attempt(self) -> None:
        """One attempt: connect to the next endpoint of the list and subscribe. A failure that
        a retry may cure is logged (``_failed``) and the next attempt scheduled; one that no
        retry can cure raises ``SourceError`` / ``PropertyError``."""
        import stomp
        from stomp.exception import StompException

        endpoint = self.endpoints[self._next_endpoint]
        self._next_endpoint = (self._next_endpoint + 1) % len(self.endpoints)
        self._epoch += 1
        listener = _Listener(self, self._epoch)
        conn = stomp.Connection12(
            [(endpoint.host, endpoint.port)], heartbeats=self._heartbeat,
            heart_beat_receive_scale=1.5, auto_decode=False, auto_content_length=False,
            reconnect_attempts_max=1, reconnect_sleep_initial=0.0, reconnect_sleep_max=0.0,
            timeout=CONNECT_TIMEOUT, try_loopback_connect=False, vhost=self._vhost)
        if endpoint.tls:
            set_tls(conn, endpoint, self._tls_files())
        _FrameReader(conn.transport, self._deliverer(self._epoch), self.max_bytes)
        conn.set_listener("msgcap", listener)
        # The client-id makes the broker refuse us while it still holds our previous
        # connection (after a crash or a lost link): its unacknowledged messages must go
        # back to the queue before we subscribe, or they would come after newer ones.
        headers = {"client-id": self._client_id}
        failure = None
        started = time.monotonic()
        try:
            # stomp.py's own wait has no deadline: wait for the listener instead.
            conn.connect(self._user, self._password, wait=False, headers=headers)
            if not listener.answered.wait(CONNECT_TIMEOUT):
                failure = f"no answer to CONNECT in {CONNECT_TIMEOUT:.0f} s"
            elif not conn.is_connected():
                failure = listener.connect_error or "connection closed by the broker at CONNECT"
        except StompException as exc:  # stomp.py could not open the socket, and says no more
            failure = str(exc) or _unopened(endpoint, time.monotonic() - started)
        except OSError as exc:
            failure = failure_words(exc)
        if failure is not None:
            quiet_disconnect(conn)
            refused = listener.connect_error
            if refused is not None and "already connected" not in refused:
                raise SourceError(f"broker refused the connection: {refused}", url=endpoint.url)
            if endpoint.tls and refused is None:
                failure = tls_failure(endpoint, self._tls_files(), failure)
            self._failed(f"cannot connect to {endpoint.url}", failure)
            return
        broker = BrokerKind(listener.server)
        problem = refusal(broker, endpoint.url, selector=self._selector, id_mode=self._id_mode)
        if problem is not None:
            quiet_disconnect(conn)
            raise problem
        self._connected_epoch, self.broker, self._listener = self._epoch, broker, listener
        try:
            refused = self._subscribe(conn, listener, broker)
        except StompException as exc:  # closed between CONNECTED and SUBSCRIBE
            refused = str(exc) or "connection closed by the broker"
        except OSError as exc:
            refused = failure_words(exc)
        if refused is not None:
            quiet_disconnect(conn)
            self._connected_epoch = -1
            self._inbox.clear()  # anything delivered before the receipt comes again
            if listener.refused is not None:  # an ERROR frame: no retry can cure it
                raise SourceError(f"{broker.name} refused the subscription to "
                                  f"{self.destination}: {refused}", url=endpoint.url)
            self._failed(f"cannot subscribe at {endpoint.url}", f"subscription failed: {refused}")
            return
        self._conn, self.endpoint = conn, endpoint
        self._connection_is(CONNECTED)
        self._up_since, self._proven = time.monotonic(), False
        self._connection = f"{endpoint.url} ({broker.name}), consuming {self.destination}"
        # after failures, said once it worked (``_worked``), not at each attempt
        (log.debug if self._failures_since is not None else log.info)(
            "connected to %s", self._connection)

    def _failed(self, what: str, why: str, *, at_once: bool = False) -> None:
        """A connection attempt failed, or a connection was lost (``what``, ``why`` in words):
        the connection state says why, the next attempt is scheduled (``at_once``, or after the
        back-off's next delay) and logged, the first failure since a connection last worked at
        once, the others once per ``TALLY_SECONDS`` with a count."""
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
        if count and not self._failures.span:
            log.warning("%s; %s (until a connection works, failures are logged once a minute)",
                        what, retry)
        elif count:
            log.warning("%s in the last %.0f s, the last: %s; %s", _failure_text(count),
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

    def _subscribe(self, conn: Any, listener: _Listener, broker: BrokerKind) -> str | None:
        """SUBSCRIBE and wait for the broker's receipt (a refused selector or destination
        comes back as an ERROR frame); the failure, or None."""
        durable = self._client_id if self.topic else None
        headers = broker.subscribe_headers(self._prefetch, durable)
        if self._selector:
            headers["selector"] = self._selector
        return confirmed(conn, listener, lambda receipt: conn.subscribe(
            self.destination, id=durable or "1", ack=self._ack_mode,
            headers={**headers, "receipt": receipt}))

    def _tls_files(self) -> TlsFiles:
        if self._tls is None:
            self._tls = tls_files(*self._ssl, url=self.url)
        return self._tls

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
        conn, self._conn = self._conn, None
        self._connected_epoch = -1
        self._connection_is(DISCONNECTED)
        if conn is not None:
            quiet_disconnect(conn)
        self._unacked.clear()
        self._inbox.clear()  # it came over the old connection and will be redelivered

    # -- messages -----------------------------------------------------------------------------

    def _deliverer(self, epoch: int) -> Callable[[list[_Frame]], None]:
        """What the receiver thread calls with the MESSAGE frames of one read of connection
        ``epoch``: each becomes a ``Message`` (one whose body was over ``jms.maxbytes``: an
        ``Unreadable`` with an empty body), all go into the inbox at once."""

        def deliver(frames: list[_Frame]) -> None:
            broker = self.broker
            always_sized = broker is not None and not broker.activemq
            self._inbox.extend([_message(headers, body, epoch, always_sized)
                                if isinstance(body, bytes) else self._too_large(headers, body, epoch)
                                for headers, body in frames])

        return deliver

    def _too_large(self, headers: dict[str, str], body: _TooLarge, epoch: int) -> Unreadable:
        """A message whose body was dropped as it was read: for ``error.policy``, with its
        headers, so that it can be recorded and acknowledged."""
        message = _message(headers, b"", epoch, False)
        message.body = b""  # not kept: an empty body of bytes, whatever the frame was
        return Unreadable(message, too_large(body.size, self.max_bytes, source=message.name))

    def receive(self, timeout: float) -> Message | None:
        messages = self.receive_many(timeout, limit=1)
        return messages[0] if messages else None

    def receive_many(self, timeout: float, limit: int | None = None) -> list[Message]:
        if self._conn is None:
            self._reconnect(timeout)
            if self._conn is None:
                return []
        if not self._proven and time.monotonic() - self._up_since >= STABLE_SECONDS:
            self._worked()
        items = self._inbox.take(timeout, limit)
        epoch = self._epoch
        messages: list[Message] = []
        unacked = self._unacked if self._ack_mode == "client" else None
        for index, item in enumerate(items):
            if isinstance(item, _Lost):
                if item.epoch != epoch:
                    continue  # a marker of a connection we closed ourselves
                if messages:  # first the messages that came before the loss
                    self._inbox.put_back(items[index:])
                    break
                self._lost(item.reason)
                raise Redelivery(item.reason)
            if isinstance(item, Unreadable):  # in its turn, acknowledged in its turn
                self._inbox.put_back(items[index if messages else index + 1:])
                if messages:
                    break
                if unacked is not None and item.message.ack.epoch == epoch:
                    unacked.append(item.message.ack)
                raise item
            if unacked is not None and item.ack.epoch == epoch:
                unacked.append(item.ack)
            messages.append(item)
        return messages

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        epoch, conn = self._epoch, self._conn
        durable = []
        for message in (*done, *discarded):
            delivery = message.ack
            if delivery is None or delivery.epoch != epoch or conn is None:
                continue  # acknowledged already (spilled), or of a lost connection
            delivery.durable = True
            durable.append(delivery)
            message.ack = None
        if not durable:
            return
        if not self._proven:
            self._worked()
        self.acknowledged += len(durable)
        if self._ack_mode == "client":  # the last of the delivered messages all durable
            unacked, last = self._unacked, None
            while unacked and unacked[0].durable:
                last = unacked.popleft()
            durable = [last] if last is not None else []
        try:
            for delivery in durable:
                conn.ack(delivery.ack_id)
                self.ack_frames += 1
        except Exception as exc:  # noqa: BLE001 - stomp.py raises plain Exception subclasses
            self._lost_while_sending(exc)

    def dead_letters(self, destination: str) -> DeadLetters:
        """``error.destination`` on this source's connection (see ``DeadLetters``)."""
        return DeadLetters(self, destination)

    def publish_confirmed(self, destination: str, message: Message,
                          extra: dict[str, str]) -> None:
        """SEND ``message`` (persistent, plus ``extra`` headers) and wait for the receipt;
        raises ``SourceError`` when the broker does not confirm it."""
        conn, listener = self._conn, self._listener
        body, headers = frame_of(message)
        headers.update(extra)
        failure: str | None = "not connected"
        if conn is not None and listener is not None:
            try:
                failure = confirmed(conn, listener, lambda receipt: conn.send(
                    destination, body, headers={**headers, "receipt": receipt}))
            except Exception as exc:  # noqa: BLE001 - stomp.py raises plain Exception subclasses
                failure = str(exc) or type(exc).__name__
        if failure is not None:
            raise SourceError(f"error.destination {destination}: the broker did not confirm "
                              f"message {message.name} ({failure}); it stays on the queue",
                              url=self.endpoint.url if self.endpoint else self.url)

    def _lost_while_sending(self, exc: Exception) -> None:
        """A send failed: the receiver thread reports the loss; make sure it is seen."""
        why = failure_words(exc) if isinstance(exc, OSError) else str(exc) or "connection closed"
        self._inbox.put(_Lost(self._epoch, f"sending failed ({why})"))

    def interrupt(self) -> None:
        self._stop.set()
        self._inbox.put(_Lost(-1, "interrupted"))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        self._connected_epoch = -1
        self._connection_is(DISCONNECTED)
        if conn is not None:
            quiet_disconnect(conn)
        if self.acknowledged:
            log.info("%d messages acknowledged with %d ACK frames (jms.ack=%s)",
                     self.acknowledged, self.ack_frames, self._ack_mode)


def _unopened(endpoint: Endpoint, took: float) -> str:
    """Why stomp.py could not open a connection to ``endpoint`` (its exception does not say):
    an attempt that used up the connect timeout timed out, else one more TCP connection
    finds out (for TLS, ``tls_failure`` makes it)."""
    if took >= CONNECT_TIMEOUT:
        return "timed out"
    if endpoint.tls:
        return "connection failed"
    return unreachable(endpoint.host, endpoint.port, CONNECT_TIMEOUT) or "connection failed"


def _failure_text(count: int) -> str:
    return f"{count} connection failure{'' if count == 1 else 's'}"


def _message(headers: dict[str, str], body: bytes, epoch: int, always_sized: bool) -> Message:
    """A MESSAGE frame's ``Message``: the delivery headers (``_DELIVERY_HEADERS``) taken out of
    ``headers``, the body text where the frame says it is (``always_sized``: the broker sends
    ``content-length`` with text too, so only ``content-type`` can say it)."""
    sized = headers.pop("content-length", None) is not None
    ack_id = headers.pop("ack", None)
    headers.pop("subscription", None)
    text: str | bytes = body
    charset = text_charset(headers.get("content-type")) if always_sized else None
    if charset is not None or not sized:
        try:  # noqa: SIM105 - per message: cheaper than contextlib.suppress
            text = body.decode(charset or "utf-8")
        except (UnicodeDecodeError, LookupError):
            pass  # not the text it claims to be: the bytes, for the parser to judge
    message_id = headers.get("message-id", "")
    return Message(message_id, headers, text, _Delivery(epoch, ack_id or message_id), None)


def text_charset(content_type: str | None) -> str | None:
    """The character set of a ``text/*`` content type (UTF-8 when it names none, as STOMP 1.2
    says), None for any other type or none at all."""
    if content_type is None:
        return None
    kind, _, params = content_type.partition(";")
    if not kind.strip().lower().startswith("text/"):
        return None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


_ESCAPED = re.compile(r"\\.")


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPES.get(match.group(), match.group())


_ESCAPES = {"\\r": "\r", "\\n": "\n", "\\c": ":", "\\\\": "\\"}


def parse_headers(lines: list[str], offset: int = 0) -> dict[str, str]:
    """stomp.py's ``parse_headers`` without its regular expressions on the common path: a key
    is the text before the first ``:``, not empty; the first of repeated keys wins;
    ``\\r \\n \\c \\\\`` unescaped, an unknown escape kept."""
    headers: dict[str, str] = {}
    for line in lines[offset:]:
        key, colon, value = line.partition(":")
        if not colon or not key:
            continue
        if "\\" in key:
            key = _ESCAPED.sub(_unescape, key)
        if key not in headers:
            headers[key] = _ESCAPED.sub(_unescape, value) if "\\" in value else value
    return headers


# stomp.py's own test for a frame's size (BaseTransport.__content_length_re).
_CONTENT_LENGTH = re.compile(rb"^content-length[:]\s*(?P<value>[0-9]+)", re.MULTILINE)
_PREAMBLE_END = re.compile(rb"\n\n|\r\n\r\n")
_EOL = b"\r\n"


class _TooLarge:
    """The body of a MESSAGE frame over ``jms.maxbytes``, dropped as it was read: its size."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


_Frame = tuple[dict[str, str], bytes | _TooLarge]  # a MESSAGE frame's headers and body


class _Dropping:
    """A frame over the limit being read past: its command and headers, its body's size (as
    ``content-length`` states it, or so far) and the bytes still to drop, its NUL included
    (-1: up to the next NUL)."""

    __slots__ = ("command", "headers", "left", "size")

    def __init__(self, command: str, headers: dict[str, str], size: int, left: int) -> None:
        self.command, self.headers, self.size, self.left = command, headers, size, left


class _FrameReader:
    """Takes the place of stomp.py's frame loop on one connection (see the module doc).

    Installed as the transport's ``__read_frames``, which stomp.py's receiver loop calls: it reads
    with the transport's own ``receive`` (once; on a non-blocking TLS socket until nothing is
    left), finds the frames in what it has, gives the MESSAGE frames of the read to ``deliver``
    in one call as (headers, body) and tells stomp.py's heart-beat monitor that the broker is
    alive (at most every ``SIGN_OF_LIFE_SECONDS``; a piece of a large frame counts too); any
    other frame goes to stomp.py's ``process_frame`` (after the messages before it).
    Frames are the ones stomp.py would make: a frame's end is its first NUL, or later if its
    ``content-length`` says so; EOLs between frames are heart-beats; a frame with CR LF line ends
    is parsed by stomp.py's own ``parse_frame``.

    Memory stays bounded by ``max_body`` (``jms.maxbytes``): a frame whose body is larger (as its
    ``content-length`` says, or as it turns out once more than ``max_body`` plus
    ``HEADER_BYTES`` of it are held) is read past (``_Dropping``) and given to ``deliver`` with a
    ``_TooLarge`` body; a frame whose headers alone are longer than ``HEADER_BYTES`` ends the
    connection.
    """

    def __init__(self, transport: Any, deliver: Callable[[list[_Frame]], None],
                 max_body: int) -> None:
        import stomp.exception
        import stomp.utils

        self._transport, self._deliver = transport, deliver
        self._max_body = max_body
        # The start of a frame not read to its end yet, as read, and how long it must grow
        # before it can hold the frame's end: to ``_wanted`` bytes, or (0) until a NUL comes.
        # A large frame arrives in many reads: joined once, not once per read.
        self._rest: list[bytes] = []
        self._held = self._wanted = 0
        self._dropping: _Dropping | None = None
        self._next_sign_of_life = 0.0
        self._frame_class, self._parse_frame = stomp.utils.Frame, stomp.utils.parse_frame
        self._closed = stomp.exception.ConnectionClosedException
        self._interrupted = stomp.exception.InterruptedException
        transport._BaseTransport__read_frames = self.read_frames

    def read_frames(self) -> None:
        transport = self._transport
        while transport.running:
            try:
                data = transport.receive()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return  # TLS: nothing more to read now
            except self._interrupted:
                continue
            except Exception:  # as stomp.py: a failed read ends the connection
                log.debug("socket read error", exc_info=True)
                data = b""
            if not data:
                if not transport.blocking:
                    return  # TLS: no data yet (at the end, _end_io_loop_at_eof stops the loop)
                raise self._closed()
            if self._dropping is not None:
                data = self._read_past(data)
            if self._rest:
                self._rest.append(data)
                self._held += len(data)
                if self._held < self._wanted or (not self._wanted and b"\0" not in data):
                    if self._held > self._max_body + HEADER_BYTES:
                        self._overflow()
                    self._sign_of_life()
                    if transport.blocking:
                        return
                    continue
                data = b"".join(self._rest)
                self._rest = []
            if data:
                self._split(data)
            else:
                self._sign_of_life()
            if transport.blocking:
                return

    def _overflow(self) -> None:
        """The frame held is longer than one within the limits can be: drop what is held and
        read past the rest of it (its headers are kept)."""
        buf = b"".join(self._rest)
        self._rest, self._held, self._wanted = [], 0, 0
        preamble = _PREAMBLE_END.search(buf, 0, HEADER_BYTES)
        if preamble is None:
            log.warning("a frame's headers are longer than %d bytes: closing the connection",
                        HEADER_BYTES)
            raise self._closed()
        text = buf[:preamble.start()].decode("utf-8", "replace").replace("\r\n", "\n")
        lines = text.split("\n")
        headers = parse_headers(lines, 1)
        got = len(buf) - preamble.end()  # more than max_body: the headers end within the limit
        length = headers.get("content-length")
        if length is not None and length.isascii() and length.strip().isdigit():
            size = int(length)  # not less than got: a NUL would have ended the frame
            self._dropping = _Dropping(lines[0], headers, size, size - got + 1)
        else:
            self._dropping = _Dropping(lines[0], headers, got, -1)

    def _read_past(self, data: bytes) -> bytes:
        """Drop ``data`` as far as it belongs to the frame being read past; what follows it.
        At the frame's end it goes to ``deliver`` (``_dropped``)."""
        dropping = self._dropping
        assert dropping is not None  # (the caller checked)
        if dropping.left < 0:
            nul = data.find(b"\0")
            if nul < 0:
                dropping.size += len(data)
                return b""
            dropping.size += nul
            after = nul + 1
        elif dropping.left > len(data):
            dropping.left -= len(data)
            return b""
        else:
            after = dropping.left
        self._dropping = None
        messages: list[_Frame] = []
        self._dropped(dropping.command, dropping.headers, dropping.size, messages)
        if messages:
            self._deliver(messages)
        return data[after:]

    def _dropped(self, command: str, headers: dict[str, str], size: int,
                 messages: list[_Frame]) -> None:
        """A frame whose body of ``size`` bytes is over the limit, without it: a MESSAGE for
        ``error.policy``, any other frame (an ERROR, say) to stomp.py with an empty body."""
        if command == "MESSAGE":
            messages.append((headers, _TooLarge(size)))
            return
        log.warning("%s frame with a body of %d bytes: body dropped (jms.maxbytes=%d)",
                    command, size, self._max_body)
        self._other(self._frame_class(command, headers, b""), b"", messages)

    def _split(self, buf: bytes) -> None:
        """Handle the complete frames in ``buf``; keep the rest for the next read."""
        messages: list[_Frame] = []
        alive = False
        pos, end = 0, len(buf)
        wanted = 0  # where an incomplete frame's end will be (0: at a NUL still to come)
        while pos < end:
            if buf[pos] in _EOL:
                pos += 1
                alive = True
                continue
            nul = buf.find(b"\0", pos)
            if nul < 0:
                break
            head = buf.find(b"\n\n", pos, nul)
            if head < 0 or buf.find(b"\r", pos, head) >= 0:
                after = self._odd_frame(buf, pos, nul, messages)
                if after < 0:
                    wanted = -after
                    break
                pos = after
                continue
            lines = buf[pos:head].decode("utf-8", "replace").split("\n")
            headers = parse_headers(lines, 1)
            frame_end = nul
            length = headers.get("content-length")
            if length is not None and length.isascii() and length.strip().isdigit():
                sized = head + 2 + int(length)
                if sized > nul:  # its body holds NULs
                    if sized >= end:
                        if int(length) > self._max_body:  # read past as it comes
                            self._dropping = _Dropping(lines[0], headers, int(length),
                                                       sized + 1 - end)
                            pos = end
                            break
                        wanted = sized + 1
                        break
                    frame_end = sized
            body = buf[head + 2:frame_end]
            if len(body) > self._max_body:
                self._dropped(lines[0], headers, len(body), messages)
            elif lines[0] == "MESSAGE":
                messages.append((headers, body))
            else:
                frame = self._frame_class(lines[0], headers, body)
                self._other(frame, buf[pos:frame_end], messages)
            pos = frame_end + 1
        if pos < end:
            self._rest, self._held = [buf[pos:]], end - pos
            self._wanted = wanted - pos if wanted else 0
        if messages:
            self._deliver(messages)
        if messages or alive:
            self._sign_of_life()

    def _sign_of_life(self) -> None:
        """Tell stomp.py's heart-beat monitor that the broker is alive (at most every
        ``SIGN_OF_LIFE_SECONDS``)."""
        if time.monotonic() >= self._next_sign_of_life:
            self._next_sign_of_life = time.monotonic() + SIGN_OF_LIFE_SECONDS
            self._transport.notify("heartbeat")

    def _odd_frame(self, buf: bytes, pos: int, nul: int, messages: list[_Frame]) -> int:
        """A frame with CR LF line ends (or no blank line before its first NUL), bounded as
        stomp.py bounds it and parsed by its ``parse_frame``: where the next frame starts, or
        while this one is not complete, minus the length ``buf`` must reach to hold it."""
        frame_end = nul
        preamble = _PREAMBLE_END.search(buf[pos:nul])
        if preamble is not None:
            length = _CONTENT_LENGTH.search(buf[pos:pos + preamble.start()])
            if length is not None:
                sized = pos + preamble.end() + int(length.group("value"))
                if sized > nul:
                    if sized >= len(buf):
                        return -(sized + 1)
                    frame_end = sized
        raw = buf[pos:frame_end]
        frame = self._parse_frame(raw)
        if frame is not None:
            if len(frame.body) > self._max_body:
                self._dropped(frame.cmd, frame.headers, len(frame.body), messages)
            elif frame.cmd == "MESSAGE":
                messages.append((frame.headers, frame.body))
            else:
                self._other(frame, raw, messages)
        return frame_end + 1

    def _other(self, frame: Any, raw: bytes, messages: list[_Frame]) -> None:
        """A frame that is not a MESSAGE goes to stomp.py's listeners, after the messages
        before it (a loss it reports must come after them)."""
        if messages:
            self._deliver(messages[:])
            messages.clear()
        self._transport.process_frame(frame, raw)


class _Delivery:
    """``Message.ack`` of a STOMP message: its connection, ``ack`` header and whether it is
    durable (``client`` mode acknowledges up to the first one that is not)."""

    __slots__ = ("ack_id", "durable", "epoch")

    def __init__(self, epoch: int, ack_id: str) -> None:
        self.epoch, self.ack_id, self.durable = epoch, ack_id, False


class DeadLetters:
    """``error.destination`` (§10.4): where ``error.policy=discard`` puts a bad message instead
    of the discard file, with why in ``msgcap-error*`` headers. ``write`` returns once the broker
    confirmed it (receipt), so the capture may then acknowledge the original; same interface as
    ``msgcap.pipeline.DiscardFile``."""

    def __init__(self, source: StompSource, destination: str) -> None:
        self.source, self.path = source, destination

    def write(self, message: Message, error: MsgcapError, *, raw_id: str | None = None) -> None:
        extra = {"msgcap-error": getattr(error, "reason", str(error)),
                 "msgcap-source-destination": self.source.destination,
                 "msgcap-source-message-id": raw_id or message.id}
        position = getattr(error, "position", None)
        if position:
            extra["msgcap-error-position"] = position
        self.source.publish_confirmed(self.path, message, extra)

    def close(self) -> None:
        """Nothing to release: the source's connection carries the messages."""


_receipts = itertools.count(1)


def confirmed(conn: Any, listener: _Listener, send: Callable[[str], None]) -> str | None:
    """``send(receipt_id)`` one frame that asks for a receipt, and wait for it; the failure
    (an ERROR frame's text, a lost connection, a timeout), or None once it is confirmed."""
    receipt = f"msgcap-{next(_receipts)}"
    event = listener.receipts[receipt] = threading.Event()
    try:
        send(receipt)
        if not event.wait(RECEIPT_TIMEOUT):
            return f"no receipt within {RECEIPT_TIMEOUT:.0f} s"
    finally:
        del listener.receipts[receipt]
    if receipt in listener.received:
        return None
    return listener.refused or "connection lost"


# Headers a broker sets itself, or that describe a delivery rather than the message: not sent.
_NOT_SENT = frozenset(("message-id", "destination", "timestamp", "redelivered", "subscription",
                       "ack", "content-length", "receipt", "transaction", "expires"))


def frame_of(message: Any) -> tuple[bytes, dict[str, str]]:
    """The body and SEND headers of a message: persistent unless it says otherwise; a text body
    without ``content-length`` (a JMS TextMessage) and with a ``text/plain`` content type (what
    tells text on brokers that size every frame), bytes with ``content-length`` (a
    BytesMessage)."""
    headers = {k: v for k, v in message.headers.items() if k.lower() not in _NOT_SENT}
    headers.setdefault("persistent", "true")
    body = message.body
    if isinstance(body, str):
        charset = text_charset(headers.get("content-type"))
        if charset is None:
            charset, headers["content-type"] = "utf-8", "text/plain;charset=utf-8"
        return body.encode(charset), headers
    headers["content-length"] = str(len(body))
    return bytes(body), headers


def set_tls(conn: Any, endpoint: Endpoint, files: TlsFiles) -> None:
    """TLS for ``endpoint`` on a stomp.py connection: the broker verified against ``files.ca``
    (chain and host name), our certificate shown if configured."""
    conn.set_ssl(for_hosts=[(endpoint.host, endpoint.port)], ca_certs=files.ca,
                 cert_file=files.cert, key_file=files.key, ssl_version=ssl.PROTOCOL_TLS_CLIENT)
    _end_io_loop_at_eof(conn.transport)
    _close_without_waiting(conn.transport)


def _end_io_loop_at_eof(transport: Any) -> None:
    """Make stomp.py's TLS io loop end when the broker closes the connection.

    In non-blocking (TLS) mode stomp.py takes an empty read or a read error for "no data yet"
    (its ``receive`` even hides errors before CONNECTED) and selects again: the closed socket is
    readable forever, so the loop spins at full CPU and never reports the loss (without
    heart-beats capture waits forever; a client certificate refused after the handshake looks
    like a broker that never answers CONNECT). An SSL socket's ``recv`` says "no data yet" with
    ``SSLWantReadError`` and returns ``b""`` only at the end of the connection: at the end, or
    on an error, stop the loop, and stomp.py reports "disconnected".
    """

    def receive_until_eof() -> bytes | None:
        sock = transport.socket
        if sock is None:
            return None
        try:
            data = sock.recv(_RECV_BYTES)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise  # stomp.py: no data yet
        except OSError:
            transport.running = False
            raise
        if not data:
            transport.running = False
        return data

    transport.receive = receive_until_eof


def tls_failure(endpoint: Endpoint, files: TlsFiles, failure: str) -> str:
    """What a failed TLS connection means: raises ``SourceError`` for a certificate problem,
    else returns the reason to log before retrying (stomp.py's own is often empty)."""
    problem = diagnose(endpoint.host, endpoint.port, files, url=endpoint.url)
    if problem is None:
        return failure
    if problem.permanent:
        raise SourceError(problem.reason, url=endpoint.url)
    return problem.reason


def _close_without_waiting(transport: Any) -> None:
    """Make stomp.py close a TLS connection without waiting for the broker.

    stomp.py closes TLS with ``unwrap()`` on a blocking socket without a timeout: the TLS
    close_notify exchange. With a broker that hangs (its heart-beats stopped), the heart-beat
    thread waits there forever, before it reports the timeout and the loss, and capture hangs.
    Shutting the socket down first skips the exchange (the DISCONNECT frame, when there is
    one, is already sent); stomp.py then only notes that there is no TLS layer left to unwrap.
    """
    disconnect = transport.disconnect_socket

    def disconnect_at_once() -> None:
        sock = transport.socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        disconnect()

    transport.disconnect_socket = disconnect_at_once


def quiet_disconnect(conn: Any, wait: float = 2.0) -> None:
    """DISCONNECT politely, but never wait long: a dead broker must not delay a stop or reconnect.

    (stomp.py's ``transport.stop()`` waits without a deadline, so the socket is closed here.)
    """
    try:
        if conn.is_connected():
            conn.disconnect()
            deadline = time.monotonic() + wait
            while conn.is_connected() and time.monotonic() < deadline:
                time.sleep(0.01)
    except Exception as exc:  # noqa: BLE001 - best effort on a connection we are abandoning
        log.debug("DISCONNECT failed: %s", exc)
    try:
        conn.transport.disconnect_socket()
    except Exception as exc:  # noqa: BLE001
        log.debug("closing the socket failed: %s", exc)
