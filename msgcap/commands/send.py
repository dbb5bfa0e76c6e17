"""``msgcap send --prop P [--lines] DUMP...``: publish message dumps to the configured destination.

For demos, tests and load (properties.md §13): each dump entry is sent with its headers to
``jms.destination`` on the first reachable ``jms.url`` broker, persistent unless the entry says
otherwise; over AMQP 1.0 as ``send_over_amqp`` says; through a JMS provider's own client as
``msgcap.sources.jms.send_to_provider`` says. Text bodies go without ``content-length`` (JMS TextMessage), bytes (``body_b64``
entries, one-message files) with it (BytesMessage): a body's kind is what the dump says, never
what its bytes look like. Every ``RECEIPT_EVERY``-th frame and the last one ask for a receipt (without
waiting for it), so when the command returns the broker has every message, and when the broker
fails part-way the error says how many it confirmed: ``--skip N`` resends from there without
duplicating them. With ``jms.url=dir:PATH`` each message becomes a ``.msg.json`` file (temporary
name, then rename) that the spool source reads in send order.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from props.partition import partition_argument

if TYPE_CHECKING:
    from parsers.model import Message
    from props.settings import Settings

log = logging.getLogger("msgcap.send")

RECEIPT_TIMEOUT = 120.0
RECEIPT_EVERY = 500  # frames between receipt requests: what a failure can leave unconfirmed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file (jms.url, jms.destination, jms.user, ...)")
    parser.add_argument("--partition", type=partition_argument, metavar="N",
                        help="the partition number ${PARTITION} stands for in the properties "
                             "(default: $MSGCAP_PARTITION)")
    parser.add_argument("--lines", action="store_true",
                        help="each line of a DUMP is one message body (no headers)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="send the whole input N times (load tests; default 1)")
    parser.add_argument("--skip", type=int, default=0, metavar="N",
                        help="do not send the first N messages (resume after a failure that "
                             "reported N confirmed messages)")
    parser.add_argument("dumps", nargs="+", metavar="DUMP",
                        help="JSON Lines dumps (*.jsonl), text-line files with --lines, or one "
                             "message per file; globs and directories in name order")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from msgcap.dumps import expand_inputs, read_messages
    from props.errors import PropertyError
    from props.loader import load_settings

    settings = load_settings(args.prop, partition=args.partition)
    settings.jms.require_env()  # the connection settings' ${NAME}, unset: one line
    configure_logging(settings, command="msgcap send", log_to_file=False)
    if not logging.getLogger("msgcap").isEnabledFor(logging.DEBUG):
        # stomp.py logs each failed attempt itself; the one error line below says it all
        logging.getLogger("stomp.py").setLevel(logging.ERROR)
    jms = settings.jms
    if not jms.url and jms.provider is None:
        raise jms.url_required("required by msgcap send")
    if args.skip < 0:
        raise PropertyError("must not be negative", prop="--skip")
    paths = expand_inputs(args.dumps)

    def messages() -> Iterable[Any]:
        every = (m for _ in range(max(args.repeat, 0))
                 for m in read_messages(paths, lines=args.lines, max_bytes=jms.maxbytes))
        return itertools.islice(every, args.skip, None)

    started = time.monotonic()
    if jms.provider is not None:
        from msgcap.sources.jms import send_to_provider
        count = send_to_provider(jms.provider, messages(), user=jms.user, password=jms.password)
        where = f"{jms.provider.destination} at {jms.provider.where}"
    elif jms.url[0].startswith("dir:"):
        count = send_to_spool(jms.url[0][4:], messages())
        where = jms.url[0]
    elif jms.url[0].lower().startswith(("amqp://", "amqps://")):
        count, where = send_over_amqp(settings, messages())
    else:  # the loader made sure a broker URL comes with jms.destination
        count, where = send_to_broker(settings, messages())
    elapsed = time.monotonic() - started
    rate = count / elapsed if elapsed > 0 else 0.0
    skipped = f" after skipping {args.skip}" if args.skip else ""
    print(f"sent {count} messages{skipped} to {where} ({rate:,.0f} messages/s)")
    return 0


class _SendListener:
    """Records receipts, ERROR frames and a lost connection (stomp.py's receiver thread only
    records; the sending thread decides). Receipt ids are ``send-<messages sent>``."""

    def __init__(self) -> None:
        self.confirmed = 0  # messages the broker confirmed, by the highest receipt received
        self.last = threading.Event()  # the receipt of the last frame, or a failure
        self.last_id = ""
        self.failure: list[str] = []
        self.answered = threading.Event()  # CONNECTED, ERROR or a closed connection
        self.connected = False

    def on_connected(self, frame: Any) -> None:
        self.connected = True
        self.answered.set()

    def on_receipt(self, frame: Any) -> None:
        receipt = frame.headers.get("receipt-id", "")
        count = receipt.removeprefix("send-")
        if count.isdigit():
            self.confirmed = max(self.confirmed, int(count))
        if receipt == self.last_id:
            self.last.set()

    def on_error(self, frame: Any) -> None:
        self.failure.append(frame.headers.get("message", "ERROR frame"))
        self.answered.set()
        self.last.set()

    def on_disconnected(self) -> None:
        # before CONNECTED the caller works out why (a refused TLS client certificate looks
        # like a closed connection); afterwards it is a failure of the sending
        if self.connected:
            self.failure.append("the broker closed the connection")
        self.answered.set()
        self.last.set()


def send_to_broker(settings: Settings, messages: Iterable[Message]) -> tuple[int, str]:
    """Publish over STOMP; returns (count, broker URL)."""
    import stomp
    from stomp.exception import StompException

    from msgcap.sources.stomp import (
        CONNECT_TIMEOUT,
        frame_of,
        parse_urls,
        quiet_disconnect,
        set_tls,
        tls_failure,
    )
    from msgcap.sources.tls import tls_files
    from props.errors import SourceError

    jms = settings.jms
    assert jms.destination is not None  # (main refused a missing one)
    endpoints = parse_urls(jms.url)
    tls = (tls_files(jms.ssl_ca, jms.ssl_cert, jms.ssl_key, url=",".join(jms.url))
           if any(e.tls for e in endpoints) else None)
    errors: list[str] = []
    for endpoint in endpoints:
        listener = _SendListener()
        failure = listener.failure
        conn = stomp.Connection12([(endpoint.host, endpoint.port)], auto_decode=False,
                                  auto_content_length=False, heartbeats=(0, 0),
                                  reconnect_attempts_max=1, try_loopback_connect=False,
                                  timeout=CONNECT_TIMEOUT, vhost=jms.vhost)
        if endpoint.tls and tls is not None:
            set_tls(conn, endpoint, tls)
        conn.set_listener("send", listener)
        reason = None
        try:
            # not stomp.py's wait=True: it has no deadline, and can miss a TLS connection that
            # the broker closes (a client certificate refused after the handshake)
            conn.connect(jms.user, jms.password, wait=False)
            if not listener.answered.wait(CONNECT_TIMEOUT):
                reason = "no CONNECTED frame in time"
            elif failure or not conn.is_connected():
                reason = failure[0] if failure else "connection closed"
        except (StompException, OSError) as exc:
            reason = failure[0] if failure else (str(exc) or type(exc).__name__)
        if reason is not None:
            quiet_disconnect(conn)
            if endpoint.tls and tls is not None and not failure:
                reason = tls_failure(endpoint, tls, reason)  # raises for a certificate problem
            errors.append(f"{endpoint.url}: {reason}")
            continue
        failure.clear()  # from here on a lost connection is a failure of the sending
        count = 0
        try:
            pending: tuple[bytes, dict[str, str]] | None = None
            for message in messages:
                if pending is not None:
                    _send(conn, jms.destination, pending, count + 1)
                    count += 1
                if failure:
                    raise SourceError(failure[0], url=endpoint.url)
                pending = frame_of(message)
            if pending is not None:  # the last one with a receipt: all earlier are in, too
                listener.last_id = f"send-{count + 1}"
                _send(conn, jms.destination, pending, count + 1, last=True)
                count += 1
                if not listener.last.wait(RECEIPT_TIMEOUT) and not failure:
                    failure.append(f"no receipt within {RECEIPT_TIMEOUT:.0f} s")
                if listener.confirmed < count:
                    raise SourceError(failure[0] if failure else "no receipt",
                                      url=endpoint.url)
        except (StompException, OSError, SourceError) as exc:
            reason = exc.reason if isinstance(exc, SourceError) else (str(exc) or type(exc)
                                                                      .__name__)
            raise SourceError(_partial(reason, count, listener.confirmed),
                              url=endpoint.url) from None
        finally:
            with contextlib.suppress(StompException, OSError):
                conn.disconnect()
        return count, f"{endpoint.url} {jms.destination}"
    raise SourceError("no broker reachable: " + "; ".join(errors), url=",".join(jms.url))


def send_over_amqp(settings: Settings, messages: Iterable[Message]) -> tuple[int, str]:
    """Publish over AMQP 1.0 (``msgcap.sources.amqp_messages.amqp_message``: bytes as a data
    section, text as an amqp-value string, headers as application properties) to the first reachable
    broker; at most ``SEND_WINDOW`` messages wait for the broker's outcome, and the count of
    confirmed ones is that of the accepted messages in send order. Returns (count, where)."""
    from msgcap.sources.amqp import (
        SEND_WINDOW,
        ConnectFailed,
        Connection,
        node_of,
        options_for,
        parse_urls,
    )
    from msgcap.sources.amqp_messages import amqp_message
    from props.errors import SourceError

    jms = settings.jms
    assert jms.destination is not None  # (main refused a missing one)
    endpoints = parse_urls(jms.url)
    options = options_for(endpoints, user=jms.user, password=jms.password,
                          sasl_mechanisms=jms.sasl_mechanisms,
                          ssl_ca=jms.ssl_ca, ssl_cert=jms.ssl_cert, ssl_key=jms.ssl_key,
                          heartbeat=jms.heartbeat, vhost=jms.vhost, container_id=None)
    errors: list[str] = []
    for endpoint in endpoints:
        conn = Connection(endpoint, options)
        try:
            sender = conn.sender(node_of(jms.destination, conn.open()))
        except ConnectFailed as exc:
            conn.close()
            if exc.permanent:
                raise SourceError(exc.why, url=endpoint.url) from None
            errors.append(f"{endpoint.url}: {exc.why}")
            continue
        count = confirmed = 0
        unsettled: collections.deque[Any] = collections.deque()

        try:
            for message in messages:
                unsettled.append(sender.send(amqp_message(message)))
                count += 1
                confirmed += _accepted(conn, unsettled, SEND_WINDOW)
            confirmed += _accepted(conn, unsettled, 0)
        except SourceError as exc:
            raise SourceError(_partial(exc.reason, count, confirmed),
                              url=endpoint.url) from None
        finally:
            conn.close()
        return count, f"{endpoint.url} {jms.destination}"
    raise SourceError("no broker reachable: " + "; ".join(errors), url=",".join(jms.url))


def _accepted(conn: Any, unsettled: collections.deque[Any], wait: int) -> int:
    """Pump ``conn`` until at most ``wait`` deliveries wait for their outcome: how many of the
    oldest were accepted (``SourceError`` for any other outcome, a lost connection, or none
    within ``RECEIPT_TIMEOUT``)."""
    from msgcap.sources.amqp import outcome_text
    from props.errors import SourceError

    accepted = 0
    deadline = time.monotonic() + RECEIPT_TIMEOUT
    while unsettled:
        delivery = unsettled[0]
        if delivery.remote_state or delivery.settled:
            unsettled.popleft()
            delivery.settle()
            if delivery.remote_state != delivery.ACCEPTED:
                raise SourceError(outcome_text(delivery.remote_state, delivery))
            accepted += 1
            continue
        if len(unsettled) <= wait:
            break
        if conn.failure is not None:
            raise SourceError(conn.failure)
        if time.monotonic() > deadline:
            raise SourceError(f"no outcome within {RECEIPT_TIMEOUT:.0f} s")
        conn.pump(1.0)
    return accepted


def _send(conn: Any, destination: str, frame: tuple[bytes, dict[str, str]], number: int, *,
          last: bool = False) -> None:
    """SEND message ``number`` (1-based); every RECEIPT_EVERY-th and the last ask a receipt."""
    headers = frame[1]
    if last or number % RECEIPT_EVERY == 0:
        headers = {**headers, "receipt": f"send-{number}"}
    conn.send(destination, frame[0], headers=headers)


def _partial(reason: str, sent: int, confirmed: int) -> str:
    """What a failure part-way leaves: confirmed messages are on the broker, the rest may be."""
    text = (f"sending failed after {sent} messages ({reason}); the broker confirmed the first "
            f"{confirmed}")
    if confirmed < sent:
        text += (f", messages {confirmed + 1}–{sent} may or may not have arrived; resend with "
                 f"--skip {confirmed} (adding any earlier --skip)")
    return text


def send_to_spool(path: str, messages: Iterable[Any]) -> int:
    """Write ``.msg.json`` files named so that name order is send order, each complete when it
    appears (the spool takes any name not hidden), all durable when this returns."""
    from gendef.durable import atomic_write, fsync_dir
    from msgcap.dumps import entry

    os.makedirs(path, exist_ok=True)
    stamp = time.time_ns() // 1000
    count = 0
    for message in messages:
        name = f"{stamp:017d}-{count:09d}.msg.json"
        data = json.dumps(entry(message), ensure_ascii=False).encode("utf-8")
        atomic_write(os.path.join(path, name), data, sync_dir=False)
        count += 1
    fsync_dir(path)  # once for all the names
    return count
