"""The STOMP source (properties.md §8): any STOMP 1.2 broker over stomp.py, exactly-once friendly.

The policy (failover and back-off, the inbox, redelivery, acknowledgement, commit groups, dead
letters) is the broker core's (``msgcap.sources.broker``); this module speaks STOMP:

* ``jms.ack=client`` acknowledges cumulatively: one ACK frame, for the last message of the run
  the core settles, so a commit group costs one frame; ``client-individual`` sends one ACK per
  durable message. ActiveMQ stops delivering at 200 unacknowledged messages (its page size), so
  the commit group ends before (``ACTIVEMQ_WINDOW``). STOMP transactions are not used: ActiveMQ
  5.17 slows down and stops dispatching after many transacted ACKs on one subscription.
* The broker is known from the CONNECTED frame's ``server`` header (``BrokerKind``): it decides
  the prefetch header, how a durable topic subscription is asked for, whether ``jms.selector``
  can be honoured and which ``jms.id`` modes give producer-assigned ids; what cannot work stops
  capture at start (``refusal``) instead of capturing the wrong messages.
* ``error.destination``: a dead letter is a SEND with a receipt asked for; it is confirmed when
  the receipt comes.
* stomp.py's receiver thread only records: ``_FrameReader`` splits what it reads into frames and
  puts a read's messages into the core's inbox at once, a lost connection becomes a ``Lost``
  marker there too.
* A body is text only where the transport says so, never because its bytes look like UTF-8 (a
  binary record can): ActiveMQ sends ``content-length`` for BytesMessages only, so a frame
  without it is a TextMessage (in UTF-8); other brokers send it always. A ``content-type`` of
  ``text/*`` says text (in its ``charset``, UTF-8 by default, as STOMP 1.2 has it), on ActiveMQ
  for a BytesMessage too (a producer's sized text frame). Anything else stays bytes, for the
  parser to decode with its declared encoding.
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
  mismatch, client certificate missing or refused), or a port that does not speak TLS, is a
  failure no retry cures, like an ERROR frame at CONNECT (``ConnectFailed`` ``permanent``: the
  core's policy). ``msgcap.sources.tls`` finds out which it is.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from msgcap.sources.base import (
    HEADER_BYTES,
    duration_text,
    failure_words,
    text_charset,
    unreachable,
)
from msgcap.sources.broker import (
    BROKER_CLOSED,
    Backoff,
    BrokerSource,
    ConnectFailed,
    Delivery,
    Endpoint,
    Lost,
    endpoints_of,
)
from msgcap.sources.tls import TlsFiles, diagnose, tls_files
from msgcap.tally import Tally
from parsers.model import Message
from props.errors import PropertyError, SourceError

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
# How often frames count as a heart-beat for stomp.py's monitor (which waits 1.5 heart-beats).
SIGN_OF_LIFE_SECONDS = 0.1


def parse_urls(urls: Sequence[str]) -> list[Endpoint]:
    """``stomp://host:port`` / ``stomp+ssl://host:port`` entries (a failover list, in order)."""
    return endpoints_of(urls, {"stomp": (61613, False), "stomp+ssl": (61613, True)})


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
        self._source._inbox.put(Lost(self._epoch, f"ERROR frame from the broker ({text})"))

    def on_disconnected(self) -> None:
        self.answered.set()
        for event in self.receipts.values():
            event.set()
        self._source._inbox.put(Lost(self._epoch, self._loss()))

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


