"""The STOMP source (properties.md §8): ActiveMQ over stomp.py, exactly-once friendly.

* ``ack: client-individual`` and nothing is acknowledged before it is durable: ``ack`` sends one
  ACK per message whose transactions are in the trail (or which the capture spilled to its
  journal). The broker stops at ``jms.prefetch`` unacknowledged messages, so the capture ends a
  commit group at half of it (``window``). STOMP transactions are not used: ActiveMQ 5.17 slows
  down and stops dispatching after many transacted ACKs on one subscription.
* stomp.py's receiver thread only records: a frame becomes a ``Message`` on a queue, a lost
  connection becomes a marker on the same queue. Reconnecting (next ``jms.url`` entry, ``Backoff``)
  and re-subscribing happen in ``receive`` on the capture thread, which then raises ``Redelivery``.
* Bodies stay bytes until we decide: ActiveMQ sends ``content-length`` for BytesMessages only, so
  a frame without it is a TextMessage and is decoded as UTF-8.
* An ``ERROR`` frame in answer to CONNECT (authentication, protocol) stops capture, except
  "client-id already connected": the broker still holds our previous connection, whose
  unacknowledged messages it has not yet put back; we wait (back-off) so that they are
  redelivered before anything newer and the order on the queue is kept.
* TLS (``stomp+ssl``): a certificate the broker or we refuse (unknown CA, expired, host name
  mismatch, client certificate missing or refused) stops capture like an ERROR frame: no retry
  can cure it. ``msgcap.sources.tls`` finds out which it is.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from msgcap.sources.base import Redelivery, Source
from msgcap.sources.tls import TlsFiles, diagnose, tls_files
from parsers.model import Message
from props.errors import SourceError

log = logging.getLogger("msgcap.source")

# Headers that describe the delivery to this subscriber, not the message.
_DELIVERY_HEADERS = frozenset(("ack", "subscription", "content-length"))
CONNECT_TIMEOUT = 10.0
_RECV_BYTES = 1 << 16


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


class Backoff:
    """Delay before the next connection attempt: 0.1 s doubling to 30 s, plus up to 10 % jitter.

    ``wait`` sleeps in one interruptible wait on ``stop`` (set from a signal handler); ``clock``,
    ``rand`` and ``sleeper`` are injectable so tests run on a fake clock.
    """

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
    """Marker put on the queue when connection ``epoch`` is gone."""

    __slots__ = ("epoch", "reason")

    def __init__(self, epoch: int, reason: str) -> None:
        self.epoch, self.reason = epoch, reason


class _Listener:
    """stomp.py callbacks: wrap and enqueue, never block, never decide."""

    def __init__(self, source: StompSource, epoch: int) -> None:
        self._source, self._epoch = source, epoch
        self.connect_error: str | None = None
        self.answered = threading.Event()  # CONNECTED, ERROR or loss: connect() stops waiting

    def on_connected(self, frame: Any) -> None:
        self.answered.set()

    def on_message(self, frame: Any) -> None:
        self._source._queue.put(self._source._message(frame, self._epoch))

    def on_error(self, frame: Any) -> None:
        text = (frame.headers.get("message") or "") + (
            f": {frame.body.decode('utf-8', 'replace').strip()}"
            if isinstance(frame.body, bytes) and frame.body.strip() else "")
        if self._source._connected_epoch != self._epoch:
            self.connect_error = text or "ERROR frame"
            self.answered.set()
            return
        self._source._queue.put(_Lost(self._epoch, f"broker error: {text}"))

    def on_disconnected(self) -> None:
        self.answered.set()
        self._source._queue.put(_Lost(self._epoch, "connection lost"))

    def on_heartbeat_timeout(self) -> None:
        log.warning("no heart-beat from the broker")


class StompSource(Source):
    """Consumes one destination from the first reachable broker of ``jms.url``."""

    def __init__(self, urls: Sequence[str], destination: str, *, user: str | None = None,
                 password: str | None = None, prefetch: int = 1000,
                 heartbeat: tuple[int, int] = (10000, 10000), ssl_ca: str | None = None,
                 ssl_cert: str | None = None, ssl_key: str | None = None,
                 client_id: str = "MSGCAP", backoff: Backoff | None = None) -> None:
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
        self._backoff = backoff or Backoff()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._conn: Any = None
        self._epoch = 0
        self._connected_epoch = -1
        self._next_endpoint = 0
        self.window = max(1, prefetch // 2)
        self.endpoint: Endpoint | None = None
        self.reconnects = 0
        if any(e.tls for e in self.endpoints):
            self._tls_files()  # fail at start, not at the first connection

    @property
    def connected(self) -> bool:
        return self._conn is not None and self._connected_epoch == self._epoch

    @property
    def topic(self) -> bool:
        return self.destination.startswith("/topic/")

    # -- connection ---------------------------------------------------------------------------

    def open(self) -> None:
        self._connect()

    def _connect(self) -> None:
        """Connect to the next reachable endpoint and subscribe; retries forever until stopped."""
        import stomp
        from stomp.exception import StompException

        while not self._stop.is_set():
            endpoint = self.endpoints[self._next_endpoint]
            self._next_endpoint = (self._next_endpoint + 1) % len(self.endpoints)
            self._epoch += 1
            listener = _Listener(self, self._epoch)
            conn = stomp.Connection12(
                [(endpoint.host, endpoint.port)], heartbeats=self._heartbeat,
                heart_beat_receive_scale=1.5, auto_decode=False, auto_content_length=False,
                reconnect_attempts_max=1, reconnect_sleep_initial=0.0, reconnect_sleep_max=0.0,
                timeout=CONNECT_TIMEOUT, try_loopback_connect=False)
            if endpoint.tls:
                set_tls(conn, endpoint, self._tls_files())
            conn.set_listener("msgcap", listener)
            # The client-id makes the broker refuse us while it still holds our previous
            # connection (after a crash or a lost link): its unacknowledged messages must go
            # back to the queue before we subscribe, or they would come after newer ones.
            headers = {"client-id": self._client_id}
            failure = None
            try:
                # stomp.py's own wait has no deadline: wait for the listener instead.
                conn.connect(self._user, self._password, wait=False, headers=headers)
                if not listener.answered.wait(CONNECT_TIMEOUT):
                    failure = "no CONNECTED frame in time"
                elif not conn.is_connected():
                    failure = listener.connect_error or "connection closed"
            except (StompException, OSError) as exc:
                failure = str(exc) or type(exc).__name__
            if failure is not None:
                quiet_disconnect(conn)
                refused = listener.connect_error
                if refused is not None and "already connected" not in refused:
                    raise SourceError(f"broker refused the connection: {refused}",
                                      url=endpoint.url)
                if endpoint.tls and refused is None:
                    failure = tls_failure(endpoint, self._tls_files(), failure)
                delay = self._backoff.delay()
                log.warning("cannot connect to %s (%s); retrying in %.1f s", endpoint.url,
                            failure, delay)
                self._stop.wait(delay)
                continue
            self._connected_epoch = self._epoch
            self._subscribe(conn)
            self._conn, self.endpoint = conn, endpoint
            self._backoff.reset()
            log.info("connected to %s, consuming %s", endpoint.url, self.destination)
            return

    def _subscribe(self, conn: Any) -> None:
        headers = {"activemq.prefetchSize": str(self._prefetch)}
        if self.topic:
            headers["activemq.subscriptionName"] = self._client_id
        conn.subscribe(self.destination, id="1", ack="client-individual", headers=headers)

    def _tls_files(self) -> TlsFiles:
        if self._tls is None:
            self._tls = tls_files(*self._ssl, url=self.url)
        return self._tls

    def _reconnect(self, reason: str) -> None:
        log.warning("%s: %s; reconnecting", self.endpoint.url if self.endpoint else self.url,
                    reason)
        self._drop_connection()
        self.reconnects += 1
        self._connect()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        self._connected_epoch = -1
        if conn is not None:
            quiet_disconnect(conn)
        while True:  # what is queued came over the old connection and will be redelivered
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    # -- messages -----------------------------------------------------------------------------

    def _message(self, frame: Any, epoch: int) -> Message:
        raw = frame.headers
        body = frame.body if frame.body is not None else b""
        if "content-length" not in raw:
            try:  # noqa: SIM105 - per message: cheaper than contextlib.suppress
                body = body.decode("utf-8")
            except UnicodeDecodeError:
                pass
        headers = {k: v for k, v in raw.items() if k not in _DELIVERY_HEADERS}
        return Message(raw.get("message-id", ""), headers, body,
                       (epoch, raw.get("ack") or raw.get("message-id")), None)

    def receive(self, timeout: float) -> Message | None:
        if self._conn is None:
            if self._stop.is_set():
                return None
            self._connect()
            if self._conn is None:
                return None
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, _Lost):
            if item.epoch != self._epoch:
                return None  # a marker of a connection we closed ourselves
            self._reconnect(item.reason)
            raise Redelivery(item.reason)
        return item

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        epoch, conn = self._epoch, self._conn
        ids = []
        for message in (*done, *discarded):
            handle = message.ack
            if handle is None or handle[0] != epoch or conn is None:
                continue  # acknowledged already (spilled), or of a lost connection
            ids.append(handle[1])
            message.ack = None
        if not ids:
            return
        try:
            # One ACK frame per message (client-individual), written in one go: stomp.py's
            # per-frame path costs more than the rest of the capture per message.
            transport = conn.transport
            data = ack_frames(ids)
            if transport.blocking:
                transport.send(data)
            else:  # TLS: stomp.py's io loop owns the socket
                transport.send_queue.put(data)
        except Exception as exc:  # noqa: BLE001 - stomp.py raises plain Exception subclasses
            self._lost_while_sending(exc)

    def _lost_while_sending(self, exc: Exception) -> None:
        """A send failed: the receiver thread reports the loss; make sure it is seen."""
        self._queue.put(_Lost(self._epoch, f"send failed: {str(exc) or type(exc).__name__}"))

    def interrupt(self) -> None:
        self._stop.set()
        self._queue.put(_Lost(-1, "interrupted"))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        self._connected_epoch = -1
        if conn is not None:
            quiet_disconnect(conn)


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


def _escape(value: str) -> str:
    """STOMP 1.2 header value escaping."""
    return (value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")
            .replace("\r", "\\r"))


def ack_frames(ack_ids: Sequence[str]) -> bytes:
    """STOMP 1.2 ``ACK`` frames, one per id (the ``ack`` header of each MESSAGE)."""
    return b"".join(b"ACK\nid:%s\n\n\x00" % _escape(i).encode("utf-8") for i in ack_ids)


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