class StompSource(BrokerSource):
    """Consumes one destination from the first reachable STOMP broker of ``jms.url``."""

    def __init__(self, urls: Sequence[str], destination: str, *, user: str | None = None,
                 password: str | None = None, prefetch: int = 1000,
                 heartbeat: tuple[int, int] = (10000, 10000), ssl_ca: str | None = None,
                 ssl_cert: str | None = None, ssl_key: str | None = None,
                 client_id: str = "MSGCAP", backoff: Backoff | None = None,
                 failures: Tally | None = None,
                 vhost: str = "/", selector: str | None = None, ack: str = "client",
                 ack_batch: int | None = None, id_mode: str = "time",
                 max_bytes: int = 16777216) -> None:
        super().__init__(parse_urls(urls), destination, prefetch=prefetch, ack=ack,
                         ack_batch=ack_batch, id_mode=id_mode, selector=selector,
                         client_id=client_id, max_bytes=max_bytes, backoff=backoff,
                         failures=failures)
        self._user, self._password = user, password
        self._heartbeat = heartbeat
        self._ssl = (ssl_ca, ssl_cert, ssl_key)
        self._tls: TlsFiles | None = None  # checked once, by _tls_files()
        self._vhost = vhost
        self._listener: _Listener | None = None
        self.broker: BrokerKind | None = None
        self._conn: Any = None
        self._connected_epoch = -1  # the connection that answered CONNECT
        if any(e.tls for e in self.endpoints):
            self._tls_files()  # fail at start, not at the first connection

    @property
    def _default_ack_batch(self) -> int | None:
        return ACTIVEMQ_WINDOW if self.broker is not None and self.broker.activemq else None

    @property
    def topic(self) -> bool:
        return self.destination.startswith("/topic/")

    def _connect(self, endpoint: Endpoint, epoch: int) -> str:
        """CONNECT with our client-id and SUBSCRIBE, waiting for the broker's receipt."""
        import stomp
        from stomp.exception import StompException

        listener = _Listener(self, epoch)
        conn = stomp.Connection12(
            [(endpoint.host, endpoint.port)], heartbeats=self._heartbeat,
            heart_beat_receive_scale=1.5, auto_decode=False, auto_content_length=False,
            reconnect_attempts_max=1, reconnect_sleep_initial=0.0, reconnect_sleep_max=0.0,
            timeout=CONNECT_TIMEOUT, try_loopback_connect=False, vhost=self._vhost)
        if endpoint.tls:
            set_tls(conn, endpoint, self._tls_files())
        _FrameReader(conn.transport, self._deliverer(epoch), self.max_bytes)
        conn.set_listener("msgcap", listener)
        # The client-id makes the broker refuse us while it still holds our previous
        # connection (after a crash or a lost link): its unacknowledged messages must go
        # back to the queue before we subscribe, or they would come after newer ones.
        headers = {"client-id": self.client_id}
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
                raise ConnectFailed(f"broker refused the connection: {refused}", permanent=True)
            if endpoint.tls and refused is None:
                raise tls_problem(endpoint, self._tls_files(), failure)
            raise ConnectFailed(failure)
        broker = BrokerKind(listener.server)
        problem = refusal(broker, endpoint.url, selector=self.selector, id_mode=self.id_mode)
        if problem is not None:
            quiet_disconnect(conn)
            raise problem
        self._connected_epoch, self.broker, self._listener = epoch, broker, listener
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
            raise ConnectFailed(f"subscription failed: {refused}", subscribing=True)
        self._conn = conn
        return broker.name

    def _subscribe(self, conn: Any, listener: _Listener, broker: BrokerKind) -> str | None:
        """SUBSCRIBE and wait for the broker's receipt (a refused selector or destination
        comes back as an ERROR frame); the failure, or None."""
        durable = self.client_id if self.topic else None
        headers = broker.subscribe_headers(self.prefetch, durable)
        if self.selector:
            headers["selector"] = self.selector
        return confirmed(conn, listener, lambda receipt: conn.subscribe(
            self.destination, id=durable or "1", ack=self.ack_mode,
            headers={**headers, "receipt": receipt}))

    def _tls_files(self) -> TlsFiles:
        if self._tls is None:
            self._tls = tls_files(*self._ssl, url=self.url)
        return self._tls

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        self._connected_epoch = -1
        if conn is not None:
            quiet_disconnect(conn)

    def _deliverer(self, epoch: int) -> Callable[[list[_Frame]], None]:
        """What the receiver thread calls with the MESSAGE frames of one read of connection
        ``epoch``: each becomes a ``Message`` (one whose body was over ``jms.maxbytes``: an
        ``Unreadable`` with an empty body), all go into the inbox at once."""

        def deliver(frames: list[_Frame]) -> None:
            broker = self.broker
            always_sized = broker is not None and not broker.activemq
            self._inbox.extend([_message(headers, body, epoch, always_sized)
                                if isinstance(body, bytes)
                                else self._over_limit(_message(headers, b"", epoch, False),
                                                      body.size)
                                for headers, body in frames])

        return deliver

    def _acknowledge(self, deliveries: list[Delivery]) -> None:
        """One ACK frame each (``jms.ack=client``: the core gives the last of the run)."""
        conn = self._conn
        for delivery in deliveries:
            conn.ack(delivery.token)

    def _publish(self, destination: str, message: Message, extra: dict[str, str]) -> str | None:
        """SEND with a receipt asked for, and wait for it."""
        conn, listener = self._conn, self._listener
        assert conn is not None and listener is not None  # (the core asks only when connected)
        body, headers = frame_of(message)
        headers.update(extra)
        return confirmed(conn, listener, lambda receipt: conn.send(
            destination, body, headers={**headers, "receipt": receipt}))


def _unopened(endpoint: Endpoint, took: float) -> str:
    """Why stomp.py could not open a connection to ``endpoint`` (its exception does not say):
    an attempt that used up the connect timeout timed out, else one more TCP connection
    finds out (for TLS, ``tls_failure`` makes it)."""
    if took >= CONNECT_TIMEOUT:
        return "timed out"
    if endpoint.tls:
        return "connection failed"
    return unreachable(endpoint.host, endpoint.port, CONNECT_TIMEOUT) or "connection failed"


def _message(headers: dict[str, str], body: bytes, epoch: int, always_sized: bool) -> Message:
    """A MESSAGE frame's ``Message``: the delivery headers (``_DELIVERY_HEADERS``) taken out of
    ``headers``, the body text where the frame says it is (``always_sized``: the broker sends
    ``content-length`` with text too, so only ``content-type`` can say it). On ActiveMQ a frame
    without ``content-length`` is a TextMessage, sent in UTF-8 whatever ``content-type`` the
    producer gave; one with it a BytesMessage, its bytes text only in a ``text/*`` charset its
    producer declared (``message-type`` says which, as a JMS consumer reads its class); its
    ``JMSXDeliveryCount`` is 1 unless ``redelivered`` says otherwise."""
    sized = headers.pop("content-length", None) is not None
    ack_id = headers.pop("ack", None)
    headers.pop("subscription", None)
    text: str | bytes = body
    charset = text_charset(headers.get("content-type")) if always_sized or sized else None
    if not always_sized:
        headers["message-type"] = "BytesMessage" if sized else "TextMessage"
        if "redelivered" not in headers:  # a redelivery's count is not sent: no value then
            headers["JMSXDeliveryCount"] = "1"
    if charset is not None or not sized:
        try:  # noqa: SIM105 - per message: cheaper than contextlib.suppress
            text = body.decode(charset or "utf-8")
        except (UnicodeDecodeError, LookupError):
            pass  # not the text it claims to be: the bytes, for the parser to judge
    message_id = headers.get("message-id", "")
    return Message(message_id, headers, text, Delivery(epoch, ack_id or message_id), None)


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
                       "ack", "content-length", "receipt", "transaction", "expires",
                       "message-type", "jmsxdeliverycount", "jmsxuserid"))


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
    """What a failed TLS connection means: raises ``SourceError`` for a problem no retry cures
    (a certificate, a port without TLS), else returns the reason to log before retrying
    (stomp.py's own is often empty)."""
    problem = tls_problem(endpoint, files, failure)
    if problem.permanent:
        raise SourceError(problem.why, url=endpoint.url)
    return problem.why


def tls_problem(endpoint: Endpoint, files: TlsFiles, failure: str) -> ConnectFailed:
    """A failed TLS connection as a failed attempt, permanent when no retry cures it."""
    problem = diagnose(endpoint.host, endpoint.port, files, url=endpoint.url,
                       speaks_plain=_speaks_stomp)
    if problem is None:
        return ConnectFailed(failure)
    return ConnectFailed(problem.reason, permanent=problem.permanent)


def _speaks_stomp(sock: socket.socket) -> bool:
    """Whether the socket answers a plain STOMP CONNECT with a STOMP frame."""
    sock.sendall(b"STOMP\naccept-version:1.2\nhost:/\n\n\x00")
    answer = sock.recv(16)
    return answer.lstrip(b"\n").startswith((b"CONNECTED", b"ERROR"))


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
